// tools/perf/activation-rates: ns per element of tanh, erf, exp, sigmoid and GELU over arrays of 65,536 floats, one
// thread, by glibc's scalar functions, SLEEF 3.5 (u10), xsimd and Highway (AVX2 + FMA and AVX-512 each), and the
// largest error of each over a sweep of [-20, 20] in ulps (against double precision). Not part of the build.
#include <sleef.h>
#include <immintrin.h>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <cstdint>
#include <random>
#include <vector>
#include <functional>
#include <string>
using Fn = void (*)(const float*, float*, std::size_t);
#define DECL(p) void p##_tanh_##S(const float*, float*, std::size_t);
#define XS(S) void xs_tanh_##S(const float*, float*, std::size_t); void xs_erf_##S(const float*, float*, std::size_t); void xs_exp_##S(const float*, float*, std::size_t); void xs_sig_##S(const float*, float*, std::size_t); void xs_gelu_##S(const float*, float*, std::size_t);
#define HW(S) void hw_tanh_##S(const float*, float*, std::size_t); void hw_exp_##S(const float*, float*, std::size_t); void hw_sig_##S(const float*, float*, std::size_t);
XS(v3) XS(v4) HW(v3) HW(v4)
void sl8_tanh(const float*, float*, std::size_t);
void sl8_erf(const float*, float*, std::size_t);
void sl8_exp(const float*, float*, std::size_t);
void sl8_sig(const float*, float*, std::size_t);
void sl8_gelu(const float*, float*, std::size_t);
void sl16_tanh(const float*, float*, std::size_t);
void sl16_erf(const float*, float*, std::size_t);
void sl16_exp(const float*, float*, std::size_t);
void sl16_sig(const float*, float*, std::size_t);
void sl16_gelu(const float*, float*, std::size_t);
__attribute__((noinline)) void sc_tanh(const float* x, float* y, std::size_t n) { for (std::size_t i = 0; i < n; ++i) y[i] = std::tanh(x[i]); }
__attribute__((noinline)) void sc_erf(const float* x, float* y, std::size_t n) { for (std::size_t i = 0; i < n; ++i) y[i] = std::erf(x[i]); }
__attribute__((noinline)) void sc_exp(const float* x, float* y, std::size_t n) { for (std::size_t i = 0; i < n; ++i) y[i] = std::exp(x[i]); }
__attribute__((noinline)) void sc_sig(const float* x, float* y, std::size_t n) { for (std::size_t i = 0; i < n; ++i) y[i] = 1.f / (1.f + std::exp(-x[i])); }
__attribute__((noinline)) void sc_gelu(const float* x, float* y, std::size_t n) { for (std::size_t i = 0; i < n; ++i) y[i] = 0.5f * x[i] * (1.f + std::erf(x[i] * 0.70710678118654752f)); }
// SLEEF through its dispatchers (8-wide AVX2 and 16-wide AVX-512)
#define SL(name, W, call, T, L, S) __attribute__((noinline)) void sl##W##_##name(const float* x, float* y, std::size_t n) { std::size_t i = 0; for (; i + W <= n; i += W) S(y + i, call(L(x + i))); for (; i < n; ++i) y[i] = Sleef_##name##f1_u10purec(x[i]); }
double ref(const std::string& f, double x) {
  if (f == "tanh") return std::tanh(x); if (f == "erf") return std::erf(x); if (f == "exp") return std::exp(x);
  if (f == "sig") return 1.0 / (1.0 + std::exp(-x)); return 0.5 * x * (1.0 + std::erf(x * 0.70710678118654752));
}
double ulp_err(float got, double want) {
  if (std::isnan(got) && std::isnan(want)) return 0; if (got == want) return 0;
  float w = (float)want; if (std::isinf(w)) return std::isinf(got) && got == w ? 0 : 1e9;
  double u = std::nextafter(std::fabs(w), INFINITY) - std::fabs(w); if (w == 0) u = std::numeric_limits<float>::denorm_min();
  return std::fabs((double)got - want) / u;
}
int main(int argc, char** argv) {
  const std::size_t n = 1 << 16; const int reps = 2000;
  std::vector<float> x(n), y(n);
  std::mt19937 g(1); std::uniform_real_distribution<float> u(-8.f, 8.f);
  for (auto& v : x) v = u(g);
  // accuracy over a dense sweep
  std::vector<float> sx; for (float v = -20.f; v <= 20.f; v = std::nextafter(v, 100.f) + 1e-6f * std::fabs(v)) sx.push_back(v);
  std::vector<float> sy(sx.size());
  struct E { const char* lib; const char* f; Fn fn; };
  std::vector<E> es = {
    {"scalar", "tanh", sc_tanh}, {"scalar", "erf", sc_erf}, {"scalar", "exp", sc_exp}, {"scalar", "sig", sc_sig}, {"scalar", "gelu", sc_gelu},
    {"sleef8", "tanh", sl8_tanh}, {"sleef8", "erf", sl8_erf}, {"sleef8", "exp", sl8_exp}, {"sleef8", "sig", sl8_sig}, {"sleef8", "gelu", sl8_gelu},
    {"sleef16", "tanh", sl16_tanh}, {"sleef16", "erf", sl16_erf}, {"sleef16", "exp", sl16_exp}, {"sleef16", "sig", sl16_sig}, {"sleef16", "gelu", sl16_gelu},
    {"xsimd-avx2", "tanh", xs_tanh_v3}, {"xsimd-avx2", "erf", xs_erf_v3}, {"xsimd-avx2", "exp", xs_exp_v3}, {"xsimd-avx2", "sig", xs_sig_v3}, {"xsimd-avx2", "gelu", xs_gelu_v3},
    {"xsimd-avx512", "tanh", xs_tanh_v4}, {"xsimd-avx512", "erf", xs_erf_v4}, {"xsimd-avx512", "exp", xs_exp_v4}, {"xsimd-avx512", "sig", xs_sig_v4}, {"xsimd-avx512", "gelu", xs_gelu_v4},
    {"hwy-avx2", "tanh", hw_tanh_v3}, {"hwy-avx2", "exp", hw_exp_v3}, {"hwy-avx2", "sig", hw_sig_v3},
    {"hwy-avx512", "tanh", hw_tanh_v4}, {"hwy-avx512", "exp", hw_exp_v4}, {"hwy-avx512", "sig", hw_sig_v4},
  };
  for (auto& e : es) {
    e.fn(x.data(), y.data(), n);
    double best = 1e30;
    for (int t = 0; t < 5; ++t) {
      auto s = std::chrono::steady_clock::now();
      for (int r = 0; r < reps / 5; ++r) e.fn(x.data(), y.data(), n);
      double ns = std::chrono::duration<double, std::nano>(std::chrono::steady_clock::now() - s).count() / (double(n) * (reps / 5));
      best = std::min(best, ns);
    }
    e.fn(sx.data(), sy.data(), sx.size());
    double maxu = 0; float at = 0;
    for (std::size_t i = 0; i < sx.size(); ++i) { double er = ulp_err(sy[i], ref(e.f, sx[i])); if (er > maxu) { maxu = er; at = sx[i]; } }
    std::printf("%-13s %-5s %7.3f ns/elem  max %.2f ulp (at %g)\n", e.lib, e.f, best, maxu, at);
  }
}
