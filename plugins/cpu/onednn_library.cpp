#include "onednn_library.hpp"

#include <cstdlib>
#include <dlfcn.h>
#include <mutex>
#include <optional>

#ifndef BRAIN_ONEDNN_CANDIDATES
#define BRAIN_ONEDNN_CANDIDATES "libdnnl.so.3:libdnnl.so.2"
#endif

namespace brain::cpu {
namespace {

// dnnl_version_t and its CPU runtimes, as oneDNN 2 and 3 define them.
struct OnednnVersion {
    int major, minor, patch;
    const char* hash;
    unsigned cpu_runtime, gpu_runtime;
};
constexpr unsigned k_runtime_sequential = 1;
constexpr unsigned k_runtime_openmp = 2;

OnednnLibrary load() {
    OnednnLibrary lib;
    void* handle = nullptr;
    std::string reasons;
    std::string list = BRAIN_ONEDNN_CANDIDATES;
#if BRAIN_TEST_HOOKS
    // Test builds: another file list, to test a machine without oneDNN.
    if (const char* files = std::getenv("BRAIN_CPU_TEST_ONEDNN_LIBRARY"); files && *files) list = files;
#endif
    for (std::size_t begin = 0; begin <= list.size() && !handle;) {
        const std::size_t end = std::min(list.find(':', begin), list.size());
        const std::string path = list.substr(begin, end - begin);
        begin = end + 1;
        if (path.empty()) continue;
        if ((handle = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL))) {
            lib.path = path;
        } else {
            const char* why = dlerror();
            reasons += (reasons.empty() ? "" : "; ") + (why ? std::string(why) : path + ": unknown loader error");
        }
    }
    if (!handle) {
        lib.unavailable = "oneDNN is not installed (" + reasons + "); apt install libdnnl-dev for faster products";
        return lib;
    }
    // The handle is never closed: oneDNN's generated kernels live as long as the process.
    const auto version = reinterpret_cast<const OnednnVersion* (*)()>(dlsym(handle, "dnnl_version"));
    const auto sgemm = reinterpret_cast<OnednnLibrary::Sgemm>(dlsym(handle, "dnnl_sgemm"));
    if (!version || !sgemm) {
        lib.unavailable = lib.path + " has no dnnl_version or dnnl_sgemm";
        return lib;
    }
    const OnednnVersion* v = version();
    lib.version =
        "oneDNN " + std::to_string(v->major) + "." + std::to_string(v->minor) + "." + std::to_string(v->patch);
    // A product must run on the thread that asks for it (the sessions split products across their own threads):
    // an OpenMP build is held to one thread per call, a sequential one needs nothing, and a TBB or threadpool
    // build would start threads of its own that the plugin cannot hold back.
    if (v->cpu_runtime == k_runtime_openmp) {
        lib.get_max_threads = reinterpret_cast<int (*)()>(dlsym(handle, "omp_get_max_threads"));
        lib.set_num_threads = reinterpret_cast<void (*)(int)>(dlsym(handle, "omp_set_num_threads"));
        if (!lib.get_max_threads || !lib.set_num_threads) {
            lib.unavailable = lib.version + " (" + lib.path +
                              ") uses OpenMP but its runtime's thread controls were "
                              "not found";
            return lib;
        }
    } else if (v->cpu_runtime != k_runtime_sequential) {
        lib.unavailable = lib.version + " (" + lib.path + ") runs its own thread pool (CPU runtime " +
                          std::to_string(v->cpu_runtime) + "); only OpenMP and sequential builds are used";
        return lib;
    }
    lib.sgemm = sgemm;
    return lib;
}

} // namespace

const OnednnLibrary& onednn() {
    static std::once_flag once;
    static std::optional<OnednnLibrary> loaded;
    std::call_once(once, [] { loaded = load(); });
    return *loaded;
}

} // namespace brain::cpu
