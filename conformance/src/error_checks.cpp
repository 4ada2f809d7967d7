// The error checks: every failure the contract names arrives as the right code with a message the user can act
// on, through the public API and through malformed calls straight into the plugin's table (which the public API
// never makes).
#include "checks.hpp"

#include <brain/session_descriptor.hpp>
#include <brain/training_session.hpp>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace brain::conformance {

void run_error_checks(CheckTable& table, const SessionFixture& kit) {
    const brain_plugin_api& api = *kit.plugin.api;
    const std::string& name = kit.plugin.record.name;

    table.run("closed session", [&] {
        auto net = kit_network();
        TrainingSession session(net, kit.data, kit.config, kit.backend);
        session.train_epoch();
        session.close();
        session.close();
        require(!session.is_open(), "a closed session still reports is_open()");
        expect_error(
            ErrorCode::InvalidState, [&] { session.train_epoch(); }, {"not usable"}, "train_epoch");
        expect_error(
            ErrorCode::InvalidState, [&] { session.checkpoint(); }, {"not usable"}, "checkpoint");
        api.session_close(nullptr); // the ABI says NULL is ignored
        return std::string("closed twice, then InvalidState on train_epoch and checkpoint; session_close(NULL) "
                           "ignored");
    });

    table.run("budget refusal", [&] {
        // 512x512 weights with gradients and optimizer state need 4 MiB: a 1 MiB budget must be refused at open.
        auto big =
            Network::builder().input_size(512).dense(512, Activation::Relu).dense(3, Activation::Linear).build();
        const Dataset big_data = regression_data(64, 512, 3, 1);
        const auto tight = TrainingBackend::plugin(name, kit.options.device, 1);
        const std::string message = expect_error(
            ErrorCode::BudgetExceeded,
            [&] {
                (void)TrainingSession(big, big_data, TrainConfig{1, 64, true, 1}, tight);
            },
            {"budget", "batch"}, "a session needing 4 MiB under a 1 MiB budget");
        return "BudgetExceeded: " + message;
    });

    table.run("device 99", [&] {
        const auto missing = TrainingBackend::plugin(name, 99, kit.options.budget_mib);
        const auto net = kit_network();
        expect_error(
            ErrorCode::DeviceNotFound, [&] { (void)TrainingSession(net, kit.data, kit.config, missing); }, {"99"},
            "session_open on device 99");
        brain_device_report raw{};
        raw.struct_size = sizeof(raw);
        const std::string message = require_raw_error(take(api, api.probe(99, kit.budget_bytes, &raw)),
                                                      ErrorCode::DeviceNotFound, "probe(99)");
        return "session_open and probe: DeviceNotFound: " + message;
    });

    table.run("invalid argument", [&] {
        const auto net = kit_network();
        SessionDescriptor desc(net, kit.data, kit.config, kit.backend);
        brain_session_desc bad = desc.desc();
        bad.parameter_count -= 1; // the model needs one float more than the caller claims to pass
        brain_session* session = nullptr;
        const RawOutcome open = take(api, api.session_open(&bad, &session));
        if (open.ok && session) api.session_close(session);
        const std::string message = require_raw_error(open, ErrorCode::InvalidArgument,
                                                      "session_open with parameter_count one short of the model's");
        return "InvalidArgument: " + message;
    });

    table.run("use after error", [&] {
        auto net = kit_network();
        SessionDescriptor desc(net, kit.data, kit.config, kit.backend);
        brain_session* raw_session = nullptr;
        const RawOutcome open = take(api, api.session_open(&desc.desc(), &raw_session));
        require(open.ok && raw_session, "session_open failed: " + describe(open));
        const std::unique_ptr<brain_session, void (*)(brain_session*)> session(raw_session, api.session_close);
        // Buffers one float too large on each side, so a plugin that ignores the sizes writes in bounds.
        std::vector<float> params(net.parameter_count() + 1), state(net.optimizer_state().size() + 1);
        std::uint64_t step = 0;
        const RawOutcome wrong = take(api, api.session_checkpoint(session.get(), params.data(), params.size(),
                                                                  state.data(), state.size(), &step));
        const std::string message = require_raw_error(wrong, ErrorCode::InvalidArgument,
                                                      "session_checkpoint with buffers of the wrong size");
        // After a refused call the session either still works or refuses cleanly with a known code.
        const RawOutcome again = take(api, api.session_checkpoint(session.get(), params.data(), params.size() - 1,
                                                                  state.data(), state.size() - 1, &step));
        if (again.ok) {
            params.pop_back();
            require(relative_error(params, net.parameters()) == 0.0,
                    "a checkpoint before any training does not return the initial parameters");
            return "InvalidArgument (" + message + "), then the session still checkpoints correctly";
        }
        require(is_abi_code(again.code) && !again.message.empty(),
                "after the refused checkpoint the next call failed without a known code and message: " +
                    describe(again));
        return "InvalidArgument (" + message + "), then the session refuses cleanly: " + describe(again);
    });

    table.run("numerical error", [&] {
        // SGD with a learning rate of 1e20 overflows float32 within a few batches.
        auto net = kit_network(Optimizer::sgd(1e20f));
        TrainingSession session(net, kit.data, TrainConfig{8, 32, true, 1}, kit.backend);
        std::optional<Error> error;
        float last = 0.0f;
        for (int e = 0; e < 8 && !error; ++e) {
            try {
                last = session.train_epoch();
            } catch (const Error& caught) {
                error = caught;
            }
        }
        require(error.has_value(), "8 epochs at learning rate 1e20 all returned finite losses (last " +
                                       std::to_string(last) +
                                       "); report the loss as computed, NaN or inf included");
        require(error->code() == ErrorCode::NumericalError,
                "a diverging run failed with " + error_text(*error) + " instead of NumericalError");
        expect_error(
            ErrorCode::InvalidState, [&] { session.train_epoch(); }, {"not usable"},
            "train_epoch after the NumericalError");
        return std::string("NumericalError (") + error->what() + "), then InvalidState";
    });

    table.run("precision", [&] {
        // Each precision is what its name says, or refused with Unsupported: accepted, it is reported in the stats
        // and trains to other bits than float32 (a plugin that ran float32 under another name would not).
        const auto trained = [&](const TrainingBackend& backend, AcceleratorStats* stats) {
            auto net = kit_network();
            TrainingSession session(net, kit.data, kit.config, backend);
            session.train_epoch();
            if (stats) *stats = session.stats();
            return session.checkpoint().parameters;
        };
        const std::vector<float> float32 = trained(kit.backend, nullptr);
        std::string detail;
        for (const Precision precision : {Precision::Tf32, Precision::Bf16}) {
            const std::string name(to_string(precision));
            if (!detail.empty()) detail += "; ";
            try {
                AcceleratorStats stats;
                const std::vector<float> weights = trained(kit.backend.with_precision(precision), &stats);
                require(stats.precision == precision,
                        name + " was accepted but the stats report " + std::string(to_string(stats.precision)) +
                            "; never fall back silently: refuse with Unsupported instead");
                require(weights != float32, name +
                                                " was accepted but trained to the same bits as float32: the "
                                                "plugin did not run " +
                                                name + "; run what the name says or refuse it with Unsupported");
                detail += name + " accepted, reported in the stats" +
                          (stats.arithmetic.empty() ? std::string() : " (" + stats.arithmetic + ")") +
                          ", other bits than float32";
            } catch (const Error& e) {
                require(e.code() == ErrorCode::Unsupported,
                        "asking for " + name + " failed with " + error_text(e) +
                            "; refuse an unsupported precision with Unsupported");
                require(std::string(e.what()).size() > 0, "Unsupported arrived without a message");
                detail += name + " refused with Unsupported: " + e.what();
            }
        }
        return detail;
    });
}

} // namespace brain::conformance
