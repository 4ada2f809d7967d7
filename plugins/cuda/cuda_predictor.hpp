// brain::cuda::CudaPredictor: the CUDA backend's predictor (ABI 1.2's predictor entries). The weights stay on the
// device with no optimizer state; each predictor_run call goes through the device in parts whose host copies,
// transfers and products overlap, each part's products and kernels replayed from a CUDA graph where its shape
// repeats.
#pragma once

#include "cuda_handles.hpp"
#include "device_allocator.hpp"
#include "device_plan.hpp"
#include "kernel_module.hpp"
#include "lt_matmul.hpp"

#include <brain/plugin_abi.h>
#include <brain/session_plan.hpp>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace brain::cuda {

// A CUDA predictor. Not thread-safe (the ABI allows one predictor_run at a time).
class CudaPredictor {
public:
    // Validate, check the budget before any CUDA call (BUDGET_EXCEEDED names the largest max_batch_rows that
    // fits), then upload the weights: float32 for precision float32 and tf32, a bf16 copy for bf16.
    explicit CudaPredictor(const brain_predictor_desc& desc);
    ~CudaPredictor();
    CudaPredictor(const CudaPredictor&) = delete;
    CudaPredictor& operator=(const CudaPredictor&) = delete;

    // Outputs of `rows` (<= max_batch_rows) standardised input rows, after the output activation.
    void run(const float* inputs, std::uint64_t rows, float* outputs);

private:
    // The products of one part shape: `rows` rows read from input slot `slot`, with its captured graph.
    struct Part {
        std::size_t rows = 0;
        int slot = 0;
        std::vector<LtMatmul> forward;
        std::vector<bool> bias_in_product;       // the product's epilogue adds the bias
        std::vector<bool> activation_in_product; // ... and applies ReLU
        GraphExec graph;                         // captured at its first use, for the repeating shape only
    };

    // Timing events of one call (test hook BRAIN_CUDA_TEST_PREDICT_TIMELINE): inactive, and free, unless begun.
    class Timeline {
    public:
        // Start: an event on `stream` and the host's clock.
        void begin(cudaStream_t stream);
        // An event on `stream` / the host's clock now, when begun.
        void mark(cudaStream_t stream);
        void host_mark();
        bool active() const noexcept { return !m_events.empty(); }
        std::chrono::steady_clock::time_point last_host_mark() const { return m_host_marks.back(); }
        // The log's words: the device's marks from the start, the host's steps since `previous_return`.
        std::string text(std::chrono::steady_clock::time_point previous_return) const;

    private:
        std::vector<Event> m_events;
        std::vector<std::chrono::steady_clock::time_point> m_host_marks;
    };

    Part& part_for(std::size_t rows, int slot);
    Part plan_part(std::size_t rows, int slot);
    // Time the full part's products in cuBLASLt's candidate algorithms and keep the fastest; the log's words.
    std::string tune_full_part();
    void enqueue_part(const Part& part);
    unsigned elementwise_blocks(std::uint64_t count) const noexcept;

    sdk::PredictorPlan m_plan;
    PaddedLayout m_layout;
    std::size_t m_part_rows = 0; // rows of a full part
    std::size_t m_widest_hidden = 0;
    int m_device = 0;
    int m_sm_count = 1;
    const KernelModule* m_kernels = nullptr;
    DeviceAllocator m_allocator;
    Stream m_compute, m_copy; // the products and read-backs; the inputs' transfers
    LtHandle m_lt;
    CublasHandle m_cublas; // only for products cuBLASLt has no algorithm for
    std::uint64_t m_workspace_bytes = 0;
    DeviceBuffer m_weights;   // the padded layout: float32, or bf16 for precision bf16
    DeviceBuffer m_head_bias; // bf16 only: the output layer's biases in float32
    DeviceBuffer m_x[2];      // float32 inputs, one per slot
    DeviceBuffer m_x16;       // bf16 only: the part's inputs converted
    DeviceBuffer m_hidden[2]; // hidden activations, alternating by layer
    DeviceBuffer m_y;         // the part's outputs
    DeviceBuffer m_workspace;
    PinnedBuffer m_stage[2]; // the inputs of a part, copied from the caller's rows
    PinnedBuffer m_out;      // a call's outputs
    PinnedBuffer m_bad;      // set by the device when a call's inputs hold a NaN or infinity
    Event m_copied[2];       // a slot's inputs are on the device
    Event m_consumed[2];     // a slot's inputs were read by its part's products
    std::vector<Part> m_parts;
    bool m_use_graphs = true;
    std::chrono::steady_clock::time_point m_last_return; // the timeline hook's previous call
};

} // namespace brain::cuda
