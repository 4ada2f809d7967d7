#include "host_memory.hpp"

#include <brain/error.hpp>
#include <cstdio>
#include <fstream>
#include <sstream>
#include <sys/resource.h>
#include <unistd.h>

namespace brain::detail {

namespace {

// MemAvailable from /proc/meminfo, in bytes.
std::optional<std::uint64_t> mem_available() {
    std::ifstream in("/proc/meminfo");
    std::string key;
    std::uint64_t kib = 0;
    std::string unit;
    while (in >> key >> kib) {
        std::getline(in, unit);
        if (key == "MemAvailable:") return saturating_mul(kib, 1024);
    }
    return std::nullopt;
}

// Fields of /proc/self/statm, in pages: 0 size (address space), 5 data + stack.
std::optional<std::uint64_t> statm_bytes(int field) {
    std::ifstream in("/proc/self/statm");
    std::uint64_t value = 0;
    for (int i = 0; i <= field; ++i)
        if (!(in >> value)) return std::nullopt;
    const long page = ::sysconf(_SC_PAGESIZE);
    return saturating_mul(value, page > 0 ? static_cast<std::uint64_t>(page) : 4096);
}

// What a resource limit leaves beyond the current use; nothing when the limit is infinite.
std::optional<std::uint64_t> rlimit_left(int resource, int statm_field) {
    rlimit limit{};
    if (::getrlimit(resource, &limit) != 0 || limit.rlim_cur == RLIM_INFINITY) return std::nullopt;
    const auto used = statm_bytes(statm_field).value_or(0);
    const auto cap = static_cast<std::uint64_t>(limit.rlim_cur);
    return cap > used ? cap - used : 0;
}

// memory.max - memory.current of this process's cgroup (v2); nothing without a limit.
std::optional<std::uint64_t> cgroup_left() {
    std::ifstream self("/proc/self/cgroup");
    std::string line, path;
    while (std::getline(self, line))
        if (line.rfind("0::", 0) == 0) path = line.substr(3);
    if (path.empty()) return std::nullopt;
    const std::string dir = "/sys/fs/cgroup" + (path == "/" ? std::string() : path);
    std::ifstream max_file(dir + "/memory.max"), current_file(dir + "/memory.current");
    std::string max_text;
    std::uint64_t current = 0;
    if (!(max_file >> max_text) || max_text == "max" || !(current_file >> current)) return std::nullopt;
    std::uint64_t max = 0;
    std::istringstream parse(max_text);
    if (!(parse >> max)) return std::nullopt;
    return max > current ? max - current : 0;
}

} // namespace

std::optional<HostMemory> host_memory_available() {
    std::optional<HostMemory> best;
    const auto consider = [&best](std::optional<std::uint64_t> bytes, const char* what) {
        if (bytes && (!best || *bytes < best->bytes)) best = HostMemory{*bytes, what};
    };
    consider(mem_available(), "the machine's available memory, MemAvailable");
    consider(rlimit_left(RLIMIT_AS, 0), "the address-space limit, ulimit -v");
    consider(rlimit_left(RLIMIT_DATA, 5), "the data-segment limit, ulimit -d");
    consider(cgroup_left(), "the cgroup's memory.max");
    return best;
}

void require_host_memory(std::uint64_t bytes, const std::string& what, const std::string& advice) {
    // Small requests are not worth reading /proc for: if even they fail, bad_alloc still becomes AllocationFailed.
    constexpr std::uint64_t k_always_allowed = 16ull << 20;
    if (bytes <= k_always_allowed) return;
    const auto available = host_memory_available();
    if (!available || bytes <= available->bytes) return;
    BRAIN_THROW(ErrorCode::AllocationFailed, what, " needs ",
                bytes == UINT64_MAX ? std::string("more than 16 EiB") : format_bytes(bytes),
                " of host memory, but only ", format_bytes(available->bytes), " is available (limited by ",
                available->limited_by, "); ", advice);
}

std::string format_bytes(std::uint64_t bytes) {
    if (bytes < 1024) return std::to_string(bytes) + " bytes";
    static const char* const units[] = {"KiB", "MiB", "GiB", "TiB", "PiB", "EiB"};
    double value = static_cast<double>(bytes) / 1024.0;
    std::size_t unit = 0;
    while (value >= 1024.0 && unit + 1 < std::size(units)) {
        value /= 1024.0;
        ++unit;
    }
    char text[32];
    std::snprintf(text, sizeof text, "%.1f %s", value, units[unit]);
    return text;
}

} // namespace brain::detail
