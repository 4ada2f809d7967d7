// brain::vector_math for AVX2 with FMA (x86-64 only; CMake compiles this file with -mavx2 -mfma). Reached only
// through the table, and only on CPUs that have both (vector_math.cpp).
#include "vector_kernels.hpp"

namespace brain::vector_math::kernels {

const Table& avx2_table() noexcept {
    static constexpr Table table = make_table<xsimd::fma3<xsimd::avx2>>();
    return table;
}

} // namespace brain::vector_math::kernels
