// brain::TrainingSession: keeps a backend's device context, weights and data resident across epochs.
#pragma once

#include <brain/backend.hpp>
#include <brain/dataset.hpp>
#include <brain/export.hpp>
#include <brain/network.hpp>
#include <brain/schedule.hpp>
#include <brain/stats.hpp>
#include <brain/streaming_dataset.hpp>
#include <memory>
#include <optional>
#include <span>
#include <vector>

namespace brain {

class Plugin;

// A training run held open on one backend. Unlike the chapter's library, every backend has a session, the CPU
// included, so one loop serves all. The session copies the network at construction and never modifies it:
// take checkpoint() and Network::restore_checkpoint() to bring weights back. Not thread-safe: use one session
// from one thread at a time. Movable, not copyable. After an error the session is closed and further calls
// throw InvalidState; the last checkpoint stays valid.
class BRAIN_API TrainingSession {
public:
    // Open a session: loads the backend's plugin, checks the budget before allocating, uploads the data.
    TrainingSession(const Network& network, const Dataset& data, const TrainConfig& config,
                    const TrainingBackend& backend);
    // Open a session on rows streamed from disk: the plugin pulls each batch through the ABI's batch source
    // (ABI 1.2, BRAIN_FEATURE_BATCH_SOURCE; Unsupported naming the plugin otherwise) and host memory holds three
    // windows of rows (StreamingDataset::buffer_bytes), never the whole data set. The data set's standardisation
    // applies, or else the network's. The batch order is the stream's (streaming_dataset.hpp), seeded as config.
    TrainingSession(const Network& network, const StreamingDataset& data, const TrainConfig& config,
                    const TrainingBackend& backend);
    ~TrainingSession();
    TrainingSession(TrainingSession&&) noexcept;
    TrainingSession& operator=(TrainingSession&&) noexcept;
    TrainingSession(const TrainingSession&) = delete;
    TrainingSession& operator=(const TrainingSession&) = delete;

    // Train one epoch on the device; returns its mean loss (the only value that crosses back).
    float train_epoch();
    // Train `count` (>= 1) epochs as that many train_epoch calls would, with the same losses and weights; returns
    // their losses. A plugin of ABI 1.4 or later queues each epoch behind the last without waiting for it (CUDA: up
    // to 16 at a time); with a schedule, or an older plugin, the epochs run one train_epoch after another. On an
    // error the epochs before the failing one count as trained, as with train_epoch.
    std::vector<float> train_epochs(std::uint64_t count);
    // Use `learning_rate` (finite, > 0) from the next optimizer step on. The network the session was opened from
    // keeps its own rate. Throws Unsupported when the backend's plugin predates ABI 1.1 or cannot change the rate
    // within a session. A schedule set with set_schedule sets the rate of its next epoch itself.
    void set_learning_rate(float learning_rate);
    // Learning rates for the optimizer steps of the next train_epoch only, one per batch (batches_per_epoch() of
    // them), each finite and > 0; after that epoch the last one stays in effect. Throws Unsupported when the plugin
    // does not take per-step rates (supports_step_learning_rates()).
    void set_step_learning_rates(std::span<const float> rates);
    // Whether the plugin takes per-step rates: ABI 1.2's session_set_step_learning_rates, with its capability bit.
    bool supports_step_learning_rates() const noexcept;
    // Follow `schedule` from the next epoch on: before each epoch the session hands the plugin that epoch's rates
    // (per step, or through set_learning_rate when they are constant within the epoch and the plugin takes no
    // per-step rates). A schedule that has not started starts here, from the network's learning rate, with this
    // session's batches per epoch and the TrainConfig's epochs as its horizon. Throws Unsupported, before anything
    // changes, when the plugin cannot follow it, naming the plugin, its ABI version and the schedule.
    void set_schedule(LearningRateSchedule schedule);
    // The schedule followed, with its state; none when the session runs at a fixed rate.
    const std::optional<LearningRateSchedule>& schedule() const noexcept;
    // The monitored value of the epoch just trained, for a reduce-on-plateau schedule (others ignore it).
    void report_metric(double value);
    // The learning rate in effect: the last step's of the last epoch, or the one set for the next step since.
    float learning_rate() const noexcept;
    // Optimizer steps (batches) of one epoch.
    std::uint64_t batches_per_epoch() const noexcept;
    // Copy weights and optimizer state to the host (the only copy back).
    Checkpoint checkpoint();
    // What the session did so far, measured by the backend. With several devices: transfers and all-reduce bytes
    // summed over this process's devices, memory figures those of the largest device.
    AcceleratorStats stats() const;
    // The same per device of this process, in the backend's device order (one entry for one device; a plugin
    // without per-device stats gives stats() alone).
    std::vector<AcceleratorStats> device_stats() const;
    // The backend this session runs on.
    const TrainingBackend& backend() const;
    // Release the device resources; idempotent. Later calls throw InvalidState.
    void close() noexcept;
    bool is_open() const noexcept;

private:
    // Hand the plugin one epoch's rates: nothing when they equal the rate in effect, per step where the plugin takes
    // them, else set_learning_rate (Unsupported when they differ within the epoch).
    void apply_rates(std::span<const float> rates);
    struct Impl;
    std::unique_ptr<Impl> m_impl;
};

} // namespace brain
