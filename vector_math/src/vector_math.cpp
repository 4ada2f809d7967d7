// brain::vector_math's dispatch: the widest instruction set of the build that the CPU runs, chosen once per process
// (the same choice in the core and the CPU plugin, which link this same code).
#include "vector_kernels.hpp"

namespace brain::vector_math {
namespace {

struct Supported {
    const Table* tables[3] = {};
    std::size_t count = 0;
};

const Supported& supported() noexcept {
    static const Supported list = [] {
        Supported s;
        s.tables[s.count++] = &kernels::baseline_table();
#if BRAIN_VECTOR_MATH_X86
        __builtin_cpu_init();
        if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) {
            s.tables[s.count++] = &kernels::avx2_table();
            if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512cd") &&
                __builtin_cpu_supports("avx512dq") && __builtin_cpu_supports("avx512bw") &&
                __builtin_cpu_supports("avx512vl"))
                s.tables[s.count++] = &kernels::avx512_table();
        }
#endif
        return s;
    }();
    return list;
}

const Table& chosen() noexcept {
    static const Table& table = *supported().tables[supported().count - 1];
    return table;
}

} // namespace

void bias_activation(int32_t activation, float param, const float* bias, float* z, float* a, std::size_t rows,
                     std::size_t width) noexcept {
    chosen().bias_activation(activation, param, bias, z, a, rows, width);
}

void backprop_activation(int32_t activation, float param, const float* z, const float* a, float* delta,
                         std::size_t rows, std::size_t width) noexcept {
    if (activation == BRAIN_ACT_LINEAR) return; // the derivative is 1: nothing to multiply
    chosen().backprop_activation(activation, param, z, a, delta, rows, width);
}

const char* instruction_set() noexcept {
    return chosen().name;
}

const Table* const* supported_tables(std::size_t& count) noexcept {
    count = supported().count;
    return supported().tables;
}

} // namespace brain::vector_math
