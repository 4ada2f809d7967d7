// Turning CUDA runtime and cuBLAS status codes into sdk::Failure with the library's own error name and text,
// mapped onto the ABI's codes (allocation, GEMM, device failure). NVRTC's: kernel_compiler.hpp.
#pragma once

#include <brain/plugin_sdk.hpp>
#include <cublas_v2.h>
#include <cuda_runtime_api.h>
#include <string>

namespace brain::cuda {

// Throw sdk::Failure(code, message).
[[noreturn]] void fail(brain_status code, const std::string& message);

// "cudaErrorMemoryAllocation (out of memory)".
std::string describe(cudaError_t status);
// "CUBLAS_STATUS_EXECUTION_FAILED (the GPU program failed to execute)".
std::string describe(cublasStatus_t status);

// Throw unless status is cudaSuccess: ALLOCATION_FAILED for out-of-memory, DEVICE_FAILURE otherwise; the message
// names the call (`what`) and the CUDA error.
void check_cuda(cudaError_t status, const char* what);
// Throw GEMM_FAILED unless status is CUBLAS_STATUS_SUCCESS.
void check_cublas(cublasStatus_t status, const char* what);

} // namespace brain::cuda
