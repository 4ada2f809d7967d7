// brain::vector_math for AVX-512 (F, CD, DQ, BW, VL: x86-64 only; CMake compiles this file with those flags). Reached
// only through the table, and only on CPUs that have all of them (vector_math.cpp).
#include "vector_kernels.hpp"

namespace brain::vector_math::kernels {

const Table& avx512_table() noexcept {
    static constexpr Table table = make_table<xsimd::avx512bw>();
    return table;
}

} // namespace brain::vector_math::kernels
