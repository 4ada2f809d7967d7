// Parsing of the network options of `brain train`.
#pragma once

#include <brain/brain.hpp>
#include <string>

namespace brain::app {

// An optimizer from its CLI name ("adam", "sgd", "adamw") and learning rate; throws InvalidArgument naming
// the accepted names.
Optimizer parse_optimizer(const std::string& name, float learning_rate, float momentum, float weight_decay);

} // namespace brain::app
