// brain::SessionDescriptor: the plugin ABI's session descriptor for a network, a data set, a config and a backend,
// exactly as TrainingSession hands it to a plugin's session_open. Public for tools that call a plugin's function
// table directly (the conformance kit); applications use TrainingSession.
#pragma once

#include <brain/backend.hpp>
#include <brain/dataset.hpp>
#include <brain/export.hpp>
#include <brain/network.hpp>
#include <brain/plugin_abi.h>
#include <brain/types.hpp>
#include <string>
#include <vector>

namespace brain {

// Owns every buffer the descriptor points to; the descriptor is valid while this object and the network live.
class BRAIN_API SessionDescriptor {
public:
    // Throws InvalidArgument / InvalidData when data or config cannot train this network (names the value), or when
    // the backend asks for every device (cuda:all) unresolved: TrainingSession resolves that first.
    SessionDescriptor(const Network& network, const Dataset& data, const TrainConfig& config,
                      const TrainingBackend& backend);
    // For rows pulled from `source` (ABI 1.2): the dataset view carries the row count and widths, its pointers
    // are null, and batch_source points to `source` (borrowed: it must outlive the session).
    SessionDescriptor(const Network& network, const brain_batch_source& source, const TrainConfig& config,
                      const TrainingBackend& backend);
    SessionDescriptor(const SessionDescriptor&) = delete;
    SessionDescriptor& operator=(const SessionDescriptor&) = delete;
    // The descriptor; its pointers reach into this object and into the network's parameters and state.
    const brain_session_desc& desc() const noexcept { return m_desc; }

private:
    void describe(const Network& network, const TrainConfig& config, const TrainingBackend& backend);

    std::vector<brain_layer_desc> m_layers;
    Matrix m_features; // standardised copy when a standardisation applies
    brain_model_desc m_model{};
    brain_optimizer_desc m_optimizer{};
    brain_dataset_view m_dataset{};
    brain_train_config m_config{};
    brain_session_desc m_desc{};
    std::vector<int32_t> m_devices; // the backend's devices when it has several
    std::string m_rendezvous;       // the backend's rendezvous when world_size > 1
};

} // namespace brain
