// Optional header-only helper for backends that train in host memory on Linux: the memory figures and the
// allocation test of a brain_device_report, measured rather than assumed.
#pragma once

#include <cstdint>
#include <cstdlib>
#include <fstream>
#include <memory>
#include <string>
#include <unistd.h>

namespace brain::sdk {

// text without leading and trailing blanks and newlines.
inline std::string trimmed(const std::string& text) {
    const auto first = text.find_first_not_of(" \t\n");
    if (first == std::string::npos) return {};
    const auto last = text.find_last_not_of(" \t\n");
    return text.substr(first, last - first + 1);
}

// The value of "key : value" in a /proc file such as /proc/cpuinfo or /proc/meminfo; empty when absent.
inline std::string proc_field(const char* file, const std::string& key) {
    std::ifstream in(file);
    std::string line;
    while (std::getline(in, line)) {
        const auto colon = line.find(':');
        if (colon == std::string::npos) continue;
        if (trimmed(line.substr(0, colon)) == key) return trimmed(line.substr(colon + 1));
    }
    return {};
}

// Physical memory in MiB, or -1 when unknown (never a fake zero).
inline std::int64_t host_total_memory_mib() noexcept {
    const long pages = sysconf(_SC_PHYS_PAGES);
    const long page_size = sysconf(_SC_PAGE_SIZE);
    if (pages <= 0 || page_size <= 0) return -1;
    return static_cast<std::int64_t>(static_cast<unsigned long long>(pages) *
                                     static_cast<unsigned long long>(page_size) / (1024ull * 1024ull));
}

// MemAvailable in MiB, or -1 when the kernel does not report it.
inline std::int64_t host_available_memory_mib() {
    const std::string field = proc_field("/proc/meminfo", "MemAvailable");
    if (field.empty()) return -1;
    char* end = nullptr;
    const unsigned long long kib = std::strtoull(field.c_str(), &end, 10); // "<n> kB"
    return end == field.c_str() ? -1 : static_cast<std::int64_t>(kib / 1024);
}

// The most a host backend's probe allocates: a doctor run must not claim gigabytes of host memory to answer.
inline constexpr std::uint64_t host_probe_bytes = 64ull << 20;

// What host_allocation_test allocates under `budget`: 64 MiB, or the budget if smaller (0 with no budget).
inline std::uint64_t host_allocation_bytes(std::uint64_t budget) noexcept {
    return budget < host_probe_bytes ? budget : host_probe_bytes;
}

// The probe's allocation_check label for `budget` (fits the report's 64 characters), e.g. "64 MiB of host memory,
// not the whole budget".
inline std::string host_allocation_label(std::uint64_t budget) {
    if (budget == 0) return "none: no budget was given";
    const std::uint64_t bytes = host_allocation_bytes(budget);
    const std::string size =
        bytes >= (1u << 20) ? std::to_string(bytes >> 20) + " MiB" : std::to_string(bytes) + " bytes";
    return size + " of host memory" + (bytes < budget ? ", not the whole budget" : " (the budget)");
}

// The allocation test of a host backend's probe: the budget must not exceed the available host memory, and a small
// block (host_allocation_bytes: 64 MiB, or the budget if smaller; never the whole budget) is allocated with every
// page touched, so that overcommit cannot make the answer a lie. On failure, appends the reason to notes. A budget
// of 0 (none) passes without allocating.
inline bool host_allocation_test(std::uint64_t budget, std::int64_t available_mib, std::string& notes) {
    if (budget == 0) return true;
    const std::uint64_t budget_mib = (budget + (1u << 20) - 1) >> 20;
    if (available_mib >= 0 && budget_mib > static_cast<std::uint64_t>(available_mib)) {
        notes += "the budget of " + std::to_string(budget_mib) + " MiB exceeds the " +
                 std::to_string(available_mib) +
                 " MiB of available host memory (MemAvailable); lower the budget or free memory. ";
        return false;
    }
    const std::uint64_t bytes = host_allocation_bytes(budget);
    std::unique_ptr<unsigned char, decltype(&std::free)> block(
        static_cast<unsigned char*>(std::malloc(static_cast<std::size_t>(bytes))), &std::free);
    if (!block) {
        notes += "allocating " + std::to_string(bytes) + " bytes of host memory failed. ";
        return false;
    }
    const long page = sysconf(_SC_PAGE_SIZE) > 0 ? sysconf(_SC_PAGE_SIZE) : 4096;
    volatile unsigned char* touched = block.get();
    for (std::uint64_t i = 0; i < bytes; i += static_cast<std::uint64_t>(page)) touched[i] = 1;
    touched[bytes - 1] = 1;
    return true;
}

} // namespace brain::sdk
