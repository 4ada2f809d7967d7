// One kernel file of tools/perf/activation-rates: Highway over one instruction set (SUFFIX: v3 = AVX2 + FMA, v4 = AVX-512).
#include <hwy/highway.h>
#include <hwy/contrib/math/math-inl.h>
#include <cstddef>
#define CAT2(a,b) a##b
#define CAT(a,b) CAT2(a,b)
namespace hn = hwy::HWY_NAMESPACE;
template <class F> static void run(const float* x, float* y, std::size_t n, F f) {
  const hn::ScalableTag<float> d; const std::size_t W = hn::Lanes(d); std::size_t i = 0;
  for (; i + W <= n; i += W) hn::StoreU(f(d, hn::LoadU(d, x + i)), d, y + i);
  if (i < n) { const size_t r = n - i; HWY_ALIGN float t[64] = {}; for (size_t k=0;k<r;++k) t[k]=x[i+k]; HWY_ALIGN float o[64]; hn::Store(f(d, hn::Load(d, t)), d, o); for (size_t k=0;k<r;++k) y[i+k]=o[k]; }
}
void CAT(hw_tanh_, SUFFIX)(const float* x, float* y, std::size_t n) { run(x, y, n, [](auto d, auto v) { return hn::Tanh(d, v); }); }
void CAT(hw_exp_, SUFFIX)(const float* x, float* y, std::size_t n) { run(x, y, n, [](auto d, auto v) { return hn::Exp(d, v); }); }
void CAT(hw_sig_, SUFFIX)(const float* x, float* y, std::size_t n) { run(x, y, n, [](auto d, auto v) { auto one = hn::Set(d, 1.f); return hn::Div(one, hn::Add(one, hn::Exp(d, hn::Neg(v)))); }); }
