// brain::LearningRateSchedule: the one implementation of every schedule's formula (docs/guide.md). Backends never
// compute a rate: the core hands each epoch's rates to the plugin (session_set_step_learning_rates, or
// session_set_learning_rate when they are constant within the epoch).
#include <algorithm>
#include <brain/error.hpp>
#include <brain/schedule.hpp>
#include <charconv>
#include <cmath>
#include <limits>
#include <map>
#include <numbers>

namespace brain {

namespace {

// The most steps per epoch a schedule follows (its rates are 4 bytes a step, made an epoch at a time).
constexpr std::uint64_t max_steps_per_epoch = std::uint64_t{1} << 30;

std::string lower(std::string_view text) {
    std::string out;
    for (char c : text) out.push_back(static_cast<char>(std::tolower(static_cast<unsigned char>(c))));
    return out;
}

std::string trim(std::string_view text) {
    const auto begin = text.find_first_not_of(" \t");
    if (begin == std::string_view::npos) return {};
    const auto end = text.find_last_not_of(" \t");
    return std::string(text.substr(begin, end - begin + 1));
}

// The shortest text that reads back as the same float.
std::string float_text(float value) {
    char buffer[32];
    const auto result = std::to_chars(buffer, buffer + sizeof buffer, value);
    return std::string(buffer, result.ptr);
}

// PyTorch's cosine annealing from `start` to `end` at fraction pct of the way.
double anneal(double start, double end, double pct) {
    return end + (start - end) / 2.0 * (std::cos(std::numbers::pi * pct) + 1.0);
}

const char* keys_of(LearningRateSchedule::Kind kind) {
    switch (kind) {
    case LearningRateSchedule::Kind::Constant:
        return "warmup";
    case LearningRateSchedule::Kind::Step:
        return "every (required), gamma, warmup";
    case LearningRateSchedule::Kind::Exponential:
        return "gamma (required), warmup";
    case LearningRateSchedule::Kind::Cosine:
        return "warmup, min, epochs";
    case LearningRateSchedule::Kind::OneCycle:
        return "pct, div, final_div, epochs";
    case LearningRateSchedule::Kind::ReduceOnPlateau:
        return "factor, patience, threshold, cooldown, min, monitor, mode";
    }
    return "";
}

} // namespace

std::string_view to_string(MonitorMode mode) noexcept {
    switch (mode) {
    case MonitorMode::Min:
        return "min";
    case MonitorMode::Max:
        return "max";
    case MonitorMode::Auto:
        return "auto";
    }
    return "unknown";
}

MonitorMode parse_monitor_mode(std::string_view text) {
    const std::string key = lower(trim(text));
    if (key == "auto") return MonitorMode::Auto;
    if (key == "min") return MonitorMode::Min;
    if (key == "max") return MonitorMode::Max;
    BRAIN_THROW(ErrorCode::InvalidArgument, "unknown monitor mode ", quote_excerpt(text),
                "; accepted modes: auto, min, max");
}

MonitorMode resolve_monitor_mode(MonitorMode mode, std::string_view monitor) noexcept {
    if (mode != MonitorMode::Auto) return mode;
    for (std::string_view higher : {"accuracy", "precision", "recall", "f1", "r2"})
        if (monitor.find(higher) != std::string_view::npos) return MonitorMode::Max;
    return MonitorMode::Min;
}

std::string_view to_string(LearningRateSchedule::Kind kind) noexcept {
    switch (kind) {
    case LearningRateSchedule::Kind::Constant:
        return "constant";
    case LearningRateSchedule::Kind::Step:
        return "step";
    case LearningRateSchedule::Kind::Exponential:
        return "exponential";
    case LearningRateSchedule::Kind::Cosine:
        return "cosine";
    case LearningRateSchedule::Kind::OneCycle:
        return "onecycle";
    case LearningRateSchedule::Kind::ReduceOnPlateau:
        return "plateau";
    }
    return "unknown";
}

LearningRateSchedule LearningRateSchedule::constant(float warmup_epochs) {
    LearningRateSchedule s;
    s.m_warmup_epochs = warmup_epochs;
    s.validate();
    return s;
}

LearningRateSchedule LearningRateSchedule::step(std::uint32_t every_epochs, float gamma, float warmup_epochs) {
    LearningRateSchedule s;
    s.m_kind = Kind::Step;
    s.m_every = every_epochs;
    s.m_gamma = gamma;
    s.m_warmup_epochs = warmup_epochs;
    s.validate();
    return s;
}

LearningRateSchedule LearningRateSchedule::exponential(float gamma, float warmup_epochs) {
    LearningRateSchedule s;
    s.m_kind = Kind::Exponential;
    s.m_gamma = gamma;
    s.m_warmup_epochs = warmup_epochs;
    s.validate();
    return s;
}

LearningRateSchedule LearningRateSchedule::cosine(float warmup_epochs, float min_rate, std::uint32_t epochs) {
    LearningRateSchedule s;
    s.m_kind = Kind::Cosine;
    s.m_warmup_epochs = warmup_epochs;
    s.m_min_rate = min_rate;
    s.m_epochs = epochs;
    s.validate();
    return s;
}

LearningRateSchedule LearningRateSchedule::one_cycle(float pct_start, float div_factor, float final_div_factor,
                                                     std::uint32_t epochs) {
    LearningRateSchedule s;
    s.m_kind = Kind::OneCycle;
    s.m_pct_start = pct_start;
    s.m_div_factor = div_factor;
    s.m_final_div_factor = final_div_factor;
    s.m_epochs = epochs;
    s.validate();
    return s;
}

LearningRateSchedule LearningRateSchedule::reduce_on_plateau(PlateauOptions options) {
    LearningRateSchedule s;
    s.m_kind = Kind::ReduceOnPlateau;
    s.m_plateau = std::move(options);
    s.validate();
    return s;
}

void LearningRateSchedule::validate() const {
    const std::string name(brain::to_string(m_kind));
    auto finite_at_least = [&](float value, float low, const char* what) {
        BRAIN_CHECK_ARG(std::isfinite(value) && value >= low, "learning-rate schedule ", name, ": ", what, " is ",
                        value, "; expected a finite number >= ", low);
    };
    finite_at_least(m_warmup_epochs, 0.0f, "warmup (epochs)");
    BRAIN_CHECK_ARG(m_warmup_epochs == 0.0f || m_kind == Kind::Constant || m_kind == Kind::Step ||
                        m_kind == Kind::Exponential || m_kind == Kind::Cosine,
                    "learning-rate schedule ", name, " has no warm-up (",
                    m_kind == Kind::OneCycle ? "one-cycle rises by itself: see pct"
                                             : "it follows the monitored value",
                    "); remove warmup");
    switch (m_kind) {
    case Kind::Step:
        BRAIN_CHECK_ARG(m_every >= 1, "learning-rate schedule step: every is 0; expected a number of epochs >= 1");
        [[fallthrough]];
    case Kind::Exponential:
        BRAIN_CHECK_ARG(std::isfinite(m_gamma) && m_gamma > 0.0f, "learning-rate schedule ", name, ": gamma is ",
                        m_gamma, "; expected a finite number > 0 (e.g. 0.5 halves the rate)");
        break;
    case Kind::Cosine:
        finite_at_least(m_min_rate, 0.0f, "min (the final rate)");
        break;
    case Kind::OneCycle:
        BRAIN_CHECK_ARG(std::isfinite(m_pct_start) && m_pct_start > 0.0f && m_pct_start < 1.0f,
                        "learning-rate schedule onecycle: pct is ", m_pct_start,
                        "; expected the fraction of the cycle spent rising, in (0, 1)");
        BRAIN_CHECK_ARG(std::isfinite(m_div_factor) && m_div_factor > 0.0f,
                        "learning-rate schedule onecycle: div is ", m_div_factor,
                        "; expected a finite number > 0 (the first rate is the peak / div)");
        BRAIN_CHECK_ARG(std::isfinite(m_final_div_factor) && m_final_div_factor > 0.0f,
                        "learning-rate schedule onecycle: final_div is ", m_final_div_factor,
                        "; expected a finite number > 0 (the last rate is the first / final_div)");
        break;
    case Kind::ReduceOnPlateau:
        BRAIN_CHECK_ARG(std::isfinite(m_plateau.factor) && m_plateau.factor > 0.0f && m_plateau.factor < 1.0f,
                        "learning-rate schedule plateau: factor is ", m_plateau.factor,
                        "; expected a number in (0, 1) that multiplies the rate on a plateau");
        finite_at_least(m_plateau.threshold, 0.0f, "threshold");
        finite_at_least(m_plateau.min_rate, 0.0f, "min (the lowest rate)");
        BRAIN_CHECK_ARG(brain::to_string(m_plateau.mode) != "unknown",
                        "learning-rate schedule plateau: unknown mode "
                        "value ",
                        static_cast<int>(m_plateau.mode), "; use MonitorMode::Auto, Min or Max");
        break;
    case Kind::Constant:
        break;
    }
}

LearningRateSchedule LearningRateSchedule::parse(std::string_view text) {
    const std::string spec = trim(text);
    const auto colon = spec.find(':');
    const std::string name = lower(trim(std::string_view(spec).substr(0, colon)));
    LearningRateSchedule s;
    if (name == "constant" || name == "none")
        s.m_kind = Kind::Constant;
    else if (name == "step" || name == "steplr")
        s.m_kind = Kind::Step;
    else if (name == "exponential" || name == "exp")
        s.m_kind = Kind::Exponential;
    else if (name == "cosine")
        s.m_kind = Kind::Cosine;
    else if (name == "onecycle" || name == "one_cycle" || name == "one-cycle")
        s.m_kind = Kind::OneCycle;
    else if (name == "plateau" || name == "reduce_on_plateau")
        s.m_kind = Kind::ReduceOnPlateau;
    else
        BRAIN_THROW(ErrorCode::InvalidArgument, "unknown learning-rate schedule ", quote_excerpt(text),
                    "; accepted: constant, step:every=N[,gamma=G], exponential:gamma=G, cosine[:warmup=E,min=R,"
                    "epochs=N], onecycle[:pct=P,div=D,final_div=F,epochs=N], plateau[:factor=F,patience=N,...]");
    bool has_every = false, has_gamma = false;
    std::map<std::string, std::string> given; // each key's value, to refuse a key given twice
    std::string_view rest =
        colon == std::string::npos ? std::string_view() : std::string_view(spec).substr(colon + 1);
    while (!rest.empty()) {
        const auto comma = rest.find(',');
        const std::string item = trim(rest.substr(0, comma));
        rest = comma == std::string_view::npos ? std::string_view() : rest.substr(comma + 1);
        if (item.empty()) continue;
        const auto eq = item.find('=');
        const std::string key = lower(trim(std::string_view(item).substr(0, eq)));
        const std::string value =
            eq == std::string::npos ? std::string() : trim(std::string_view(item).substr(eq + 1));
        auto bad = [&](const char* expected) {
            BRAIN_THROW(ErrorCode::InvalidArgument, "learning-rate schedule ", quote_excerpt(text), ": ", key, "=",
                        quote_excerpt(value), " is not ", expected);
        };
        auto number = [&]() {
            float v = 0.0f;
            const char* end = value.data() + value.size();
            const auto r = std::from_chars(value.data(), end, v);
            if (value.empty() || r.ec != std::errc() || r.ptr != end || !std::isfinite(v)) bad("a finite number");
            return v;
        };
        auto whole = [&]() {
            std::uint32_t v = 0;
            const char* end = value.data() + value.size();
            const auto r = std::from_chars(value.data(), end, v);
            if (value.empty() || r.ec != std::errc() || r.ptr != end) bad("a whole number");
            return v;
        };
        // "every=2,every=3" is a slip to point out, not "the last one wins" (an unknown key was refused already).
        if (const auto [earlier, first] = given.emplace(key, value); !first)
            BRAIN_THROW(ErrorCode::InvalidArgument, "learning-rate schedule ", quote_excerpt(text), ": ",
                        quote_excerpt(key), " is given twice (", key, "=", quote_excerpt(earlier->second),
                        ", then ", key, "=", quote_excerpt(value),
                        "); expected each parameter at most once: keep the one you mean");
        const Kind k = s.m_kind;
        const bool warmup_kind =
            k == Kind::Constant || k == Kind::Step || k == Kind::Exponential || k == Kind::Cosine;
        if (key == "warmup" && warmup_kind)
            s.m_warmup_epochs = number();
        else if (key == "every" && k == Kind::Step)
            s.m_every = whole(), has_every = true;
        else if (key == "gamma" && (k == Kind::Step || k == Kind::Exponential))
            s.m_gamma = number(), has_gamma = true;
        else if (key == "min" && k == Kind::Cosine)
            s.m_min_rate = number();
        else if (key == "epochs" && (k == Kind::Cosine || k == Kind::OneCycle))
            s.m_epochs = whole();
        else if (key == "pct" && k == Kind::OneCycle)
            s.m_pct_start = number();
        else if (key == "div" && k == Kind::OneCycle)
            s.m_div_factor = number();
        else if (key == "final_div" && k == Kind::OneCycle)
            s.m_final_div_factor = number();
        else if (key == "factor" && k == Kind::ReduceOnPlateau)
            s.m_plateau.factor = number();
        else if (key == "patience" && k == Kind::ReduceOnPlateau)
            s.m_plateau.patience = whole();
        else if (key == "threshold" && k == Kind::ReduceOnPlateau)
            s.m_plateau.threshold = number();
        else if (key == "cooldown" && k == Kind::ReduceOnPlateau)
            s.m_plateau.cooldown = whole();
        else if (key == "min" && k == Kind::ReduceOnPlateau)
            s.m_plateau.min_rate = number();
        else if (key == "monitor" && k == Kind::ReduceOnPlateau)
            s.m_plateau.monitor = value;
        else if (key == "mode" && k == Kind::ReduceOnPlateau)
            s.m_plateau.mode = parse_monitor_mode(value);
        else
            BRAIN_THROW(ErrorCode::InvalidArgument, "learning-rate schedule ", quote_excerpt(text), ": ",
                        quote_excerpt(key), " is not a parameter of ", brain::to_string(k),
                        "; its parameters: ", keys_of(k));
    }
    BRAIN_CHECK_ARG(s.m_kind != Kind::Step || has_every, "learning-rate schedule ", quote_excerpt(text),
                    ": step needs every=N (the rate is multiplied by gamma every N epochs)");
    BRAIN_CHECK_ARG(s.m_kind != Kind::Exponential || has_gamma, "learning-rate schedule ", quote_excerpt(text),
                    ": exponential needs gamma=G (the rate is multiplied by G every epoch)");
    s.validate();
    return s;
}

std::string LearningRateSchedule::to_string() const {
    std::string out(brain::to_string(m_kind));
    std::vector<std::string> items;
    if (m_warmup_epochs > 0.0f) items.push_back("warmup=" + float_text(m_warmup_epochs));
    switch (m_kind) {
    case Kind::Step:
        items.insert(items.begin(), "gamma=" + float_text(m_gamma));
        items.insert(items.begin(), "every=" + std::to_string(m_every));
        break;
    case Kind::Exponential:
        items.insert(items.begin(), "gamma=" + float_text(m_gamma));
        break;
    case Kind::Cosine:
        items.push_back("min=" + float_text(m_min_rate));
        if (m_epochs) items.push_back("epochs=" + std::to_string(m_epochs));
        break;
    case Kind::OneCycle:
        items.push_back("pct=" + float_text(m_pct_start));
        items.push_back("div=" + float_text(m_div_factor));
        items.push_back("final_div=" + float_text(m_final_div_factor));
        if (m_epochs) items.push_back("epochs=" + std::to_string(m_epochs));
        break;
    case Kind::ReduceOnPlateau:
        items.push_back("factor=" + float_text(m_plateau.factor));
        items.push_back("patience=" + std::to_string(m_plateau.patience));
        items.push_back("threshold=" + float_text(m_plateau.threshold));
        items.push_back("cooldown=" + std::to_string(m_plateau.cooldown));
        items.push_back("min=" + float_text(m_plateau.min_rate));
        if (!m_plateau.monitor.empty()) items.push_back("monitor=" + m_plateau.monitor);
        if (m_plateau.mode != MonitorMode::Auto)
            items.push_back("mode=" + std::string(brain::to_string(m_plateau.mode)));
        break;
    case Kind::Constant:
        break;
    }
    for (std::size_t i = 0; i < items.size(); ++i) out += (i ? "," : ":") + items[i];
    return out;
}

void LearningRateSchedule::start(float base_rate, std::uint64_t steps_per_epoch, std::uint64_t run_epochs) {
    BRAIN_CHECK_ARG(steps_per_epoch >= 1, "learning-rate schedule: an epoch must have at least one step");
    // Each epoch's rates are one float per step (next_epoch_rates).
    BRAIN_CHECK_ARG(steps_per_epoch <= max_steps_per_epoch, "learning-rate schedule: ", steps_per_epoch,
                    " steps per epoch, more than the ", max_steps_per_epoch,
                    " a schedule follows; use a larger batch size");
    if (started()) {
        BRAIN_CHECK_ARG(m_state.steps_per_epoch == steps_per_epoch, "the learning-rate schedule ", to_string(),
                        " started with ", m_state.steps_per_epoch, " steps per epoch, but this run has ",
                        steps_per_epoch,
                        " (another batch size or data set); continue it with the run it started in, or start a "
                        "fresh schedule");
        return;
    }
    BRAIN_CHECK_ARG(std::isfinite(base_rate) && base_rate > 0.0f, "learning-rate schedule: the base rate is ",
                    base_rate, "; expected a finite number > 0");
    // A floor above the rate would make annealing (or a plateau's reduction) raise it.
    const float floor = m_kind == Kind::Cosine            ? m_min_rate
                        : m_kind == Kind::ReduceOnPlateau ? m_plateau.min_rate
                                                          : 0.0f;
    BRAIN_CHECK_ARG(floor <= base_rate, "the learning-rate schedule ", to_string(), " has min=", floor,
                    ", above the learning rate ", base_rate,
                    " it starts from, so it would raise the rate; give a min below the rate, or a higher rate");
    m_state = ScheduleState{};
    m_state.base_rate = base_rate;
    m_state.steps_per_epoch = steps_per_epoch;
    // Only cosine and one-cycle span a horizon; the others keep 0, so that their state does not depend on the run.
    if (m_kind == Kind::Cosine || m_kind == Kind::OneCycle)
        m_state.horizon_epochs = m_epochs ? m_epochs : std::max<std::uint64_t>(run_epochs, 1);
    m_state.plateau_rate = base_rate;
    // A warm-up past the horizon would still be rising where the anneal should have ended.
    if (m_kind == Kind::Cosine && warmup_steps() > m_state.horizon_epochs * steps_per_epoch) {
        const std::uint64_t horizon = m_state.horizon_epochs;
        m_state = ScheduleState{};
        BRAIN_THROW(
            ErrorCode::InvalidArgument, "the learning-rate schedule ", to_string(), " warms up for ",
            m_warmup_epochs, " epochs, longer than its horizon of ", horizon,
            " epochs (the run's epochs unless epochs= is given); shorten the warm-up or lengthen the horizon");
    }
}

void LearningRateSchedule::restore(const ScheduleState& state) {
    const bool horizon = m_kind == Kind::Cosine || m_kind == Kind::OneCycle;
    BRAIN_CHECK_ARG(std::isfinite(state.base_rate) && state.base_rate > 0.0f && state.steps_per_epoch >= 1 &&
                        (!horizon || state.horizon_epochs >= 1),
                    "learning-rate schedule ", to_string(),
                    ": a saved state needs a base rate > 0, at least one "
                    "step per epoch and (cosine, one-cycle) a horizon of at least one epoch; found ",
                    state.base_rate, ", ", state.steps_per_epoch, " and ", state.horizon_epochs);
    BRAIN_CHECK_ARG(m_kind != Kind::ReduceOnPlateau ||
                        (std::isfinite(state.plateau_rate) && state.plateau_rate > 0.0f &&
                         (!state.plateau_has_best || std::isfinite(state.plateau_best))),
                    "learning-rate schedule ", to_string(), ": the saved plateau rate ", state.plateau_rate,
                    " is not a finite number > 0");
    m_state = state;
}

std::uint64_t LearningRateSchedule::warmup_steps() const noexcept {
    return static_cast<std::uint64_t>(
        std::llround(static_cast<double>(m_warmup_epochs) * static_cast<double>(m_state.steps_per_epoch)));
}

bool LearningRateSchedule::varies_within_epoch() const {
    BRAIN_CHECK(started(), ErrorCode::InvalidState, "learning-rate schedule ", to_string(), " has not started");
    if (m_state.steps_per_epoch <= 1) return false;
    if (warmup_steps() >= 2) return true;
    if (m_kind == Kind::Cosine || m_kind == Kind::OneCycle)
        return m_state.horizon_epochs * m_state.steps_per_epoch >= 2;
    return false;
}

double LearningRateSchedule::formula(std::uint64_t s) const {
    const double base = m_state.base_rate;
    const std::uint64_t steps = m_state.steps_per_epoch;
    const std::uint64_t horizon = m_state.horizon_epochs * steps;
    const std::uint64_t warmup = warmup_steps();
    if (s < warmup && m_kind != Kind::OneCycle && m_kind != Kind::ReduceOnPlateau)
        return base * static_cast<double>(s + 1) / static_cast<double>(warmup);
    const double epoch = static_cast<double>(s / steps);
    switch (m_kind) {
    case Kind::Constant:
        return base;
    case Kind::Step:
        return base * std::pow(static_cast<double>(m_gamma), std::floor(epoch / static_cast<double>(m_every)));
    case Kind::Exponential:
        return base * std::pow(static_cast<double>(m_gamma), epoch);
    case Kind::Cosine: {
        const std::uint64_t at = std::min(s, horizon - 1);
        if (horizon <= warmup) return base; // the warm-up covers the horizon: its last rate is the base
        const double pct = static_cast<double>(at - warmup) / static_cast<double>(horizon - warmup);
        return anneal(base, static_cast<double>(m_min_rate), pct);
    }
    case Kind::OneCycle: {
        // PyTorch's OneCycleLR (anneal_strategy "cos", three_phase False), max_lr = base.
        const double at = static_cast<double>(std::min(s, horizon - 1));
        const double initial = base / static_cast<double>(m_div_factor);
        const double final_rate = initial / static_cast<double>(m_final_div_factor);
        const double rise_end = static_cast<double>(m_pct_start) * static_cast<double>(horizon) - 1.0;
        const double end = static_cast<double>(horizon) - 1.0;
        if (at <= rise_end) return anneal(initial, base, rise_end > 0.0 ? at / rise_end : 1.0);
        return anneal(base, final_rate, end > rise_end ? (at - rise_end) / (end - rise_end) : 1.0);
    }
    case Kind::ReduceOnPlateau:
        return m_state.plateau_rate;
    }
    return base;
}

double LearningRateSchedule::rate_at(std::uint64_t step) const {
    BRAIN_CHECK(started(), ErrorCode::InvalidState, "learning-rate schedule ", to_string(),
                " has not started; start() binds it to a run");
    return formula(step);
}

std::vector<float> LearningRateSchedule::next_epoch_rates() const {
    BRAIN_CHECK(started(), ErrorCode::InvalidState, "learning-rate schedule ", to_string(),
                " has not started; start() binds it to a run");
    const std::uint64_t steps = m_state.steps_per_epoch;
    const std::uint64_t first = m_state.epochs_done * steps;
    std::vector<float> rates(steps);
    for (std::uint64_t i = 0; i < steps; ++i) {
        const double rate = formula(first + i);
        float rounded = static_cast<float>(rate);
        BRAIN_CHECK(std::isfinite(rounded), ErrorCode::NumericalError, "the learning-rate schedule ", to_string(),
                    " gives step ", first + i, " (epoch ", m_state.epochs_done, ") the rate ", rate,
                    ", beyond float32's range; choose a gamma that does not grow the rate without bound");
        rates[i] = std::max(rounded, std::numeric_limits<float>::min());
    }
    return rates;
}

void LearningRateSchedule::observe(double value) {
    if (m_kind != Kind::ReduceOnPlateau || !started()) return;
    const bool maximize = resolve_monitor_mode(m_plateau.mode, m_plateau.monitor) == MonitorMode::Max;
    const double best = m_state.plateau_best;
    const double margin = static_cast<double>(m_plateau.threshold) * std::fabs(best);
    const bool better = std::isfinite(value) &&
                        (!m_state.plateau_has_best || (maximize ? value > best + margin : value < best - margin));
    if (better) {
        m_state.plateau_best = static_cast<float>(value);
        m_state.plateau_has_best = true;
        m_state.plateau_bad_epochs = 0;
    } else {
        ++m_state.plateau_bad_epochs;
    }
    if (m_state.plateau_cooldown > 0) {
        --m_state.plateau_cooldown;
        m_state.plateau_bad_epochs = 0;
    }
    if (m_state.plateau_bad_epochs > m_plateau.patience) {
        const float reduced = std::max(
            static_cast<float>(static_cast<double>(m_state.plateau_rate) * static_cast<double>(m_plateau.factor)),
            m_plateau.min_rate);
        if (reduced < m_state.plateau_rate && reduced > 0.0f) {
            m_state.plateau_rate = reduced;
            m_state.plateau_cooldown = m_plateau.cooldown;
        }
        m_state.plateau_bad_epochs = 0;
    }
}

void LearningRateSchedule::finish_epoch() {
    ++m_state.epochs_done;
}

} // namespace brain
