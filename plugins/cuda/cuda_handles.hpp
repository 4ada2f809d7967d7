// RAII owners of the CUDA handles a session or probe holds: stream, event, cuBLAS handle, pinned host memory,
// graph and executable graph. Move-only; destructors never throw (release errors at teardown are ignored, as
// nothing useful can be done with them there).
#pragma once

#include "cuda_errors.hpp"

#include <cstddef>
#include <utility>

namespace brain::cuda {

// A non-blocking CUDA stream.
class Stream {
public:
    Stream() {
        check_cuda(cudaStreamCreateWithFlags(&m_stream, cudaStreamNonBlocking), "cudaStreamCreateWithFlags");
    }
    ~Stream() {
        if (m_stream) (void)cudaStreamDestroy(m_stream);
    }
    Stream(Stream&& other) noexcept : m_stream(std::exchange(other.m_stream, nullptr)) {}
    Stream& operator=(Stream&&) = delete;
    Stream(const Stream&) = delete;
    // The raw handle.
    cudaStream_t get() const noexcept { return m_stream; }

private:
    cudaStream_t m_stream = nullptr;
};

// An event without timing (used for staging-buffer reuse).
class Event {
public:
    Event() { check_cuda(cudaEventCreateWithFlags(&m_event, cudaEventDisableTiming), "cudaEventCreateWithFlags"); }
    ~Event() {
        if (m_event) (void)cudaEventDestroy(m_event);
    }
    Event(Event&& other) noexcept : m_event(std::exchange(other.m_event, nullptr)) {}
    Event& operator=(Event&&) = delete;
    Event(const Event&) = delete;
    // The raw handle.
    cudaEvent_t get() const noexcept { return m_event; }

private:
    cudaEvent_t m_event = nullptr;
};

// A cuBLAS handle bound to the current device.
class CublasHandle {
public:
    CublasHandle() { check_cublas(cublasCreate(&m_handle), "cublasCreate"); }
    ~CublasHandle() {
        if (m_handle) (void)cublasDestroy(m_handle);
    }
    CublasHandle(CublasHandle&& other) noexcept : m_handle(std::exchange(other.m_handle, nullptr)) {}
    CublasHandle& operator=(CublasHandle&&) = delete;
    CublasHandle(const CublasHandle&) = delete;
    // The raw handle.
    cublasHandle_t get() const noexcept { return m_handle; }

private:
    cublasHandle_t m_handle = nullptr;
};

// Page-locked host memory (staging buffers and the 4-byte loss read-back).
class PinnedBuffer {
public:
    PinnedBuffer() = default;
    explicit PinnedBuffer(std::size_t bytes) : m_bytes(bytes) {
        if (bytes) check_cuda(cudaMallocHost(&m_data, bytes), "cudaMallocHost (pinned staging memory)");
    }
    ~PinnedBuffer() {
        if (m_data) (void)cudaFreeHost(m_data);
    }
    PinnedBuffer(PinnedBuffer&& other) noexcept
        : m_data(std::exchange(other.m_data, nullptr)), m_bytes(std::exchange(other.m_bytes, 0)) {}
    PinnedBuffer& operator=(PinnedBuffer&& other) noexcept {
        std::swap(m_data, other.m_data);
        std::swap(m_bytes, other.m_bytes);
        return *this;
    }
    PinnedBuffer(const PinnedBuffer&) = delete;
    // The memory as floats.
    float* floats() const noexcept { return static_cast<float*>(m_data); }
    std::size_t bytes() const noexcept { return m_bytes; }

private:
    void* m_data = nullptr;
    std::size_t m_bytes = 0;
};

// An instantiated CUDA graph (the captured epoch).
class GraphExec {
public:
    GraphExec() = default;
    ~GraphExec() { reset(); }
    GraphExec(const GraphExec&) = delete;
    GraphExec& operator=(const GraphExec&) = delete;
    // Take ownership of a graph and instantiate it; the graph itself is released once instantiated.
    void adopt(cudaGraph_t graph) {
        reset();
        const cudaError_t status = cudaGraphInstantiate(&m_exec, graph, 0);
        (void)cudaGraphDestroy(graph);
        check_cuda(status, "cudaGraphInstantiate (the captured epoch)");
    }
    void reset() noexcept {
        if (m_exec) (void)cudaGraphExecDestroy(m_exec);
        m_exec = nullptr;
    }
    bool ready() const noexcept { return m_exec != nullptr; }
    cudaGraphExec_t get() const noexcept { return m_exec; }

private:
    cudaGraphExec_t m_exec = nullptr;
};

} // namespace brain::cuda
