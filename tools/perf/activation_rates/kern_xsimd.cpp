// One kernel file of tools/perf/activation-rates: xsimd over one instruction set (SUFFIX: v3 = AVX2 + FMA, v4 = AVX-512).
#include <xsimd/xsimd.hpp>
#include <cstddef>
#ifndef SUFFIX
#error
#endif
#define CAT2(a,b) a##b
#define CAT(a,b) CAT2(a,b)
using B = xsimd::batch<float>;
template <class F> static void run(const float* x, float* y, std::size_t n, F f) {
  std::size_t i = 0; constexpr std::size_t W = B::size;
  for (; i + W <= n; i += W) f(B::load_unaligned(x + i)).store_unaligned(y + i);
  for (; i < n; ++i) { alignas(64) float t[W] = {}; t[0] = x[i]; alignas(64) float o[W]; f(B::load_aligned(t)).store_aligned(o); y[i] = o[0]; }
}
void CAT(xs_tanh_, SUFFIX)(const float* x, float* y, std::size_t n) { run(x, y, n, [](B v) { return xsimd::tanh(v); }); }
void CAT(xs_erf_, SUFFIX)(const float* x, float* y, std::size_t n) { run(x, y, n, [](B v) { return xsimd::erf(v); }); }
void CAT(xs_exp_, SUFFIX)(const float* x, float* y, std::size_t n) { run(x, y, n, [](B v) { return xsimd::exp(v); }); }
void CAT(xs_sig_, SUFFIX)(const float* x, float* y, std::size_t n) { run(x, y, n, [](B v) { return B(1.f) / (B(1.f) + xsimd::exp(-v)); }); }
void CAT(xs_gelu_, SUFFIX)(const float* x, float* y, std::size_t n) { run(x, y, n, [](B v) { return B(0.5f) * v * (B(1.f) + xsimd::erf(v * B(0.70710678118654752f))); }); }
