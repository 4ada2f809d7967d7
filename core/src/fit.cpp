// Network::fit and fit_with_backend: the epoch loop over a TrainingSession, with its schedule, validation,
// callbacks, resumable checkpoints and resume. The weights come back from the backend only when something needs
// them (validation, a callback asking for the network, the end of the run), at most once per epoch.
#include "training_input.hpp"

#include <algorithm>
#include <brain/callbacks.hpp>
#include <brain/error.hpp>
#include <brain/network.hpp>
#include <brain/training_session.hpp>

namespace brain {

namespace detail {

// One run of fit: the session, the epoch's figures the callbacks see, and what the run hands back.
class FitRun {
public:
    FitRun(Network& trained, const Dataset& data, const TrainConfig& config, const TrainingBackend& backend,
           const FitOptions& options)
        : m_trained(trained), m_data(data), m_config(config), m_options(options),
          m_session(trained, data, config, backend), m_first(trained.epochs_trained()), m_epoch(m_first),
          m_last(m_first + config.epochs) {}

    FitReport run();

    // The FitContext's view.
    std::uint64_t epoch() const noexcept { return m_epoch; }
    std::uint64_t last_epoch() const noexcept { return m_last; }
    float loss() const noexcept { return m_loss; }
    // Where the run is: callbacks' on_train_begin, the epochs, or on_train_end.
    enum class Phase { Begin, Epochs, End };
    const std::optional<Evaluation>& validation() const noexcept { return m_validation; }
    float learning_rate() const noexcept { return m_session.learning_rate(); }
    std::optional<double> monitored(std::string_view name) const;
    std::vector<std::string> monitors() const;
    std::string default_monitor() const { return m_options.validation ? "val_loss" : "loss"; }
    const Network& weights();
    void stop(std::string reason) {
        // Every epoch has run by on_train_end: there is nothing left to stop.
        if (m_phase == Phase::End && m_epoch == m_last) return;
        if (m_stop_reason.empty())
            m_stop_reason = reason.empty() ? "a callback stopped training" : std::move(reason);
    }
    bool stopping() const noexcept { return !m_stop_reason.empty(); }
    void restore_weights(const Checkpoint& weights, std::uint64_t epoch) {
        // Checked now, not when the run ends, so that the error names the call that made it.
        BRAIN_CHECK_ARG(weights.parameters.size() == m_trained.parameter_count(),
                        "FitContext::restore_weights: the weights hold ", weights.parameters.size(),
                        " parameters, this network ", m_trained.parameter_count(),
                        "; give a checkpoint of this run's network");
        BRAIN_CHECK_ARG(epoch <= m_epoch, "FitContext::restore_weights: epoch ", epoch,
                        " has not been trained yet (the run is at epoch ", m_epoch,
                        "); give the epoch the weights were taken at");
        m_restore = weights;
        m_restore_epoch = epoch;
    }
    void save_checkpoint(std::filesystem::path path, std::vector<std::filesystem::path> inputs) {
        // Within the epochs it waits for every callback to see the epoch; before or after them nothing is pending.
        if (m_phase == Phase::Epochs)
            m_pending.emplace_back(std::move(path), std::move(inputs));
        else
            resumable().save(path, inputs);
    }

private:
    TrainingCheckpoint resumable();
    std::uint64_t fingerprint();

    Network& m_trained;
    const Dataset& m_data;
    const TrainConfig& m_config;
    const FitOptions& m_options;
    TrainingSession m_session;
    FitReport m_report;
    std::uint64_t m_first;
    std::uint64_t m_epoch;
    std::uint64_t m_last;
    float m_loss = 0.0f;
    std::optional<Evaluation> m_validation;
    std::optional<Network> m_snapshot; // the weights of epoch m_snapshot_epoch
    std::uint64_t m_snapshot_epoch = 0;
    std::string m_stop_reason;
    std::optional<Checkpoint> m_restore;
    std::uint64_t m_restore_epoch = 0;
    std::vector<std::pair<std::filesystem::path, std::vector<std::filesystem::path>>> m_pending;
    std::optional<std::uint64_t> m_fingerprint;
    Phase m_phase = Phase::Begin;
};

std::vector<std::string> FitRun::monitors() const {
    std::vector<std::string> names{"loss"};
    if (!m_options.validation) return names;
    names.push_back("val_loss");
    if (m_trained.is_classifier()) {
        names.push_back("val_accuracy");
        const bool single_label =
            m_trained.output_size() == 1 || m_trained.layers().back().activation == Activation::Softmax;
        if (single_label)
            for (const char* n : {"val_macro_f1", "val_weighted_f1", "val_macro_precision", "val_macro_recall"})
                names.push_back(n);
    } else {
        for (const char* n : {"val_rmse", "val_mae", "val_r2"}) names.push_back(n);
    }
    return names;
}

std::optional<double> FitRun::monitored(std::string_view name) const {
    if (m_epoch == m_first) return std::nullopt; // no epoch of this run yet
    if (name == "loss") return m_loss;
    if (!name.starts_with("val_") || !m_validation) return std::nullopt;
    return m_validation->value(name.substr(4));
}

const Network& FitRun::weights() {
    // Before the first epoch of this run the network is the one the session was opened from: no copy.
    if (m_epoch == m_first) return m_trained;
    if (!m_snapshot || m_snapshot_epoch != m_epoch) {
        Network snapshot = m_trained;
        snapshot.restore_checkpoint(m_session.checkpoint());
        ++m_report.weight_copies;
        m_snapshot = std::move(snapshot);
        m_snapshot_epoch = m_epoch;
    }
    return *m_snapshot;
}

std::uint64_t FitRun::fingerprint() {
    if (!m_fingerprint) m_fingerprint = data_fingerprint(m_data);
    return *m_fingerprint;
}

TrainingCheckpoint FitRun::resumable() {
    TrainingCheckpoint checkpoint(weights());
    checkpoint.config = m_config;
    checkpoint.config.seed = m_config.seed.value_or(m_trained.seed());
    checkpoint.run_epochs = m_last;
    checkpoint.schedule = m_session.schedule();
    for (const auto& callback : m_options.callbacks)
        if (const std::string key = callback->state_key(); !key.empty())
            checkpoint.callbacks[key] = callback->save_state();
    if (const TrainingCheckpoint* resume = m_options.resume) {
        checkpoint.losses = resume->losses;
        checkpoint.validation_losses = resume->validation_losses;
        checkpoint.learning_rates = resume->learning_rates;
    }
    auto append = [](std::vector<float>& to, const std::vector<float>& from) {
        to.insert(to.end(), from.begin(), from.end());
    };
    append(checkpoint.losses, m_report.epoch_losses);
    append(checkpoint.validation_losses, m_report.validation_losses);
    append(checkpoint.learning_rates, m_report.learning_rates);
    checkpoint.data_rows = m_data.size();
    checkpoint.data_fingerprint = fingerprint();
    checkpoint.notes = m_options.checkpoint_notes;
    return checkpoint;
}

FitReport FitRun::run() {
    FitContext context(*this);
    const TrainingCheckpoint* resume = m_options.resume;
    if (resume)
        for (const auto& callback : m_options.callbacks)
            if (const std::string key = callback->state_key(); !key.empty())
                if (const auto it = resume->callbacks.find(key); it != resume->callbacks.end())
                    callback->restore_state(it->second);
    if (m_options.schedule)
        m_session.set_schedule(*m_options.schedule);
    else if (resume && resume->schedule)
        m_session.set_schedule(*resume->schedule);
    std::string plateau_monitor;
    if (const auto& schedule = m_session.schedule(); schedule && schedule->monitors()) {
        plateau_monitor = schedule->plateau().monitor.empty() ? default_monitor() : schedule->plateau().monitor;
        context.require_monitor(plateau_monitor, "the reduce-on-plateau schedule");
    }
    for (const auto& callback : m_options.callbacks) callback->on_train_begin(context);
    m_phase = Phase::Epochs;

    // With nothing to run between epochs (no callback, hook, validation or schedule), the epochs go to the session
    // in one call, which a device plugin queues back to back instead of waiting for each.
    if (m_options.callbacks.empty() && !m_options.on_epoch_end && !m_options.validation && !m_session.schedule() &&
        m_config.epochs > 0) {
        for (const float loss : m_session.train_epochs(m_config.epochs)) {
            m_loss = loss;
            ++m_epoch;
            m_report.epoch_losses.push_back(loss);
            m_report.learning_rates.push_back(m_session.learning_rate());
        }
    }
    for (std::uint64_t i = m_epoch - m_first; i < m_config.epochs && !stopping(); ++i) {
        m_loss = m_session.train_epoch();
        ++m_epoch;
        m_report.epoch_losses.push_back(m_loss);
        m_report.learning_rates.push_back(m_session.learning_rate());
        if (m_options.validation) {
            m_validation = weights().evaluate(*m_options.validation);
            m_report.validation_losses.push_back(m_validation->loss);
        }
        if (!plateau_monitor.empty()) m_session.report_metric(*monitored(plateau_monitor));
        for (const auto& callback : m_options.callbacks) callback->on_epoch_end(context);
        if (m_options.on_epoch_end) m_options.on_epoch_end(context);
        // Written once every callback has seen the epoch, so that each one's state is saved up to date.
        if (!m_pending.empty()) {
            const TrainingCheckpoint checkpoint = resumable();
            for (const auto& [path, inputs] : m_pending) checkpoint.save(path, inputs);
            m_pending.clear();
        }
    }
    m_phase = Phase::End;
    for (const auto& callback : m_options.callbacks) callback->on_train_end(context);

    if (m_restore) {
        Checkpoint restored = *m_restore;
        // The weights of an earlier epoch; the epoch count (and so the next batch order) stays where training is.
        restored.epochs_trained = m_epoch;
        m_trained.restore_checkpoint(restored);
        if (m_restore_epoch != m_epoch) m_report.restored_epoch = m_restore_epoch;
    } else if (m_snapshot && m_snapshot_epoch == m_epoch) {
        // The last epoch's weights were copied already (validation or a callback): no second copy.
        m_trained = std::move(*m_snapshot);
    } else {
        m_trained.restore_checkpoint(m_session.checkpoint());
        ++m_report.weight_copies;
    }
    m_report.stats = m_session.stats();
    m_report.schedule = m_session.schedule();
    m_report.stop_reason = m_stop_reason;
    return m_report;
}

// The checks a resumed run makes before anything runs: the same network state, batch order and rows.
void check_resume(const Network& network, const Dataset& data, const TrainConfig& config,
                  const TrainingCheckpoint& checkpoint) {
    const Network& saved = checkpoint.network;
    BRAIN_CHECK_ARG(
        network.epochs_trained() == saved.epochs_trained() && network.parameter_count() == saved.parameter_count(),
        "resume: the network has trained ", network.epochs_trained(), " epochs and has ", network.parameter_count(),
        " parameters, the checkpoint's ", saved.epochs_trained(), " and ", saved.parameter_count(),
        "; call fit on the checkpoint's own network (TrainingCheckpoint::network)");
    const std::uint64_t seed = config.seed.value_or(network.seed());
    BRAIN_CHECK_ARG(
        config.batch_size == checkpoint.config.batch_size && config.shuffle == checkpoint.config.shuffle &&
            seed == checkpoint.config.seed.value_or(saved.seed()),
        "resume: the run trained with batch size ", checkpoint.config.batch_size, ", shuffle ",
        checkpoint.config.shuffle ? "on" : "off", " and seed ", checkpoint.config.seed.value_or(saved.seed()),
        "; this fit asks for ", config.batch_size, ", ", config.shuffle ? "on" : "off", " and ", seed,
        ". Use the run's (TrainingCheckpoint::remaining()) to continue it exactly");
    BRAIN_CHECK(data.size() == checkpoint.data_rows && data_fingerprint(data) == checkpoint.data_fingerprint,
                ErrorCode::InvalidData, "resume: the training data (", data.size(),
                " rows) is not the run's: its rows differ from the ", checkpoint.data_rows,
                " rows the checkpoint was trained on; pass the same rows in the same order (the same file, split "
                "and seed)");
}

} // namespace detail

// --- FitContext
// ---------------------------------------------------------------------------------------------------

std::uint64_t FitContext::epoch() const noexcept {
    return m_run->epoch();
}
std::uint64_t FitContext::last_epoch() const noexcept {
    return m_run->last_epoch();
}
float FitContext::loss() const noexcept {
    return m_run->loss();
}
const std::optional<Evaluation>& FitContext::validation() const noexcept {
    return m_run->validation();
}
float FitContext::learning_rate() const noexcept {
    return m_run->learning_rate();
}
std::optional<double> FitContext::monitored(std::string_view name) const {
    return m_run->monitored(name);
}
std::string FitContext::default_monitor() const {
    return m_run->default_monitor();
}
void FitContext::require_monitor(std::string_view name, std::string_view who) const {
    const auto names = m_run->monitors();
    if (std::find(names.begin(), names.end(), name) != names.end()) return;
    std::string list;
    for (const auto& n : names) list += (list.empty() ? "" : ", ") + n;
    BRAIN_THROW(ErrorCode::InvalidArgument, who, " monitors ", quote_excerpt(name),
                ", which this run does not report each epoch; it reports ", list,
                name.starts_with("val_") ? ""
                                         : " (metrics other than the loss are evaluated on a validation set: "
                                           "monitor val_<name> and give one)",
                name.starts_with("val_") && names.size() == 1 ? " (val_ quantities need a validation set)" : "");
}
const Network& FitContext::network() {
    return m_run->weights();
}
void FitContext::stop_training(std::string reason) {
    m_run->stop(std::move(reason));
}
bool FitContext::stop_requested() const noexcept {
    return m_run->stopping();
}
void FitContext::restore_weights(const Checkpoint& weights, std::uint64_t epoch) {
    m_run->restore_weights(weights, epoch);
}
void FitContext::save_checkpoint(const std::filesystem::path& path, std::vector<std::filesystem::path> inputs) {
    m_run->save_checkpoint(path, std::move(inputs));
}

// --- Network::fit
// ---------------------------------------------------------------------------------------------------

FitReport Network::fit(const Dataset& data, const TrainConfig& config, const Dataset* validation) {
    return fit_with_backend(data, config, TrainingBackend::cpu(), validation);
}

FitReport Network::fit(const Dataset& data, const TrainConfig& config, const FitOptions& options) {
    return fit_with_backend(data, config, TrainingBackend::cpu(), options);
}

FitReport Network::fit_with_backend(const Dataset& data, const TrainConfig& config, const TrainingBackend& backend,
                                    const Dataset* validation) {
    FitOptions options;
    options.validation = validation;
    return fit_with_backend(data, config, backend, options);
}

FitReport Network::fit_with_backend(const Dataset& data, const TrainConfig& config, const TrainingBackend& backend,
                                    const FitOptions& options) {
    BRAIN_CHECK_ARG(config.epochs > 0, "epochs is 0; expected at least 1");
    detail::validate_training_input(*this, data, config);
    if (const Dataset* v = options.validation) {
        // Checked before the first epoch, not after it, and named as the validation set.
        BRAIN_CHECK_ARG(v->size() > 0, "the validation set is empty; give at least one row, or no validation set");
        BRAIN_CHECK_ARG(v->input_width() == input_size() && v->target_width() == output_size(),
                        "the validation set has ", v->input_width(), " feature and ", v->target_width(),
                        " target columns; the network takes ", input_size(), " and gives ", output_size());
        detail::check_targets(m_loss, v->targets().data().data(), v->size(), v->target_width(), 0,
                              "the validation set");
    }
    for (std::size_t i = 0; i < options.callbacks.size(); ++i)
        BRAIN_CHECK_ARG(options.callbacks[i] != nullptr, "FitOptions::callbacks[", i,
                        "] is null; give each callback as a std::shared_ptr to an object");
    if (options.resume) detail::check_resume(*this, data, config, *options.resume);
    // Train a copy: this network changes only when every epoch succeeded, so an error leaves the last good
    // weights in place. The data set's metadata is adopted first, so that models and checkpoints written during
    // the run carry it (the session trains in the same units either way).
    Network trained = *this;
    const auto previous_standardization = trained.m_standardization;
    trained.adopt_dataset_metadata(data);
    if (!data.standardization()) trained.m_standardization = previous_standardization;
    FitReport report = detail::FitRun(trained, data, config, backend, options).run();
    *this = std::move(trained);
    return report;
}

} // namespace brain
