// brain::TrainingCheckpoint: a training run saved so that it continues exactly, in a new process and on any backend
// (docs/model-format.md, "Resumable checkpoints"). The model file (Network::save_json) stays the serving format.
#pragma once

#include <brain/dataset.hpp>
#include <brain/export.hpp>
#include <brain/limits.hpp>
#include <brain/network.hpp>
#include <brain/schedule.hpp>
#include <brain/types.hpp>
#include <cstdint>
#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace brain {

// A callback's state in a resumable checkpoint (Callback::save_state): named whole numbers and named float arrays.
struct CallbackState {
    std::map<std::string, std::uint64_t> integers;
    std::map<std::string, std::vector<float>> floats;
};

// Everything a run needs to continue as if never interrupted: the network with its optimizer state (moments and
// step) and epochs trained (which fix the next epoch's batch order), the run's batch size, shuffle and seed, the
// learning-rate schedule with its state, the callbacks' states, the history so far and a fingerprint of the
// training rows. Continue it with FitOptions::resume (or `brain train --resume`).
struct BRAIN_API TrainingCheckpoint {
    explicit TrainingCheckpoint(Network trained) : network(std::move(trained)) {}

    Network network;                                // weights, optimizer state and step, epochs trained, metadata
    TrainConfig config;                             // batch size, shuffle and seed (resolved); epochs: unused
    std::uint64_t run_epochs = 0;                   // the epoch count the run was asked to reach
    std::optional<LearningRateSchedule> schedule;   // with its state; none: the optimizer's rate throughout
    std::map<std::string, CallbackState> callbacks; // by Callback::state_key()
    std::vector<float> losses;                      // every epoch of the run so far
    std::vector<float> validation_losses;           // ... when it had a validation set
    std::vector<float> learning_rates;              // ... the rate of each epoch's last step
    std::uint64_t data_rows = 0;                    // the training rows' count and data_fingerprint
    std::uint64_t data_fingerprint = 0;
    std::map<std::string, std::string> notes; // the application's own entries (the brain command: its data options)

    // Epochs trained so far (network.epochs_trained()).
    std::uint64_t epochs_trained() const noexcept { return network.epochs_trained(); }
    // `config` with epochs = what is left of run_epochs (0 when the run is complete).
    TrainConfig remaining() const;

    // The checkpoint as a JSON text, and back (InvalidModelFile naming the origin and the JSON path at fault).
    std::string to_json_string() const;
    static TrainingCheckpoint from_json_string(const std::string& text, const std::string& origin = "<string>");
    // Write it through write_file_safely (safe_file.hpp): whole or not at all, never over `inputs`.
    void save(const std::filesystem::path& path, const std::vector<std::filesystem::path>& inputs = {}) const;
    // Read one (at most limits.max_file_bytes).
    static TrainingCheckpoint load(const std::filesystem::path& path, const InputLimits& limits = {});
};

// A fingerprint of a data set's rows (FNV-1a over the raw features and targets, in order): a resumed run checks
// that it is given the rows it was trained on.
BRAIN_API std::uint64_t data_fingerprint(const Dataset& data);

} // namespace brain
