#include "blas_library.hpp"

#include <brain/plugin_sdk.hpp>
#include <cstdlib>
#include <dlfcn.h>
#include <mutex>
#include <optional>
#include <vector>

#ifndef BRAIN_OPENBLAS_CANDIDATES
#define BRAIN_OPENBLAS_CANDIDATES "libopenblas.so.0"
#endif

namespace brain::cpu {
namespace {

std::string trim(std::string text) {
    const auto first = text.find_first_not_of(" \t\n");
    if (first == std::string::npos) return {};
    return text.substr(first, text.find_last_not_of(" \t\n") - first + 1);
}

// The kernel family for this CPU when OpenBLAS's own detection may not know it. sgemm has one AVX-512 kernel
// (SkylakeX, also used by later Intel and AMD AVX-512 parts) and one AVX2 kernel (Haswell, also Zen).
const char* preferred_core() {
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
    __builtin_cpu_init();
    if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
        __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512dq") &&
        __builtin_cpu_supports("avx512cd"))
        return "SkylakeX";
    if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) return "Haswell";
#endif
    return nullptr;
}

template <class Fn>
Fn symbol(void* handle, const char* name, const std::string& path) {
    void* address = dlsym(handle, name);
    if (!address)
        throw sdk::Failure(BRAIN_ERR_PLUGIN_LOAD_FAILED, "the CPU backend loaded " + path + " but it has no " +
                                                             name + "; install OpenBLAS (libopenblas0)");
    return reinterpret_cast<Fn>(address);
}

BlasLibrary load() {
    std::vector<std::string> candidates;
    const std::string list = BRAIN_OPENBLAS_CANDIDATES;
    for (std::size_t begin = 0; begin <= list.size();) {
        const std::size_t end = std::min(list.find(':', begin), list.size());
        if (end > begin) candidates.push_back(list.substr(begin, end - begin));
        begin = end + 1;
    }

    BlasLibrary lib;
    void* handle = nullptr;
    // An OpenBLAS already in the process keeps the kernels it chose; otherwise choose, unless the user did.
    for (const auto& path : candidates)
        if ((handle = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL | RTLD_NOLOAD))) {
            lib.path = path;
            break;
        }
    if (!handle) {
        const char* core = std::getenv("OPENBLAS_CORETYPE") ? nullptr : preferred_core();
        // OpenBLAS reads OPENBLAS_CORETYPE in its load-time constructor, so it is set only around dlopen.
        // setenv is not thread-safe; this runs once, inside the plugin's first call, before any session.
        if (core) setenv("OPENBLAS_CORETYPE", core, 0);
        std::string reasons;
        for (const auto& path : candidates) {
            if ((handle = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL))) {
                lib.path = path;
                break;
            }
            const char* why = dlerror();
            reasons += "\n  " + path + ": " + (why ? why : "unknown loader error");
        }
        if (core) unsetenv("OPENBLAS_CORETYPE");
        if (!handle)
            throw sdk::Failure(BRAIN_ERR_PLUGIN_LOAD_FAILED,
                               "the CPU backend could not load OpenBLAS; tried:" + reasons +
                                   "\nInstall it (Debian/Ubuntu: apt install libopenblas0) or add its directory "
                                   "to LD_LIBRARY_PATH");
        if (core) lib.forced_core = core;
    }
    // The handle is never closed: sessions and OpenBLAS's thread pool live as long as the process.
    lib.sgemm = symbol<decltype(lib.sgemm)>(handle, "cblas_sgemm", lib.path);
    lib.get_config = symbol<decltype(lib.get_config)>(handle, "openblas_get_config", lib.path);
    lib.get_corename = symbol<decltype(lib.get_corename)>(handle, "openblas_get_corename", lib.path);
    lib.set_num_threads = symbol<decltype(lib.set_num_threads)>(handle, "openblas_set_num_threads", lib.path);
    lib.get_num_threads = symbol<decltype(lib.get_num_threads)>(handle, "openblas_get_num_threads", lib.path);
    return lib;
}

} // namespace

std::string BlasLibrary::config() const {
    const char* text = get_config ? get_config() : nullptr;
    return text ? trim(text) : std::string("OpenBLAS (configuration unknown)");
}

std::string BlasLibrary::summary() const {
    const char* core = get_corename ? get_corename() : nullptr;
    std::string line = config() + " from " + path + ", kernels " + (core ? trim(core) : std::string("unknown"));
    line += forced_core.empty() ? " (chosen by OpenBLAS)"
                                : " (chosen by the plugin; set OPENBLAS_CORETYPE to override)";
    return line;
}

const BlasLibrary& blas() {
    // Not a function-local static of the result: a failed load must be retried and reported each time.
    static std::mutex mutex;
    static std::optional<BlasLibrary> loaded;
    std::lock_guard lock(mutex);
    if (!loaded) loaded = load();
    return *loaded;
}

} // namespace brain::cpu
