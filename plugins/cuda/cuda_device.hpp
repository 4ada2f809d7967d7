// Device discovery and the accelerator_doctor probe of the CUDA backend.
#pragma once

#include <brain/plugin_abi.h>
#include <cstdint>

namespace brain::cuda {

// Number of CUDA devices. DRIVER_UNAVAILABLE in one sentence when the driver cannot be loaded or is too old,
// DEVICE_NOT_FOUND when the driver sees no GPU.
int device_count();

// Select `device` for the calling thread; DEVICE_NOT_FOUND naming how many devices there are.
void select_device(int device);

// accelerator_doctor: name, revision, memory, and real cuBLAS, kernel and whole-budget allocation checks.
brain_device_report probe_device(int device, std::uint64_t memory_budget_bytes);

} // namespace brain::cuda
