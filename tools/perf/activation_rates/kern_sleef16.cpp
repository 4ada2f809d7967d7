// One kernel file of tools/perf/activation-rates: SLEEF 1-ulp functions, 16 lanes (AVX-512).
#include <sleef.h>
#include <immintrin.h>
#include <cstddef>
void sl16_tanh(const float* x, float* y, std::size_t n) { std::size_t i = 0; for (; i + 16 <= n; i += 16) _mm512_storeu_ps(y + i, Sleef_tanhf16_u10(_mm512_loadu_ps(x + i))); for (; i < n; ++i) y[i] = Sleef_tanhf1_u10purec(x[i]); }
void sl16_erf(const float* x, float* y, std::size_t n) { std::size_t i = 0; for (; i + 16 <= n; i += 16) _mm512_storeu_ps(y + i, Sleef_erff16_u10(_mm512_loadu_ps(x + i))); for (; i < n; ++i) y[i] = Sleef_erff1_u10purec(x[i]); }
void sl16_exp(const float* x, float* y, std::size_t n) { std::size_t i = 0; for (; i + 16 <= n; i += 16) _mm512_storeu_ps(y + i, Sleef_expf16_u10(_mm512_loadu_ps(x + i))); for (; i < n; ++i) y[i] = Sleef_expf1_u10purec(x[i]); }
void sl16_sig(const float* x, float* y, std::size_t n) { const __m512 one = _mm512_set1_ps(1.f); std::size_t i = 0; for (; i + 16 <= n; i += 16) _mm512_storeu_ps(y + i, _mm512_div_ps(one, _mm512_add_ps(one, Sleef_expf16_u10(_mm512_sub_ps(_mm512_setzero_ps(), _mm512_loadu_ps(x + i)))))); for (; i < n; ++i) y[i] = 1.f/(1.f+Sleef_expf1_u10purec(-x[i])); }
void sl16_gelu(const float* x, float* y, std::size_t n) { const __m512 one = _mm512_set1_ps(1.f), h = _mm512_set1_ps(.5f), r = _mm512_set1_ps(0.70710678118654752f); std::size_t i = 0; for (; i + 16 <= n; i += 16) { __m512 v = _mm512_loadu_ps(x + i); _mm512_storeu_ps(y + i, _mm512_mul_ps(_mm512_mul_ps(h, v), _mm512_add_ps(one, Sleef_erff16_u10(_mm512_mul_ps(v, r))))); } for (; i < n; ++i) y[i] = 0.5f*x[i]*(1.f+Sleef_erff1_u10purec(x[i]*0.70710678118654752f)); }
