// RAII owners of the CUDA handles a session or probe holds: stream, event, cuBLAS handle, executable graph and
// pinned host memory. Move-only; release errors at teardown are ignored, as nothing useful can be done with them
// there.
#pragma once

#include "cuda_errors.hpp"

#include <cstddef>
#include <utility>

namespace brain::cuda {

// Owns one handle and gives it back with Release on destruction; empty when default-constructed or moved from.
template <class Handle, auto Release>
class UniqueHandle {
public:
    UniqueHandle() = default;
    explicit UniqueHandle(Handle handle) noexcept : m_handle(handle) {}
    ~UniqueHandle() { reset(); }
    UniqueHandle(UniqueHandle&& other) noexcept : m_handle(std::exchange(other.m_handle, nullptr)) {}
    UniqueHandle& operator=(UniqueHandle&& other) noexcept {
        if (this != &other) {
            reset();
            m_handle = std::exchange(other.m_handle, nullptr);
        }
        return *this;
    }
    UniqueHandle(const UniqueHandle&) = delete;
    UniqueHandle& operator=(const UniqueHandle&) = delete;

    // The raw handle (null when empty).
    Handle get() const noexcept { return m_handle; }
    explicit operator bool() const noexcept { return m_handle != nullptr; }
    // Release the handle now (idempotent).
    void reset() noexcept {
        if (m_handle) (void)Release(m_handle);
        m_handle = nullptr;
    }

private:
    Handle m_handle = nullptr;
};

using Stream = UniqueHandle<cudaStream_t, cudaStreamDestroy>;
using Event = UniqueHandle<cudaEvent_t, cudaEventDestroy>;
using CublasHandle = UniqueHandle<cublasHandle_t, cublasDestroy>;
using GraphExec = UniqueHandle<cudaGraphExec_t, cudaGraphExecDestroy>; // an instantiated graph (the captured epoch)

// A non-blocking stream.
inline Stream create_stream() {
    cudaStream_t stream = nullptr;
    check_cuda(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking), "cudaStreamCreateWithFlags");
    return Stream(stream);
}

// An event without timing (staging-buffer reuse).
inline Event create_event() {
    cudaEvent_t event = nullptr;
    check_cuda(cudaEventCreateWithFlags(&event, cudaEventDisableTiming), "cudaEventCreateWithFlags");
    return Event(event);
}

// An event that records time, for cudaEventElapsedTime.
inline Event create_timing_event() {
    cudaEvent_t event = nullptr;
    check_cuda(cudaEventCreate(&event), "cudaEventCreate");
    return Event(event);
}

// A cuBLAS handle bound to the current device.
inline CublasHandle create_cublas() {
    cublasHandle_t handle = nullptr;
    check_cublas(cublasCreate(&handle), "cublasCreate");
    return CublasHandle(handle);
}

// The executable form of `graph`, which it takes ownership of and releases once instantiated.
inline GraphExec instantiate_graph(cudaGraph_t graph) {
    cudaGraphExec_t exec = nullptr;
    const cudaError_t status = cudaGraphInstantiate(&exec, graph, 0);
    (void)cudaGraphDestroy(graph);
    check_cuda(status, "cudaGraphInstantiate (the captured epoch)");
    return GraphExec(exec);
}

// Page-locked host memory (staging buffers and the 4-byte loss read-back).
class PinnedBuffer {
public:
    PinnedBuffer() = default;
    explicit PinnedBuffer(std::size_t bytes) {
        void* memory = nullptr;
        if (bytes) check_cuda(cudaMallocHost(&memory, bytes), "cudaMallocHost (pinned staging memory)");
        m_memory = Memory(memory);
    }
    // The memory as floats.
    float* floats() const noexcept { return static_cast<float*>(m_memory.get()); }
    void* get() const noexcept { return m_memory.get(); }

private:
    using Memory = UniqueHandle<void*, cudaFreeHost>;
    Memory m_memory;
};

} // namespace brain::cuda
