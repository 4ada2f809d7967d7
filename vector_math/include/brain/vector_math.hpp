// brain::vector_math: the activations and their derivatives over arrays, vectorised (xsimd) for the widest
// instruction set the CPU has, chosen once per process. The core's predict and the CPU plugin's training link the
// same object code, so both compute every activation identically on a machine; each element's result depends only
// on its own value (a tail shorter than a vector goes through the same vector code), never on its position or on
// how rows are split over threads. The functions are those of brain/dense_math.hpp, within the bounds documented in
// docs/model-format.md ("Activations"). Internal to the build: not installed, not part of the SDK.
#pragma once

#include <cstddef>
#include <cstdint>

namespace brain::vector_math {

// z[r][j] += bias[j] (skipped when bias is null), then a[r][j] = activation(z[r][j]) for `rows` rows of `width`
// values (softmax over each row). When a == z only the bias is added (a linear layer's a is its z).
void bias_activation(int32_t activation, float param, const float* bias, float* z, float* a, std::size_t rows,
                     std::size_t width) noexcept;

// delta[r][j] *= activation'(z[r][j]), given a = activation(z) (softmax: each row's Jacobian-vector product).
void backprop_activation(int32_t activation, float param, const float* z, const float* a, float* delta,
                         std::size_t rows, std::size_t width) noexcept;

// The instruction set the functions use in this process, by xsimd's name ("avx512bw", "fma3+avx2", "sse2",
// "neon64", ...): the widest of supported_tables().
const char* instruction_set() noexcept;

// The functions of one instruction set.
struct Table {
    const char* name;
    void (*bias_activation)(int32_t, float, const float*, float*, float*, std::size_t, std::size_t) noexcept;
    void (*backprop_activation)(int32_t, float, const float*, const float*, float*, std::size_t,
                                std::size_t) noexcept;
};

// Every instruction set of the build that this CPU runs, narrowest first (the tests check each one's accuracy).
const Table* const* supported_tables(std::size_t& count) noexcept;

} // namespace brain::vector_math
