// brain::LearningRateSchedule: the learning rate of every optimizer step, computed on the host in double and handed
// to the backend one epoch at a time (docs/guide.md, "Learning-rate schedules").
#pragma once

#include <brain/export.hpp>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace brain {

// Which way a monitored quantity improves. Auto: Max for accuracy, precision, recall, F1 and R2; Min otherwise.
enum class MonitorMode { Auto = 0, Min = 1, Max = 2 };

BRAIN_API std::string_view to_string(MonitorMode mode) noexcept;
// "auto", "min" or "max" (case-insensitive); InvalidArgument naming the text otherwise.
BRAIN_API MonitorMode parse_monitor_mode(std::string_view text);
// The mode a monitored name resolves to (Auto becomes Min or Max by the name).
BRAIN_API MonitorMode resolve_monitor_mode(MonitorMode mode, std::string_view monitor) noexcept;

// Reduce-on-plateau's parameters (PyTorch's ReduceLROnPlateau, relative threshold; Keras's ReduceLROnPlateau).
struct PlateauOptions {
    float factor = 0.1f;         // the rate is multiplied by this (in (0, 1)) on a plateau
    std::uint32_t patience = 10; // epochs without improvement tolerated before a reduction
    float threshold = 1e-4f;     // improvement: better than best by this fraction of |best|
    std::uint32_t cooldown = 0;  // epochs after a reduction during which no plateau is counted
    float min_rate = 0.0f;       // the rate never goes below this
    std::string monitor;         // what it watches (FitContext::monitored); empty: val_loss or loss
    MonitorMode mode = MonitorMode::Auto;
};

// Where a running schedule is. Saved in resumable checkpoints, so a resumed run continues the same rates.
struct ScheduleState {
    float base_rate = 0.0f;            // the optimizer's rate when the schedule started; 0: not started
    std::uint64_t steps_per_epoch = 0; // optimizer steps of one epoch (batches)
    std::uint64_t horizon_epochs = 0;  // the epochs cosine and one-cycle span (0 for the other kinds)
    std::uint64_t epochs_done = 0;     // epochs trained under the schedule
    float plateau_rate = 0.0f;         // reduce-on-plateau: the rate now
    float plateau_best = 0.0f;         // ... the best monitored value (valid when plateau_has_best)
    bool plateau_has_best = false;
    std::uint32_t plateau_bad_epochs = 0;
    std::uint32_t plateau_cooldown = 0;
};

// A learning-rate schedule and, once started, its state. Value type. The rate of step s (0-based over the
// schedule's life; epoch e = floor(s / steps_per_epoch); base = the optimizer's learning rate) is, computed in
// double and rounded to float:
//   constant      base
//   step          base * gamma^floor(e / every)                      (PyTorch StepLR)
//   exponential   base * gamma^e                                     (ExponentialLR)
//   cosine        min + (base - min) (1 + cos(pi (s - W) / (T - W))) / 2 after W warm-up steps  (CosineAnnealingLR)
//   one-cycle     PyTorch's OneCycleLR (cosine annealing, two phases) with max_lr = base
//   plateau       the rate now, multiplied by factor after patience epochs without improvement (ReduceLROnPlateau)
// With a linear warm-up of W = round(warmup_epochs * steps_per_epoch) steps (constant, step, exponential, cosine),
// step s < W has base (s + 1) / W. T is the horizon in steps; steps past it keep the rate of step T - 1. A rate
// that rounds below float32's smallest normal number (1.18e-38) is raised to it.
class BRAIN_API LearningRateSchedule {
public:
    enum class Kind { Constant = 0, Step = 1, Exponential = 2, Cosine = 3, OneCycle = 4, ReduceOnPlateau = 5 };

    // The optimizer's rate throughout (after an optional linear warm-up).
    LearningRateSchedule() = default;
    static LearningRateSchedule constant(float warmup_epochs = 0.0f);
    // The rate times gamma every `every_epochs` epochs.
    static LearningRateSchedule step(std::uint32_t every_epochs, float gamma = 0.1f, float warmup_epochs = 0.0f);
    // The rate times gamma every epoch.
    static LearningRateSchedule exponential(float gamma, float warmup_epochs = 0.0f);
    // Cosine annealing from the rate to min_rate over `epochs` (0: the epochs of the run it starts in), after a
    // linear warm-up of warmup_epochs (may be fractional).
    static LearningRateSchedule cosine(float warmup_epochs = 0.0f, float min_rate = 0.0f, std::uint32_t epochs = 0);
    // One cycle peaking at the rate: from rate / div_factor up over pct_start of `epochs` (0: the run's), then down
    // to rate / (div_factor * final_div_factor).
    static LearningRateSchedule one_cycle(float pct_start = 0.3f, float div_factor = 25.0f,
                                          float final_div_factor = 1e4f, std::uint32_t epochs = 0);
    // The rate reduced when the monitored quantity stops improving.
    static LearningRateSchedule reduce_on_plateau(PlateauOptions options = {});
    // From the text form, e.g. "cosine:warmup=1,min=1e-5", "step:every=10,gamma=0.5", "onecycle:pct=0.25",
    // "plateau:factor=0.5,patience=3" (docs/cli.md lists every key), each key at most once. InvalidArgument names
    // the text, the key at fault and the accepted keys (or both values of a key given twice).
    static LearningRateSchedule parse(std::string_view text);
    // The text form (parse(to_string()) gives the same schedule, without its state).
    std::string to_string() const;

    Kind kind() const noexcept { return m_kind; }
    const PlateauOptions& plateau() const noexcept { return m_plateau; }
    // True for the kinds whose rate depends on a monitored value (reduce-on-plateau).
    bool monitors() const noexcept { return m_kind == Kind::ReduceOnPlateau; }

    // Bind to a run: base rate, steps per epoch and the run's epochs (the horizon when the schedule names none).
    // A schedule already started (e.g. restored from a checkpoint) keeps its state; its steps per epoch must match.
    void start(float base_rate, std::uint64_t steps_per_epoch, std::uint64_t run_epochs);
    bool started() const noexcept { return m_state.base_rate > 0.0f; }
    // Whether the rates of one epoch differ from step to step (a backend without per-step rates cannot follow it).
    // Needs start().
    bool varies_within_epoch() const;
    // The formula's value for step s (0-based over the schedule's life), in double. Needs start().
    double rate_at(std::uint64_t step) const;
    // The rates of the next epoch's steps, rounded to float (rate_at of its steps). Needs start().
    std::vector<float> next_epoch_rates() const;
    // The monitored value of the epoch just trained (reduce-on-plateau; other kinds ignore it). Call before
    // finish_epoch.
    void observe(double value);
    // The epoch ran: the next one follows.
    void finish_epoch();

    const ScheduleState& state() const noexcept { return m_state; }
    // Continue from a saved state (TrainingCheckpoint); InvalidArgument if it does not fit this schedule.
    void restore(const ScheduleState& state);

    // Parameters, as given.
    float warmup_epochs() const noexcept { return m_warmup_epochs; }
    std::uint32_t every_epochs() const noexcept { return m_every; }
    float gamma() const noexcept { return m_gamma; }
    float min_rate() const noexcept { return m_min_rate; }
    std::uint32_t epochs() const noexcept { return m_epochs; }
    float pct_start() const noexcept { return m_pct_start; }
    float div_factor() const noexcept { return m_div_factor; }
    float final_div_factor() const noexcept { return m_final_div_factor; }

private:
    void validate() const;
    std::uint64_t warmup_steps() const noexcept;
    double formula(std::uint64_t step) const;

    Kind m_kind = Kind::Constant;
    float m_warmup_epochs = 0.0f;
    std::uint32_t m_every = 1;
    float m_gamma = 0.1f;
    float m_min_rate = 0.0f;
    std::uint32_t m_epochs = 0;
    float m_pct_start = 0.3f;
    float m_div_factor = 25.0f;
    float m_final_div_factor = 1e4f;
    PlateauOptions m_plateau;
    ScheduleState m_state;
};

BRAIN_API std::string_view to_string(LearningRateSchedule::Kind kind) noexcept;

} // namespace brain
