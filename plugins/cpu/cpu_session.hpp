// brain::cpu::CpuSession: one training session of the CPU backend. Holds a copy of the data set and every
// tensor (parameters, gradients, optimizer state, per-layer batch buffers), all allocated at open time.
#pragma once

#include "gemm.hpp"
#include "host_buffer.hpp"
#include "worker_pool.hpp"

#include <brain/plugin_abi.h>
#include <brain/session_counters.hpp>
#include <brain/session_plan.hpp>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace brain::cpu {

using sdk::LayerPlan;
struct AdamStep;

// The shared validated plan (brain/session_plan.hpp) plus what the CPU backend computes from it.
struct SessionPlan : sdk::SessionPlan {
    // Bytes of tensors a session with this plan allocates for batches of `batch_rows` rows (exact, padding
    // included); the dataset copy is not a tensor and is reported separately as dataset_bytes.
    std::uint64_t tensor_bytes_for(std::size_t batch_rows) const noexcept;
};

// UNSUPPORTED naming the CPU backend, the precision and the job ("training", "prediction") unless `precision` is
// float32 or a value no precision has (which the SDK's plans refuse as INVALID_ARGUMENT).
void require_float32(int32_t precision, const char* job);

// Validate a session descriptor (widths, counts, activation/loss pairs, hyper-parameters); throws
// sdk::Failure(INVALID_ARGUMENT, ...) naming the value at fault, or UNSUPPORTED for TF32 and BF16.
SessionPlan make_session_plan(const brain_session_desc& desc);

// A CPU training session (an sdk::BackendSession). Not thread-safe (the ABI serialises calls on one session).
class CpuSession {
public:
    // Validate, check the budget before allocating (BUDGET_EXCEEDED names the largest batch that fits), copy
    // the data set and the initial parameters and optimizer state.
    explicit CpuSession(const brain_session_desc& desc);

    // One epoch, each product split over the session's threads; returns the sample-weighted mean loss.
    // NUMERICAL on NaN/inf, after which the session refuses further work with INVALID_STATE.
    float train_epoch();
    // Copy parameters, optimizer state and the step count out of host memory; sizes must match exactly.
    void checkpoint(float* parameters, std::uint64_t parameter_count, float* optimizer_state,
                    std::uint64_t optimizer_state_count, std::uint64_t* out_step);
    // Use `learning_rate` from the next optimizer step on (the CPU reads it at every step).
    void set_learning_rate(float learning_rate);
    // The rates of the next epoch's steps, one per batch (ABI 1.2); the last stays in effect afterwards.
    void set_step_learning_rates(const float* rates, std::uint64_t count);
    // The counters' figures; the data set copy counts as resident, nothing moves between devices.
    brain_session_stats stats() const noexcept;

private:
    void require_usable(const char* operation) const;
    // Forward pass of the batch of `rows` rows at position `begin` (gathering shuffled rows first); returns the
    // batch loss and leaves dL/dz of the output layer in its delta.
    double forward_and_loss(std::uint64_t epoch, std::size_t begin, std::size_t rows);
    // Gradients of every layer for the batch and one optimizer step, folded into the same parallel steps.
    void backward_and_step(std::size_t rows);
    // The optimizer's update of parameters [begin, end) from their gradients (SGD or Adam/AdamW per the plan).
    void update_parameters(std::size_t begin, std::size_t end, const AdamStep& adam) noexcept;
    // Threads worth using for a batch of `rows` rows (1 when the products are too small to split).
    unsigned threads_for(std::size_t rows) const noexcept;
    // Run fn(index, count) for index in [0, count) in parallel; count 1 runs inline.
    template <class Fn>
    void parallel(unsigned count, Fn&& fn);
    // The activations of layer l for the whole batch buffer (z itself for linear layers).
    float* activations(std::size_t l) noexcept;
    HostBuffer allocate(std::size_t count);

    SessionPlan m_plan;
    std::unique_ptr<const Gemm> m_gemm; // the products (OpenBLAS, oneDNN)
    std::unique_ptr<WorkerPool> m_pool;
    std::vector<double> m_partial_loss; // one per thread, summed in thread order (deterministic)
    std::size_t m_macs_per_row = 0;     // multiply-adds of one row's forward pass
    const float* m_x = nullptr;         // the current batch's inputs (gathered, or rows of the data copy)
    std::vector<float> m_features;      // the data set copy (borrowed only during session_open)
    std::vector<float> m_targets;
    HostBuffer m_params;
    HostBuffer m_grads;
    HostBuffer m_state;
    HostBuffer m_batch_x; // gathered rows of a shuffled batch (empty when batches are contiguous)
    HostBuffer m_batch_t;
    std::vector<HostBuffer> m_z;     // per layer pre-activations
    std::vector<HostBuffer> m_a;     // per layer activations (empty for linear layers: a aliases z)
    std::vector<HostBuffer> m_delta; // per layer dL/dz
    std::uint64_t m_step = 0;
    std::uint64_t m_first_epoch = 0;
    std::vector<float> m_step_rates; // the next epoch's rate per batch; empty: the plan's rate throughout
    sdk::SessionCounters m_counters;
    std::string m_failure; // why the session became unusable; empty while usable
};

} // namespace brain::cpu
