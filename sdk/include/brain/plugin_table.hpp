// Optional header-only helper for plugin authors: the plugin's function table, filled from a C++ backend class.
// Every entry is wrapped in sdk::guard (no exception crosses the ABI), null pointers from the caller are refused
// with INVALID_ARGUMENT, the error entries and versions are set, and an optional entry stays null when the class
// does not provide it or the ABI header in use predates it. A plugin's whole entry point becomes:
//
//   extern "C" BRAIN_PLUGIN_EXPORT const brain_plugin_api* brain_plugin_get_api(void) {
//       return brain::sdk::plugin_table<MyBackend>();
//   }
#pragma once

#include <atomic>
#include <brain/backend_capabilities.hpp>
#include <brain/plugin_abi.h>
#include <brain/plugin_sdk.hpp>
#include <concepts>
#include <cstddef>
#include <cstdint>
#include <string>

namespace brain::sdk {

// One training session of a backend: opened from a descriptor (the budget checked before anything is allocated),
// then used by one thread at a time. Session::set_learning_rate(float) is optional (ABI 1.1).
template <class S>
concept BackendSession = std::constructible_from<S, const brain_session_desc&> &&
    requires(S& session, const S& view, float* floats, std::uint64_t count, std::uint64_t* step) {
    { session.train_epoch() } -> std::convertible_to<float>;
    session.checkpoint(floats, count, floats, count, step);
    { view.stats() } -> std::same_as<brain_session_stats>;
};

// A session that can change its learning rate: the optional ABI 1.1 entry session_set_learning_rate.
template <class S>
concept SchedulableSession = requires(S& session) {
    session.set_learning_rate(0.1f);
};

#if BRAIN_ABI_VERSION_MINOR >= 2 // the entries of ABI 1.2, absent when built against an older header
// A session that takes per-step learning rates: the optional ABI 1.2 entry session_set_step_learning_rates.
template <class S>
concept StepScheduledSession = requires(S& session, const float* rates, std::uint64_t count) {
    session.set_step_learning_rates(rates, count);
};

// A data-parallel session that reports each device: the optional ABI 1.2 entry session_device_stats.
template <class S>
concept MultiDeviceSession = requires(const S& session, std::uint32_t index) {
    { session.device_stats(index) } -> std::same_as<brain_session_stats>;
};

// A backend that states what it runs: static brain_capabilities capabilities() (ABI 1.2). A backend without it is
// described by the ABI 1.0 set; either way the feature bits of the entries the table fills are added.
template <class B>
concept DescribesCapabilities = requires {
    { B::capabilities() } -> std::same_as<brain_capabilities>;
};

// A backend that predicts without a session: B::Predictor, opened from a descriptor, whose
// run(inputs, rows, outputs) maps standardised rows to outputs (ABI 1.2 predictor_* entries).
template <class B>
concept PredictingBackend = std::constructible_from<typename B::Predictor, const brain_predictor_desc&> &&
    requires(typename B::Predictor& predictor, const float* inputs, std::uint64_t rows, float* outputs) {
    predictor.run(inputs, rows, outputs);
};
#endif

#if BRAIN_ABI_VERSION_MINOR >= 3 // the entries of ABI 1.3, absent when built against an older header
// A backend whose devices read page-locked host memory directly: static pin_host_memory(memory, bytes) and
// unpin_host_memory(memory) (ABI 1.3 host_memory_pin / host_memory_unpin).
template <class B>
concept PinsHostMemory = requires(void* memory, std::uint64_t bytes) {
    B::pin_host_memory(memory, bytes);
    B::unpin_host_memory(memory);
};
#endif

#if BRAIN_ABI_VERSION_MINOR >= 4 // the entries of ABI 1.4, absent when built against an older header
// A session that trains several epochs in one call: train_epochs(count, losses, trained), which writes each epoch's
// loss to losses[trained++] as it completes (ABI 1.4 session_train_epochs; a throw reports the epochs so far).
template <class S>
concept MultiEpochSession = requires(S& session, std::uint64_t count, float* losses, std::uint64_t& trained) {
    session.train_epochs(count, losses, trained);
};
#endif

// A backend B whose description is a static function returning std::string (called once).
template <class B>
concept DescribedByFunction = requires {
    { B::description() } -> std::convertible_to<std::string>;
};

// A backend B whose description is a static const char*.
template <class B>
concept DescribedByString = requires {
    { B::description } -> std::convertible_to<const char*>;
};

// A backend B with a description in either form.
template <class B>
concept Described = DescribedByFunction<B> || DescribedByString<B>;

// The static members of a backend B besides its description and its Session.
template <class B>
concept BackendStatics = requires(std::int32_t device, std::uint64_t budget) {
    { B::name } -> std::convertible_to<const char*>;
    { B::version } -> std::convertible_to<const char*>;
    { B::device_count() } -> std::convertible_to<std::int32_t>;
    { B::probe(device, budget) } -> std::same_as<brain_device_report>;
};

// A backend class for plugin_table(). It provides, as static members:
//   name, version       const char*: the <name> of libbrain_<name>.so, and the plugin's version string
//   description         a const char*, or a function returning std::string (called once)
//   device_count()      usable devices; throw Failure saying why there are none
//   probe(device, budget_bytes)  a brain_device_report (struct_size is set for you)
//   Session             a BackendSession
// and optionally initialize(const brain_host_api&), run once at load (the host is kept for sdk::log).
template <class B>
concept Backend = BackendStatics<B> && Described<B> && BackendSession<typename B::Session>;

namespace detail {

// The host table initialize received (one per plugin: the SDK's symbols are never exported).
inline std::atomic<const brain_host_api*> g_host{nullptr};

// The C++ session behind an ABI handle: the handle is the session's own address, so no wrapper is allocated.
template <class Session, class Handle>
Session& session_of(Handle* handle, const char* entry) {
    if (!handle) throw Failure(BRAIN_ERR_INVALID_ARGUMENT, std::string(entry) + " was given a null session");
    return *reinterpret_cast<Session*>(handle);
}

// *pointer, for an output parameter the caller must provide.
template <class T>
T& output(T* pointer, const char* entry) {
    if (!pointer)
        throw Failure(BRAIN_ERR_INVALID_ARGUMENT, std::string(entry) + " was given a null output pointer");
    return *pointer;
}

// The table's entries for backend B, each a guarded forward to B or B::Session.
template <class B>
struct Entries {
    using Session = typename B::Session;

    static brain_error* initialize(const brain_host_api* host) noexcept {
        return guard([&] {
            if (!host) throw Failure(BRAIN_ERR_INVALID_ARGUMENT, "initialize was given a null host table");
            g_host.store(host);
            if constexpr (requires { B::initialize(*host); }) B::initialize(*host);
        });
    }
    static brain_error* device_count(std::int32_t* out_count) noexcept {
        return guard([&] {
            std::int32_t& count = output(out_count, "device_count");
            count = 0; // what the caller reads if the backend says why there are none
            count = B::device_count();
        });
    }
    static brain_error* probe(std::int32_t device, std::uint64_t budget, brain_device_report* out) noexcept {
        return guard([&] {
            output(out, "probe");
            brain_device_report report = B::probe(device, budget);
            report.struct_size = sizeof(report);
            write_struct(out, report);
        });
    }
    static brain_error* session_open(const brain_session_desc* desc, brain_session** out_session) noexcept {
        return guard([&] {
            brain_session*& handle = output(out_session, "session_open");
            handle = nullptr;
            const brain_session_desc copy = read_struct(desc);
            handle = reinterpret_cast<brain_session*>(new Session(copy));
        });
    }
    static brain_error* session_train_epoch(brain_session* session, float* out_loss) noexcept {
        return guard([&] {
            Session& s = session_of<Session>(session, "session_train_epoch");
            output(out_loss, "session_train_epoch") = s.train_epoch();
        });
    }
    static brain_error* session_checkpoint(brain_session* session, float* parameters, std::uint64_t parameter_count,
                                           float* state, std::uint64_t state_count,
                                           std::uint64_t* out_step) noexcept {
        return guard([&] {
            session_of<Session>(session, "session_checkpoint")
                .checkpoint(parameters, parameter_count, state, state_count, out_step);
        });
    }
    static brain_error* session_stats(const brain_session* session, brain_session_stats* out) noexcept {
        return guard([&] {
            output(out, "session_stats");
            write_struct(out, session_of<const Session>(session, "session_stats").stats());
        });
    }
    static void session_close(brain_session* session) noexcept { delete reinterpret_cast<Session*>(session); }
    static brain_error* session_set_learning_rate(brain_session* session, float learning_rate) noexcept {
        return guard(
            [&] { session_of<Session>(session, "session_set_learning_rate").set_learning_rate(learning_rate); });
    }
#if BRAIN_ABI_VERSION_MINOR >= 2 // the entries of ABI 1.2, absent when built against an older header
    static brain_error* capabilities(brain_capabilities* out) noexcept {
        return guard([&] {
            output(out, "capabilities");
            brain_capabilities caps = abi_1_0_capabilities();
            if constexpr (DescribesCapabilities<B>) caps = B::capabilities();
            caps.struct_size = sizeof(caps);
            caps.notes[sizeof(caps.notes) - 1] = '\0';
            if (caps.max_devices == 0) caps.max_devices = 1;
            // The features whose entries this table fills, so that the bits and the entries never disagree.
            if constexpr (StepScheduledSession<Session>) caps.features |= BRAIN_FEATURE_STEP_LEARNING_RATES;
            if constexpr (PredictingBackend<B>) caps.features |= BRAIN_FEATURE_PREDICT;
            write_struct(out, caps);
        });
    }
    static brain_error* session_set_step_learning_rates(brain_session* session, const float* rates,
                                                        std::uint64_t count) noexcept {
        return guard([&] {
            Session& s = session_of<Session>(session, "session_set_step_learning_rates");
            if (!rates && count > 0)
                throw Failure(BRAIN_ERR_INVALID_ARGUMENT, "session_set_step_learning_rates was given no rates");
            s.set_step_learning_rates(rates, count);
        });
    }
    static brain_error* session_device_stats(const brain_session* session, std::uint32_t index,
                                             brain_session_stats* out) noexcept {
        return guard([&] {
            output(out, "session_device_stats");
            write_struct(out, session_of<const Session>(session, "session_device_stats").device_stats(index));
        });
    }
#endif
#if BRAIN_ABI_VERSION_MINOR >= 4 // the entries of ABI 1.4, absent when built against an older header
    static brain_error* session_train_epochs(brain_session* session, std::uint64_t count, float* out_losses,
                                             std::uint64_t* out_trained) noexcept {
        return guard([&] {
            std::uint64_t& trained = output(out_trained, "session_train_epochs");
            trained = 0; // what the caller reads when the session fails before an epoch completes
            Session& s = session_of<Session>(session, "session_train_epochs");
            if (count == 0)
                throw Failure(BRAIN_ERR_INVALID_ARGUMENT,
                              "session_train_epochs was asked for 0 epochs; ask for 1 or more");
            s.train_epochs(count, &output(out_losses, "session_train_epochs"), trained);
        });
    }
#endif
};

#if BRAIN_ABI_VERSION_MINOR >= 2 // the entries of ABI 1.2, absent when built against an older header
// The predictor entries for a backend B with a Predictor class.
template <class B>
struct PredictorEntries {
    using Predictor = typename B::Predictor;

    static brain_error* open(const brain_predictor_desc* desc, brain_predictor** out) noexcept {
        return guard([&] {
            brain_predictor*& handle = output(out, "predictor_open");
            handle = nullptr;
            const brain_predictor_desc copy = read_struct(desc);
            handle = reinterpret_cast<brain_predictor*>(new Predictor(copy));
        });
    }
    static brain_error* run(brain_predictor* predictor, const float* inputs, std::uint64_t rows,
                            float* outputs) noexcept {
        return guard([&] {
            if (!predictor) throw Failure(BRAIN_ERR_INVALID_ARGUMENT, "predictor_run was given a null predictor");
            if (rows > 0 && (!inputs || !outputs))
                throw Failure(BRAIN_ERR_INVALID_ARGUMENT, "predictor_run was given a null buffer");
            reinterpret_cast<Predictor*>(predictor)->run(inputs, rows, outputs);
        });
    }
    static void close(brain_predictor* predictor) noexcept { delete reinterpret_cast<Predictor*>(predictor); }
};
#endif

#if BRAIN_ABI_VERSION_MINOR >= 3 // the entries of ABI 1.3, absent when built against an older header
// The host-memory entries for a backend B that pins host memory.
template <class B>
struct PinEntries {
    static brain_error* pin(void* memory, std::uint64_t bytes) noexcept {
        return guard([&] {
            if (!memory || bytes == 0)
                throw Failure(BRAIN_ERR_INVALID_ARGUMENT,
                              "host_memory_pin was given no memory (a null address or zero bytes)");
            B::pin_host_memory(memory, bytes);
        });
    }
    static void unpin(void* memory) noexcept {
        if (!memory) return;
        try {
            B::unpin_host_memory(memory);
        } catch (...) {
            // host_memory_unpin never fails: whatever the backend met, the caller's memory is the caller's again.
        }
    }
};
#endif

// B's description as a string, whichever form B gives it in.
template <class B>
std::string description_of() {
    if constexpr (DescribedByFunction<B>)
        return B::description();
    else
        return B::description;
}

// The entries appended after ABI 1.0, each set only when the header compiled against has it (a plugin built
// against an older SDK keeps its smaller table) and the backend provides it.
template <class B, class Table>
void fill_growable_entries(Table& table) {
    using Session = typename B::Session;
    if constexpr (requires { table.session_set_learning_rate; } && SchedulableSession<Session>)
        table.session_set_learning_rate = &Entries<B>::session_set_learning_rate;
#if BRAIN_ABI_VERSION_MINOR >= 2 // the entries of ABI 1.2, absent when built against an older header
    if constexpr (requires { table.capabilities; }) table.capabilities = &Entries<B>::capabilities;
    if constexpr (requires { table.session_set_step_learning_rates; } && StepScheduledSession<Session>)
        table.session_set_step_learning_rates = &Entries<B>::session_set_step_learning_rates;
    if constexpr (requires { table.session_device_stats; } && MultiDeviceSession<Session>)
        table.session_device_stats = &Entries<B>::session_device_stats;
    if constexpr (requires { table.predictor_open; }) {
        if constexpr (PredictingBackend<B>) {
            table.predictor_open = &PredictorEntries<B>::open;
            table.predictor_run = &PredictorEntries<B>::run;
            table.predictor_close = &PredictorEntries<B>::close;
        }
    }
#endif
#if BRAIN_ABI_VERSION_MINOR >= 3 // the entries of ABI 1.3, absent when built against an older header
    if constexpr (requires { table.host_memory_pin; } && PinsHostMemory<B>) {
        table.host_memory_pin = &PinEntries<B>::pin;
        table.host_memory_unpin = &PinEntries<B>::unpin;
    }
#endif
#if BRAIN_ABI_VERSION_MINOR >= 4 // the entries of ABI 1.4, absent when built against an older header
    if constexpr (requires { table.session_train_epochs; } && MultiEpochSession<Session>)
        table.session_train_epochs = &Entries<B>::session_train_epochs;
#endif
}

} // namespace detail

// The plugin's static function table for backend B; nullptr (the ABI's "cannot run at all") when building it
// failed, e.g. when B's description threw.
template <Backend B>
const brain_plugin_api* plugin_table() noexcept {
    try {
        using E = detail::Entries<B>;
        static const std::string description = detail::description_of<B>();
        static const brain_plugin_api table = [] {
            brain_plugin_api t{};
            t.struct_size = sizeof(t);
            t.abi_major = BRAIN_ABI_VERSION_MAJOR;
            t.abi_minor = BRAIN_ABI_VERSION_MINOR;
            t.name = B::name;
            t.version = B::version;
            t.description = description.c_str();
            t.error_code = &error_code;
            t.error_message = &error_message;
            t.error_destroy = &error_destroy;
            t.initialize = &E::initialize;
            t.device_count = &E::device_count;
            t.probe = &E::probe;
            t.session_open = &E::session_open;
            t.session_train_epoch = &E::session_train_epoch;
            t.session_checkpoint = &E::session_checkpoint;
            t.session_stats = &E::session_stats;
            t.session_close = &E::session_close;
            detail::fill_growable_entries<B>(t);
            return t;
        }();
        return &table;
    } catch (...) {
        return nullptr;
    }
}

// The core's host table given to initialize; nullptr before that.
inline const brain_host_api* host() noexcept {
    return detail::g_host.load();
}

// Log through the core (level 0 trace .. 5 critical); a no-op before initialize or when the core has no log.
inline void log(std::int32_t level, const std::string& message) noexcept {
    const brain_host_api* h = host();
    if (h && h->struct_size >= offsetof(brain_host_api, log) + sizeof(h->log) && h->log)
        h->log(level, message.c_str());
}

} // namespace brain::sdk
