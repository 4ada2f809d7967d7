// brain::cpu::BlasLibrary: the OpenBLAS entry points the CPU backend uses, resolved at run time.
#pragma once

#include <cblas.h>
#include <string>

namespace brain::cpu {

// OpenBLAS, opened with dlopen rather than linked: its DYNAMIC_ARCH builds pick their kernels in a load-time
// constructor and fall back to SSE3 ("Prescott", about 5x slower) on CPUs they do not recognise, such as
// current server parts. Loading it ourselves lets the plugin name the right kernel family first.
struct BlasLibrary {
    decltype(&cblas_sgemm) sgemm = nullptr;
    char* (*get_config)() = nullptr;
    char* (*get_corename)() = nullptr;
    void (*set_num_threads)(int) = nullptr;
    int (*get_num_threads)() = nullptr;
    std::string path;        // the file that was loaded
    std::string forced_core; // the OPENBLAS_CORETYPE the plugin chose; empty if OpenBLAS chose alone

    // "OpenBLAS 0.3.21 ... SkylakeX MAX_THREADS=64" (trimmed).
    std::string config() const;
    // One line for logs: configuration, file and how the kernels were chosen.
    std::string summary() const;
};

// Load OpenBLAS once (thread-safe) and return it; throws sdk::Failure(PLUGIN_LOAD_FAILED) naming every file
// tried and the loader's reason when it cannot be loaded.
const BlasLibrary& blas();

} // namespace brain::cpu
