// Internal: builds the plugin ABI's session descriptor from a Network, a Dataset and a TrainConfig.
#pragma once

#include <brain/backend.hpp>
#include <brain/dataset.hpp>
#include <brain/network.hpp>
#include <brain/plugin_abi.h>

#include <vector>

namespace brain::detail {

// Owns every buffer the descriptor points to; the descriptor is valid while this object lives.
class SessionDesc {
public:
    SessionDesc(const Network& network, const Dataset& data, const TrainConfig& config,
                const TrainingBackend& backend);
    const brain_session_desc& desc() const noexcept { return m_desc; }

private:
    std::vector<brain_layer_desc> m_layers;
    Matrix m_features; // standardised copy when a standardisation applies
    brain_model_desc m_model{};
    brain_optimizer_desc m_optimizer{};
    brain_dataset_view m_dataset{};
    brain_train_config m_config{};
    brain_session_desc m_desc{};
};

// Throws InvalidArgument / InvalidData when data or config cannot train this network (names the value).
void validate_training_input(const Network& network, const Dataset& data, const TrainConfig& config);

} // namespace brain::detail
