// The error checks: every failure the contract names arrives as the right code with a message the user can act
// on, through the public API and through malformed calls straight into the plugin's table (which the public API
// never makes).
#include "checks.hpp"

#include <brain/session_descriptor.hpp>
#include <brain/training_session.hpp>
#include <cctype>
#include <cstdint>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

namespace brain::conformance {

namespace {

// Every whole number written in `text` (digit runs), largest first.
std::vector<std::size_t> numbers_in(const std::string& text) {
    std::set<std::size_t> found;
    std::size_t value = 0;
    bool in_number = false;
    for (char c : text + ' ') {
        if (std::isdigit(static_cast<unsigned char>(c))) {
            value = value > (SIZE_MAX - 9) / 10 ? SIZE_MAX : value * 10 + static_cast<std::size_t>(c - '0');
            in_number = true;
        } else if (in_number) {
            found.insert(value);
            value = 0;
            in_number = false;
        }
    }
    return {found.rbegin(), found.rend()};
}

// The duty behind "name the largest batch size that fits": a network whose parameters fit a 2 MiB budget but whose
// batch of 600 rows does not. The refusal must name a batch size N that opens while N + 1 does not.
std::string largest_batch_named(const SessionFixture& kit, const std::string& name) {
    const auto net = Network::builder()
                         .input_size(256)
                         .dense(256, Activation::Relu)
                         .dense(3, Activation::Linear)
                         .optimizer(Optimizer::adam(0.01f))
                         .seed(2)
                         .build();
    const Dataset data = regression_data(600, 256, 3, 3);
    const auto tight = TrainingBackend::plugin(name, kit.options.device, 2);
    const auto opens = [&](std::size_t batch) {
        try {
            TrainingSession session(net, data, TrainConfig{1, static_cast<std::uint32_t>(batch), true, 1}, tight);
            return true;
        } catch (const Error& e) {
            if (e.code() == ErrorCode::BudgetExceeded) return false;
            throw;
        }
    };
    const std::string message = expect_error(
        ErrorCode::BudgetExceeded,
        [&] {
            (void)TrainingSession(net, data, TrainConfig{1, 600, true, 1}, tight);
        },
        {"budget"}, "a 256-256-3 network with batches of 600 rows under a 2 MiB budget");
    for (std::size_t n : numbers_in(message))
        if (n >= 1 && n < 600 && opens(n) && !opens(n + 1))
            return "names batch size " + std::to_string(n) + ", which opens while " + std::to_string(n + 1) +
                   " does not";
    fail_check("a 256-256-3 network with batches of 600 rows under a 2 MiB budget was refused with \"" + message +
               "\", which names no batch size N that opens while N + 1 does not; name the largest batch size that "
               "fits the budget");
}

} // namespace

void run_error_checks(CheckTable& table) {
    table.run("closed session", [](KitContext& context) {
        const SessionFixture& kit = context.fixture();
        const brain_plugin_api& api = *kit.plugin.api;
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
        // What happens to a session's memory on close cannot be seen from here: run the kit under AddressSanitizer
        // or Valgrind for that.
        return std::string("the core refuses a closed session (InvalidState on train_epoch and checkpoint) and "
                           "never calls the plugin again; session_close(NULL) ignored");
    });

    table.run("budget refusal", [](KitContext& context) {
        const SessionFixture& kit = context.fixture();
        const std::string& name = kit.plugin.record.name;
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
        return "BudgetExceeded: " + message + "; with room for some rows, it " + largest_batch_named(kit, name);
    });

    table.run("device 99", [](KitContext& context) {
        const SessionFixture& kit = context.fixture();
        const brain_plugin_api& api = *kit.plugin.api;
        const std::string& name = kit.plugin.record.name;
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

    table.run("invalid argument", [](KitContext& context) {
        const SessionFixture& kit = context.fixture();
        const brain_plugin_api& api = *kit.plugin.api;
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

    table.run("use after error", [](KitContext& context) {
        const SessionFixture& kit = context.fixture();
        const brain_plugin_api& api = *kit.plugin.api;
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

    table.run("numerical error", [](KitContext& context) {
        const SessionFixture& kit = context.fixture();
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

    table.run("numerical error in one call", [](KitContext& context) {
        const SessionFixture& kit = context.fixture();
        // The diverging run of "numerical error", its 8 epochs asked for in one train_epochs call: the same error
        // as one epoch at a time gives, from the same epoch and batch.
        auto each_net = kit_network(Optimizer::sgd(1e20f));
        TrainingSession each(each_net, kit.data, TrainConfig{8, 32, true, 1}, kit.backend);
        std::optional<Error> one_by_one;
        for (int e = 0; e < 8 && !one_by_one; ++e) {
            try {
                (void)each.train_epoch();
            } catch (const Error& caught) {
                one_by_one = caught;
            }
        }
        require(one_by_one.has_value(), "8 epochs at learning rate 1e20 all returned finite losses");
        auto net = kit_network(Optimizer::sgd(1e20f));
        TrainingSession together(net, kit.data, TrainConfig{8, 32, true, 1}, kit.backend);
        std::optional<Error> error;
        try {
            (void)together.train_epochs(8);
        } catch (const Error& caught) {
            error = caught;
        }
        require(error.has_value(),
                "train_epochs(8) at learning rate 1e20 returned finite losses, where one epoch at "
                "a time failed with " +
                    error_text(*one_by_one));
        require(error->code() == one_by_one->code() && std::string(error->what()) == one_by_one->what(),
                "in one call the run failed with " + error_text(*error) + ", one epoch at a time with " +
                    error_text(*one_by_one) +
                    "; report the first epoch that diverged, with its own batch, whatever was queued after it");
        expect_error(
            ErrorCode::InvalidState, [&] { (void)together.train_epochs(1); }, {"not usable"},
            "train_epochs after the NumericalError");
        return std::string("the same error as one epoch at a time (") + error->what() + "), then InvalidState";
    });
}

} // namespace brain::conformance
