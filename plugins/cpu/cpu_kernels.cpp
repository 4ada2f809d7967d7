#include "cpu_kernels.hpp"

#include <brain/dense_math.hpp>
#include <cmath>
#include <type_traits>
#include <utility>

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

void add_bias(const float* bias, float* z, std::size_t rows, std::size_t width) noexcept {
    for (std::size_t r = 0; r < rows; ++r) {
        float* zr = z + r * width;
        for (std::size_t j = 0; j < width; ++j) zr[j] += bias[j];
    }
}

template <int32_t Act>
void backprop_rows(float param, const float* z, const float* a, float* delta, std::size_t count) noexcept {
    for (std::size_t i = 0; i < count; ++i) delta[i] *= math::activation_derivative(Act, z[i], a[i], param);
}

// The activations computed element by element (all but softmax).
using Elementwise = std::integer_sequence<int32_t, BRAIN_ACT_LINEAR, BRAIN_ACT_RELU, BRAIN_ACT_LEAKY_RELU,
                                          BRAIN_ACT_SIGMOID, BRAIN_ACT_TANH, BRAIN_ACT_GELU>;

// Calls fn(std::integral_constant<int32_t, A>{}) for the A in the sequence equal to `activation`, so that each
// caller's loop is compiled once per activation; false (fn not called) when none is.
template <class Fn, int32_t... Acts>
bool with_activation_in(std::integer_sequence<int32_t, Acts...>, int32_t activation, Fn&& fn) noexcept {
    return ((activation == Acts && (fn(std::integral_constant<int32_t, Acts>{}), true)) || ...);
}

// The same over the element-wise activations: false for softmax and unknown values.
template <class Fn>
bool with_elementwise_activation(int32_t activation, Fn&& fn) noexcept {
    return with_activation_in(Elementwise{}, activation, std::forward<Fn>(fn));
}

} // namespace

void bias_activation(int32_t activation, float param, const float* bias, float* z, float* a, std::size_t rows,
                     std::size_t width) noexcept {
    if (a == z || activation == BRAIN_ACT_LINEAR) {
        add_bias(bias, z, rows, width);
        if (a != z)
            for (std::size_t i = 0; i < rows * width; ++i) a[i] = z[i];
        return;
    }
    if (activation == BRAIN_ACT_SOFTMAX) {
        add_bias(bias, z, rows, width);
        for (std::size_t r = 0; r < rows; ++r)
            math::activate_row(BRAIN_ACT_SOFTMAX, z + r * width, a + r * width, width, param);
        return;
    }
    const bool known = with_elementwise_activation(
        activation, [&](auto act) { bias_activation_rows<decltype(act)::value>(param, bias, z, a, rows, width); });
    if (!known) bias_activation_rows<BRAIN_ACT_LINEAR>(param, bias, z, a, rows, width);
}

void backprop_activation(int32_t activation, float param, const float* z, const float* a, float* delta,
                         std::size_t rows, std::size_t width) noexcept {
    if (activation == BRAIN_ACT_LINEAR) return;
    const bool elementwise = with_elementwise_activation(
        activation, [&](auto act) { backprop_rows<decltype(act)::value>(param, z, a, delta, rows * width); });
    if (elementwise) return;
    for (std::size_t r = 0; r < rows; ++r) // softmax: the row's Jacobian-vector product
        math::backprop_activation_row(activation, z + r * width, a + r * width, delta + r * width, width, param);
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
