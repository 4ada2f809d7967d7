// Internal: how the model readers beside model_file.cpp (ONNX, safetensors) assemble a Network from parts they
// have validated. Private to the core.
#pragma once

#include "network_rules.hpp"

#include <brain/error.hpp>
#include <brain/network.hpp>
#include <optional>
#include <string>
#include <vector>

namespace brain::detail {

// Everything a model file can say about a network; what is not given takes the library's defaults.
struct NetworkParts {
    std::vector<LayerSpec> layers;
    std::vector<float> parameters; // the ABI's layout: per layer W (outputs x inputs, row-major), then b
    std::optional<Loss> loss;      // none: the default for the output activation
    Optimizer optimizer;
    std::uint64_t seed = 0;
    std::uint64_t epochs_trained = 0;
    std::optional<Standardization> standardization;
    std::vector<std::string> feature_names;
    std::vector<std::string> target_names;
    std::vector<std::string> class_labels;
};

struct NetworkAccess {
    // The parts as a Network. A rule the parts break (check_network) is InvalidModelFile "<origin>: <message>".
    static Network assemble(NetworkParts parts, const std::string& origin) {
        Network net;
        net.m_layers = std::move(parts.layers);
        net.m_loss = parts.loss.value_or(default_loss(net.m_layers.empty() ? Activation::Linear
                                                                           : net.m_layers.back().activation));
        if (auto broken = check_network(net.m_layers, net.m_loss, parts.optimizer))
            BRAIN_THROW(ErrorCode::InvalidModelFile, origin, ": ", broken->message);
        BRAIN_CHECK(parts.parameters.size() == parameter_count(net.m_layers), ErrorCode::InvalidState, origin,
                    ": ", parts.parameters.size(), " parameters assembled for layers that hold ",
                    parameter_count(net.m_layers));
        net.m_optimizer = parts.optimizer;
        net.m_seed = parts.seed;
        net.m_epochs_trained = parts.epochs_trained;
        net.m_parameters = std::move(parts.parameters);
        net.m_optimizer_state.assign(net.m_optimizer.state_per_parameter() * net.m_parameters.size(), 0.0f);
        net.m_standardization = std::move(parts.standardization);
        net.m_feature_names = std::move(parts.feature_names);
        net.m_target_names = std::move(parts.target_names);
        net.m_class_labels = std::move(parts.class_labels);
        net.validate();
        return net;
    }

    // The parts of an existing network (parameters included).
    static NetworkParts parts(const Network& net) {
        NetworkParts p;
        p.layers = net.m_layers;
        p.parameters = net.m_parameters;
        p.loss = net.m_loss;
        p.optimizer = net.m_optimizer;
        p.seed = net.m_seed;
        p.epochs_trained = net.m_epochs_trained;
        p.standardization = net.m_standardization;
        p.feature_names = net.m_feature_names;
        p.target_names = net.m_target_names;
        p.class_labels = net.m_class_labels;
        return p;
    }
};

} // namespace brain::detail
