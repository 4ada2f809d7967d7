#include "network_options.hpp"

namespace brain::app {

Optimizer parse_optimizer(const std::string& name, float learning_rate, float momentum, float weight_decay) {
    if (name == "adam") return Optimizer::adam(learning_rate);
    if (name == "sgd") return Optimizer::sgd(learning_rate, momentum);
    if (name == "adamw") return Optimizer::adamw(learning_rate, weight_decay);
    BRAIN_THROW(ErrorCode::InvalidArgument, "unknown optimizer '", name, "'; expected one of: adam, sgd, adamw");
}

} // namespace brain::app
