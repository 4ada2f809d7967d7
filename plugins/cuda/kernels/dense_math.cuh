// The device functions both epoch paths share: activations and their derivatives, warp reductions, the output
// layer's loss row, the batch-loss sum and the optimizer's per-element arithmetic, so that the per-operation
// kernels (layer_kernels.cu) and the fused epoch kernel (fused_epoch.cu) run the same math. It mirrors
// sdk/include/brain/dense_math.hpp and the CPU plugin.
//
// No build step compiles the kernel files: CMake embeds them in the plugin and NVRTC compiles them at run time for
// the device's architecture, each file given to it as a header by its name here. With
// --device-as-default-execution-space the ABI header's plain inline functions (brain_shuffle_index) compile as
// device functions: the batch order is the very same code on the host and the device.
#pragma once

#include <brain/plugin_abi.h>
#include <device_scalars.h>

#define BRAIN_WARP 32
#define BRAIN_FULL_MASK 0xffffffffu
#define BRAIN_NEG_INF __int_as_float(0xff800000)

typedef unsigned long long brain_u64;

// bf16 storage of the mixed-precision path (mixed_kernels.cu): the top 16 bits of a float32. Conversions round to
// nearest even and keep NaN a NaN, bit for bit as the host's (bf16_host.hpp) and as __float2bfloat16_rn, without
// cuda_bf16.h, which a plugin that runs with the driver and NVRTC alone cannot count on.
typedef unsigned short brain_bf16;

static __device__ __forceinline__ brain_bf16 brain_to_bf16(float value) {
    unsigned int bits = __float_as_uint(value);
    if ((bits & 0x7fffffffu) > 0x7f800000u) return (brain_bf16)((bits >> 16) | 0x40u);
    bits += 0x7fffu + ((bits >> 16) & 1u);
    return (brain_bf16)(bits >> 16);
}

static __device__ __forceinline__ float brain_from_bf16(brain_bf16 value) {
    return __uint_as_float(((unsigned int)value) << 16);
}

// Every activation, called out of line for the ones that cost a transcendental function (sigmoid, tanh, GELU): an
// epilogue inlined at every use would hold all of them, though a network runs one or two, and the fused kernel's
// code would outgrow the instruction cache. The callers below take the cheap cases inline first; with INLINE the
// costly ones too (the fused kernel's BRAIN_FUSED_EPILOGUE_INLINE), from the same body.
static __device__ __forceinline__ float brain_activate_body(int act, float z, float param) {
    switch (act) {
    case BRAIN_ACT_RELU:
        return z > 0.0f ? z : 0.0f;
    case BRAIN_ACT_LEAKY_RELU:
        return z > 0.0f ? z : param * z;
    case BRAIN_ACT_SIGMOID:
        return 1.0f / (1.0f + expf(-z));
    case BRAIN_ACT_TANH:
        return tanhf(z);
    case BRAIN_ACT_GELU:
        return 0.5f * z * (1.0f + erff(z * 0.70710678118654752f));
    default:
        return z;
    }
}
static __device__ __noinline__ float brain_activate_any(int act, float z, float param) {
    return brain_activate_body(act, z, param);
}
template <bool INLINE = false>
static __device__ __forceinline__ float brain_activate(int act, float z, float param) {
    if (act == BRAIN_ACT_RELU) return z > 0.0f ? z : 0.0f;
    if (act == BRAIN_ACT_LEAKY_RELU) return z > 0.0f ? z : param * z;
    if (act == BRAIN_ACT_LINEAR || act == BRAIN_ACT_SOFTMAX) return z;
    return INLINE ? brain_activate_body(act, z, param) : brain_activate_any(act, z, param);
}

static __device__ __forceinline__ float brain_derivative_body(int act, float z, float a, float param) {
    switch (act) {
    case BRAIN_ACT_RELU:
        return z > 0.0f ? 1.0f : 0.0f;
    case BRAIN_ACT_LEAKY_RELU:
        return z > 0.0f ? 1.0f : param;
    case BRAIN_ACT_SIGMOID:
        return a * (1.0f - a);
    case BRAIN_ACT_TANH:
        return 1.0f - a * a;
    case BRAIN_ACT_GELU: {
        const float cdf = 0.5f * (1.0f + erff(z * 0.70710678118654752f));
        const float pdf = 0.39894228040143268f * expf(-0.5f * z * z);
        return cdf + z * pdf;
    }
    default:
        return 1.0f;
    }
}
static __device__ __noinline__ float brain_derivative_any(int act, float z, float a, float param) {
    return brain_derivative_body(act, z, a, param);
}
template <bool INLINE = false>
static __device__ __forceinline__ float brain_derivative(int act, float z, float a, float param) {
    if (act == BRAIN_ACT_RELU) return z > 0.0f ? 1.0f : 0.0f;
    if (act == BRAIN_ACT_LEAKY_RELU) return z > 0.0f ? 1.0f : param;
    if (act == BRAIN_ACT_SIGMOID) return a * (1.0f - a);
    if (act == BRAIN_ACT_TANH) return 1.0f - a * a;
    if (act == BRAIN_ACT_LINEAR || act == BRAIN_ACT_SOFTMAX) return 1.0f;
    return INLINE ? brain_derivative_body(act, z, a, param) : brain_derivative_any(act, z, a, param);
}

static __device__ __forceinline__ float warp_sum(float v) {
    for (int o = BRAIN_WARP / 2; o > 0; o >>= 1) v += __shfl_xor_sync(BRAIN_FULL_MASK, v, o);
    return v;
}

static __device__ __forceinline__ double warp_sum_d(double v) {
    for (int o = BRAIN_WARP / 2; o > 0; o >>= 1) v += __shfl_xor_sync(BRAIN_FULL_MASK, v, o);
    return v;
}

static __device__ __forceinline__ float warp_max(float v) {
    for (int o = BRAIN_WARP / 2; o > 0; o >>= 1) v = fmaxf(v, __shfl_xor_sync(BRAIN_FULL_MASK, v, o));
    return v;
}

// A stored delta in float32: a float32 one as it is, a bf16 one widened.
static __device__ __forceinline__ float delta_value(float value) { return value; }
static __device__ __forceinline__ float delta_value(brain_bf16 value) { return brain_from_bf16(value); }

// db[j] = sum over rows of delta[r][j], in float32. Block (32, 8): a column per x thread, rows strided over y, then
// a fixed tree over y, so the sum is deterministic and in the same order for float32 and bf16 deltas.
template <class Delta>
static __device__ void column_sums(const Delta* delta, float* db, unsigned rows, unsigned width) {
    __shared__ float partial[8][33];
    const unsigned j = blockIdx.x * 32 + threadIdx.x;
    float s = 0.0f;
    if (j < width)
        for (unsigned r = threadIdx.y; r < rows; r += 8) s += delta_value(delta[(brain_u64)r * width + j]);
    partial[threadIdx.y][threadIdx.x] = s;
    __syncthreads();
    if (threadIdx.y == 0 && j < width) {
        float total = 0.0f;
        for (int y = 0; y < 8; ++y) total += partial[y][threadIdx.x];
        db[j] = total;
    }
}

// a = softmax(z) over one row of n values, by one warp.
static __device__ void softmax_row_warp(const float* z, float* a, unsigned n, unsigned lane) {
    float m = BRAIN_NEG_INF;
    for (unsigned i = lane; i < n; i += BRAIN_WARP) m = fmaxf(m, z[i]);
    m = warp_max(m);
    float s = 0.0f;
    for (unsigned i = lane; i < n; i += BRAIN_WARP) s += expf(z[i] - m);
    s = warp_sum(s);
    for (unsigned i = lane; i < n; i += BRAIN_WARP) a[i] = expf(z[i] - m) / s;
}

// The loss's normalisation: the mean over the batch's rows (categorical cross-entropy) or over its elements.
static __device__ __forceinline__ float loss_scale(int loss, unsigned rows, unsigned k) {
    return loss == BRAIN_LOSS_CATEGORICAL_CROSS_ENTROPY ? 1.0f / (float)rows : 1.0f / (float)((brain_u64)rows * k);
}

// One element's loss before the normalisation (log_sum: the row's log-sum-exp, categorical cross-entropy only).
static __device__ __forceinline__ double loss_term(int loss, float z, float a, float t, double log_sum) {
    if (loss == BRAIN_LOSS_BINARY_CROSS_ENTROPY) return fmaxf(z, 0.0f) - z * t + log1pf(expf(-fabsf(z)));
    if (loss == BRAIN_LOSS_CATEGORICAL_CROSS_ENTROPY) return -(double)t * ((double)z - log_sum);
    const float d = a - t;
    return (double)d * d;
}

// One element's dL/dz, but for a softmax output under MSE, whose Jacobian needs the whole row (the callers).
static __device__ __forceinline__ float loss_delta(int loss, int act, float z, float a, float t, float scale,
                                                   float param) {
    if (loss != BRAIN_LOSS_MEAN_SQUARED_ERROR) return (a - t) * scale;
    const float d = a - t;
    const float v = 2.0f * d * scale;
    return act == BRAIN_ACT_SOFTMAX || act == BRAIN_ACT_LINEAR ? v : v * brain_derivative(act, z, a, param);
}

// One row of the output layer, by one warp, exactly as brain::math::loss_row: activation (z already holds the
// bias), the row's loss and dL/dz. Returns the row's loss divided by the batch normalisation (on every lane).
static __device__ float output_loss_row(float* zr, float* ar, float* dr, const float* tr, unsigned rows, unsigned k,
                                        int act, float param, int loss, unsigned lane) {
    if (act == BRAIN_ACT_SOFTMAX) {
        softmax_row_warp(zr, ar, k, lane);
    } else {
        for (unsigned i = lane; i < k; i += BRAIN_WARP) ar[i] = brain_activate(act, zr[i], param);
    }
    __syncwarp();
    double log_sum = 0.0;
    if (loss == BRAIN_LOSS_CATEGORICAL_CROSS_ENTROPY) {
        float m = BRAIN_NEG_INF;
        for (unsigned i = lane; i < k; i += BRAIN_WARP) m = fmaxf(m, zr[i]);
        m = warp_max(m);
        double sum = 0.0;
        for (unsigned i = lane; i < k; i += BRAIN_WARP) sum += exp((double)(zr[i] - m));
        sum = warp_sum_d(sum);
        log_sum = log(sum) + m;
    }
    const float scale = loss_scale(loss, rows, k);
    double total = 0.0;
    for (unsigned i = lane; i < k; i += BRAIN_WARP) {
        total += loss_term(loss, zr[i], ar[i], tr[i], log_sum);
        dr[i] = loss_delta(loss, act, zr[i], ar[i], tr[i], scale, param);
    }
    if (loss == BRAIN_LOSS_MEAN_SQUARED_ERROR && act == BRAIN_ACT_SOFTMAX) {
        __syncwarp();
        float dot = 0.0f;
        for (unsigned i = lane; i < k; i += BRAIN_WARP) dot += dr[i] * ar[i];
        dot = warp_sum(dot);
        for (unsigned i = lane; i < k; i += BRAIN_WARP) dr[i] = ar[i] * (dr[i] - dot);
    }
    total = warp_sum_d(total);
    return (float)total * scale;
}

// output_loss_row's activation and dL/dz for a row of at most 32 outputs held in registers, lane i holding output i
// (`on`: i < k), with the same arithmetic. Nothing goes through memory, so a caller that keeps the row in registers
// (the fused epoch kernel) saves the round trips of storing and reloading it.
static __device__ void output_delta_lane(float z, float t, bool on, unsigned rows, unsigned k, int act, float param,
                                         int loss, float& a, float& d) {
    if (act == BRAIN_ACT_SOFTMAX) {
        const float m = warp_max(on ? z : BRAIN_NEG_INF);
        const float s = warp_sum(on ? expf(z - m) : 0.0f);
        a = on ? expf(z - m) / s : 0.0f;
    } else {
        a = brain_activate(act, z, param);
    }
    const float scale = loss_scale(loss, rows, k);
    d = on ? loss_delta(loss, act, z, a, t, scale, param) : 0.0f;
    if (loss == BRAIN_LOSS_MEAN_SQUARED_ERROR && act == BRAIN_ACT_SOFTMAX) {
        const float dot = warp_sum(d * a);
        d = a * (d - dot);
    }
}

// output_loss_row's loss for the same row (a: its activation from output_loss_lane or output_delta_lane), divided
// by the batch normalisation, on every lane. Nothing in the backward pass waits for it.
static __device__ float output_total_lane(float z, float a, float t, bool on, unsigned rows, unsigned k, int loss) {
    double log_sum = 0.0;
    if (loss == BRAIN_LOSS_CATEGORICAL_CROSS_ENTROPY) {
        const float m = warp_max(on ? z : BRAIN_NEG_INF);
        log_sum = log(warp_sum_d(on ? exp((double)(z - m)) : 0.0)) + m;
    }
    const double total = warp_sum_d(on ? loss_term(loss, z, a, t, log_sum) : 0.0);
    return (float)total * loss_scale(loss, rows, k);
}

// Both: the activation and dL/dz out, the row's loss returned.
static __device__ float output_loss_lane(float z, float t, bool on, unsigned rows, unsigned k, int act, float param,
                                         int loss, float& a, float& d) {
    output_delta_lane(z, t, on, rows, k, act, param, loss, a, d);
    return output_total_lane(z, a, t, on, rows, k, loss);
}

// The batch loss, a fixed-order sum of the rows' losses by one whole block of 256 threads (in double, as the CPU
// plugin sums); its finiteness check and the epoch's running sum. Every thread of the block must call it.
static __device__ void add_batch_loss(brain_cuda_scalars* s, const float* row_loss, unsigned rows, int batch) {
    __shared__ double partial[256];
    double v = 0.0;
    for (unsigned r = threadIdx.x; r < rows; r += blockDim.x) v += (double)row_loss[r];
    partial[threadIdx.x] = v;
    __syncthreads();
    for (unsigned w = blockDim.x / 2; w > 0; w >>= 1) {
        if (threadIdx.x < w) partial[threadIdx.x] += partial[threadIdx.x + w];
        __syncthreads();
    }
    if (threadIdx.x == 0) {
        const double batch_loss = partial[0];
        if (!isfinite(batch_loss) && s->bad_loss_batch == BRAIN_CUDA_NO_BAD_BATCH) s->bad_loss_batch = batch;
        s->epoch_loss_sum += batch_loss * (double)rows;
    }
    __syncthreads();
}

// Adam's coefficients of step t (1-based), in double as the CPU plugin computes them.
static __device__ void adam_coefficients(brain_u64 t, float learning_rate, float beta1, float beta2,
                                         float weight_decay, int decoupled, float* step_size, float* bc2_sqrt,
                                         float* decay) {
    const double bc1 = 1.0 - pow((double)beta1, (double)t);
    const double bc2 = 1.0 - pow((double)beta2, (double)t);
    *step_size = (float)((double)learning_rate / bc1);
    *bc2_sqrt = (float)sqrt(bc2);
    *decay = decoupled ? 1.0f - learning_rate * weight_decay : 1.0f;
}

// The per-step coefficients the fused epoch kernels keep in a table: Adam's (adam_coefficients); for SGD, which has
// no bias correction, the step's learning rate in the first and ones in the others.
static __device__ void step_coefficients(brain_u64 t, float learning_rate, int optimizer, float beta1, float beta2,
                                         float weight_decay, float* first, float* second, float* third) {
    if (optimizer == BRAIN_OPT_SGD) {
        *first = learning_rate;
        *second = 1.0f;
        *third = 1.0f;
        return;
    }
    adam_coefficients(t, learning_rate, beta1, beta2, weight_decay, optimizer == BRAIN_OPT_ADAMW, first, second,
                      third);
}

// PyTorch SGD for one parameter, on values: v = momentum v + g; returns p - lr v.
static __device__ __forceinline__ float sgd_value(float p, float g, float& v, float learning_rate, float momentum) {
    v = momentum * v + g;
    return p - learning_rate * v;
}

// PyTorch Adam / AdamW for one parameter, on values: updates m and v, returns the new parameter.
static __device__ __forceinline__ float adam_value(float p, float g, float& m, float& v, float beta1, float beta2,
                                                   float epsilon, float step_size, float bc2_sqrt, float decay) {
    m = beta1 * m + (1.0f - beta1) * g;
    v = beta2 * v + (1.0f - beta2) * g * g;
    const float denom = sqrtf(v) / bc2_sqrt + epsilon;
    return p * decay - step_size * m / denom;
}

// End of epoch: publish the sample-weighted mean loss (NaN when a check tripped), reset the sum, advance the
// shuffle epoch. The host reads `result` (4 bytes) and nothing else.
static __device__ void finish_epoch(brain_cuda_scalars* s, brain_u64 rows) {
    const bool bad = s->bad_loss_batch != BRAIN_CUDA_NO_BAD_BATCH || s->bad_weight_batch != BRAIN_CUDA_NO_BAD_BATCH;
    const double mean = s->epoch_loss_sum / (double)rows;
    s->result = (bad || !isfinite(mean)) ? __int_as_float(0x7fc00000) : (float)mean;
    s->epoch_loss_sum = 0.0;
    s->epoch += 1;
}
