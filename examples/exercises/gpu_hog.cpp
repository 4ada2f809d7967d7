// gpu_hog: holds N MiB of device memory until killed, playing the chapter's "browser holding 6 GiB of VRAM" for
// exercise 1. Prints "ready <N> MiB" once the memory is held. Built only where the CUDA toolkit is.
#include <cuda_runtime_api.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <thread>

int main(int argc, char** argv) {
    if (argc < 2) {
        std::fprintf(stderr, "usage: gpu_hog <MiB> [device]\n");
        return 2;
    }
    const unsigned long long mib = std::strtoull(argv[1], nullptr, 10);
    const int device = argc > 2 ? std::atoi(argv[2]) : 0;
    if (cudaSetDevice(device) != cudaSuccess) {
        std::fprintf(stderr, "gpu_hog: no CUDA device %d\n", device);
        return 1;
    }
    void* block = nullptr;
    const cudaError_t status = cudaMalloc(&block, mib * 1024ull * 1024ull);
    if (status != cudaSuccess) {
        std::fprintf(stderr, "gpu_hog: cudaMalloc(%llu MiB) failed: %s\n", mib, cudaGetErrorString(status));
        return 1;
    }
    cudaMemset(block, 1, mib * 1024ull * 1024ull); // touch it, so it is really resident
    cudaDeviceSynchronize();
    std::printf("ready %llu MiB\n", mib);
    std::fflush(stdout);
    for (;;) std::this_thread::sleep_for(std::chrono::seconds(1));
}
