// brain::cuda::DeviceAllocator: the one accounting allocator every device allocation of a session goes through.
// It refuses any allocation that would take the session past its budget (before calling cudaMalloc) and keeps
// the current and peak bytes of each kind, which the session reports as its stats.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <utility>

namespace brain::cuda {

// What an allocation holds; each kind is reported in its own stats field.
enum class MemoryKind { Tensor = 0, Dataset = 1, Workspace = 2 };

// Every allocation is rounded up to this, the granularity cudaMalloc aligns to, so the accounting is exact.
inline constexpr std::uint64_t allocation_granularity = 256;

// Bytes the allocator charges for a request of `bytes`.
inline constexpr std::uint64_t charged_bytes(std::uint64_t bytes) noexcept {
    return (bytes + allocation_granularity - 1) / allocation_granularity * allocation_granularity;
}

// "1048576 bytes (1.00 MiB)": a byte count in the allocator's messages.
std::string mib(std::uint64_t bytes);

class DeviceBuffer;

// Budget-checked cudaMalloc/cudaFree with per-kind accounting. Not thread-safe (one session, one thread).
class DeviceAllocator {
public:
    // budget_bytes 0 means unlimited (the ABI's "no budget").
    explicit DeviceAllocator(std::uint64_t budget_bytes) noexcept : m_budget(budget_bytes) {}
    DeviceAllocator(const DeviceAllocator&) = delete;
    DeviceAllocator& operator=(const DeviceAllocator&) = delete;

    // Allocate `bytes` of device memory for `what`; BUDGET_EXCEEDED if it would pass the budget,
    // ALLOCATION_FAILED (with the CUDA error and the device's free memory) if cudaMalloc fails.
    DeviceBuffer allocate(std::uint64_t bytes, MemoryKind kind, const std::string& what);

    std::uint64_t budget() const noexcept { return m_budget; }
    std::uint64_t in_use() const noexcept { return m_in_use_total; }
    std::uint64_t in_use(MemoryKind kind) const noexcept { return m_in_use[static_cast<int>(kind)]; }
    std::uint64_t peak(MemoryKind kind) const noexcept { return m_peak[static_cast<int>(kind)]; }

private:
    friend class DeviceBuffer;
    void release(void* pointer, std::uint64_t charged, MemoryKind kind) noexcept;

    std::uint64_t m_budget;
    std::uint64_t m_in_use_total = 0;
    std::uint64_t m_in_use[3] = {0, 0, 0};
    std::uint64_t m_peak[3] = {0, 0, 0};
};

// One device allocation, returned to its allocator on destruction. Move-only.
class DeviceBuffer {
public:
    DeviceBuffer() = default;
    ~DeviceBuffer() { reset(); }
    DeviceBuffer(DeviceBuffer&& other) noexcept
        : m_owner(std::exchange(other.m_owner, nullptr)), m_pointer(std::exchange(other.m_pointer, nullptr)),
          m_charged(std::exchange(other.m_charged, 0)), m_kind(other.m_kind) {}
    DeviceBuffer& operator=(DeviceBuffer&& other) noexcept {
        if (this != &other) {
            reset();
            m_owner = std::exchange(other.m_owner, nullptr);
            m_pointer = std::exchange(other.m_pointer, nullptr);
            m_charged = std::exchange(other.m_charged, 0);
            m_kind = other.m_kind;
        }
        return *this;
    }
    DeviceBuffer(const DeviceBuffer&) = delete;
    DeviceBuffer& operator=(const DeviceBuffer&) = delete;

    // Free now (idempotent).
    void reset() noexcept;
    void* get() const noexcept { return m_pointer; }
    // The memory as floats.
    float* floats() const noexcept { return static_cast<float*>(m_pointer); }
    std::uint64_t charged() const noexcept { return m_charged; }

private:
    friend class DeviceAllocator;
    DeviceBuffer(DeviceAllocator* owner, void* pointer, std::uint64_t charged, MemoryKind kind) noexcept
        : m_owner(owner), m_pointer(pointer), m_charged(charged), m_kind(kind) {}

    DeviceAllocator* m_owner = nullptr;
    void* m_pointer = nullptr;
    std::uint64_t m_charged = 0;
    MemoryKind m_kind = MemoryKind::Tensor;
};

} // namespace brain::cuda
