#include "onednn_library.hpp"

#include <csignal>
#include <cstdlib>
#include <dlfcn.h>
#include <mutex>
#include <optional>
#include <tuple>

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
    // Before 3.11.2 the f32 GEMM kernels for AVX2 and AVX-512 point the stack pointer at a heap buffer while they
    // run: a signal handled then writes its frame over the heap (oneDNN issue 4845), and Ctrl-C in Python, a
    // profiler's timer or any handler the application installs ends in heap corruption.
    lib.block_signals = std::tie(v->major, v->minor, v->patch) < std::make_tuple(3, 11, 2);
    lib.sgemm = sgemm;
    return lib;
}

// The signals a call holds off: all but those a fault raises, which cannot wait and whose handlers must still run.
const sigset_t& deferred_signals() {
    static const sigset_t set = [] {
        sigset_t s;
        sigfillset(&s);
        for (int fault : {SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGTRAP, SIGSYS}) sigdelset(&s, fault);
        return s;
    }();
    return set;
}

// Whether this thread blocks deferred_signals() for good (defer_signals_on_this_thread).
thread_local bool t_signals_deferred = false;

} // namespace

void defer_signals_on_this_thread() noexcept {
    if (pthread_sigmask(SIG_BLOCK, &deferred_signals(), nullptr) == 0) t_signals_deferred = true;
}

int OnednnLibrary::gemm(bool trans_a, bool trans_b, int m, int n, int k, const float* a, int lda, const float* b,
                        int ldb, float* c, int ldc) const noexcept {
    // The plugin's threads each run one product: oneDNN's OpenMP runtime must not start a team for it. The
    // calling thread's setting is put back, since it may be the application's own.
    const int threads = get_max_threads ? get_max_threads() : 1;
    if (threads != 1) set_num_threads(1);
    // A signal that arrives meanwhile stays pending and is handled on return (or by another thread).
    const bool hold = block_signals && !t_signals_deferred;
    sigset_t previous;
    if (hold) pthread_sigmask(SIG_BLOCK, &deferred_signals(), &previous);
    const int status = sgemm(trans_a ? 'T' : 'N', trans_b ? 'T' : 'N', m, n, k, 1.0f, a, lda, b, ldb, 0.0f, c, ldc);
    if (hold) pthread_sigmask(SIG_SETMASK, &previous, nullptr);
    if (threads != 1) set_num_threads(threads);
    return status;
}

const OnednnLibrary& onednn() {
    static std::once_flag once;
    static std::optional<OnednnLibrary> loaded;
    std::call_once(once, [] { loaded = load(); });
    return *loaded;
}

} // namespace brain::cpu
