#include "cuda_errors.hpp"

#include "test_hooks.hpp"

namespace brain::cuda {

void fail(brain_status code, const std::string& message) {
    throw sdk::Failure(code, message);
}

std::string describe(cudaError_t status) {
    return std::string(cudaGetErrorName(status)) + " (" + cudaGetErrorString(status) + ")";
}

std::string describe(cublasStatus_t status) {
    return std::string(cublasGetStatusName(status)) + " (" + cublasGetStatusString(status) + ")";
}

void check_cuda(cudaError_t status, const char* what) {
    if (status == cudaSuccess && inject_fault(Fault::Device)) status = cudaErrorLaunchFailure;
    if (status == cudaSuccess) return;
    // Clear a sticky-free error so the next unrelated call does not report it again.
    (void)cudaGetLastError();
    if (status == cudaErrorMemoryAllocation)
        fail(BRAIN_ERR_ALLOCATION_FAILED, std::string(what) + " failed: " + describe(status) +
                                              "; free device memory or lower the memory budget or batch size");
    fail(BRAIN_ERR_DEVICE_FAILURE, std::string(what) + " failed: " + describe(status));
}

void check_cublas(cublasStatus_t status, const char* what) {
    if (status == CUBLAS_STATUS_SUCCESS) return;
    if (status == CUBLAS_STATUS_ALLOC_FAILED)
        fail(BRAIN_ERR_ALLOCATION_FAILED,
             std::string(what) + " failed: cuBLAS could not allocate: " + describe(status));
    fail(BRAIN_ERR_GEMM_FAILED, std::string(what) + " failed: " + describe(status));
}

} // namespace brain::cuda
