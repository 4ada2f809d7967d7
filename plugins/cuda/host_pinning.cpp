// Pins are counted per address because the core and a user may pin the same rows; only the last unpin unregisters.
#include "host_pinning.hpp"

#include "cuda_errors.hpp"

#include <cuda_runtime_api.h>
#include <map>
#include <mutex>
#include <string>

namespace brain::cuda {

namespace {

struct Pin {
    std::uint64_t bytes = 0;
    std::uint64_t count = 0;
    bool registered_here = false; // false: page-locked by someone else before the first pin
};

std::mutex g_mutex;
std::map<const void*, Pin> g_pins;

bool page_locked_at(const void* address) noexcept {
    cudaPointerAttributes attributes{};
    if (cudaPointerGetAttributes(&attributes, address) != cudaSuccess) {
        (void)cudaGetLastError(); // an unknown address is an answer, not a sticky error
        return false;
    }
    return attributes.type == cudaMemoryTypeHost;
}

} // namespace

void pin_host_memory(void* memory, std::uint64_t bytes) {
    const std::lock_guard<std::mutex> lock(g_mutex);
    const auto found = g_pins.find(memory);
    if (found != g_pins.end()) {
        if (bytes > found->second.bytes)
            fail(BRAIN_ERR_INVALID_ARGUMENT, "host_memory_pin: " + std::to_string(bytes) + " bytes at an address " +
                                                 "already pinned with " + std::to_string(found->second.bytes) +
                                                 "; unpin it first, or pin the larger range at first");
        ++found->second.count;
        return;
    }
    const cudaError_t status = cudaHostRegister(memory, bytes, cudaHostRegisterPortable);
    Pin pin{bytes, 1, status == cudaSuccess};
    if (status == cudaErrorHostMemoryAlreadyRegistered) {
        (void)cudaGetLastError();
    } else if (status != cudaSuccess) {
        (void)cudaGetLastError();
        fail(status == cudaErrorMemoryAllocation ? BRAIN_ERR_ALLOCATION_FAILED : BRAIN_ERR_DEVICE_FAILURE,
             "page-locking " + std::to_string(bytes) + " bytes of host memory failed: cudaHostRegister returned " +
                 describe(status) +
                 "; the memory stays as it was (a lower memlock limit, `ulimit -l`, is a common "
                 "cause)");
    }
    g_pins.emplace(memory, pin);
}

void unpin_host_memory(void* memory) noexcept {
    const std::lock_guard<std::mutex> lock(g_mutex);
    const auto found = g_pins.find(memory);
    if (found == g_pins.end() || --found->second.count > 0) return;
    if (found->second.registered_here && cudaHostUnregister(memory) != cudaSuccess) (void)cudaGetLastError();
    g_pins.erase(found);
}

bool is_page_locked(const void* memory, std::size_t bytes) noexcept {
    if (bytes == 0) return false;
    // Both ends: a range that starts in pinned memory may run past it.
    return page_locked_at(memory) && page_locked_at(static_cast<const char*>(memory) + bytes - 1);
}

} // namespace brain::cuda
