// naive::Session: a plain single-threaded C++ trainer for the brain plugin ABI, written for clarity, not speed.
// Every tensor is a std::vector<float> allocated when the session opens, after the budget check.
#pragma once

#include <brain/plugin_abi.h>
#include <brain/session_counters.hpp>
#include <brain/session_plan.hpp>
#include <cstdint>
#include <vector>

namespace naive {

// A defect built in on purpose: brain's own test suite compiles this example once per defect to prove that the
// conformance kit catches each. A build without NAIVE_DEFECT has none; leave it out of your own plugin.
enum class Defect {
    None,
    NoGelu,             // refuses GELU while its capabilities list it
    NoSoftmax,          // refuses softmax while its capabilities list it
    SgdWithoutMomentum, // ignores SGD's momentum
    AdamwWithoutDecay,  // ignores AdamW's weight decay
    DropsShortBatch,    // skips an epoch's last, short batch
    CrashesInProbe,     // dereferences a null pointer in probe
    LacksGelu,          // declares that it does not run GELU, and refuses it (an honest gap, not a defect)
};
#ifndef NAIVE_DEFECT
#define NAIVE_DEFECT None
#endif
inline constexpr Defect defect = Defect::NAIVE_DEFECT;

#if BRAIN_ABI_VERSION_MINOR >= 2 // the capabilities entry arrived in ABI 1.2
// What the backend runs: every activation, loss and optimizer, float32 products only.
brain_capabilities capabilities();
#endif

// The SDK's validated plan of a session (brain/session_plan.hpp) and what this backend allocates for it.
struct Plan : brain::sdk::SessionPlan {
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
    // Use `learning_rate` from the next optimizer step on (the ABI 1.1 entry; absent from a 1.0 build's table).
    void set_learning_rate(float learning_rate);
    // The rates of the next epoch's steps, one per batch (the ABI 1.2 entry; unused by a 1.0 or 1.1 build).
    void set_step_learning_rates(const float* rates, std::uint64_t count);
    // Measured figures.
    brain_session_stats stats() const noexcept;

private:
    double forward(std::size_t rows); // fills z, a and the output delta; returns the batch loss
    void backward(std::size_t rows);  // fills the gradients
    void step();                      // one optimizer update

    brain::sdk::SessionCounters m_counters;
    Plan m_plan;
    std::vector<float> m_features, m_targets; // the data set copy (the view is borrowed only during open)
    std::vector<float> m_params, m_grads, m_state;
    std::vector<float> m_x, m_t; // the gathered batch
    std::vector<std::vector<float>> m_z, m_a, m_delta;
    std::uint64_t m_step = 0, m_epoch = 0;
    std::vector<float> m_step_rates; // the next epoch's rate per batch; empty: the plan's rate throughout
    bool m_failed = false; // after a numerical failure the session refuses further work
};

} // namespace naive
