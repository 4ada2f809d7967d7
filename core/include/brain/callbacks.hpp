// What fit and fit_with_backend take beside the data: a validation set, a learning-rate schedule, callbacks
// (Keras's fit(callbacks=[...])) with the built-in EarlyStopping and ModelCheckpoint, and a checkpoint to resume
// from.
#pragma once

#include <brain/export.hpp>
#include <brain/metrics.hpp>
#include <brain/network.hpp>
#include <brain/schedule.hpp>
#include <brain/training_checkpoint.hpp>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace brain {

namespace detail {
class FitRun;
}

// What a callback sees during fit: the epoch just trained, its losses and metrics, the weights (copied from the
// backend at most once per epoch, only when asked for), and the means to stop training or save the run. Valid
// only during the callback's call.
class BRAIN_API FitContext {
public:
    // The epoch just trained, counted over the network's life from 1 (in on_train_begin: the epochs trained
    // before).
    std::uint64_t epoch() const noexcept;
    // The epoch count this fit reaches if it is not stopped.
    std::uint64_t last_epoch() const noexcept;
    // The epoch's mean training loss (0 in on_train_begin, before any epoch of this run).
    float loss() const noexcept;
    // The validation set's evaluation after the epoch (with FitOptions::validation), with its metrics.
    const std::optional<Evaluation>& validation() const noexcept;
    // The learning rate of the epoch's last step.
    float learning_rate() const noexcept;
    // A monitored quantity: "loss", "val_loss" or "val_<name>" for every name Evaluation::value knows; nullopt
    // when this run has no such value (e.g. val_ names without a validation set, or before its first epoch).
    std::optional<double> monitored(std::string_view name) const;
    // Throws InvalidArgument unless `name` is a quantity this run reports each epoch, listing those it does.
    void require_monitor(std::string_view name, std::string_view who) const;
    // The default monitored quantity: "val_loss" with a validation set, else "loss".
    std::string default_monitor() const;
    // The network after this epoch: weights, optimizer state and metadata. The first call in an epoch copies them
    // from the backend (a checkpoint); later calls in the same epoch reuse that copy.
    const Network& network();
    // Stop after this epoch (the callbacks of this epoch still run); `reason` is reported in FitReport. In
    // on_train_begin it stops before the first epoch; in on_train_end, when every epoch has run, it does nothing.
    void stop_training(std::string reason);
    bool stop_requested() const noexcept;
    // At the end of the run, give the network these weights (of this network, taken at `epoch`, no later than the
    // epoch trained) instead of the last epoch's (EarlyStopping); else InvalidArgument.
    void restore_weights(const Checkpoint& weights, std::uint64_t epoch);
    // Write a resumable checkpoint of the run as it is after this epoch to `path`, once every callback has seen the
    // epoch (so that each one's state is saved up to date); whole or not at all, never over `inputs`. Called from
    // on_train_begin or on_train_end, it writes at once: the run before its first epoch, or as training ended.
    void save_checkpoint(const std::filesystem::path& path, std::vector<std::filesystem::path> inputs = {});

private:
    friend class detail::FitRun;
    explicit FitContext(detail::FitRun& run) noexcept : m_run(&run) {}
    detail::FitRun* m_run;
};

// A hook into fit. Override what you need. A callback whose state_key() is not empty has its state saved in
// resumable checkpoints (save_state) and given back when a run resumes (restore_state).
class BRAIN_API Callback {
public:
    virtual ~Callback();
    virtual void on_train_begin(FitContext& context);
    virtual void on_epoch_end(FitContext& context);
    virtual void on_train_end(FitContext& context);
    virtual std::string state_key() const;
    virtual CallbackState save_state() const;
    virtual void restore_state(const CallbackState& state);
};

// EarlyStopping's settings (Keras's EarlyStopping).
struct EarlyStoppingOptions {
    std::string monitor;                  // empty: val_loss with a validation set, else loss
    MonitorMode mode = MonitorMode::Auto; // Auto: Max for accuracy, F1, precision, recall and R2
    std::uint32_t patience = 0;           // epochs without improvement after which training stops
    double min_delta = 0.0;               // an improvement must beat the best by more than this
    bool restore_best_weights = true;     // end with the best epoch's weights (one copy per new best)
    std::uint32_t start_from_epoch = 0;   // epochs of this run that are not watched (warm-up)
};

// Stops training when the monitored quantity has not improved for `patience` epochs and, by default, gives the
// network the weights of the best epoch. The weights are copied from the backend only when a new best appears.
class BRAIN_API EarlyStopping : public Callback {
public:
    explicit EarlyStopping(EarlyStoppingOptions options = {});
    void on_train_begin(FitContext& context) override;
    void on_epoch_end(FitContext& context) override;
    void on_train_end(FitContext& context) override;
    std::string state_key() const override { return "early_stopping"; }
    CallbackState save_state() const override;
    void restore_state(const CallbackState& state) override;

    const EarlyStoppingOptions& options() const noexcept { return m_options; }
    // The monitored name in use (after on_train_begin).
    const std::string& monitor() const noexcept { return m_monitor; }
    // The best epoch and its value, once one was seen.
    std::optional<std::uint64_t> best_epoch() const noexcept;
    std::optional<double> best_value() const noexcept;
    // The epoch after which it stopped training, if it did.
    std::optional<std::uint64_t> stopped_epoch() const noexcept;
    // The epoch whose weights it restored at the end, if it restored any.
    std::optional<std::uint64_t> restored_epoch() const noexcept;

private:
    // "early stopping: <monitor> did not improve for N epochs (best V at epoch E)".
    std::string stop_reason() const;

    EarlyStoppingOptions m_options;
    std::string m_monitor;
    bool m_maximize = false;
    bool m_resumed = false;
    bool m_has_best = false;
    double m_best = 0.0;
    std::uint64_t m_best_epoch = 0;
    std::uint64_t m_wait = 0;
    std::uint64_t m_seen = 0; // epochs of this run watched or skipped
    std::uint64_t m_stopped_epoch = 0;
    std::uint64_t m_restored_epoch = 0;
    std::optional<Checkpoint> m_best_weights;
    std::optional<std::uint64_t> m_saved_watch; // a resumed state's monitor and direction (watch_code), if saved
    std::uint64_t m_last_epoch = 0;
};

// ModelCheckpoint's settings (Keras's ModelCheckpoint, Lightning's every_n_epochs).
struct ModelCheckpointOptions {
    // Where to write; "{epoch}" is replaced by the epoch number (e.g. "run/epoch-{epoch}.json").
    std::filesystem::path path;
    std::uint32_t every_epochs = 1; // write after every this many epochs (by the network's epoch count)
    bool save_best_only = false;    // write only when the monitored quantity improves
    std::string monitor;            // for save_best_only; empty: val_loss or loss
    MonitorMode mode = MonitorMode::Auto;
    bool resumable = true;                     // a TrainingCheckpoint; false: the model file (save_json)
    std::vector<std::filesystem::path> inputs; // files never to write over (e.g. the training data)
};

// Writes the run (or the model) at a cadence or on improvement, atomically. Every path the run may write (the
// first 10,000 distinct ones) is checked before the first epoch, so a bad path fails at once, not after hours.
class BRAIN_API ModelCheckpoint : public Callback {
public:
    explicit ModelCheckpoint(ModelCheckpointOptions options);
    void on_train_begin(FitContext& context) override;
    void on_epoch_end(FitContext& context) override;
    std::string state_key() const override { return "model_checkpoint"; }
    CallbackState save_state() const override;
    void restore_state(const CallbackState& state) override;

    const ModelCheckpointOptions& options() const noexcept { return m_options; }
    // The path for epoch `epoch`.
    std::filesystem::path path_for(std::uint64_t epoch) const;
    // The distinct paths epochs `first` to `last` may be written to (each epoch on improvement, else every
    // every_epochs), in order, at most `limit` of them.
    std::vector<std::filesystem::path> paths_between(std::uint64_t first, std::uint64_t last,
                                                     std::size_t limit = 10000) const;
    // Every file written, in order.
    const std::vector<std::filesystem::path>& written() const noexcept { return m_written; }

private:
    ModelCheckpointOptions m_options;
    std::string m_monitor;
    bool m_maximize = false;
    bool m_has_best = false;
    double m_best = 0.0;
    std::vector<std::filesystem::path> m_written;
};

// How fit and fit_with_backend run, beyond the data and the TrainConfig. Every field is optional.
struct FitOptions {
    // Evaluated after every epoch (its loss and metrics reach the callbacks and FitReport); needs the weights on
    // the host, one copy per epoch.
    const Dataset* validation = nullptr;
    // The learning rate of every step. None: the optimizer's rate throughout. A schedule that has started (e.g.
    // FitReport::schedule of an earlier fit) continues where it is.
    std::optional<LearningRateSchedule> schedule;
    // Called in order after every epoch, before on_epoch_end.
    std::vector<std::shared_ptr<Callback>> callbacks;
    // A plain hook called after the callbacks of every epoch (logging, custom stopping).
    std::function<void(FitContext&)> on_epoch_end;
    // Continue this run: the network fit is called on must have its epochs trained; the config's batch size,
    // shuffle and seed and the data must be the run's. Its schedule (unless `schedule` is set) and the callbacks'
    // states continue.
    const TrainingCheckpoint* resume = nullptr;
    // Entries kept in every resumable checkpoint this run writes (TrainingCheckpoint::notes).
    std::map<std::string, std::string> checkpoint_notes;
};

} // namespace brain
