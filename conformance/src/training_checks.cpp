// The training checks: through the public API (fit_with_backend, TrainingSession), a plugin trains exactly as
// the CPU reference does, reports what it measured, stays within the memory estimate and resumes from a
// checkpoint as if never interrupted.
#include "checks.hpp"

#include <brain/accelerator.hpp>
#include <brain/training_session.hpp>
#include <cmath>
#include <optional>

namespace brain::conformance {

void run_training_checks(CheckTable& table, const SessionFixture& kit) {
    const std::uint64_t batches_per_epoch = (kit.data.size() + kit.config.batch_size - 1) / kit.config.batch_size;

    std::optional<FitReport> fitted;
    std::optional<Network> trained;
    table.run("parity", [&] {
        auto reference = kit_network();
        const auto reference_report = reference.fit(kit.data, kit.config);
        auto net = kit_network();
        const auto fit = net.fit_with_backend(kit.data, kit.config, kit.backend);
        fitted = fit;
        trained = net;
        const double error = relative_error(net.parameters(), reference.parameters());
        require(error < 1e-4, "after " + std::to_string(kit.config.epochs) +
                                  " epochs the parameters differ from the "
                                  "CPU reference by " +
                                  sci(error) +
                                  " (relative, limit 1e-4); check the batch "
                                  "order (brain_shuffle_index), the loss normalisation and the optimizer update");
        require(fit.epoch_losses.size() == reference_report.epoch_losses.size(), "epoch loss count differs");
        for (std::size_t e = 0; e < fit.epoch_losses.size(); ++e) {
            const double a = fit.epoch_losses[e], b = reference_report.epoch_losses[e];
            require(std::fabs(a - b) <= 1e-6 + 1e-4 * std::fabs(b),
                    "epoch " + std::to_string(e) + " loss is " + std::to_string(a) + ", the CPU reference's " +
                        std::to_string(b) + "; report the sample-weighted mean of the batch losses");
        }
        return "parameters within " + sci(error) + " of the CPU reference after " +
               std::to_string(kit.config.epochs) + " epochs; epoch losses agree";
    });

    table.run("stats", [&] {
        require(fitted.has_value(), "not run: the training run failed (see parity)");
        const AcceleratorStats& s = fitted->stats;
        require(s.epochs == kit.config.epochs,
                "epochs is " + std::to_string(s.epochs) + ", expected " + std::to_string(kit.config.epochs));
        require(s.batches == kit.config.epochs * batches_per_epoch,
                "batches is " + std::to_string(s.batches) + ", expected " +
                    std::to_string(kit.config.epochs * batches_per_epoch));
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
    });

    table.run("peak in estimate", [&] {
        require(fitted.has_value() && trained.has_value(), "not run: the training run failed (see parity)");
        const std::uint64_t peak = fitted->stats.peak_allocated_bytes;
        const std::uint64_t estimate = estimate_tensor_memory_bytes(*trained, kit.config.batch_size);
        require(peak <= estimate, "peak_allocated_bytes " + std::to_string(peak) +
                                      " exceeds estimate_tensor_memory_bytes " + std::to_string(estimate) +
                                      "; count only the tensors the estimate lists, or allocate fewer");
        require(peak <= kit.budget_bytes, "peak_allocated_bytes " + std::to_string(peak) +
                                              " exceeds the budget of " + std::to_string(kit.budget_bytes) +
                                              " bytes");
        return "peak " + std::to_string(peak) + " <= estimate " + std::to_string(estimate) + " <= budget " +
               std::to_string(kit.budget_bytes) + " bytes";
    });

    table.run("checkpoint", [&] {
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
        require(b.epochs_trained() == 1, "a restored checkpoint of one epoch reports " +
                                             std::to_string(b.epochs_trained()) + " epochs trained");
        TrainingSession second(b, kit.data, kit.config, kit.backend);
        second.train_epoch();
        const auto resumed = second.checkpoint();
        const double p = relative_error(resumed.parameters, straight.parameters);
        const double o = relative_error(resumed.optimizer_state, straight.optimizer_state);
        require(p < 1e-6, "resumed parameters differ from an uninterrupted run by " + sci(p) +
                              "; session_open must start from desc->parameters, optimizer_state, optimizer_step "
                              "and first_epoch");
        require(o < 1e-6, "resumed optimizer state differs from an uninterrupted run by " + sci(o));
        require(resumed.optimizer_step == straight.optimizer_step,
                "optimizer step " + std::to_string(resumed.optimizer_step) + " after resuming, " +
                    std::to_string(straight.optimizer_step) + " without");
        return "1 epoch + checkpoint + 1 epoch equals 2 epochs (parameters " + sci(p) + ", state " + sci(o) +
               ", step " + std::to_string(resumed.optimizer_step) + ")";
    });
}

} // namespace brain::conformance
