// Test-only fault injection, off unless BRAIN_CUDA_TEST_FAULT is set (docs/reliability.md). "alloc:N" makes the
// N-th device allocation of the process fail as cudaErrorMemoryAllocation would, "gemm:N" the N-th matrix
// product as CUBLAS_STATUS_EXECUTION_FAILED, "device:N" the N-th checked CUDA call as cudaErrorLaunchFailure.
// Counting restarts whenever the variable's value changes.
#pragma once

namespace brain::cuda {

enum class Fault { Alloc = 0, Gemm = 1, Device = 2 };

// True when this call of kind `fault` is the one the test asked to fail. Thread-safe; cheap when unset.
bool inject_fault(Fault fault) noexcept;

} // namespace brain::cuda
