// naive::Session: a plain single-threaded C++ trainer for the brain plugin ABI, written for clarity, not speed.
// Every tensor is a std::vector<float> allocated when the session opens, after the budget check.
#pragma once

#include <brain/plugin_abi.h>
#include <chrono>
#include <cstdint>
#include <vector>

namespace naive {

// One dense layer with the offsets of its W (outputs x inputs) and b in the flat parameter array.
struct Layer {
    std::size_t inputs = 0;
    std::size_t outputs = 0;
    int32_t activation = BRAIN_ACT_LINEAR;
    float param = 0.0f;
    std::size_t weight_offset = 0;
    std::size_t bias_offset = 0;
};

// What a session will allocate, derived from the descriptor alone (so the budget is checked first).
struct Plan {
    std::vector<Layer> layers;
    int32_t loss = BRAIN_LOSS_MEAN_SQUARED_ERROR;
    brain_optimizer_desc optimizer{};
    brain_train_config config{};
    std::size_t rows = 0, input_width = 0, target_width = 0;
    std::size_t parameter_count = 0, state_count = 0;
    std::size_t batch_rows = 0; // the largest batch: min(batch_size, rows)
    std::uint64_t budget_bytes = 0;

    // Bytes of the tensors for batches of `batch` rows: parameters, gradients, optimizer state, the gathered
    // batch and per layer z, a and delta.
    std::uint64_t tensor_bytes(std::size_t batch) const noexcept;
};

// z = x W^T + b for `rows` rows: the one matrix product of the backend (the doctor checks it too).
void dense_forward(const float* x, const float* w, const float* b, float* z, std::size_t rows, std::size_t inputs,
                   std::size_t outputs) noexcept;

// Validate a descriptor; throws brain::sdk::Failure naming the value at fault.
Plan make_plan(const brain_session_desc& desc);

// One training session. The ABI guarantees one thread at a time per session.
class Session {
public:
    // Checks the budget before allocating anything (BUDGET_EXCEEDED names the largest batch that fits).
    explicit Session(const brain_session_desc& desc);
    // One epoch in the ABI's batch order; returns the sample-weighted mean loss.
    float train_epoch();
    // Copy parameters, optimizer state and the step count into caller-owned buffers of exactly our sizes.
    void checkpoint(float* parameters, std::uint64_t parameter_count, float* state, std::uint64_t state_count,
                    std::uint64_t* out_step);
    // Measured figures.
    brain_session_stats stats() const noexcept;

private:
    double forward(std::size_t rows); // fills z, a and the output delta; returns the batch loss
    void backward(std::size_t rows);  // fills the gradients
    void step();                      // one optimizer update

    Plan m_plan;
    std::vector<float> m_features, m_targets; // the data set copy (the view is borrowed only during open)
    std::vector<float> m_params, m_grads, m_state;
    std::vector<float> m_x, m_t; // the gathered batch
    std::vector<std::vector<float>> m_z, m_a, m_delta;
    std::uint64_t m_step = 0, m_epoch = 0, m_epochs = 0, m_batches = 0;
    std::uint64_t m_peak = 0, m_device_to_host = 0;
    std::chrono::nanoseconds m_setup{0}, m_training{0}, m_checkpointing{0};
    bool m_failed = false; // after a numerical failure the session refuses further work
};

} // namespace naive
