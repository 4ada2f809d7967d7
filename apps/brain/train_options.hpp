// The options of `brain train`, and the run that streams its rows from disk (--stream, train_stream.cpp).
#pragma once

#include "cli_options.hpp"
#include "data_source.hpp"
#include "network_options.hpp"
#include "process_options.hpp"
#include "train_run.hpp"

#include <brain/brain.hpp>
#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

namespace brain::app {

// Every option of `brain train`, as given on the command line.
struct TrainOptions {
    DataSource source;
    std::vector<std::string> targets;
    std::string classes; // --classes: a target column read as class labels, numbers included
    std::vector<std::size_t> layers{64, 64};
    std::string activation = "relu";
    std::string output_activation; // empty: softmax for class labels, linear otherwise
    std::string loss;              // empty: the default for the output activation
    std::string optimizer = "adam";
    float learning_rate = 0.001f;
    float momentum = 0.9f;
    float weight_decay = 0.01f;
    std::uint32_t epochs = 50;
    std::optional<std::uint32_t> batch; // default: 256, or every row of a smaller training set
    double validation = 0.0;
    std::uint64_t seed = 42;
    bool standardize = true;
    std::string backend = "cpu";
    std::optional<std::uint64_t> budget_mib;
    ProcessOptions processes;
    std::string precision = "float32";
    std::string lr_schedule;
    RunFlags flags;
    std::string resume;
    std::string out;
    std::string init;               // continue training this model file
    OptimizerFlags optimizer_flags; // --optimizer, --lr, --momentum and --weight-decay as given
    InputOptions input;
    bool stream = false;
    std::uint64_t stream_chunk_rows = StreamOptions{}.chunk_rows;
    std::uint32_t stream_window = StreamOptions{}.window_chunks;
};

// --stream: train from .npy files read at their offsets, at the constant --lr; returns the exit status.
int run_streamed(const TrainOptions& o, const TrainingBackend& backend,
                 const std::vector<std::filesystem::path>& inputs);

} // namespace brain::app
