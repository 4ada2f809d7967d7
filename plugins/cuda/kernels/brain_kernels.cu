// Device kernels of the CUDA backend. This file is never given to nvcc: CMake embeds its text in the plugin and
// NVRTC compiles it at run time for the device's architecture, with -default-device so that the ABI header's
// plain inline functions (brain_shuffle_index) compile as device functions: the batch order is the very same
// code on the host and the device. The math mirrors sdk/include/brain/dense_math.hpp and the CPU plugin.
#include <brain/plugin_abi.h>
#include <device_scalars.h>

#define BRAIN_WARP 32
#define BRAIN_FULL_MASK 0xffffffffu
#define BRAIN_NEG_INF __int_as_float(0xff800000)

typedef unsigned long long brain_u64;

// Whether the activations that cost a transcendental function (sigmoid, tanh, GELU) are called out of line
// (1) instead of inlined at every use (0): every copy of an epilogue holds all of them, though a network runs one
// or two, and the fused kernel's code outgrows the instruction cache (docs/performance.md). A switch for
// measurements and tests; the results are the same bits either way.
#ifndef BRAIN_ACT_OUT_OF_LINE
#define BRAIN_ACT_OUT_OF_LINE 1
#endif
#if BRAIN_ACT_OUT_OF_LINE
#define BRAIN_ACT_INLINE __noinline__
#else
#define BRAIN_ACT_INLINE __forceinline__
#endif

// Every activation, so that with BRAIN_ACT_OUT_OF_LINE=0 brain_activate is this switch alone (the kernel as it
// was before the switch, byte for byte); with 1 the callers below take the cheap cases first, the rest here.
static __device__ BRAIN_ACT_INLINE float brain_activate_any(int act, float z, float param) {
    switch (act) {
    case BRAIN_ACT_RELU: return z > 0.0f ? z : 0.0f;
    case BRAIN_ACT_LEAKY_RELU: return z > 0.0f ? z : param * z;
    case BRAIN_ACT_SIGMOID: return 1.0f / (1.0f + expf(-z));
    case BRAIN_ACT_TANH: return tanhf(z);
    case BRAIN_ACT_GELU: return 0.5f * z * (1.0f + erff(z * 0.70710678118654752f));
    default: return z;
    }
}
static __device__ __forceinline__ float brain_activate(int act, float z, float param) {
    if (BRAIN_ACT_OUT_OF_LINE) { // the cheap ones inline, the others through the call
        if (act == BRAIN_ACT_RELU) return z > 0.0f ? z : 0.0f;
        if (act == BRAIN_ACT_LEAKY_RELU) return z > 0.0f ? z : param * z;
        if (act == BRAIN_ACT_LINEAR || act == BRAIN_ACT_SOFTMAX) return z;
    }
    return brain_activate_any(act, z, param);
}

static __device__ BRAIN_ACT_INLINE float brain_derivative_any(int act, float z, float a, float param) {
    switch (act) {
    case BRAIN_ACT_RELU: return z > 0.0f ? 1.0f : 0.0f;
    case BRAIN_ACT_LEAKY_RELU: return z > 0.0f ? 1.0f : param;
    case BRAIN_ACT_SIGMOID: return a * (1.0f - a);
    case BRAIN_ACT_TANH: return 1.0f - a * a;
    case BRAIN_ACT_GELU: {
        const float cdf = 0.5f * (1.0f + erff(z * 0.70710678118654752f));
        const float pdf = 0.39894228040143268f * expf(-0.5f * z * z);
        return cdf + z * pdf;
    }
    default: return 1.0f;
    }
}
static __device__ __forceinline__ float brain_derivative(int act, float z, float a, float param) {
    if (BRAIN_ACT_OUT_OF_LINE) {
        if (act == BRAIN_ACT_RELU) return z > 0.0f ? 1.0f : 0.0f;
        if (act == BRAIN_ACT_LEAKY_RELU) return z > 0.0f ? 1.0f : param;
        if (act == BRAIN_ACT_SIGMOID) return a * (1.0f - a);
        if (act == BRAIN_ACT_TANH) return 1.0f - a * a;
        if (act == BRAIN_ACT_LINEAR || act == BRAIN_ACT_SOFTMAX) return 1.0f;
    }
    return brain_derivative_any(act, z, a, param);
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

// ---------------------------------------------------------------------------------------------------------------
// Batch order and gather.

// perm[p] = the row trained at position p of the epoch held in scalars->epoch.
extern "C" __global__ void brain_shuffle_permutation(uint32_t* perm, brain_u64 n, brain_u64 seed,
                                                     const brain_cuda_scalars* scalars) {
    const brain_u64 epoch = scalars->epoch;
    for (brain_u64 p = blockIdx.x * (brain_u64)blockDim.x + threadIdx.x; p < n; p += (brain_u64)gridDim.x * blockDim.x)
        perm[p] = (uint32_t)brain_shuffle_index(seed, epoch, n, p);
}

// Copy the batch's rows (positions start.. start+rows of perm) of features and targets into contiguous buffers.
extern "C" __global__ void brain_gather_batch(float* x, float* t, const float* features, const float* targets,
                                              const uint32_t* perm, brain_u64 start, unsigned rows,
                                              unsigned in_width, unsigned out_width) {
    const unsigned width = in_width + out_width;
    const brain_u64 total = (brain_u64)rows * width;
    for (brain_u64 i = blockIdx.x * (brain_u64)blockDim.x + threadIdx.x; i < total;
         i += (brain_u64)gridDim.x * blockDim.x) {
        const unsigned r = (unsigned)(i / width);
        const unsigned c = (unsigned)(i - (brain_u64)r * width);
        const brain_u64 src = perm[start + r];
        if (c < in_width)
            x[(brain_u64)r * in_width + c] = features[src * in_width + c];
        else
            t[(brain_u64)r * out_width + (c - in_width)] = targets[src * out_width + (c - in_width)];
    }
}

// ---------------------------------------------------------------------------------------------------------------
// Forward.

// z += bias (broadcast over rows); a = activation(z). a == z for linear layers (bias only).
extern "C" __global__ void brain_bias_activation(float* z, float* a, const float* bias, unsigned rows,
                                                 unsigned width, int act, float param) {
    const brain_u64 total = (brain_u64)rows * width;
    for (brain_u64 i = blockIdx.x * (brain_u64)blockDim.x + threadIdx.x; i < total;
         i += (brain_u64)gridDim.x * blockDim.x) {
        const float v = z[i] + bias[i % width];
        z[i] = v;
        a[i] = brain_activate(act, v, param);
    }
}

// The same for a softmax layer: one warp per row.
extern "C" __global__ void brain_bias_softmax(float* z, float* a, const float* bias, unsigned rows, unsigned width) {
    const unsigned lane = threadIdx.x % BRAIN_WARP;
    const unsigned row = blockIdx.x * (blockDim.x / BRAIN_WARP) + threadIdx.x / BRAIN_WARP;
    if (row >= rows) return;
    float* zr = z + (brain_u64)row * width;
    for (unsigned i = lane; i < width; i += BRAIN_WARP) zr[i] += bias[i];
    __syncwarp();
    softmax_row_warp(zr, a + (brain_u64)row * width, width, lane);
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

// output_loss_row for a row of at most 32 outputs held in registers, lane i holding output i (`on`: i < k): z in,
// the activation and dL/dz out, with the same arithmetic. Nothing goes through memory, so a caller that keeps the
// row in registers (the fused epoch kernel) saves the round trips of storing and reloading it.
static __device__ float output_loss_lane(float z, float t, bool on, unsigned rows, unsigned k, int act, float param,
                                         int loss, float& a, float& d) {
    if (act == BRAIN_ACT_SOFTMAX) {
        const float m = warp_max(on ? z : BRAIN_NEG_INF);
        const float s = warp_sum(on ? expf(z - m) : 0.0f);
        a = on ? expf(z - m) / s : 0.0f;
    } else {
        a = brain_activate(act, z, param);
    }
    double log_sum = 0.0;
    if (loss == BRAIN_LOSS_CATEGORICAL_CROSS_ENTROPY) {
        const float m = warp_max(on ? z : BRAIN_NEG_INF);
        log_sum = log(warp_sum_d(on ? exp((double)(z - m)) : 0.0)) + m;
    }
    const float scale = loss_scale(loss, rows, k);
    double total = on ? loss_term(loss, z, a, t, log_sum) : 0.0;
    d = on ? loss_delta(loss, act, z, a, t, scale, param) : 0.0f;
    if (loss == BRAIN_LOSS_MEAN_SQUARED_ERROR && act == BRAIN_ACT_SOFTMAX) {
        const float dot = warp_sum(d * a);
        d = a * (d - dot);
    }
    total = warp_sum_d(total);
    return (float)total * scale;
}

// The output layer, fused: bias, activation, the row's loss and dL/dz, one warp per row. row_loss[r] receives the
// row's loss already divided by the batch normalisation.
extern "C" __global__ void brain_output_loss(float* z, float* a, float* delta, const float* bias, const float* t,
                                             float* row_loss, unsigned rows, unsigned k, int act, float param,
                                             int loss) {
    const unsigned lane = threadIdx.x % BRAIN_WARP;
    const unsigned row = blockIdx.x * (blockDim.x / BRAIN_WARP) + threadIdx.x / BRAIN_WARP;
    if (row >= rows) return;
    float* zr = z + (brain_u64)row * k;
    for (unsigned i = lane; i < k; i += BRAIN_WARP) zr[i] += bias[i];
    __syncwarp();
    const float row_total = output_loss_row(zr, a + (brain_u64)row * k, delta + (brain_u64)row * k,
                                            t + (brain_u64)row * k, rows, k, act, param, loss, lane);
    if (lane == 0) row_loss[row] = row_total;
}

// ---------------------------------------------------------------------------------------------------------------
// Backward.

// delta *= activation'(z) element-wise.
extern "C" __global__ void brain_backprop_activation(float* delta, const float* z, const float* a, brain_u64 total,
                                                     int act, float param) {
    for (brain_u64 i = blockIdx.x * (brain_u64)blockDim.x + threadIdx.x; i < total;
         i += (brain_u64)gridDim.x * blockDim.x)
        delta[i] *= brain_derivative(act, z[i], a[i], param);
}

// The softmax Jacobian-vector product, one warp per row.
extern "C" __global__ void brain_backprop_softmax(float* delta, const float* a, unsigned rows, unsigned width) {
    const unsigned lane = threadIdx.x % BRAIN_WARP;
    const unsigned row = blockIdx.x * (blockDim.x / BRAIN_WARP) + threadIdx.x / BRAIN_WARP;
    if (row >= rows) return;
    float* dr = delta + (brain_u64)row * width;
    const float* ar = a + (brain_u64)row * width;
    float dot = 0.0f;
    for (unsigned i = lane; i < width; i += BRAIN_WARP) dot += dr[i] * ar[i];
    dot = warp_sum(dot);
    for (unsigned i = lane; i < width; i += BRAIN_WARP) dr[i] = ar[i] * (dr[i] - dot);
}

// db[j] = sum over rows of delta[r][j]. Block (32, 8): a column per x thread, rows strided over y, then a fixed
// tree over y, so the sum is deterministic.
extern "C" __global__ void brain_column_sums(const float* delta, float* db, unsigned rows, unsigned width) {
    __shared__ float partial[8][33];
    const unsigned j = blockIdx.x * 32 + threadIdx.x;
    float s = 0.0f;
    if (j < width)
        for (unsigned r = threadIdx.y; r < rows; r += 8) s += delta[(brain_u64)r * width + j];
    partial[threadIdx.y][threadIdx.x] = s;
    __syncthreads();
    if (threadIdx.y == 0 && j < width) {
        float total = 0.0f;
        for (int y = 0; y < 8; ++y) total += partial[y][threadIdx.x];
        db[j] = total;
    }
}

// ---------------------------------------------------------------------------------------------------------------
// Loss bookkeeping and optimizer.

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

// One block of 256 threads: the batch loss, the step count and this step's Adam coefficients.
extern "C" __global__ void brain_finish_batch(brain_cuda_scalars* s, const float* row_loss, unsigned rows,
                                              int batch, float learning_rate, float beta1, float beta2,
                                              float weight_decay, int decoupled) {
    add_batch_loss(s, row_loss, rows, batch);
    if (threadIdx.x != 0) return;
    const brain_u64 t = ++s->step;
    adam_coefficients(t, learning_rate, beta1, beta2, weight_decay, decoupled, &s->step_size,
                      &s->bias_correction2_sqrt, &s->decay);
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

// sgd_value in place. Returns the new parameter.
static __device__ __forceinline__ float sgd_element(float* p, float g, float* v, float learning_rate,
                                                    float momentum) {
    float vi = *v;
    const float pi = sgd_value(*p, g, vi, learning_rate, momentum);
    *v = vi;
    *p = pi;
    return pi;
}

// adam_value in place. Returns the new parameter.
static __device__ __forceinline__ float adam_element(float* p, float g, float* m, float* v, float beta1, float beta2,
                                                     float epsilon, float step_size, float bc2_sqrt, float decay) {
    float mi = *m, vi = *v;
    const float pi = adam_value(*p, g, mi, vi, beta1, beta2, epsilon, step_size, bc2_sqrt, decay);
    *m = mi;
    *v = vi;
    *p = pi;
    return pi;
}

// PyTorch SGD over every parameter at once (one flat array): v = momentum v + g; p -= lr v.
extern "C" __global__ void brain_sgd_update(float* p, const float* g, float* v, brain_u64 n, float learning_rate,
                                            float momentum, brain_cuda_scalars* s, int batch) {
    bool bad = false;
    for (brain_u64 i = blockIdx.x * (brain_u64)blockDim.x + threadIdx.x; i < n; i += (brain_u64)gridDim.x * blockDim.x)
        bad |= !isfinite(sgd_element(p + i, g[i], v + i, learning_rate, momentum));
    if (bad) atomicMin(&s->bad_weight_batch, batch);
}

// PyTorch Adam / AdamW over every parameter at once, with the coefficients brain_finish_batch computed.
extern "C" __global__ void brain_adam_update(float* p, const float* g, float* m, float* v, brain_u64 n, float beta1,
                                             float beta2, float epsilon, brain_cuda_scalars* s, int batch) {
    const float step_size = s->step_size;
    const float bc2_sqrt = s->bias_correction2_sqrt;
    const float decay = s->decay;
    bool bad = false;
    const brain_u64 first = blockIdx.x * (brain_u64)blockDim.x + threadIdx.x;
    const brain_u64 stride = (brain_u64)gridDim.x * blockDim.x;
    brain_u64 scalar_from = 0;
    // Adam is memory-bound (28 bytes per parameter): 16-byte loads and stores where all four arrays allow them,
    // the same per-element arithmetic.
    if ((((brain_u64)p | (brain_u64)g | (brain_u64)m | (brain_u64)v) & 15) == 0) {
        const brain_u64 quads = n / 4;
        for (brain_u64 q = first; q < quads; q += stride) {
            float4 pq = reinterpret_cast<float4*>(p)[q];
            const float4 gq = reinterpret_cast<const float4*>(g)[q];
            float4 mq = reinterpret_cast<float4*>(m)[q];
            float4 vq = reinterpret_cast<float4*>(v)[q];
            bad |= !isfinite(
                adam_element(&pq.x, gq.x, &mq.x, &vq.x, beta1, beta2, epsilon, step_size, bc2_sqrt, decay));
            bad |= !isfinite(
                adam_element(&pq.y, gq.y, &mq.y, &vq.y, beta1, beta2, epsilon, step_size, bc2_sqrt, decay));
            bad |= !isfinite(
                adam_element(&pq.z, gq.z, &mq.z, &vq.z, beta1, beta2, epsilon, step_size, bc2_sqrt, decay));
            bad |= !isfinite(
                adam_element(&pq.w, gq.w, &mq.w, &vq.w, beta1, beta2, epsilon, step_size, bc2_sqrt, decay));
            reinterpret_cast<float4*>(p)[q] = pq;
            reinterpret_cast<float4*>(m)[q] = mq;
            reinterpret_cast<float4*>(v)[q] = vq;
        }
        scalar_from = quads * 4;
    }
    for (brain_u64 i = scalar_from + first; i < n; i += stride)
        bad |= !isfinite(adam_element(p + i, g[i], m + i, v + i, beta1, beta2, epsilon, step_size, bc2_sqrt, decay));
    if (bad) atomicMin(&s->bad_weight_batch, batch);
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

extern "C" __global__ void brain_finish_epoch(brain_cuda_scalars* s, brain_u64 rows) {
    finish_epoch(s, rows);
}
