#include "cpu_kernels.hpp"

#include <brain/plugin_abi.h>
#include <brain/vector_math.hpp>
#include <cmath>

namespace brain::cpu {

void column_sums(const float* delta, float* db, std::size_t rows, std::size_t width, std::size_t first,
                 std::size_t last) noexcept {
    for (std::size_t j = first; j < last; ++j) db[j] = 0.0f;
    for (std::size_t r = 0; r < rows; ++r) {
        const float* dr = delta + r * width;
        for (std::size_t j = first; j < last; ++j) db[j] += dr[j];
    }
}

void sgd_step(float* params, const float* grads, float* velocity, std::size_t n, float learning_rate,
              float momentum) noexcept {
    for (std::size_t i = 0; i < n; ++i) {
        const float v = momentum * velocity[i] + grads[i];
        velocity[i] = v;
        params[i] -= learning_rate * v;
    }
}

AdamStep make_adam_step(float learning_rate, float beta1, float beta2, float epsilon, float weight_decay,
                        bool decoupled, std::uint64_t t) noexcept {
    AdamStep step;
    step.beta1 = beta1;
    step.beta2 = beta2;
    step.epsilon = epsilon;
    const double steps = static_cast<double>(t);
    const double bias_correction1 = 1.0 - std::pow(static_cast<double>(beta1), steps);
    const double bias_correction2 = 1.0 - std::pow(static_cast<double>(beta2), steps);
    step.step_size = static_cast<float>(static_cast<double>(learning_rate) / bias_correction1);
    step.bias_correction2_sqrt = static_cast<float>(std::sqrt(bias_correction2));
    step.decay = decoupled ? 1.0f - learning_rate * weight_decay : 1.0f;
    return step;
}

void adam_step(float* params, const float* grads, float* m, float* v, std::size_t n,
               const AdamStep& step) noexcept {
    const float b1 = step.beta1, c1 = 1.0f - step.beta1;
    const float b2 = step.beta2, c2 = 1.0f - step.beta2;
    const float step_size = step.step_size, bc2_sqrt = step.bias_correction2_sqrt, eps = step.epsilon;
    const float decay = step.decay;
    for (std::size_t i = 0; i < n; ++i) {
        const float g = grads[i];
        const float mi = b1 * m[i] + c1 * g;
        const float vi = b2 * v[i] + c2 * g * g;
        m[i] = mi;
        v[i] = vi;
        const float denom = std::sqrt(vi) / bc2_sqrt + eps;
        params[i] = params[i] * decay - step_size * mi / denom;
    }
}

bool all_finite(const float* values, std::size_t n) noexcept {
    // Summing x - x is 0 for finite x and NaN otherwise: one branch-free, vectorisable pass.
    float acc = 0.0f;
    for (std::size_t i = 0; i < n; ++i) acc += values[i] - values[i];
    return acc == 0.0f;
}

} // namespace brain::cpu
