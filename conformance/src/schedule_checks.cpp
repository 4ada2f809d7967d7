// The schedule check: a learning-rate schedule reaches the plugin and trains as on the CPU reference. A plugin with
// per-step rates (ABI 1.2, capability STEP_LEARNING_RATES) follows a schedule that changes every step and uses
// rates[i] for the epoch's i-th batch; one without follows a schedule constant within each epoch through
// session_set_learning_rate, and the core refuses a per-step schedule for it with Unsupported naming the plugin;
// one built before ABI 1.1, which cannot change its rate at all, gets Unsupported for every schedule and still
// trains at a fixed rate.
#include "checks.hpp"
#include "kit_fixtures.hpp"

#include <brain/callbacks.hpp>
#include <brain/schedule.hpp>
#include <brain/training_session.hpp>

namespace brain::conformance {

namespace {

std::string schedule_check(KitContext& context) {
    const SessionFixture& kit = context.fixture();
    const bool per_step =
        TrainingSession(kit_network(), kit.data, kit.config, kit.backend).supports_step_learning_rates();
    // Per step where the plugin takes it; a per-epoch step decay otherwise (halved every epoch).
    const LearningRateSchedule schedule =
        per_step ? LearningRateSchedule::cosine(0.5f, 1e-4f) : LearningRateSchedule::step(1, 0.5f);
    FitOptions options;
    options.schedule = schedule;
    auto reference = kit_network();
    const FitReport expected = reference.fit(kit.data, kit.config, options);
    auto net = kit_network();
    FitReport got;
    try {
        got = net.fit_with_backend(kit.data, kit.config, kit.backend, options);
    } catch (const Error& e) {
        const std::string message = e.what();
        if (per_step || e.code() != ErrorCode::Unsupported ||
            message.find("session_set_learning_rate arrived in ABI 1.1") == std::string::npos)
            throw;
        // A plugin of ABI 1.0: no rate changes at all, refused up front, precisely.
        return "the plugin predates ABI 1.1 and cannot change its learning rate: schedules are refused with "
               "Unsupported (" +
               message.substr(0, message.find(':')) + ")";
    }
    const double error = relative_error(net.parameters(), reference.parameters());
    require(error < 1e-4, "with the schedule " + schedule.to_string() +
                              " the parameters differ from the CPU reference by " + sci(error) +
                              " (relative, limit 1e-4); the i-th batch of an epoch, the last short batch (" +
                              std::to_string(kit.data.size() % kit.config.batch_size) +
                              " rows) included, must use rates[i] of session_set_step_learning_rates (or the rate "
                              "of session_set_learning_rate); where parity fails too, fix that first");
    require(got.learning_rates == expected.learning_rates, "the epochs' learning rates differ from the CPU's");
    std::string detail = "parameters within " + sci(error) + " of the CPU reference under " + schedule.to_string();
    if (per_step) {
        // The i-th batch takes rates[i]: SGD at a vanishing rate for every batch leaves the weights (all but) as
        // they are.
        auto frozen = kit_network(Optimizer::sgd(0.1f));
        TrainingSession session(frozen, kit.data, kit.config, kit.backend);
        const auto before = session.checkpoint();
        session.set_step_learning_rates(std::vector<float>(session.batches_per_epoch(), 1e-30f));
        session.train_epoch();
        const auto after = session.checkpoint();
        const double moved = relative_error(after.parameters, before.parameters);
        require(moved < 1e-12, "an epoch at per-step rates of 1e-30 moved the parameters by " + sci(moved) +
                                   " (relative; at the optimizer's rate of 0.1 they move by about 1e-2): "
                                   "session_set_step_learning_rates' rates must replace the optimizer's rate");
        return detail + "; per-step rates (ABI 1.2) honoured batch by batch";
    }
    try {
        auto refused = kit_network();
        FitOptions cosine;
        cosine.schedule = LearningRateSchedule::cosine(0.5f);
        refused.fit_with_backend(kit.data, kit.config, kit.backend, cosine);
        fail_check("a schedule that changes within the epoch was accepted although the plugin offers no "
                   "per-step rates");
    } catch (const Error& e) {
        require(e.code() == ErrorCode::Unsupported,
                "a per-step schedule failed with " + error_text(e) + " instead of Unsupported");
    }
    return detail + " through session_set_learning_rate; per-step schedules refused with Unsupported";
}

} // namespace

void run_schedule_checks(CheckTable& table) {
    table.run("schedule", schedule_check);
}

} // namespace brain::conformance
