// The training run of `brain train`, once its network and data are settled (a fresh run or --resume): fit with the
// schedule, early stopping and checkpoints the flags ask for, progress per epoch, then the stats, the evaluation,
// the saved model and, last, what early stopping did.
#pragma once

#include <brain/brain.hpp>
#include <cstdint>
#include <filesystem>
#include <map>
#include <optional>
#include <string>

namespace brain::app {

// Early stopping and checkpoint flags (kept in resumable checkpoints, so a resumed run goes on with them).
struct RunFlags {
    std::optional<std::uint32_t> patience; // --early-stopping
    std::string monitor;                   // --monitor (early stopping and a plateau schedule); empty: the default
    double min_delta = 0.0;                // --min-delta
    std::optional<std::uint32_t> checkpoint_every;
    std::string checkpoint_dir;
};

// What a run trains: the network, its data and batch order, where the model goes.
struct TrainRun {
    explicit TrainRun(Network trained) : network(std::move(trained)) {}
    Network network;
    Dataset train;
    std::optional<Dataset> validation;
    TrainConfig config;              // epochs: the epochs this run trains
    std::uint64_t target_epochs = 0; // the epoch count it ends at
    TrainingBackend backend = TrainingBackend::cpu();
    std::optional<LearningRateSchedule> schedule;
    const TrainingCheckpoint* resume = nullptr;
    RunFlags flags;
    std::map<std::string, std::string> notes; // the data options, for --resume
    std::string csv;                          // the data's name in messages
    std::vector<std::filesystem::path> inputs; // the input files (the output may be none of them); empty: csv
    std::string out;
};

// "16 -> 64 relu -> 1 linear": the layers, for the run's first line.
std::string describe_layers(const std::vector<LayerSpec>& layers);

// "training:  loss ..., accuracy ...": one line of an evaluation.
void print_evaluation(const char* what, const Evaluation& e);

// Train, report and save; returns the exit status.
int run_training(TrainRun& run);

// The flags as checkpoint notes, and back (the entries a resumed run finds).
void store_flags(const RunFlags& flags, std::map<std::string, std::string>& notes);
RunFlags stored_flags(const std::map<std::string, std::string>& notes);

} // namespace brain::app
