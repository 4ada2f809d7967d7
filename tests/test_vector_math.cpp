// brain::vector_math (the vectorised activations that the core's predict and the CPU plugin's training share): every
// instruction set this CPU runs stays within the error bounds docs/model-format.md states, against the functions in
// double precision; the piecewise-linear activations equal dense_math's scalar ones exactly; and each element's
// result depends on its value alone, never on where it sits in the array.
#include "support/catch.hpp"

#include <brain/dense_math.hpp>
#include <brain/random.hpp>
#include <brain/vector_math.hpp>
#include <cmath>
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

namespace {

using brain::vector_math::Table;

// The values every check runs over: a million spread over [-30, 30], denser near 0 (where GELU and tanh bend), and
// the edges: zeros, the smallest normal and subnormal values, and magnitudes where exp overflows or underflows.
const std::vector<float>& sample() {
    static const std::vector<float> values = [] {
        std::vector<float> v = {0.0f, -0.0f, 1e-38f, -1e-38f, 1e-45f, -1e-45f, 1e-8f, -1e-8f, 88.0f, -88.0f,
                                89.0f, -89.0f, 104.0f, -104.0f, 1e30f, -1e30f};
        brain::Random rng(17);
        for (int i = 0; i < 500000; ++i) v.push_back(static_cast<float>(rng.uniform(-30.0, 30.0)));
        for (int i = 0; i < 500000; ++i) v.push_back(static_cast<float>(rng.uniform(-1.0, 1.0) * std::exp(rng.uniform(-12.0, 2.0))));
        return v;
    }();
    return values;
}

// The exact function in double precision.
double exact(int32_t activation, double z) {
    switch (activation) {
    case BRAIN_ACT_SIGMOID: return 1.0 / (1.0 + std::exp(-z));
    case BRAIN_ACT_TANH: return std::tanh(z);
    case BRAIN_ACT_GELU: return 0.5 * z * std::erfc(-z / std::sqrt(2.0));
    default: return z;
    }
}
double exact_gelu_derivative(double z) {
    return 0.5 * std::erfc(-z / std::sqrt(2.0)) + z * std::exp(-0.5 * z * z) / std::sqrt(2.0 * M_PI);
}

// The spacing of floats at x (an ulp), that of the smallest normal float below it.
double ulp(double x) {
    return std::ldexp(1.0, std::ilogb(std::max(std::fabs(x), 0x1p-126)) - 23);
}

std::vector<const Table*> tables() {
    std::size_t count = 0;
    const Table* const* list = brain::vector_math::supported_tables(count);
    return {list, list + count};
}

// The largest error of `activation` over the sample, in the units docs/model-format.md states its bound in: ulps of
// the exact value, except that GELU's are ulps or |z| 2^-24 (1 + erf(z / sqrt 2) cancels for negative z in any
// float evaluation of the formula), and results below the smallest normal float (sigmoid of z < -87) count from it.
double worst_error(const Table& table, int32_t activation) {
    std::vector<float> z = sample(), a(z.size());
    table.bias_activation(activation, 0.0f, nullptr, z.data(), a.data(), 1, z.size());
    double worst = 0.0;
    for (std::size_t i = 0; i < z.size(); ++i) {
        const double want = exact(activation, z[i]);
        const double unit = activation == BRAIN_ACT_GELU ? std::max(ulp(want), std::fabs(z[i]) * 0x1p-24)
                                                         : std::max(ulp(want), 0x1p-126);
        worst = std::max(worst, std::fabs(a[i] - want) / unit);
    }
    return worst;
}

} // namespace

TEST_CASE("vector math: every instruction set stays within the documented error of each activation", "[core]") {
    for (const Table* table : tables()) {
        INFO("instruction set " << table->name);
        CHECK(worst_error(*table, BRAIN_ACT_TANH) <= 2.0);
        CHECK(worst_error(*table, BRAIN_ACT_SIGMOID) <= 3.0);
        CHECK(worst_error(*table, BRAIN_ACT_GELU) <= 2.0);
    }
    CHECK(std::string(brain::vector_math::instruction_set()) == tables().back()->name);
}

TEST_CASE("vector math: ReLU, leaky ReLU and linear equal dense_math's scalar functions exactly", "[core]") {
    const std::vector<float>& z = sample();
    for (const Table* table : tables()) {
        INFO("instruction set " << table->name);
        for (const int32_t activation : {BRAIN_ACT_LINEAR, BRAIN_ACT_RELU, BRAIN_ACT_LEAKY_RELU}) {
            INFO("activation " << activation);
            std::vector<float> zz = z, a(z.size()), delta(z.size(), 0.75f);
            table->bias_activation(activation, 0.01f, nullptr, zz.data(), a.data(), 1, z.size());
            table->backprop_activation(activation, 0.01f, zz.data(), a.data(), delta.data(), 1, z.size());
            std::size_t differing = 0;
            for (std::size_t i = 0; i < z.size(); ++i) {
                const float want = brain::math::activate(activation, z[i], 0.01f);
                const float slope = activation == BRAIN_ACT_LINEAR
                                        ? 1.0f
                                        : brain::math::activation_derivative(activation, z[i], want, 0.01f);
                if (a[i] != want || delta[i] != 0.75f * slope) ++differing;
            }
            CHECK(differing == 0);
        }
    }
}

TEST_CASE("vector math: derivatives stay within their documented error", "[core]") {
    const std::vector<float>& z = sample();
    for (const Table* table : tables()) {
        INFO("instruction set " << table->name);
        for (const int32_t activation : {BRAIN_ACT_SIGMOID, BRAIN_ACT_TANH, BRAIN_ACT_GELU}) {
            INFO("activation " << activation);
            std::vector<float> zz = z, a(z.size()), delta(z.size(), 1.0f);
            table->bias_activation(activation, 0.0f, nullptr, zz.data(), a.data(), 1, z.size());
            table->backprop_activation(activation, 0.0f, zz.data(), a.data(), delta.data(), 1, z.size());
            double worst = 0.0;
            for (std::size_t i = 0; i < z.size(); ++i) {
                // Sigmoid's and tanh's derivatives are dense_math's formulas on a (a (1 - a), 1 - a^2), within one
                // rounding of them (2^-24: the values are at most 1); GELU's within 2 ulps of the exact derivative or
                // 2^-24 (its cdf term rounds 1 + erf).
                double want, unit = 0x1p-24;
                if (activation == BRAIN_ACT_GELU) {
                    want = exact_gelu_derivative(z[i]);
                    unit = std::max(ulp(want), 0x1p-24) * 2.0;
                } else {
                    const double s = a[i];
                    want = activation == BRAIN_ACT_SIGMOID ? s * (1.0 - s) : 1.0 - s * s;
                }
                worst = std::max(worst, std::fabs(delta[i] - want) / unit);
            }
            CHECK(worst <= 1.0);
        }
    }
}

TEST_CASE("vector math: softmax rows sum to one and match the exact softmax", "[core]") {
    brain::Random rng(5);
    for (const Table* table : tables()) {
        INFO("instruction set " << table->name);
        for (const std::size_t width : {1u, 2u, 5u, 16u, 17u, 32u, 100u}) {
            INFO("width " << width);
            std::vector<float> z(3 * width), a(z.size());
            for (float& v : z) v = static_cast<float>(rng.uniform(-20.0, 20.0));
            table->bias_activation(BRAIN_ACT_SOFTMAX, 0.0f, nullptr, z.data(), a.data(), 3, width);
            for (std::size_t r = 0; r < 3; ++r) {
                // Against the exact softmax of the rounded shifts z - max (what dense_math's formula rounds first).
                const float* zr = &z[r * width];
                float m = zr[0];
                for (std::size_t i = 1; i < width; ++i) m = std::max(m, zr[i]);
                double sum = 0.0, total = 0.0, worst = 0.0;
                for (std::size_t i = 0; i < width; ++i) sum += std::exp(static_cast<double>(zr[i] - m));
                for (std::size_t i = 0; i < width; ++i) {
                    const double want = std::exp(static_cast<double>(zr[i] - m)) / sum;
                    total += a[r * width + i];
                    worst = std::max(worst, std::fabs(a[r * width + i] - want) / ulp(want));
                }
                CHECK(std::fabs(total - 1.0) < 1e-5);
                CHECK(worst <= 8.0);
            }
        }
    }
}

TEST_CASE("vector math: an element's result does not depend on its place in the array", "[core]") {
    // The core's predict and the plugin's threads split rows differently; a value must come out the same wherever
    // it lies, the vectors' tails included.
    brain::Random rng(9);
    std::vector<float> z(1003);
    for (float& v : z) v = static_cast<float>(rng.uniform(-6.0, 6.0));
    for (const int32_t activation : {BRAIN_ACT_SIGMOID, BRAIN_ACT_TANH, BRAIN_ACT_GELU, BRAIN_ACT_LEAKY_RELU}) {
        INFO("activation " << activation);
        std::vector<float> zz = z, whole(z.size()), delta(z.size(), 1.0f);
        brain::vector_math::bias_activation(activation, 0.01f, nullptr, zz.data(), whole.data(), 1, z.size());
        brain::vector_math::backprop_activation(activation, 0.01f, zz.data(), whole.data(), delta.data(), 1,
                                                z.size());
        std::size_t differing = 0;
        for (std::size_t i = 0; i < z.size(); ++i) {
            float zi = z[i], ai = 0.0f, di = 1.0f;
            brain::vector_math::bias_activation(activation, 0.01f, nullptr, &zi, &ai, 1, 1);
            brain::vector_math::backprop_activation(activation, 0.01f, &zi, &ai, &di, 1, 1);
            if (ai != whole[i] || di != delta[i]) ++differing;
        }
        CHECK(differing == 0);
    }
}

TEST_CASE("vector math: the bias is added before the activation, and a linear layer's a is its z", "[core]") {
    const std::vector<float> bias = {0.5f, -1.0f, 2.0f};
    std::vector<float> z = {1.0f, 1.0f, -3.0f, 0.0f, 2.0f, 0.0f}, a(6);
    brain::vector_math::bias_activation(BRAIN_ACT_RELU, 0.0f, bias.data(), z.data(), a.data(), 2, 3);
    CHECK(z == std::vector<float>{1.5f, 0.0f, -1.0f, 0.5f, 1.0f, 2.0f});
    CHECK(a == std::vector<float>{1.5f, 0.0f, 0.0f, 0.5f, 1.0f, 2.0f});
    brain::vector_math::bias_activation(BRAIN_ACT_LINEAR, 0.0f, bias.data(), z.data(), z.data(), 2, 3);
    CHECK(z == std::vector<float>{2.0f, -1.0f, 1.0f, 1.0f, 0.0f, 4.0f});
}
