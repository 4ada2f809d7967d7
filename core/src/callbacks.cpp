// The built-in callbacks: EarlyStopping (Keras's rules: patience, min_delta, restore_best_weights,
// start_from_epoch) and ModelCheckpoint (every N epochs or on improvement, resumable or the model file).
#include <algorithm>
#include <bit>
#include <brain/callbacks.hpp>
#include <brain/error.hpp>
#include <brain/safe_file.hpp>
#include <cmath>
#include <sstream>

namespace brain {

namespace {

// Monitored values are saved bit for bit, so a resumed run compares against exactly the same best.
std::uint64_t bits_of(double value) {
    return std::bit_cast<std::uint64_t>(value);
}
double from_bits(std::uint64_t bits) {
    return std::bit_cast<double>(bits);
}

std::uint64_t integer(const CallbackState& state, const char* key, std::uint64_t fallback = 0) {
    const auto it = state.integers.find(key);
    return it == state.integers.end() ? fallback : it->second;
}

std::string number_text(double value) {
    std::ostringstream out;
    out.precision(6);
    out << value;
    return out.str();
}

} // namespace

Callback::~Callback() = default;
void Callback::on_train_begin(FitContext&) {}
void Callback::on_epoch_end(FitContext&) {}
void Callback::on_train_end(FitContext&) {}
std::string Callback::state_key() const {
    return {};
}
CallbackState Callback::save_state() const {
    return {};
}
void Callback::restore_state(const CallbackState&) {}

// --- EarlyStopping ----------------------------------------------------------------------------------------------

EarlyStopping::EarlyStopping(EarlyStoppingOptions options) : m_options(std::move(options)) {
    BRAIN_CHECK_ARG(std::isfinite(m_options.min_delta) && m_options.min_delta >= 0.0,
                    "EarlyStopping: min_delta is ", m_options.min_delta, "; expected a finite number >= 0");
    BRAIN_CHECK_ARG(to_string(m_options.mode) != "unknown", "EarlyStopping: unknown mode value ",
                    static_cast<int>(m_options.mode), "; use MonitorMode::Auto, Min or Max");
}

namespace {

// The monitored name and its direction as one number (FNV-1a of the name, low bit the direction), saved with the
// state so that a run resumed with another monitor does not compare its values with the old one's best.
std::uint64_t watch_code(const std::string& monitor, bool maximize) {
    std::uint64_t h = 14695981039346656037ull;
    for (const char c : monitor) h = (h ^ static_cast<unsigned char>(c)) * 1099511628211ull;
    return (h & ~std::uint64_t{1}) | (maximize ? 1u : 0u);
}

} // namespace

std::string EarlyStopping::stop_reason() const {
    std::string reason = "early stopping: " + m_monitor + " did not improve";
    if (m_options.min_delta > 0.0) reason += " by more than " + number_text(m_options.min_delta);
    reason += " for " + std::to_string(m_wait) + " epoch" + (m_wait == 1 ? "" : "s");
    if (m_has_best) reason += " (best " + number_text(m_best) + " at epoch " + std::to_string(m_best_epoch) + ")";
    return reason;
}

void EarlyStopping::on_train_begin(FitContext& context) {
    m_monitor = m_options.monitor.empty() ? context.default_monitor() : m_options.monitor;
    context.require_monitor(m_monitor, "early stopping");
    m_maximize = resolve_monitor_mode(m_options.mode, m_monitor) == MonitorMode::Max;
    m_stopped_epoch = 0;
    m_restored_epoch = 0;
    m_last_epoch = context.epoch();
    const bool same_watch = !m_saved_watch || *m_saved_watch == watch_code(m_monitor, m_maximize);
    if (m_resumed && same_watch) {
        m_resumed = false;
        // The best weights were those the run had when it was saved: the network this run starts from.
        if (m_options.restore_best_weights && m_has_best && !m_best_weights && m_best_epoch == context.epoch()) {
            const Network& start = context.network();
            m_best_weights = Checkpoint{start.parameters(), start.optimizer_state(), start.optimizer_step(),
                                        start.epochs_trained()};
        }
        // Saved as the run stopped (its last epoch ran out of patience): it stays stopped, as it would have.
        if (m_wait > 0 && m_wait >= m_options.patience) {
            m_stopped_epoch = context.epoch();
            context.stop_training(stop_reason());
        }
        return;
    }
    // Not resumed, or resumed with another monitor or direction, whose best says nothing about this one: a fresh
    // watch.
    m_resumed = false;
    m_has_best = false;
    m_best = 0.0;
    m_best_epoch = 0;
    m_wait = 0;
    m_best_weights.reset();
}

void EarlyStopping::on_epoch_end(FitContext& context) {
    const std::uint64_t epoch = context.epoch();
    m_last_epoch = epoch;
    if (epoch <= m_options.start_from_epoch) return;
    const std::optional<double> value = context.monitored(m_monitor);
    if (!value) return;
    const double current = *value;
    auto take = [&] {
        const Network& n = context.network();
        m_best_weights = Checkpoint{n.parameters(), n.optimizer_state(), n.optimizer_step(), n.epochs_trained()};
    };
    ++m_wait;
    const bool improved =
        std::isfinite(current) && (!m_has_best || (m_maximize ? current > m_best + m_options.min_delta
                                                              : current < m_best - m_options.min_delta));
    if (improved) {
        m_best = current;
        m_has_best = true;
        m_best_epoch = epoch;
        m_wait = 0;
        if (m_options.restore_best_weights) take();
        return;
    }
    if (m_wait >= m_options.patience) {
        m_stopped_epoch = epoch;
        context.stop_training(stop_reason());
    }
}

void EarlyStopping::on_train_end(FitContext& context) {
    if (m_options.restore_best_weights && m_best_weights && m_has_best && m_best_epoch != m_last_epoch) {
        context.restore_weights(*m_best_weights, m_best_epoch);
        m_restored_epoch = m_best_epoch;
    }
}

CallbackState EarlyStopping::save_state() const {
    CallbackState state;
    state.integers["has_best"] = m_has_best ? 1 : 0;
    state.integers["best_bits"] = bits_of(m_best);
    state.integers["best_epoch"] = m_best_epoch;
    state.integers["wait"] = m_wait;
    state.integers["watch"] = watch_code(m_monitor, m_maximize);
    // The best weights travel only when they are not the saved network's own (the best epoch is not the last).
    if (m_options.restore_best_weights && m_best_weights && m_best_epoch != m_last_epoch) {
        state.floats["best_parameters"] = m_best_weights->parameters;
        state.floats["best_optimizer_state"] = m_best_weights->optimizer_state;
        state.integers["best_step"] = m_best_weights->optimizer_step;
        state.integers["best_epochs_trained"] = m_best_weights->epochs_trained;
    }
    return state;
}

void EarlyStopping::restore_state(const CallbackState& state) {
    m_has_best = integer(state, "has_best") != 0;
    m_best = from_bits(integer(state, "best_bits", bits_of(0.0)));
    m_best_epoch = integer(state, "best_epoch");
    m_wait = integer(state, "wait");
    m_saved_watch.reset();
    if (const auto it = state.integers.find("watch"); it != state.integers.end()) m_saved_watch = it->second;
    m_best_weights.reset();
    const auto parameters = state.floats.find("best_parameters");
    const auto optimizer = state.floats.find("best_optimizer_state");
    if (parameters != state.floats.end() && optimizer != state.floats.end())
        m_best_weights = Checkpoint{parameters->second, optimizer->second, integer(state, "best_step"),
                                    integer(state, "best_epochs_trained")};
    BRAIN_CHECK_ARG(!m_has_best || std::isfinite(m_best), "EarlyStopping: the saved best value is not finite");
    m_resumed = true;
}

std::optional<std::uint64_t> EarlyStopping::best_epoch() const noexcept {
    return m_has_best ? std::optional<std::uint64_t>(m_best_epoch) : std::nullopt;
}
std::optional<double> EarlyStopping::best_value() const noexcept {
    return m_has_best ? std::optional<double>(m_best) : std::nullopt;
}
std::optional<std::uint64_t> EarlyStopping::stopped_epoch() const noexcept {
    return m_stopped_epoch ? std::optional<std::uint64_t>(m_stopped_epoch) : std::nullopt;
}
std::optional<std::uint64_t> EarlyStopping::restored_epoch() const noexcept {
    return m_restored_epoch ? std::optional<std::uint64_t>(m_restored_epoch) : std::nullopt;
}

// --- ModelCheckpoint --------------------------------------------------------------------------------------------

ModelCheckpoint::ModelCheckpoint(ModelCheckpointOptions options) : m_options(std::move(options)) {
    BRAIN_CHECK_ARG(!m_options.path.empty(), "ModelCheckpoint: no path; give where to write, e.g. "
                                             "\"run/epoch-{epoch}.json\"");
    BRAIN_CHECK_ARG(m_options.every_epochs >= 1, "ModelCheckpoint: every_epochs is 0; expected at least 1");
    BRAIN_CHECK_ARG(to_string(m_options.mode) != "unknown", "ModelCheckpoint: unknown mode value ",
                    static_cast<int>(m_options.mode), "; use MonitorMode::Auto, Min or Max");
}

std::filesystem::path ModelCheckpoint::path_for(std::uint64_t epoch) const {
    std::string text = m_options.path.string();
    const std::string key = "{epoch}", number = std::to_string(epoch);
    for (auto at = text.find(key); at != std::string::npos; at = text.find(key, at + number.size()))
        text.replace(at, key.size(), number);
    return text;
}

std::vector<std::filesystem::path> ModelCheckpoint::paths_between(std::uint64_t first, std::uint64_t last,
                                                                  std::size_t limit) const {
    std::vector<std::filesystem::path> paths;
    const bool numbered = m_options.path.string().find("{epoch}") != std::string::npos;
    const std::uint64_t step = m_options.save_best_only ? 1 : m_options.every_epochs;
    for (std::uint64_t e = (first + step - 1) / step * step; e >= first && e <= last && paths.size() < limit;
         e += step) {
        paths.push_back(path_for(e));
        if (!numbered) break; // one path for every epoch
    }
    return paths;
}

void ModelCheckpoint::on_train_begin(FitContext& context) {
    m_monitor = m_options.monitor.empty() ? context.default_monitor() : m_options.monitor;
    if (m_options.save_best_only) context.require_monitor(m_monitor, "the model checkpoint");
    m_maximize = resolve_monitor_mode(m_options.mode, m_monitor) == MonitorMode::Max;
    // Before the first epoch: a path that cannot be written (an input, a directory, a link) fails at once instead
    // of ending the run when its epoch comes.
    for (const auto& path : paths_between(context.epoch() + 1, std::max(context.last_epoch(), context.epoch() + 1)))
        check_output_path(path, m_options.inputs);
}

void ModelCheckpoint::on_epoch_end(FitContext& context) {
    const std::uint64_t epoch = context.epoch();
    bool due = false;
    if (m_options.save_best_only) {
        const std::optional<double> value = context.monitored(m_monitor);
        if (value && std::isfinite(*value) && (!m_has_best || (m_maximize ? *value > m_best : *value < m_best))) {
            m_best = *value;
            m_has_best = true;
            due = true;
        }
    } else {
        due = epoch % m_options.every_epochs == 0;
    }
    if (!due) return;
    const std::filesystem::path target = path_for(epoch);
    if (m_options.resumable)
        context.save_checkpoint(target, m_options.inputs);
    else
        context.network().save_json(target, m_options.inputs);
    m_written.push_back(target);
}

CallbackState ModelCheckpoint::save_state() const {
    CallbackState state;
    state.integers["has_best"] = m_has_best ? 1 : 0;
    state.integers["best_bits"] = bits_of(m_best);
    return state;
}

void ModelCheckpoint::restore_state(const CallbackState& state) {
    m_has_best = integer(state, "has_best") != 0;
    m_best = from_bits(integer(state, "best_bits", bits_of(0.0)));
}

} // namespace brain
