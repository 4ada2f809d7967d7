// Internal: how much host memory this process may still allocate, and the up-front check that refuses work
// needing more (so a run fails in its first second with a sentence instead of after minutes with bad_alloc).
#pragma once

#include <cstdint>
#include <optional>
#include <string>

namespace brain::detail {

// Memory this process may still allocate: the smallest of the kernel's MemAvailable, what the address-space
// (ulimit -v) and data-segment (ulimit -d) limits leave, and what the cgroup's memory.max leaves.
struct HostMemory {
    std::uint64_t bytes = 0;
    std::string limited_by; // which of the four it is, in the user's terms
};

// Nothing when none of the four can be read (then no check is made).
std::optional<HostMemory> host_memory_available();

// Throws AllocationFailed when `bytes` exceed host_memory_available(): "<what> needs X of host memory, but only Y
// is available (limited by ...); <advice>".
void require_host_memory(std::uint64_t bytes, const std::string& what, const std::string& advice);

// "512 bytes", "3.0 KiB", "7.2 GiB" for messages.
std::string format_bytes(std::uint64_t bytes);

// a + b and a * b, saturating at UINT64_MAX, for sizes computed from untrusted shapes.
constexpr std::uint64_t saturating_add(std::uint64_t a, std::uint64_t b) noexcept {
    return a > UINT64_MAX - b ? UINT64_MAX : a + b;
}
constexpr std::uint64_t saturating_mul(std::uint64_t a, std::uint64_t b) noexcept {
    return (a != 0 && b > UINT64_MAX / a) ? UINT64_MAX : a * b;
}

} // namespace brain::detail
