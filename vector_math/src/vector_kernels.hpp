// The vector kernels of brain::vector_math, written once over an xsimd architecture and compiled once per
// instruction set (isa_*.cpp, each with its own compiler flags). Included only by those files.
#pragma once

#include <brain/plugin_abi.h>
#include <brain/vector_math.hpp>
#include <cstddef>
#include <cstdint>
#include <xsimd/xsimd.hpp>

namespace brain::vector_math {

namespace kernels {

// Element-wise operations of one activation, as in brain/dense_math.hpp (activate, activation_derivative).
template <class B>
struct Act {
    using T = float;
    static B relu(B z) { return xsimd::select(z > B(0.0f), z, B(0.0f)); }
    static B leaky(B z, T slope) { return xsimd::select(z > B(0.0f), z, B(slope) * z); }
    static B sigmoid(B z) { return B(1.0f) / (B(1.0f) + xsimd::exp(-z)); }
    static B gelu(B z) { return B(0.5f) * z * (B(1.0f) + xsimd::erf(z * B(0.70710678118654752f))); }
    static B gelu_derivative(B z) {
        const B cdf = B(0.5f) * (B(1.0f) + xsimd::erf(z * B(0.70710678118654752f)));
        const B pdf = B(0.39894228040143268f) * xsimd::exp(B(-0.5f) * z * z);
        return cdf + z * pdf;
    }
};

// Calls fn(v) on n values of `in`, storing to `out` (which may be `in`): whole vectors, then a last partial one
// through a zero-padded vector, so that every element goes through the same vector code.
template <class B, class Fn>
inline void map(const float* in, float* out, std::size_t n, Fn fn) {
    constexpr std::size_t width = B::size;
    std::size_t i = 0;
    for (; i + width <= n; i += width) fn(B::load_unaligned(in + i)).store_unaligned(out + i);
    if (i < n) {
        alignas(64) float buffer[width] = {};
        for (std::size_t j = 0; i + j < n; ++j) buffer[j] = in[i + j];
        fn(B::load_aligned(buffer)).store_aligned(buffer);
        for (std::size_t j = 0; i + j < n; ++j) out[i + j] = buffer[j];
    }
}

// delta[i] *= fn(z[i], a[i]) over n values, as map does it.
template <class B, class Fn>
inline void scale(const float* z, const float* a, float* delta, std::size_t n, Fn fn) {
    constexpr std::size_t width = B::size;
    std::size_t i = 0;
    for (; i + width <= n; i += width)
        (B::load_unaligned(delta + i) * fn(B::load_unaligned(z + i), B::load_unaligned(a + i)))
            .store_unaligned(delta + i);
    if (i < n) {
        alignas(64) float bz[width] = {}, ba[width] = {}, bd[width] = {};
        for (std::size_t j = 0; i + j < n; ++j) {
            bz[j] = z[i + j];
            ba[j] = a[i + j];
            bd[j] = delta[i + j];
        }
        (B::load_aligned(bd) * fn(B::load_aligned(bz), B::load_aligned(ba))).store_aligned(bd);
        for (std::size_t j = 0; i + j < n; ++j) delta[i + j] = bd[j];
    }
}

template <class Arch>
struct Kernels {
    using B = xsimd::batch<float, Arch>;
    using A = Act<B>;

    static void add_bias(const float* bias, float* z, std::size_t rows, std::size_t width) noexcept {
        for (std::size_t r = 0; r < rows; ++r) {
            float* zr = z + r * width;
            for (std::size_t j = 0; j < width; ++j) zr[j] += bias[j];
        }
    }

    // a = softmax(z) over one row: the maximum subtracted, exp vectorised, the sum in order (as dense_math).
    static void softmax_row(const float* z, float* a, std::size_t n) noexcept {
        float m = z[0];
        for (std::size_t i = 1; i < n; ++i) m = z[i] > m ? z[i] : m;
        const B shift(m);
        map<B>(z, a, n, [&](B v) { return xsimd::exp(v - shift); });
        float sum = 0.0f;
        for (std::size_t i = 0; i < n; ++i) sum += a[i];
        for (std::size_t i = 0; i < n; ++i) a[i] /= sum;
    }

    static void bias_activation(int32_t activation, float param, const float* bias, float* z, float* a,
                                std::size_t rows, std::size_t width) noexcept {
        if (bias) add_bias(bias, z, rows, width);
        if (a == z) return;
        const std::size_t n = rows * width;
        switch (activation) {
        case BRAIN_ACT_RELU: map<B>(z, a, n, [](B v) { return A::relu(v); }); return;
        case BRAIN_ACT_LEAKY_RELU: map<B>(z, a, n, [param](B v) { return A::leaky(v, param); }); return;
        case BRAIN_ACT_SIGMOID: map<B>(z, a, n, [](B v) { return A::sigmoid(v); }); return;
        case BRAIN_ACT_TANH: map<B>(z, a, n, [](B v) { return xsimd::tanh(v); }); return;
        case BRAIN_ACT_GELU: map<B>(z, a, n, [](B v) { return A::gelu(v); }); return;
        case BRAIN_ACT_SOFTMAX:
            for (std::size_t r = 0; r < rows; ++r) softmax_row(z + r * width, a + r * width, width);
            return;
        default:
            for (std::size_t i = 0; i < n; ++i) a[i] = z[i];
            return;
        }
    }

    static void backprop_activation(int32_t activation, float param, const float* z, const float* a, float* delta,
                                    std::size_t rows, std::size_t width) noexcept {
        const std::size_t n = rows * width;
        switch (activation) {
        case BRAIN_ACT_RELU:
            scale<B>(z, a, delta, n, [](B v, B) { return xsimd::select(v > B(0.0f), B(1.0f), B(0.0f)); });
            return;
        case BRAIN_ACT_LEAKY_RELU:
            scale<B>(z, a, delta, n, [param](B v, B) { return xsimd::select(v > B(0.0f), B(1.0f), B(param)); });
            return;
        case BRAIN_ACT_SIGMOID: scale<B>(z, a, delta, n, [](B, B s) { return s * (B(1.0f) - s); }); return;
        case BRAIN_ACT_TANH: scale<B>(z, a, delta, n, [](B, B t) { return B(1.0f) - t * t; }); return;
        case BRAIN_ACT_GELU: scale<B>(z, a, delta, n, [](B v, B) { return A::gelu_derivative(v); }); return;
        case BRAIN_ACT_SOFTMAX:
            for (std::size_t r = 0; r < rows; ++r) { // the row's Jacobian-vector product: a (delta - delta . a)
                const float* ar = a + r * width;
                float* dr = delta + r * width;
                float dot = 0.0f;
                for (std::size_t i = 0; i < width; ++i) dot += dr[i] * ar[i];
                for (std::size_t i = 0; i < width; ++i) dr[i] = ar[i] * (dr[i] - dot);
            }
            return;
        default: return; // linear: the derivative is 1
        }
    }
};

// The table of one instruction set, named by xsimd's name for it.
template <class Arch>
constexpr Table make_table() {
    return {Arch::name(), &Kernels<Arch>::bias_activation, &Kernels<Arch>::backprop_activation};
}

// Each instruction set's table, defined by its isa_*.cpp (only those the build compiles exist).
const Table& baseline_table() noexcept;
const Table& avx2_table() noexcept;
const Table& avx512_table() noexcept;

} // namespace kernels
} // namespace brain::vector_math
