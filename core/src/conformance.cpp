// The conformance kit. Session-level checks go through the public API (TrainingSession, fit_with_backend), so
// they test what a user meets; checks that need a malformed call or the raw error code go through the plugin's
// table directly, because the public API never makes such calls.
#include "plugin_registry.hpp"
#include "session_desc.hpp"

#include <algorithm>
#include <brain/accelerator.hpp>
#include <brain/conformance.hpp>
#include <brain/dense_math.hpp>
#include <brain/error.hpp>
#include <brain/network.hpp>
#include <brain/plugins.hpp>
#include <brain/training_session.hpp>
#include <cmath>
#include <functional>
#include <initializer_list>
#include <optional>
#include <sstream>

namespace brain {

namespace {

// A check that did not hold; detail says what was expected, what was found and what to do.
struct CheckFailed {
    std::string detail;
};

[[noreturn]] void fail_check(std::string detail) {
    throw CheckFailed{std::move(detail)};
}

void require(bool condition, const std::string& detail) {
    if (!condition) fail_check(detail);
}

std::string error_text(const Error& e) {
    return std::string(to_string(e.code())) + ": " + e.what();
}

std::string code_name(ErrorCode code) {
    return std::string(to_string(code));
}

// Run fn, which must throw brain::Error(code) with a message holding every fragment; returns the message.
std::string expect_error(ErrorCode code, const std::function<void()>& fn,
                         std::initializer_list<const char*> fragments, const std::string& what) {
    try {
        fn();
    } catch (const Error& e) {
        if (e.code() != code) fail_check(what + ": expected " + code_name(code) + ", got " + error_text(e));
        const std::string message = e.what();
        for (const char* fragment : fragments)
            if (message.find(fragment) == std::string::npos)
                fail_check(what + ": the " + code_name(code) + " message should mention \"" + fragment +
                           "\" but says: " + message);
        return message;
    }
    fail_check(what + ": expected " + code_name(code) + " but the call succeeded");
}

// An error read straight from the plugin's table, before the core translates it.
struct RawOutcome {
    bool ok = true;
    int32_t code = 0;
    std::string message;
};

bool is_abi_code(int32_t code) {
    std::size_t count = 0;
    const ErrorCode* codes = all_error_codes(&count);
    return std::any_of(codes, codes + count, [code](ErrorCode c) { return static_cast<int32_t>(c) == code; });
}

RawOutcome take(const brain_plugin_api& api, brain_error* error) {
    RawOutcome out;
    if (!error) return out;
    out.ok = false;
    out.code = api.error_code(error);
    const char* text = api.error_message(error);
    out.message = text ? text : "";
    api.error_destroy(error);
    return out;
}

std::string describe(const RawOutcome& outcome) {
    if (outcome.ok) return "success";
    std::string code = is_abi_code(outcome.code) ? code_name(static_cast<ErrorCode>(outcome.code))
                                                 : "unknown error code " + std::to_string(outcome.code) +
                                                       " (the ABI defines 1 to 19; use one of brain_status)";
    return code + ": " + (outcome.message.empty() ? "(no message)" : outcome.message);
}

// The outcome must be the given error, with a known code and a message the user can act on.
std::string require_raw_error(const RawOutcome& outcome, ErrorCode code, const std::string& what) {
    require(!outcome.ok, what + ": expected " + code_name(code) + " but the call succeeded");
    require(outcome.code == static_cast<int32_t>(code),
            what + ": expected " + code_name(code) + ", got " + describe(outcome));
    require(!outcome.message.empty(), what + ": " + code_name(code) +
                                          " arrived without a message; say what was "
                                          "expected, what was found and what to do");
    return outcome.message;
}

// A smooth regression target from seeded features (the same rows on every backend).
Dataset regression_data(std::size_t rows, std::size_t inputs, std::size_t outputs, std::uint64_t seed) {
    Matrix x(rows, inputs), y(rows, outputs);
    std::uint64_t state = seed * 0x9e3779b97f4a7c15ull + 1;
    const auto next = [&state] {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        return static_cast<float>((state >> 11) * (1.0 / 9007199254740992.0)) * 2.0f - 1.0f;
    };
    for (std::size_t r = 0; r < rows; ++r) {
        float s = 0.0f;
        for (std::size_t c = 0; c < inputs; ++c) {
            x(r, c) = next();
            s += x(r, c) * (c % 3 == 0 ? 1.0f : -0.5f);
        }
        for (std::size_t o = 0; o < outputs; ++o) y(r, o) = std::tanh(s + 0.3f * static_cast<float>(o));
    }
    return Dataset(std::move(x), std::move(y));
}

Network kit_network(const Optimizer& optimizer = Optimizer::adam(0.01f)) {
    return Network::builder()
        .input_size(8)
        .dense(16, Activation::Tanh)
        .dense(12, Activation::Relu)
        .dense(3, Activation::Linear)
        .optimizer(optimizer)
        .seed(11)
        .build();
}

double relative_error(const std::vector<float>& a, const std::vector<float>& b) {
    return a.size() == b.size() ? math::relative_error(a.data(), b.data(), a.size()) : INFINITY;
}

std::string sci(double value) {
    std::ostringstream out;
    out.precision(2);
    out << std::scientific << value;
    return out.str();
}

// Every check, in table order; ones that cannot run are still listed, as failures with the reason.
constexpr const char* k_checks[] = {
    "load",      "resolve",          "devices",         "doctor",          "parity",
    "stats",     "peak in estimate", "checkpoint",      "closed session",  "budget refusal",
    "device 99", "invalid argument", "use after error", "numerical error", "precision",
};

class Kit {
public:
    explicit Kit(ConformanceReport& report) : m_report(report) {}

    // Run one check: fn returns the success detail, or throws CheckFailed / brain::Error.
    template <class Fn>
    bool run(const char* name, Fn&& fn) {
        try {
            add(name, true, fn());
            return true;
        } catch (const CheckFailed& f) {
            add(name, false, f.detail);
        } catch (const Error& e) {
            add(name, false, error_text(e));
        } catch (const std::exception& e) {
            add(name, false, std::string("unexpected exception: ") + e.what());
        }
        return false;
    }

    // List every check not yet in the table as not run.
    void skip_rest(const std::string& reason) {
        for (const char* name : k_checks) {
            const bool present = std::any_of(m_report.checks.begin(), m_report.checks.end(),
                                             [name](const ConformanceCheck& c) { return c.name == name; });
            if (!present) add(name, false, "not run: " + reason);
        }
    }

    void add(const char* name, bool passed, std::string detail) {
        m_report.checks.push_back(ConformanceCheck{name, passed, std::move(detail)});
    }

private:
    ConformanceReport& m_report;
};

void run_kit(ConformanceReport& report, const ConformanceOptions& options,
             const std::function<std::shared_ptr<detail::Plugin>()>& loader) {
    Kit kit(report);
    std::shared_ptr<detail::Plugin> plugin;
    const bool loaded = kit.run("load", [&] {
        plugin = loader();
        const PluginRecord& r = plugin->record();
        report.plugin = r.name;
        report.path = r.path;
        require(r.ok, "the plugin loaded but is not ready: " + r.message);
        require(r.abi_major == BRAIN_ABI_VERSION_MAJOR, "ABI major " + std::to_string(r.abi_major) +
                                                            " differs from the core's " +
                                                            std::to_string(BRAIN_ABI_VERSION_MAJOR));
        require(!r.version.empty(), "brain_plugin_api::version is empty; set it to the plugin's version string");
        require(!r.description.empty(),
                "brain_plugin_api::description is empty; say in one line what the backend is built on");
        return r.name + " " + r.version + ", ABI " + std::to_string(r.abi_major) + "." +
               std::to_string(r.abi_minor) + " (core " + std::to_string(BRAIN_ABI_VERSION_MAJOR) + "." +
               std::to_string(BRAIN_ABI_VERSION_MINOR) + "): " + r.description;
    });
    if (!loaded) return kit.skip_rest("the plugin did not load");
    const brain_plugin_api& api = plugin->api();
    const std::string name = plugin->name();

    const bool resolved = kit.run("resolve", [&] {
        const auto found = detail::PluginRegistry::instance().get(name);
        require(found == plugin, "backend \"" + name + "\" resolves to " + found->record().path.string() +
                                     " on the plugin search path, not to " + report.path.string() +
                                     "; put its directory first in BRAIN_PLUGIN_PATH (brain-conformance does)");
        return "TrainingBackend::plugin(\"" + name + "\", ...) finds " + report.path.string();
    });

    int32_t count = 0;
    const bool has_device = kit.run("devices", [&] {
        const RawOutcome outcome = take(api, api.device_count(&count));
        require(outcome.ok, "device_count failed: " + describe(outcome) +
                                (is_abi_code(outcome.code) ? "; the kit needs a device to test on" : ""));
        require(count >= 1, "device_count reported " + std::to_string(count) +
                                " devices without an error; report why there are none with an error instead");
        require(options.device < count, "device " + std::to_string(options.device) + " was asked for but only " +
                                            std::to_string(count) + " exist; pass --device 0.." +
                                            std::to_string(count - 1));
        return std::to_string(count) + " device(s); testing device " + std::to_string(options.device);
    });
    if (!has_device) return kit.skip_rest("no usable device");

    const std::uint64_t budget_bytes = options.budget_mib * 1024ull * 1024ull;
    kit.run("doctor", [&] {
        brain_device_report raw{};
        raw.struct_size = sizeof(raw);
        const RawOutcome outcome = take(api, api.probe(options.device, budget_bytes, &raw));
        require(outcome.ok, "probe failed: " + describe(outcome));
        raw.name[sizeof(raw.name) - 1] = '\0';
        raw.revision[sizeof(raw.revision) - 1] = '\0';
        raw.notes[sizeof(raw.notes) - 1] = '\0';
        const std::string notes = raw.notes[0] ? std::string(" (notes: ") + raw.notes + ")" : "";
        require(raw.name[0] != '\0', "the report has an empty device name");
        require(raw.total_memory_mib > 0, "total_memory_mib is " + std::to_string(raw.total_memory_mib) +
                                              "; report the device's memory (-1 only when truly unknown)");
        require(raw.gemm_available, "gemm_available is false" + notes);
        require(raw.kernel_available, "kernel_available is false" + notes);
        require(raw.allocation_test, "allocation_test is false under a budget of " +
                                         std::to_string(options.budget_mib) + " MiB" + notes);
        return std::string(raw.name) + " (" + raw.revision + "), " + std::to_string(raw.total_memory_mib) +
               " MiB total, " + (raw.free_memory_mib >= 0 ? std::to_string(raw.free_memory_mib) : "unknown") +
               " MiB free; GEMM, kernel and allocation checks passed";
    });

    if (!resolved) return kit.skip_rest("sessions would load a different file (see resolve)");

    const TrainingBackend backend = TrainingBackend::plugin(name, options.device, options.budget_mib);
    const Dataset data = regression_data(150, 8, 3, 5);
    const TrainConfig config{3, 32, true, 99};
    const std::uint64_t batches_per_epoch = (data.size() + config.batch_size - 1) / config.batch_size;

    std::optional<FitReport> fitted;
    std::optional<Network> trained;
    kit.run("parity", [&] {
        auto reference = kit_network();
        const auto reference_report = reference.fit(data, config);
        auto net = kit_network();
        const auto fit = net.fit_with_backend(data, config, backend);
        fitted = fit;
        trained = net;
        const double error = relative_error(net.parameters(), reference.parameters());
        require(error < 1e-4, "after " + std::to_string(config.epochs) +
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
        return "parameters within " + sci(error) + " of the CPU reference after " + std::to_string(config.epochs) +
               " epochs; epoch losses agree";
    });

    kit.run("stats", [&] {
        require(fitted.has_value(), "not run: the training run failed (see parity)");
        const AcceleratorStats& s = fitted->stats;
        require(s.epochs == config.epochs,
                "epochs is " + std::to_string(s.epochs) + ", expected " + std::to_string(config.epochs));
        require(s.batches == config.epochs * batches_per_epoch,
                "batches is " + std::to_string(s.batches) + ", expected " +
                    std::to_string(config.epochs * batches_per_epoch));
        require(s.setup_time.count() > 0, "setup_time_ns is 0; measure session_open");
        require(s.training_time.count() > 0, "training_time_ns is 0; measure session_train_epoch");
        require(s.peak_allocated_bytes > 0, "peak_allocated_bytes is 0; count the tensors the session allocates");
        require(s.budget_bytes == budget_bytes, "budget_bytes is " + std::to_string(s.budget_bytes) +
                                                    ", but the session was opened with a budget of " +
                                                    std::to_string(budget_bytes) + " bytes");
        require(s.precision == Precision::Float32, "precision is not Float32 although Float32 was asked for");
        return std::to_string(s.epochs) + " epochs, " + std::to_string(s.batches) + " batches, peak " +
               std::to_string(s.peak_allocated_bytes) + " bytes, setup " + std::to_string(s.setup_time.count()) +
               " ns, training " + std::to_string(s.training_time.count()) + " ns";
    });

    kit.run("peak in estimate", [&] {
        require(fitted.has_value() && trained.has_value(), "not run: the training run failed (see parity)");
        const std::uint64_t peak = fitted->stats.peak_allocated_bytes;
        const std::uint64_t estimate = estimate_tensor_memory_bytes(*trained, config.batch_size);
        require(peak <= estimate, "peak_allocated_bytes " + std::to_string(peak) +
                                      " exceeds estimate_tensor_memory_bytes " + std::to_string(estimate) +
                                      "; count only the tensors the estimate lists, or allocate fewer");
        require(peak <= budget_bytes, "peak_allocated_bytes " + std::to_string(peak) + " exceeds the budget of " +
                                          std::to_string(budget_bytes) + " bytes");
        return "peak " + std::to_string(peak) + " <= estimate " + std::to_string(estimate) + " <= budget " +
               std::to_string(budget_bytes) + " bytes";
    });

    kit.run("checkpoint", [&] {
        // Two epochs in one session must equal one epoch, a checkpoint, a new session, and one more.
        auto a = kit_network();
        TrainingSession whole(a, data, config, backend);
        whole.train_epoch();
        whole.train_epoch();
        const auto straight = whole.checkpoint();
        auto b = kit_network();
        {
            TrainingSession first(b, data, config, backend);
            first.train_epoch();
            b.restore_checkpoint(first.checkpoint());
        }
        require(b.epochs_trained() == 1, "a restored checkpoint of one epoch reports " +
                                             std::to_string(b.epochs_trained()) + " epochs trained");
        TrainingSession second(b, data, config, backend);
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

    kit.run("closed session", [&] {
        auto net = kit_network();
        TrainingSession session(net, data, config, backend);
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

    kit.run("budget refusal", [&] {
        // 512x512 weights with gradients and optimizer state need 4 MiB: a 1 MiB budget must be refused at open.
        auto big =
            Network::builder().input_size(512).dense(512, Activation::Relu).dense(3, Activation::Linear).build();
        const Dataset big_data = regression_data(64, 512, 3, 1);
        const auto tight = TrainingBackend::plugin(name, options.device, 1);
        const std::string message = expect_error(
            ErrorCode::BudgetExceeded,
            [&] {
                (void)TrainingSession(big, big_data, TrainConfig{1, 64, true, 1}, tight);
            },
            {"budget", "batch"}, "a session needing 4 MiB under a 1 MiB budget");
        return "BudgetExceeded: " + message;
    });

    kit.run("device 99", [&] {
        const auto missing = TrainingBackend::plugin(name, 99, options.budget_mib);
        const auto net = kit_network();
        expect_error(
            ErrorCode::DeviceNotFound, [&] { (void)TrainingSession(net, data, config, missing); }, {"99"},
            "session_open on device 99");
        brain_device_report raw{};
        raw.struct_size = sizeof(raw);
        const std::string message =
            require_raw_error(take(api, api.probe(99, budget_bytes, &raw)), ErrorCode::DeviceNotFound, "probe(99)");
        return "session_open and probe: DeviceNotFound: " + message;
    });

    kit.run("invalid argument", [&] {
        const auto net = kit_network();
        detail::SessionDesc desc(net, data, config, backend);
        brain_session_desc bad = desc.desc();
        bad.parameter_count -= 1; // the model needs one float more than the caller claims to pass
        brain_session* session = nullptr;
        const RawOutcome open = take(api, api.session_open(&bad, &session));
        if (open.ok && session) api.session_close(session);
        const std::string message = require_raw_error(open, ErrorCode::InvalidArgument,
                                                      "session_open with parameter_count one short of the model's");
        return "InvalidArgument: " + message;
    });

    kit.run("use after error", [&] {
        auto net = kit_network();
        detail::SessionDesc desc(net, data, config, backend);
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

    kit.run("numerical error", [&] {
        // SGD with a learning rate of 1e20 overflows float32 within a few batches.
        auto net = kit_network(Optimizer::sgd(1e20f));
        TrainingSession session(net, data, TrainConfig{8, 32, true, 1}, backend);
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

    kit.run("precision", [&] {
        auto net = kit_network();
        const auto tf32 = backend.with_precision(Precision::Tf32);
        try {
            TrainingSession session(net, data, config, tf32);
            session.train_epoch();
            const auto stats = session.stats();
            require(stats.precision == Precision::Tf32,
                    "TF32 was accepted but the stats report " + std::string(to_string(stats.precision)) +
                        "; never fall back silently: refuse with Unsupported instead");
            return std::string("TF32 accepted and reported in the stats");
        } catch (const Error& e) {
            require(e.code() == ErrorCode::Unsupported, "asking for TF32 failed with " + error_text(e) +
                                                            "; refuse an unsupported precision with "
                                                            "Unsupported");
            require(std::string(e.what()).size() > 0, "Unsupported arrived without a message");
            return "TF32 refused with Unsupported: " + std::string(e.what());
        }
    });
}

} // namespace

ConformanceReport run_conformance(const std::string& name, const ConformanceOptions& options) {
    ConformanceReport report;
    report.plugin = name;
    run_kit(report, options, [&name] { return detail::PluginRegistry::instance().get(name); });
    return report;
}

ConformanceReport run_conformance_file(const std::filesystem::path& plugin_file,
                                       const ConformanceOptions& options) {
    ConformanceReport report;
    report.plugin = detail::plugin_name_from_file(plugin_file);
    report.path = plugin_file;
    run_kit(report, options, [&plugin_file] { return detail::PluginRegistry::instance().get_file(plugin_file); });
    return report;
}

std::string format_conformance_table(const ConformanceReport& report) {
    std::ostringstream out;
    out << "brain conformance kit: plugin \"" << report.plugin << "\"";
    if (!report.path.empty()) out << " (" << report.path.string() << ")";
    out << "\n";
    std::size_t width = 0, passed = 0;
    for (const auto& c : report.checks) width = std::max(width, c.name.size());
    for (const auto& c : report.checks) {
        out << "  " << (c.passed ? "PASS" : "FAIL") << "  " << c.name << std::string(width - c.name.size() + 2, ' ')
            << c.detail << "\n";
        passed += c.passed ? 1 : 0;
    }
    out << passed << " of " << report.checks.size()
        << " checks passed: " << (report.passed() ? "the plugin conforms" : "the plugin does NOT conform") << "\n";
    return out.str();
}

} // namespace brain
