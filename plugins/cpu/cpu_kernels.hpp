// Element-wise kernels of the CPU backend: fused bias + activation, activation backprop (both vectorised by
// brain/vector_math.hpp, the code the core's predict runs), bias gradients and the optimizer updates. Matrix
// products go to OpenBLAS; everything else is here, one pass per tensor.
#pragma once

#include <brain/vector_math.hpp>
#include <cstddef>
#include <cstdint>

namespace brain::cpu {

// The activations and their derivatives: the core's predict runs the same code, so training and predict agree.
using vector_math::backprop_activation;
using vector_math::bias_activation;

// db[j] = sum over rows of delta[r][j], for columns j in [first, last) of a matrix `width` wide.
void column_sums(const float* delta, float* db, std::size_t rows, std::size_t width, std::size_t first,
                 std::size_t last) noexcept;

// PyTorch SGD: v = momentum v + g; p -= lr v.
void sgd_step(float* params, const float* grads, float* velocity, std::size_t n, float learning_rate,
              float momentum) noexcept;

// Coefficients of one Adam/AdamW step, computed once per step (bias corrections in double, as PyTorch does).
struct AdamStep {
    float beta1 = 0.9f;
    float beta2 = 0.999f;
    float epsilon = 1e-8f;
    float step_size = 0.0f;          // lr / (1 - beta1^t)
    float bias_correction2_sqrt = 1; // sqrt(1 - beta2^t)
    float decay = 1.0f;              // AdamW: 1 - lr * weight_decay; Adam: 1
};

// The coefficients for step t (1-based) of Adam (weight_decay ignored) or AdamW.
AdamStep make_adam_step(float learning_rate, float beta1, float beta2, float epsilon, float weight_decay,
                        bool decoupled, std::uint64_t t) noexcept;

// One fused pass: p *= decay; m = b1 m + (1-b1) g; v = b2 v + (1-b2) g^2; p -= step_size m / (sqrt(v)/c2 + eps).
void adam_step(float* params, const float* grads, float* m, float* v, std::size_t n, const AdamStep& step) noexcept;

// True when every value is finite.
bool all_finite(const float* values, std::size_t n) noexcept;

} // namespace brain::cpu
