#include "cpu_kernels.hpp"

#include <brain/dense_math.hpp>
#include <cmath>

namespace brain::cpu {
namespace {

// The activation is a template parameter so that dense_math's switch folds away and each loop vectorises; the
// per-element functions stay the shared reference ones, so training and the core's predict agree bit for bit.
template <int32_t Act>
void bias_activation_rows(float param, const float* bias, float* z, float* a, std::size_t rows,
                          std::size_t width) noexcept {
    for (std::size_t r = 0; r < rows; ++r) {
        float* zr = z + r * width;
        float* ar = a + r * width;
        for (std::size_t j = 0; j < width; ++j) {
            const float v = zr[j] + bias[j];
            zr[j] = v;
            ar[j] = math::activate(Act, v, param);
        }
    }
}

template <int32_t Act>
void backprop_rows(float param, const float* z, const float* a, float* delta, std::size_t count) noexcept {
    for (std::size_t i = 0; i < count; ++i) delta[i] *= math::activation_derivative(Act, z[i], a[i], param);
}

} // namespace

void bias_activation(int32_t activation, float param, const float* bias, float* z, float* a, std::size_t rows,
                     std::size_t width) noexcept {
    if (a == z || activation == BRAIN_ACT_LINEAR) {
        for (std::size_t r = 0; r < rows; ++r) {
            float* zr = z + r * width;
            for (std::size_t j = 0; j < width; ++j) zr[j] += bias[j];
        }
        if (a != z)
            for (std::size_t i = 0; i < rows * width; ++i) a[i] = z[i];
        return;
    }
    switch (activation) {
    case BRAIN_ACT_RELU:
        bias_activation_rows<BRAIN_ACT_RELU>(param, bias, z, a, rows, width);
        return;
    case BRAIN_ACT_LEAKY_RELU:
        bias_activation_rows<BRAIN_ACT_LEAKY_RELU>(param, bias, z, a, rows, width);
        return;
    case BRAIN_ACT_SIGMOID:
        bias_activation_rows<BRAIN_ACT_SIGMOID>(param, bias, z, a, rows, width);
        return;
    case BRAIN_ACT_TANH:
        bias_activation_rows<BRAIN_ACT_TANH>(param, bias, z, a, rows, width);
        return;
    case BRAIN_ACT_GELU:
        bias_activation_rows<BRAIN_ACT_GELU>(param, bias, z, a, rows, width);
        return;
    case BRAIN_ACT_SOFTMAX:
        for (std::size_t r = 0; r < rows; ++r) {
            float* zr = z + r * width;
            for (std::size_t j = 0; j < width; ++j) zr[j] += bias[j];
            math::activate_row(BRAIN_ACT_SOFTMAX, zr, a + r * width, width, param);
        }
        return;
    default:
        bias_activation_rows<BRAIN_ACT_LINEAR>(param, bias, z, a, rows, width);
        return;
    }
}

void backprop_activation(int32_t activation, float param, const float* z, const float* a, float* delta,
                         std::size_t rows, std::size_t width) noexcept {
    const std::size_t count = rows * width;
    switch (activation) {
    case BRAIN_ACT_LINEAR:
        return;
    case BRAIN_ACT_RELU:
        backprop_rows<BRAIN_ACT_RELU>(param, z, a, delta, count);
        return;
    case BRAIN_ACT_LEAKY_RELU:
        backprop_rows<BRAIN_ACT_LEAKY_RELU>(param, z, a, delta, count);
        return;
    case BRAIN_ACT_SIGMOID:
        backprop_rows<BRAIN_ACT_SIGMOID>(param, z, a, delta, count);
        return;
    case BRAIN_ACT_TANH:
        backprop_rows<BRAIN_ACT_TANH>(param, z, a, delta, count);
        return;
    case BRAIN_ACT_GELU:
        backprop_rows<BRAIN_ACT_GELU>(param, z, a, delta, count);
        return;
    default:
        for (std::size_t r = 0; r < rows; ++r)
            math::backprop_activation_row(activation, z + r * width, a + r * width, delta + r * width, width,
                                          param);
        return;
    }
}

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
