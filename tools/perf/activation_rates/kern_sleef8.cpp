// One kernel file of tools/perf/activation-rates: SLEEF 1-ulp functions, 8 lanes (AVX2 + FMA).
#include <sleef.h>
#include <immintrin.h>
#include <cstddef>
void sl8_tanh(const float* x, float* y, std::size_t n) { std::size_t i = 0; for (; i + 8 <= n; i += 8) _mm256_storeu_ps(y + i, Sleef_tanhf8_u10(_mm256_loadu_ps(x + i))); for (; i < n; ++i) y[i] = Sleef_tanhf1_u10purec(x[i]); }
void sl8_erf(const float* x, float* y, std::size_t n) { std::size_t i = 0; for (; i + 8 <= n; i += 8) _mm256_storeu_ps(y + i, Sleef_erff8_u10(_mm256_loadu_ps(x + i))); for (; i < n; ++i) y[i] = Sleef_erff1_u10purec(x[i]); }
void sl8_exp(const float* x, float* y, std::size_t n) { std::size_t i = 0; for (; i + 8 <= n; i += 8) _mm256_storeu_ps(y + i, Sleef_expf8_u10(_mm256_loadu_ps(x + i))); for (; i < n; ++i) y[i] = Sleef_expf1_u10purec(x[i]); }
void sl8_sig(const float* x, float* y, std::size_t n) { const __m256 one = _mm256_set1_ps(1.f); std::size_t i = 0; for (; i + 8 <= n; i += 8) _mm256_storeu_ps(y + i, _mm256_div_ps(one, _mm256_add_ps(one, Sleef_expf8_u10(_mm256_sub_ps(_mm256_setzero_ps(), _mm256_loadu_ps(x + i)))))); for (; i < n; ++i) y[i] = 1.f/(1.f+Sleef_expf1_u10purec(-x[i])); }
void sl8_gelu(const float* x, float* y, std::size_t n) { const __m256 one = _mm256_set1_ps(1.f), h = _mm256_set1_ps(.5f), r = _mm256_set1_ps(0.70710678118654752f); std::size_t i = 0; for (; i + 8 <= n; i += 8) { __m256 v = _mm256_loadu_ps(x + i); _mm256_storeu_ps(y + i, _mm256_mul_ps(_mm256_mul_ps(h, v), _mm256_add_ps(one, Sleef_erff8_u10(_mm256_mul_ps(v, r))))); } for (; i < n; ++i) y[i] = 0.5f*x[i]*(1.f+Sleef_erff1_u10purec(x[i]*0.70710678118654752f)); }
