// brain::vector_math for the instruction set the whole build targets (SSE2 on x86-64, NEON on AArch64): the one
// every CPU of the platform runs.
#include "vector_kernels.hpp"

namespace brain::vector_math::kernels {

const Table& baseline_table() noexcept {
    static constexpr Table table = make_table<xsimd::default_arch>();
    return table;
}

} // namespace brain::vector_math::kernels
