// The training checks: through the public API (fit_with_backend, TrainingSession), a plugin trains exactly as the
// CPU reference does, reports what it measured, stays within the memory estimate and resumes from a checkpoint as
// if never interrupted. Each check trains for itself: checks run in processes of their own.
#include "checks.hpp"

#include <brain/accelerator.hpp>
#include <brain/training_session.hpp>
#include <cmath>
#include <cstddef>
#include <vector>

namespace brain::conformance {

namespace {

// The kit network trained on the plugin under test.
struct KitRun {
    Network network = kit_network();
    FitReport fit;
};

KitRun train_kit_network(const SessionFixture& kit) {
    KitRun run;
    run.fit = run.network.fit_with_backend(kit.data, kit.config, kit.backend);
    return run;
}

std::string parity_check(KitContext& context) {
    const SessionFixture& kit = context.fixture();
    auto reference = kit_network();
    const auto reference_fit = reference.fit(kit.data, kit.config);
    const KitRun run = train_kit_network(kit);
    const Agreement agreement = compare_runs(run.network, run.fit, reference, reference_fit);
    require(agreement.agrees,
            "the kit network (8-16-12-3, tanh and relu, mean_squared_error, adam) after " +
                std::to_string(kit.config.epochs) + " epochs: " + agreement.detail +
                "; check the batch order (brain_shuffle_index), the last short batch of each epoch (" +
                std::to_string(kit.data.size() % kit.config.batch_size) +
                " rows), the loss normalisation and the optimizer update");
    return "parameters within " + sci(agreement.parameter_error) + " of the CPU reference after " +
           std::to_string(kit.config.epochs) + " epochs; epoch losses agree";
}

std::string stats_check(KitContext& context) {
    const SessionFixture& kit = context.fixture();
    const std::uint64_t rows = kit.data.size(), batch = kit.config.batch_size;
    const std::uint64_t batches_per_epoch = (rows + batch - 1) / batch;
    const AcceleratorStats s = train_kit_network(kit).fit.stats;
    require(s.epochs == kit.config.epochs,
            "epochs is " + std::to_string(s.epochs) + ", expected " + std::to_string(kit.config.epochs));
    std::string batches_hint;
    if (s.batches == kit.config.epochs * (rows / batch))
        batches_hint = ": the last, short batch of each epoch (" + std::to_string(rows % batch) +
                       " rows) is missing; train and count it like any other";
    require(s.batches == kit.config.epochs * batches_per_epoch,
            "batches is " + std::to_string(s.batches) + ", expected " +
                std::to_string(kit.config.epochs * batches_per_epoch) + " (" + std::to_string(rows) +
                " rows in batches of " + std::to_string(batch) + " make " + std::to_string(batches_per_epoch) +
                " batches per epoch)" + batches_hint);
    require(s.setup_time.count() > 0, "setup_time_ns is 0; measure session_open");
    require(s.training_time.count() > 0, "training_time_ns is 0; measure session_train_epoch");
    require(s.peak_allocated_bytes > 0, "peak_allocated_bytes is 0; count the tensors the session allocates");
    require(s.budget_bytes == kit.budget_bytes, "budget_bytes is " + std::to_string(s.budget_bytes) +
                                                    ", but the session was opened with a budget of " +
                                                    std::to_string(kit.budget_bytes) + " bytes");
    require(s.precision == Precision::Float32, "precision is not Float32 although Float32 was asked for");
    return std::to_string(s.epochs) + " epochs, " + std::to_string(s.batches) + " batches, peak " +
           std::to_string(s.peak_allocated_bytes) + " bytes, setup " + std::to_string(s.setup_time.count()) +
           " ns, training " + std::to_string(s.training_time.count()) + " ns";
}

std::string peak_check(KitContext& context) {
    const SessionFixture& kit = context.fixture();
    const KitRun run = train_kit_network(kit);
    const std::uint64_t peak = run.fit.stats.peak_allocated_bytes;
    const std::uint64_t estimate = estimate_tensor_memory_bytes(run.network, kit.config.batch_size);
    require(peak <= estimate, "peak_allocated_bytes " + std::to_string(peak) + " exceeds the estimate " +
                                  std::to_string(estimate) +
                                  " (brain/session_budget.hpp, sdk::estimate_tensor_bytes); count only the tensors "
                                  "the estimate lists, or allocate fewer");
    require(peak <= kit.budget_bytes, "peak_allocated_bytes " + std::to_string(peak) + " exceeds the budget of " +
                                          std::to_string(kit.budget_bytes) + " bytes");
    return "peak " + std::to_string(peak) + " <= estimate " + std::to_string(estimate) + " <= budget " +
           std::to_string(kit.budget_bytes) + " bytes";
}

std::string checkpoint_check(KitContext& context) {
    const SessionFixture& kit = context.fixture();
    // Two epochs in one session must equal one epoch, a checkpoint, a new session, and one more.
    auto a = kit_network();
    TrainingSession whole(a, kit.data, kit.config, kit.backend);
    whole.train_epoch();
    whole.train_epoch();
    const auto straight = whole.checkpoint();
    auto b = kit_network();
    {
        TrainingSession first(b, kit.data, kit.config, kit.backend);
        first.train_epoch();
        b.restore_checkpoint(first.checkpoint());
    }
    require(b.epochs_trained() == 1,
            "a restored checkpoint of one epoch reports " + std::to_string(b.epochs_trained()) + " epochs trained");
    TrainingSession second(b, kit.data, kit.config, kit.backend);
    second.train_epoch();
    const auto resumed = second.checkpoint();
    const double p = relative_error(resumed.parameters, straight.parameters);
    const double o = relative_error(resumed.optimizer_state, straight.optimizer_state);
    require(p < 1e-6, "resumed parameters differ from an uninterrupted run by " + sci(p) +
                          "; session_open must start from desc->parameters, optimizer_state, optimizer_step and "
                          "first_epoch (the second session's first epoch is epoch 1 of the batch order)");
    require(o < 1e-6, "resumed optimizer state differs from an uninterrupted run by " + sci(o));
    require(resumed.optimizer_step == straight.optimizer_step,
            "optimizer step " + std::to_string(resumed.optimizer_step) + " after resuming, " +
                std::to_string(straight.optimizer_step) + " without");
    return "1 epoch + checkpoint + 1 epoch equals 2 epochs (parameters " + sci(p) + ", state " + sci(o) +
           ", step " + std::to_string(resumed.optimizer_step) + ")";
}

std::string epochs_in_one_call_check(KitContext& context) {
    const SessionFixture& kit = context.fixture();
    // The kit's epochs in one train_epochs call must train as that many train_epoch calls do.
    const std::uint32_t epochs = kit.config.epochs;
    auto a = kit_network();
    TrainingSession each(a, kit.data, kit.config, kit.backend);
    std::vector<float> one_by_one;
    for (std::uint32_t e = 0; e < epochs; ++e) one_by_one.push_back(each.train_epoch());
    const auto by_epoch = each.checkpoint();
    auto b = kit_network();
    TrainingSession together(b, kit.data, kit.config, kit.backend);
    const std::vector<float> losses = together.train_epochs(epochs);
    const auto in_one_call = together.checkpoint();
    require(losses.size() == epochs,
            "train_epochs(" + std::to_string(epochs) + ") returned " + std::to_string(losses.size()) + " losses");
    const double l = relative_error(losses, one_by_one);
    const double p = relative_error(in_one_call.parameters, by_epoch.parameters);
    require(l < 1e-6 && p < 1e-6,
            std::to_string(epochs) + " epochs in one call differ from as many train_epoch calls: losses by " +
                sci(l) + ", parameters by " + sci(p) +
                "; session_train_epochs must train each epoch as session_train_epoch does (its number, batch "
                "order and rates)");
    require(in_one_call.optimizer_step == by_epoch.optimizer_step && in_one_call.epochs_trained == epochs,
            "after " + std::to_string(epochs) + " epochs in one call the optimizer step is " +
                std::to_string(in_one_call.optimizer_step) + " and the epochs trained " +
                std::to_string(in_one_call.epochs_trained) + "; one at a time they are " +
                std::to_string(by_epoch.optimizer_step) + " and " + std::to_string(epochs));
    const AcceleratorStats s = together.stats();
    require(s.epochs == epochs,
            "stats count " + std::to_string(s.epochs) + " epochs after " + std::to_string(epochs) + " in one call");
    const bool offered =
        context.plugin().api->struct_size >= offsetof(brain_plugin_api, session_train_epochs) + sizeof(void*) &&
        context.plugin().api->session_train_epochs != nullptr;
    return std::to_string(epochs) + " epochs in one call (" +
           (offered ? "the plugin's session_train_epochs" : "one session_train_epoch each: not offered") +
           ") equal as many train_epoch calls (losses " + sci(l) + ", parameters " + sci(p) + ")";
}

} // namespace

void run_parity_check(CheckTable& table) {
    table.run("parity", parity_check);
}

void run_training_checks(CheckTable& table) {
    table.run("stats", stats_check);
    table.run("peak in estimate", peak_check);
    table.run("checkpoint", checkpoint_check);
    table.run("epochs in one call", epochs_in_one_call_check);
}

} // namespace brain::conformance
