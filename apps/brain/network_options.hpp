// Parsing of the network options of `brain train`.
#pragma once

#include <brain/brain.hpp>
#include <optional>
#include <string>

namespace brain::app {

// An optimizer from its CLI name ("adam", "sgd", "adamw") and learning rate; throws InvalidArgument naming
// the accepted names.
Optimizer parse_optimizer(const std::string& name, float learning_rate, float momentum, float weight_decay);

// The optimizer options a command line gave (each unset when not given).
struct OptimizerFlags {
    std::optional<std::string> kind; // --optimizer
    std::optional<float> learning_rate;
    std::optional<float> momentum;
    std::optional<float> weight_decay;
};

// `base` (a new network's Adam at 0.001, or the model's own optimizer with --init) with the options given applied:
// --optimizer starts that kind (the given rate, else base's; SGD's momentum 0.9 and AdamW's decay 0.01 unless
// given); without it, or naming the model's own kind, the kind and its settings stay and only what is given
// changes. `base_is_model`: --init's. --momentum needs SGD and --weight-decay AdamW: InvalidArgument, never a
// setting silently unused.
Optimizer apply_optimizer_flags(const Optimizer& base, const OptimizerFlags& flags, bool base_is_model);

// "sgd lr 0.05 momentum 0.9", "adamw lr 0.001 weight decay 0.01", "adam lr 0.001": the settings that act.
std::string describe_optimizer(const Optimizer& optimizer);

} // namespace brain::app
