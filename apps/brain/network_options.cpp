#include "network_options.hpp"

#include <sstream>

namespace brain::app {

Optimizer parse_optimizer(const std::string& name, float learning_rate, float momentum, float weight_decay) {
    if (name == "adam") return Optimizer::adam(learning_rate);
    if (name == "sgd") return Optimizer::sgd(learning_rate, momentum);
    if (name == "adamw") return Optimizer::adamw(learning_rate, weight_decay);
    BRAIN_THROW(ErrorCode::InvalidArgument, "unknown optimizer '", name, "'; expected one of: adam, sgd, adamw");
}

Optimizer apply_optimizer_flags(const Optimizer& base, const OptimizerFlags& flags, bool base_is_model) {
    Optimizer out = base;
    // Naming the model's own kind changes nothing but what is given: its momentum or decay stays.
    if (flags.kind && !(base_is_model && *flags.kind == to_string(base.kind)))
        out = parse_optimizer(*flags.kind, flags.learning_rate.value_or(base.learning_rate),
                              flags.momentum.value_or(0.9f), flags.weight_decay.value_or(0.01f));
    else if (flags.learning_rate)
        out.learning_rate = *flags.learning_rate;
    const std::string kind(to_string(out.kind));
    if (flags.momentum) {
        BRAIN_CHECK_ARG(out.kind == Optimizer::Kind::Sgd, "--momentum is SGD's, but the optimizer is ", kind,
                        flags.kind      ? ""
                        : base_is_model ? " (the model's)"
                                        : " (the default)",
                        "; add --optimizer sgd or leave --momentum out");
        out.momentum = *flags.momentum;
    }
    if (flags.weight_decay) {
        BRAIN_CHECK_ARG(out.kind == Optimizer::Kind::AdamW, "--weight-decay is AdamW's, but the optimizer is ",
                        kind,
                        flags.kind      ? ""
                        : base_is_model ? " (the model's)"
                                        : " (the default)",
                        "; add --optimizer adamw or leave --weight-decay out");
        out.weight_decay = *flags.weight_decay;
    }
    return out;
}

std::string describe_optimizer(const Optimizer& optimizer) {
    std::ostringstream s;
    s << to_string(optimizer.kind) << " lr " << optimizer.learning_rate;
    if (optimizer.kind == Optimizer::Kind::Sgd) s << " momentum " << optimizer.momentum;
    if (optimizer.kind == Optimizer::Kind::AdamW) s << " weight decay " << optimizer.weight_decay;
    return s.str();
}

} // namespace brain::app
