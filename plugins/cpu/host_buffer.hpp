// brain::cpu::HostBuffer: a 64-byte aligned float array whose size in bytes is known before it is allocated,
// so that a session can add up exactly what it will hold and check a budget first.
#pragma once

#include <brain/plugin_sdk.hpp>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>

namespace brain::cpu {

// Alignment of every tensor: one cache line, and the widest vector (AVX-512) the kernels may use.
inline constexpr std::size_t tensor_alignment = 64;

// Bytes a HostBuffer of `count` floats really takes (rounded up to the alignment); 0 for an empty one.
inline std::uint64_t tensor_bytes(std::uint64_t count) noexcept {
    const std::uint64_t raw = count * sizeof(float);
    return (raw + tensor_alignment - 1) / tensor_alignment * tensor_alignment;
}

// Owning, aligned, zero-initialised float storage. Movable, not copyable.
class HostBuffer {
public:
    HostBuffer() = default;
    // Allocate `count` zeroed floats; throws sdk::Failure(ALLOCATION_FAILED) naming the size on failure.
    explicit HostBuffer(std::size_t count) : m_count(count), m_bytes(tensor_bytes(count)) {
        if (m_bytes == 0) return;
        void* raw = std::aligned_alloc(tensor_alignment, static_cast<std::size_t>(m_bytes));
        if (!raw)
            throw sdk::Failure(BRAIN_ERR_ALLOCATION_FAILED,
                               "the CPU backend could not allocate " + std::to_string(m_bytes) +
                                   " bytes of host memory for a tensor; free memory or lower batch_size");
        std::memset(raw, 0, static_cast<std::size_t>(m_bytes));
        m_data.reset(static_cast<float*>(raw));
    }

    float* data() noexcept { return m_data.get(); }
    const float* data() const noexcept { return m_data.get(); }
    std::size_t size() const noexcept { return m_count; }
    // Bytes actually allocated (what the session's peak counts).
    std::uint64_t bytes() const noexcept { return m_bytes; }

private:
    struct FreeDeleter {
        void operator()(float* p) const noexcept { std::free(p); }
    };
    std::unique_ptr<float, FreeDeleter> m_data;
    std::size_t m_count = 0;
    std::uint64_t m_bytes = 0;
};

} // namespace brain::cpu
