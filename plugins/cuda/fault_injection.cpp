#include "fault_injection.hpp"

#include <cstdlib>
#include <cstring>
#include <mutex>
#include <string>

namespace brain::cuda {

bool inject_fault(Fault fault) noexcept {
    const char* spec = std::getenv("BRAIN_CUDA_TEST_FAULT");
    if (!spec || !*spec) return false;
    static std::mutex mutex;
    static std::string last;
    static unsigned long counts[3] = {0, 0, 0};
    std::lock_guard lock(mutex);
    try {
        if (last != spec) {
            last = spec;
            counts[0] = counts[1] = counts[2] = 0;
        }
    } catch (...) {
        return false;
    }
    static const char* const names[3] = {"alloc:", "gemm:", "device:"};
    const char* name = names[static_cast<int>(fault)];
    if (std::strncmp(spec, name, std::strlen(name)) != 0) return false;
    const unsigned long wanted = std::strtoul(spec + std::strlen(name), nullptr, 10);
    return ++counts[static_cast<int>(fault)] == wanted;
}

} // namespace brain::cuda
