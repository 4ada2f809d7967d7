#include "device_allocator.hpp"

#include "cuda_errors.hpp"
#include "test_hooks.hpp"

#include <algorithm>
#include <cstdio>

namespace brain::cuda {

std::string mib(std::uint64_t bytes) {
    char text[64];
    std::snprintf(text, sizeof text, "%llu bytes (%.2f MiB)", static_cast<unsigned long long>(bytes),
                  static_cast<double>(bytes) / (1024.0 * 1024.0));
    return text;
}

DeviceBuffer DeviceAllocator::allocate(std::uint64_t bytes, MemoryKind kind, const std::string& what) {
    const std::uint64_t charged = charged_bytes(std::max<std::uint64_t>(bytes, 1));
    // The session plans every allocation against the budget before making any, so this only trips on a bug;
    // it still guarantees the budget can never be exceeded.
    if (m_budget != 0 && m_in_use_total + charged > m_budget)
        fail(BRAIN_ERR_BUDGET_EXCEEDED, "allocating " + what + " needs " + mib(charged) + " more, but " +
                                            mib(m_in_use_total) + " of the budget of " + mib(m_budget) +
                                            " are in use; raise the memory budget");
    void* pointer = nullptr;
    const cudaError_t status =
        inject_fault(Fault::Alloc) ? cudaErrorMemoryAllocation : cudaMalloc(&pointer, charged);
    if (status != cudaSuccess) {
        (void)cudaGetLastError();
        std::size_t free_bytes = 0, total_bytes = 0;
        const bool known = cudaMemGetInfo(&free_bytes, &total_bytes) == cudaSuccess;
        fail(BRAIN_ERR_ALLOCATION_FAILED,
             "cudaMalloc of " + mib(charged) + " for " + what + " failed: " + describe(status) +
                 "; the session holds " + mib(m_in_use_total) +
                 (known ? ", the device has " + mib(free_bytes) + " free of " + mib(total_bytes) : std::string()) +
                 "; free device memory (other processes) or lower the batch size");
    }
    const int k = static_cast<int>(kind);
    m_in_use[k] += charged;
    m_in_use_total += charged;
    m_peak[k] = std::max(m_peak[k], m_in_use[k]);
    return DeviceBuffer(this, pointer, charged, kind);
}

void DeviceAllocator::release(void* pointer, std::uint64_t charged, MemoryKind kind) noexcept {
    (void)cudaFree(pointer);
    m_in_use[static_cast<int>(kind)] -= charged;
    m_in_use_total -= charged;
}

void DeviceBuffer::reset() noexcept {
    if (m_owner && m_pointer) m_owner->release(m_pointer, m_charged, m_kind);
    m_owner = nullptr;
    m_pointer = nullptr;
    m_charged = 0;
}

} // namespace brain::cuda
