#include "capability_checks.hpp"
#include "host_memory.hpp"
#include "plugin_registry.hpp"
#include "plugin_validation.hpp"
#include "stream_reader.hpp"
#include "training_input.hpp"

#include <algorithm>
#include <brain/accelerator.hpp>
#include <brain/error.hpp>
#include <brain/session_descriptor.hpp>
#include <brain/training_session.hpp>
#include <cmath>
#include <string_view>

namespace brain {

namespace {

// Per-step rates need both the entry and its capability bit (a plugin without a capabilities entry offers no
// feature of ABI 1.2); the capabilities read at load already drop the bit when the entry is missing.
bool offers_step_learning_rates(const detail::Plugin& plugin) {
    return plugin.record().capabilities.offers(BRAIN_FEATURE_STEP_LEARNING_RATES);
}

// The devices a session on `backend` trains on in this process: what its stats may report.
std::uint32_t session_devices(const TrainingBackend& backend) {
    return static_cast<std::uint32_t>(std::max<std::size_t>(1, backend.devices().size()));
}

bool all_equal(std::span<const float> rates, float value) {
    return std::all_of(rates.begin(), rates.end(), [value](float r) { return r == value; });
}

} // namespace

struct TrainingSession::Impl {
    std::shared_ptr<detail::Plugin> plugin;
    brain_session* session = nullptr;
    TrainingBackend backend;
    std::size_t parameter_count = 0;
    std::size_t state_count = 0;
    std::uint64_t first_epoch = 0;
    std::uint64_t epochs_done = 0;
    std::uint64_t batches = 0;    // optimizer steps per epoch
    std::uint32_t run_epochs = 0; // the TrainConfig's epochs: a schedule's default horizon
    float base_rate = 0.0f;       // the network's learning rate
    float rate = 0.0f;            // the rate in effect
    bool step_rates = false;      // the plugin takes per-step rates
    std::optional<LearningRateSchedule> schedule;
    std::string closed_reason = "the session was closed";
    std::unique_ptr<detail::StreamReader> reader; // a streamed data set's rows; outlives the plugin's session

    explicit Impl(const TrainingBackend& b) : backend(b) {}

    // Loads the plugin, checks its capabilities and opens the plugin's session for `desc`.
    // The plugin, the features it must run, and the devices (cuda:all named) before the descriptor is made.
    void resolve(const Network& network) {
        plugin = detail::PluginRegistry::instance().get(backend.plugin_name());
        const PluginRecord& record = plugin->record();
        // Before the plugin sees the session: a feature it does not run is named here, whatever the plugin would
        // say.
        detail::require_capabilities(record.capabilities, backend.plugin_name(), record.abi_minor, network,
                                     backend.precision());
        if (backend.all_devices()) backend = backend.with_devices(detail::every_device(*plugin, backend));
        detail::require_devices(record.capabilities, backend);
    }

    // Opens the plugin's session and starts the rate bookkeeping for `rows` rows an epoch.
    void open(const Network& network, const SessionDescriptor& desc, const TrainConfig& config,
              std::uint64_t rows) {
        const PluginRecord& record = plugin->record();
        BRAIN_CHECK(!desc.desc().batch_source || record.capabilities.offers(BRAIN_FEATURE_BATCH_SOURCE),
                    ErrorCode::Unsupported, "backend \"", backend.plugin_name(),
                    "\" cannot train on a streamed data set: its plugin (ABI ", record.abi_major, ".",
                    record.abi_minor,
                    ") does not take batches from a batch source (ABI 1.2, BRAIN_FEATURE_BATCH_SOURCE). Load the "
                    "data into memory (Dataset), or use a backend that streams (cpu, cuda)");
        parameter_count = network.parameter_count();
        state_count = network.optimizer_state().size();
        first_epoch = network.epochs_trained();
        brain_session* opened = nullptr;
        plugin->call("session_open", plugin->api().session_open, &desc.desc(), &opened);
        BRAIN_CHECK(opened, ErrorCode::PluginFailure, "plugin \"", backend.plugin_name(),
                    "\" reported success from session_open but returned no session");
        session = opened;
        batches = (rows + config.batch_size - 1) / config.batch_size;
        run_epochs = config.epochs;
        base_rate = network.optimizer().learning_rate;
        rate = base_rate;
        step_rates = offers_step_learning_rates(*plugin);
    }
    ~Impl() { close(); }

    void close() noexcept {
        if (session) plugin->release("session_close", plugin->api().session_close, session);
        session = nullptr;
    }

    // "backend "cpu" (its plugin built against ABI 1.2)" for messages.
    std::string who() const {
        const auto& record = plugin->record();
        return "backend \"" + backend.plugin_name() + "\" (its plugin built against ABI " +
               std::to_string(record.abi_major) + "." + std::to_string(record.abi_minor) + ")";
    }

    void require_open() const {
        BRAIN_CHECK(session, ErrorCode::InvalidState, "training session on ", backend.describe(),
                    " is not usable: ", closed_reason, "; open a new TrainingSession");
    }

    // Counts an epoch the plugin trained; a non-finite loss closes the session (`what`: the call, for messages).
    void finish_epoch(float loss, const char* what) {
        if (!std::isfinite(loss)) {
            closed_reason = std::string(what) + " returned a non-finite loss";
            close();
            BRAIN_THROW(ErrorCode::NumericalError, "epoch ", first_epoch + epochs_done, " on ", backend.describe(),
                        " produced a non-finite loss (", loss,
                        "); lower the learning rate or check the data for extreme values");
        }
        ++epochs_done;
    }

    // The error the session entry `entry` ("session_<what>") returned. An exception it let out leaves the device
    // state unknown like an error does: the session closes and PluginFailure is thrown.
    template <class... Params, class... Args>
    brain_error* invoke(const char* entry, brain_error* (*fn)(Params...), Args&&... args) {
        try {
            return detail::guarded_call(plugin->name(), entry, [&] { return fn(std::forward<Args>(args)...); });
        } catch (const Error& e) {
            closed_reason = std::string(short_name(entry)) + " failed (" + std::string(to_string(e.code())) + ")";
            close();
            throw;
        }
    }

    // Calls the session entry `entry` and throws what it reports, closing the session (see take).
    template <class... Params, class... Args>
    void call(const char* entry, brain_error* (*fn)(Params...), Args&&... args) {
        take(invoke(entry, fn, std::forward<Args>(args)...), short_name(entry));
    }

    // "train_epoch" for "session_train_epoch": the name messages use.
    static const char* short_name(const char* entry) noexcept {
        constexpr std::string_view prefix = "session_";
        return std::string_view(entry).starts_with(prefix) ? entry + prefix.size() : entry;
    }

    // A failed call leaves the device state unknown, so the session closes; the last checkpoint stays valid.
    void take(brain_error* error, const char* what) {
        if (!error) return;
        try {
            plugin->check(error);
        } catch (const Error& e) {
            closed_reason = std::string(what) + " failed (" + std::string(to_string(e.code())) + ")";
            close();
            throw;
        }
    }
};

TrainingSession::TrainingSession(const Network& network, const Dataset& data, const TrainConfig& config,
                                 const TrainingBackend& backend)
    : m_impl(std::make_unique<Impl>(backend)) {
    detail::validate_training_input(network, data, config);
    // Host memory is checked from the shapes before anything is allocated: the standardised copy of the features
    // this core makes and, on the CPU, everything its session allocates. A device budget is the plugin's to check.
    detail::require_host_memory(
        training_host_memory_bytes(network.layers(), network.optimizer(), data.size(), config.batch_size,
                                   data.standardization() || network.standardization(), backend, 0),
        "the training session on " + backend.describe(),
        "lower the batch size, use a smaller network or data set, or free memory");
    m_impl->resolve(network);
    SessionDescriptor desc(network, data, config, m_impl->backend);
    m_impl->open(network, desc, config, data.size());
}

TrainingSession::TrainingSession(const Network& network, const StreamingDataset& data, const TrainConfig& config,
                                 const TrainingBackend& backend)
    : m_impl(std::make_unique<Impl>(backend)) {
    StreamingDataset stream = data;
    if (!stream.standardization() && network.standardization())
        stream.set_standardization(network.standardization());
    // Host memory: the session's own tensors (a CPU session holds batches, not the data set) and the reader's
    // windows.
    detail::require_host_memory(
        detail::saturating_add(training_host_memory_bytes(network.layers(), network.optimizer(), config.batch_size,
                                                          config.batch_size, false, backend, 0),
                               stream.buffer_bytes()),
        "the streamed training session on " + backend.describe(),
        "lower StreamOptions::chunk_rows or window_chunks, the batch size, or use a smaller network");
    m_impl->reader = std::make_unique<detail::StreamReader>(std::move(stream), config.seed.value_or(network.seed()),
                                                            config.shuffle);
    m_impl->reader->require_targets_of(network.loss());
    m_impl->resolve(network);
    SessionDescriptor desc(network, *m_impl->reader->source(), config, m_impl->backend);
    m_impl->open(network, desc, config, data.size());
}

TrainingSession::~TrainingSession() = default;
TrainingSession::TrainingSession(TrainingSession&&) noexcept = default;
TrainingSession& TrainingSession::operator=(TrainingSession&&) noexcept = default;

float TrainingSession::train_epoch() {
    BRAIN_CHECK(m_impl, ErrorCode::InvalidState, "training session was moved from; use the moved-to session");
    m_impl->require_open();
    if (m_impl->schedule) apply_rates(m_impl->schedule->next_epoch_rates());
    float loss = 0.0f;
    m_impl->call("session_train_epoch", m_impl->plugin->api().session_train_epoch, m_impl->session, &loss);
    m_impl->finish_epoch(loss, "train_epoch");
    if (m_impl->schedule) m_impl->schedule->finish_epoch();
    return loss;
}

std::vector<float> TrainingSession::train_epochs(std::uint64_t count) {
    BRAIN_CHECK(m_impl, ErrorCode::InvalidState, "training session was moved from; use the moved-to session");
    BRAIN_CHECK_ARG(count > 0, "train_epochs: asked for 0 epochs; ask for 1 or more");
    Impl& impl = *m_impl;
    impl.require_open();
    std::vector<float> losses;
    const auto entry = impl.plugin->api().session_train_epochs;
    if (impl.schedule || !entry) {
        // A schedule hands the plugin each epoch's rates before it; a plugin before ABI 1.4 trains one a call.
        for (std::uint64_t i = 0; i < count; ++i) losses.push_back(train_epoch());
        return losses;
    }
    // In parts of at most 1,024 epochs, so that the buffer the plugin writes to stays small whatever the count.
    constexpr std::uint64_t part_epochs = 1024;
    std::vector<float> part(static_cast<std::size_t>(std::min(count, part_epochs)));
    while (losses.size() < count) {
        const std::uint64_t asked = std::min<std::uint64_t>(count - losses.size(), part_epochs);
        std::uint64_t trained = 0;
        brain_error* error = impl.invoke("session_train_epochs", entry, impl.session, asked, part.data(), &trained);
        // The epochs the plugin says it trained count, also when it then failed; a count past what was asked for is
        // not believed.
        trained = std::min(trained, asked);
        for (std::uint64_t i = 0; i < trained; ++i) {
            if (error && !std::isfinite(part[i])) break; // the plugin's own error says more
            impl.finish_epoch(part[i], "train_epochs");
            losses.push_back(part[i]);
        }
        impl.take(error, "train_epochs");
        if (trained < asked)
            BRAIN_THROW(ErrorCode::PluginFailure, "plugin \"", impl.backend.plugin_name(), "\" trained ", trained,
                        " of the ", asked, " epochs train_epochs asked for and reported no error");
    }
    return losses;
}

void TrainingSession::apply_rates(std::span<const float> rates) {
    Impl& impl = *m_impl;
    if (all_equal(rates, impl.rate)) return; // nothing changes: no call, nothing moved
    if (impl.step_rates) {
        set_step_learning_rates(rates);
        return;
    }
    BRAIN_CHECK(
        all_equal(rates, rates.front()), ErrorCode::Unsupported, impl.who(),
        " cannot follow the learning-rate schedule ", impl.schedule->to_string(),
        ": its rate changes within epoch ", impl.first_epoch + impl.epochs_done,
        ", which needs per-step rates (session_set_step_learning_rates, ABI 1.2, capability "
        "STEP_LEARNING_RATES); rebuild the plugin against this SDK or use a schedule that is constant within "
        "each epoch (constant, step, exponential, plateau)");
    set_learning_rate(rates.front());
}

void TrainingSession::set_step_learning_rates(std::span<const float> rates) {
    BRAIN_CHECK(m_impl, ErrorCode::InvalidState, "training session was moved from; use the moved-to session");
    Impl& impl = *m_impl;
    BRAIN_CHECK_ARG(rates.size() == impl.batches, "set_step_learning_rates: expected ", impl.batches,
                    " rates (one per batch of the next epoch), found ", rates.size());
    for (std::size_t i = 0; i < rates.size(); ++i)
        BRAIN_CHECK_ARG(std::isfinite(rates[i]) && rates[i] > 0.0f, "set_step_learning_rates: rate ", i, " is ",
                        rates[i], "; every rate must be a finite number above 0");
    impl.require_open();
    BRAIN_CHECK(impl.step_rates, ErrorCode::Unsupported, impl.who(),
                " does not take per-step learning rates (session_set_step_learning_rates arrived in ABI 1.2 with "
                "the capability STEP_LEARNING_RATES); rebuild the plugin against this SDK, or set one rate per "
                "epoch with set_learning_rate");
    impl.call("session_set_step_learning_rates", impl.plugin->api().session_set_step_learning_rates, impl.session,
              rates.data(), static_cast<std::uint64_t>(rates.size()));
    impl.rate = rates.back();
}

bool TrainingSession::supports_step_learning_rates() const noexcept {
    return m_impl && m_impl->step_rates;
}

void TrainingSession::set_schedule(LearningRateSchedule schedule) {
    BRAIN_CHECK(m_impl, ErrorCode::InvalidState, "training session was moved from; use the moved-to session");
    Impl& impl = *m_impl;
    impl.require_open();
    schedule.start(impl.base_rate, impl.batches, impl.run_epochs);
    const bool fixed = schedule.kind() == LearningRateSchedule::Kind::Constant &&
                       schedule.warmup_epochs() == 0.0f && schedule.state().base_rate == impl.rate;
    if (!fixed && !impl.step_rates) {
        BRAIN_CHECK(
            !schedule.varies_within_epoch(), ErrorCode::Unsupported, impl.who(),
            " cannot follow the learning-rate schedule ", schedule.to_string(),
            ": its rate changes from step to step within an epoch (", impl.batches,
            " steps), which needs per-step rates (session_set_step_learning_rates, ABI 1.2, capability "
            "STEP_LEARNING_RATES) that this plugin does not offer; rebuild the plugin against this SDK or use "
            "a schedule that is constant within each epoch (constant, step, exponential, plateau)");
        BRAIN_CHECK(impl.plugin->api().session_set_learning_rate, ErrorCode::Unsupported, impl.who(),
                    " cannot follow the learning-rate schedule ", schedule.to_string(),
                    ": it cannot change the learning rate within a session at all (session_set_learning_rate "
                    "arrived in ABI 1.1); rebuild the plugin against this SDK, or train at a fixed rate");
    }
    impl.schedule = std::move(schedule);
}

const std::optional<LearningRateSchedule>& TrainingSession::schedule() const noexcept {
    static const std::optional<LearningRateSchedule> none;
    return m_impl ? m_impl->schedule : none;
}

void TrainingSession::report_metric(double value) {
    BRAIN_CHECK(m_impl, ErrorCode::InvalidState, "training session was moved from; use the moved-to session");
    if (m_impl->schedule) m_impl->schedule->observe(value);
}

float TrainingSession::learning_rate() const noexcept {
    return m_impl ? m_impl->rate : 0.0f;
}

std::uint64_t TrainingSession::batches_per_epoch() const noexcept {
    return m_impl ? m_impl->batches : 0;
}

void TrainingSession::set_learning_rate(float learning_rate) {
    BRAIN_CHECK(m_impl, ErrorCode::InvalidState, "training session was moved from; use the moved-to session");
    BRAIN_CHECK_ARG(std::isfinite(learning_rate) && learning_rate > 0.0f, "learning rate ", learning_rate,
                    " is not a finite number above 0");
    m_impl->require_open();
    const auto& api = m_impl->plugin->api();
    const auto& record = m_impl->plugin->record();
    BRAIN_CHECK(api.session_set_learning_rate, ErrorCode::Unsupported, "backend \"", m_impl->backend.plugin_name(),
                "\" cannot change the learning rate within a session: its plugin was built against ABI ",
                record.abi_major, ".", record.abi_minor,
                " (session_set_learning_rate arrived in ABI 1.1) or does not offer it; rebuild the plugin against "
                "this SDK, or open a new session from a network built with the new rate");
    m_impl->call("session_set_learning_rate", api.session_set_learning_rate, m_impl->session, learning_rate);
    m_impl->rate = learning_rate;
}

Checkpoint TrainingSession::checkpoint() {
    BRAIN_CHECK(m_impl, ErrorCode::InvalidState, "training session was moved from; use the moved-to session");
    m_impl->require_open();
    Checkpoint cp;
    cp.parameters.resize(m_impl->parameter_count);
    cp.optimizer_state.resize(m_impl->state_count);
    m_impl->call("session_checkpoint", m_impl->plugin->api().session_checkpoint, m_impl->session,
                 cp.parameters.data(), static_cast<std::uint64_t>(cp.parameters.size()), cp.optimizer_state.data(),
                 static_cast<std::uint64_t>(cp.optimizer_state.size()), &cp.optimizer_step);
    cp.epochs_trained = m_impl->first_epoch + m_impl->epochs_done;
    return cp;
}

AcceleratorStats TrainingSession::stats() const {
    BRAIN_CHECK(m_impl, ErrorCode::InvalidState, "training session was moved from; use the moved-to session");
    m_impl->require_open();
    brain_session_stats raw{};
    raw.struct_size = sizeof(raw);
    m_impl->plugin->call("session_stats", m_impl->plugin->api().session_stats,
                         static_cast<const brain_session*>(m_impl->session), &raw);
    return detail::stats_from_plugin(raw, m_impl->backend.plugin_name(), session_devices(m_impl->backend));
}

std::vector<AcceleratorStats> TrainingSession::device_stats() const {
    BRAIN_CHECK(m_impl, ErrorCode::InvalidState, "training session was moved from; use the moved-to session");
    m_impl->require_open();
    const auto& api = m_impl->plugin->api();
    const AcceleratorStats all = stats();
    if (!api.session_device_stats) return {all};
    // all.devices is at most the session's own device count (stats_from_plugin refuses more): the loop is bounded.
    const std::uint32_t devices = session_devices(m_impl->backend);
    std::vector<AcceleratorStats> out;
    for (std::uint32_t i = 0; i < all.devices; ++i) {
        brain_session_stats raw{};
        raw.struct_size = sizeof(raw);
        m_impl->plugin->call("session_device_stats", api.session_device_stats,
                             static_cast<const brain_session*>(m_impl->session), i, &raw);
        out.push_back(detail::stats_from_plugin(raw, m_impl->backend.plugin_name(), devices));
    }
    return out;
}

const TrainingBackend& TrainingSession::backend() const {
    BRAIN_CHECK(m_impl, ErrorCode::InvalidState, "training session was moved from; use the moved-to session");
    return m_impl->backend;
}

void TrainingSession::close() noexcept {
    if (m_impl) m_impl->close();
}

bool TrainingSession::is_open() const noexcept {
    return m_impl && m_impl->session;
}

} // namespace brain
