// The CUDA driver's own start-up cost in a fresh process: how long cuInit and the primary context take with
// nothing of brain's around them, to set against brain's `setup_time` (tools/perf/gpu-floors runs it).
//
//   g++ -O2 tools/perf/cuda_init.cpp -I/usr/local/cuda/include -L/usr/local/cuda/lib64/stubs -lcuda -o cuda_init
//   ./cuda_init          (run it in several fresh processes: only a process's first initialisation is measured)
//
// Prints one JSON line: milliseconds for cuInit, cuDeviceGet, cuDevicePrimaryCtxRetain + cuCtxSetCurrent, the
// first cuMemAlloc, and the total.
#include <chrono>
#include <cstdio>
#include <cuda.h>

static double now_ms() {
    using namespace std::chrono;
    return duration<double, std::milli>(steady_clock::now().time_since_epoch()).count();
}

static bool ok(CUresult r, const char* what) {
    if (r == CUDA_SUCCESS) return true;
    const char* name = nullptr;
    cuGetErrorName(r, &name);
    std::fprintf(stderr, "cuda_init: %s failed: %s\n", what, name ? name : "?");
    return false;
}

int main() {
    const double t0 = now_ms();
    if (!ok(cuInit(0), "cuInit")) return 1;
    const double t1 = now_ms();
    CUdevice dev;
    if (!ok(cuDeviceGet(&dev, 0), "cuDeviceGet")) return 1;
    const double t2 = now_ms();
    CUcontext ctx;
    if (!ok(cuDevicePrimaryCtxRetain(&ctx, dev), "cuDevicePrimaryCtxRetain")) return 1;
    if (!ok(cuCtxSetCurrent(ctx), "cuCtxSetCurrent")) return 1;
    const double t3 = now_ms();
    CUdeviceptr p;
    if (!ok(cuMemAlloc(&p, 1 << 20), "cuMemAlloc")) return 1;
    const double t4 = now_ms();
    std::printf(
        "{\"cuInit_ms\": %.1f, \"device_get_ms\": %.1f, \"primary_context_ms\": %.1f, \"first_alloc_ms\": %.1f, "
        "\"total_ms\": %.1f}\n",
        t1 - t0, t2 - t1, t3 - t2, t4 - t3, t4 - t0);
    cuMemFree(p);
    cuDevicePrimaryCtxRelease(dev);
    return 0;
}
