// The options of a run over several processes (--rank, --world-size, --rendezvous and the environment variables
// RANK, WORLD_SIZE and LOCAL_RANK that launchers such as torchrun and mpirun-style wrappers set).
#pragma once

#include <CLI/CLI.hpp>
#include <brain/backend.hpp>
#include <optional>
#include <string>

namespace brain::app {

struct ProcessOptions {
    std::optional<int> rank;       // --rank; else RANK; else 0
    std::optional<int> world_size; // --world-size; else WORLD_SIZE; else 1
    std::string rendezvous;        // --rendezvous file:<path> or tcp:<host>:<port>
};

// Add --rank, --world-size and --rendezvous to a command.
void add_process_options(CLI::App& command, ProcessOptions& options);

// `backend` as this process's part of the run. A backend spec without a device ("cuda") takes device LOCAL_RANK
// when it is set; `spec_has_device` says whether the spec named one. InvalidArgument naming the flag or variable at
// fault.
TrainingBackend with_process_options(const TrainingBackend& backend, bool spec_has_device,
                                     const ProcessOptions& options);

} // namespace brain::app
