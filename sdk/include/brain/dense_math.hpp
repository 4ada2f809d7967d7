// Header-only reference math for dense layers: activations, their derivatives and the losses, exactly as the
// ABI defines them. The core uses it for predict/evaluate, the CPU plugin for training, and a third-party
// plugin may use it as its host-side reference. All functions are pure and thread-safe.
#pragma once

#include <brain/plugin_abi.h>

#include <algorithm>
#include <cmath>
#include <cstddef>

namespace brain::math {

// The activation of one scalar (every activation but softmax, which needs the whole row).
inline float activate(int32_t activation, float z, float param) noexcept {
    switch (activation) {
    case BRAIN_ACT_RELU: return z > 0.0f ? z : 0.0f;
    case BRAIN_ACT_LEAKY_RELU: return z > 0.0f ? z : param * z;
    case BRAIN_ACT_SIGMOID: return 1.0f / (1.0f + std::exp(-z));
    case BRAIN_ACT_TANH: return std::tanh(z);
    case BRAIN_ACT_GELU: return 0.5f * z * (1.0f + std::erf(z * 0.70710678118654752f));
    default: return z;
    }
}

// d activation / dz for one scalar, given z and a = activate(z) (every activation but softmax).
inline float activation_derivative(int32_t activation, float z, float a, float param) noexcept {
    switch (activation) {
    case BRAIN_ACT_RELU: return z > 0.0f ? 1.0f : 0.0f;
    case BRAIN_ACT_LEAKY_RELU: return z > 0.0f ? 1.0f : param;
    case BRAIN_ACT_SIGMOID: return a * (1.0f - a);
    case BRAIN_ACT_TANH: return 1.0f - a * a;
    case BRAIN_ACT_GELU: {
        const float cdf = 0.5f * (1.0f + std::erf(z * 0.70710678118654752f));
        const float pdf = 0.39894228040143268f * std::exp(-0.5f * z * z);
        return cdf + z * pdf;
    }
    default: return 1.0f;
    }
}

// a = activation(z) for one row of n values; softmax is computed with the row maximum subtracted.
inline void activate_row(int32_t activation, const float* z, float* a, std::size_t n, float param) noexcept {
    if (activation == BRAIN_ACT_SOFTMAX) {
        float m = z[0];
        for (std::size_t i = 1; i < n; ++i) m = std::max(m, z[i]);
        float sum = 0.0f;
        for (std::size_t i = 0; i < n; ++i) {
            a[i] = std::exp(z[i] - m);
            sum += a[i];
        }
        for (std::size_t i = 0; i < n; ++i) a[i] /= sum;
        return;
    }
    for (std::size_t i = 0; i < n; ++i) a[i] = activate(activation, z[i], param);
}

// delta_z = delta_a * activation'(z) for one row, in place on delta (softmax: the Jacobian-vector product).
inline void backprop_activation_row(int32_t activation, const float* z, const float* a, float* delta,
                                    std::size_t n, float param) noexcept {
    if (activation == BRAIN_ACT_SOFTMAX) {
        float dot = 0.0f;
        for (std::size_t i = 0; i < n; ++i) dot += delta[i] * a[i];
        for (std::size_t i = 0; i < n; ++i) delta[i] = a[i] * (delta[i] - dot);
        return;
    }
    for (std::size_t i = 0; i < n; ++i) delta[i] *= activation_derivative(activation, z[i], a[i], param);
}

// Loss of one row (K outputs) and its gradient with respect to the output pre-activation z, for a batch of
// `batch` rows: the returned loss and the gradient are already divided by the batch normalisation the ABI
// defines, so summing over rows gives the batch loss. delta receives dL/dz.
inline float loss_row(int32_t loss, int32_t activation, float param, const float* z, const float* a,
                      const float* t, float* delta, std::size_t k, std::size_t batch) noexcept {
    double total = 0.0;
    if (loss == BRAIN_LOSS_BINARY_CROSS_ENTROPY) {
        const float scale = 1.0f / static_cast<float>(batch * k);
        for (std::size_t i = 0; i < k; ++i) {
            // From the logit, stable for large |z|: max(z,0) - z t + log(1 + exp(-|z|)).
            total += std::max(z[i], 0.0f) - z[i] * t[i] + std::log1p(std::exp(-std::fabs(z[i])));
            delta[i] = (a[i] - t[i]) * scale;
        }
        return static_cast<float>(total) * scale;
    }
    if (loss == BRAIN_LOSS_CATEGORICAL_CROSS_ENTROPY) {
        const float scale = 1.0f / static_cast<float>(batch);
        float m = z[0];
        for (std::size_t i = 1; i < k; ++i) m = std::max(m, z[i]);
        double sum = 0.0;
        for (std::size_t i = 0; i < k; ++i) sum += std::exp(static_cast<double>(z[i] - m));
        const double log_sum = std::log(sum) + m;
        for (std::size_t i = 0; i < k; ++i) {
            total += -static_cast<double>(t[i]) * (static_cast<double>(z[i]) - log_sum);
            delta[i] = (a[i] - t[i]) * scale;
        }
        return static_cast<float>(total) * scale;
    }
    const float scale = 1.0f / static_cast<float>(batch * k);
    for (std::size_t i = 0; i < k; ++i) {
        const float d = a[i] - t[i];
        total += static_cast<double>(d) * d;
        delta[i] = 2.0f * d * scale;
    }
    backprop_activation_row(activation, z, a, delta, k, param);
    return static_cast<float>(total) * scale;
}

// Norm-wise relative error ||a - b|| / ||b|| of two float arrays of n values, accumulated in double: the parity
// measure of the conformance kit and the tests. Infinity when any value is not finite.
inline double relative_error(const float* a, const float* b, std::size_t n) noexcept {
    double num = 0.0, den = 0.0;
    for (std::size_t i = 0; i < n; ++i) {
        if (!std::isfinite(a[i]) || !std::isfinite(b[i])) return INFINITY;
        const double d = static_cast<double>(a[i]) - b[i];
        num += d * d;
        den += static_cast<double>(b[i]) * b[i];
    }
    return std::sqrt(num) / std::max(std::sqrt(den), 1e-30);
}

} // namespace brain::math
