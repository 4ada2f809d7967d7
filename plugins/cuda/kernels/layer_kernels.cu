// The per-operation kernels of the cuBLAS path: between its matrix products, the batch order and gather, bias and
// activation, the output loss, the backward activations, bias gradients, the batch's bookkeeping and one optimizer
// launch for all parameters. The math is dense_math.cuh's, shared with the fused epoch kernel.
#include "dense_math.cuh"

// ---------------------------------------------------------------------------------------------------------------
// Batch order and gather.

// perm[p] = the row trained at position p of the epoch held in scalars->epoch.
extern "C" __global__ void brain_shuffle_permutation(uint32_t* perm, brain_u64 n, brain_u64 seed,
                                                     const brain_cuda_scalars* scalars) {
    const brain_u64 epoch = scalars->epoch;
    for (brain_u64 p = blockIdx.x * (brain_u64)blockDim.x + threadIdx.x; p < n;
         p += (brain_u64)gridDim.x * blockDim.x)
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

// The row of a kernel that gives each warp of its blocks one row, in order.
static __device__ __forceinline__ unsigned warp_row() {
    return blockIdx.x * (blockDim.x / BRAIN_WARP) + threadIdx.x / BRAIN_WARP;
}

// Adds the bias to row `row` of z (rows of `width`), by the row's warp; returns the row.
static __device__ __forceinline__ float* add_bias_row(float* z, const float* bias, unsigned row, unsigned width,
                                                      unsigned lane) {
    float* zr = z + (brain_u64)row * width;
    for (unsigned i = lane; i < width; i += BRAIN_WARP) zr[i] += bias[i];
    __syncwarp();
    return zr;
}

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
extern "C" __global__ void brain_bias_softmax(float* z, float* a, const float* bias, unsigned rows,
                                              unsigned width) {
    const unsigned lane = threadIdx.x % BRAIN_WARP, row = warp_row();
    if (row >= rows) return;
    softmax_row_warp(add_bias_row(z, bias, row, width, lane), a + (brain_u64)row * width, width, lane);
}

// The output layer, fused: bias, activation, the row's loss and dL/dz, one warp per row. row_loss[r] receives the
// row's loss already divided by the batch normalisation.
extern "C" __global__ void brain_output_loss(float* z, float* a, float* delta, const float* bias, const float* t,
                                             float* row_loss, unsigned rows, unsigned k, int act, float param,
                                             int loss) {
    const unsigned lane = threadIdx.x % BRAIN_WARP, row = warp_row();
    if (row >= rows) return;
    const float row_total =
        output_loss_row(add_bias_row(z, bias, row, k, lane), a + (brain_u64)row * k, delta + (brain_u64)row * k,
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
    const unsigned lane = threadIdx.x % BRAIN_WARP, row = warp_row();
    if (row >= rows) return;
    float* dr = delta + (brain_u64)row * width;
    const float* ar = a + (brain_u64)row * width;
    float dot = 0.0f;
    for (unsigned i = lane; i < width; i += BRAIN_WARP) dot += dr[i] * ar[i];
    dot = warp_sum(dot);
    for (unsigned i = lane; i < width; i += BRAIN_WARP) dr[i] = ar[i] * (dr[i] - dot);
}

// db[j] = sum over rows of delta[r][j] (column_sums: block (32, 8), a deterministic order).
extern "C" __global__ void brain_column_sums(const float* delta, float* db, unsigned rows, unsigned width) {
    column_sums(delta, db, rows, width);
}

// ---------------------------------------------------------------------------------------------------------------
// Loss bookkeeping and optimizer.

// One block of 256 threads: the batch loss, the step count and this step's Adam coefficients from its learning rate
// (rates[batch]: the epoch's rates stay in device memory, so a new rate needs no new graph).
extern "C" __global__ void brain_finish_batch(brain_cuda_scalars* s, const float* row_loss, unsigned rows,
                                              int batch, const float* rates, float beta1, float beta2,
                                              float weight_decay, int decoupled) {
    add_batch_loss(s, row_loss, rows, batch);
    if (threadIdx.x != 0) return;
    const brain_u64 t = ++s->step;
    adam_coefficients(t, rates[batch], beta1, beta2, weight_decay, decoupled, &s->step_size,
                      &s->bias_correction2_sqrt, &s->decay);
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
static __device__ __forceinline__ float adam_element(float* p, float g, float* m, float* v, float beta1,
                                                     float beta2, float epsilon, float step_size, float bc2_sqrt,
                                                     float decay) {
    float mi = *m, vi = *v;
    const float pi = adam_value(*p, g, mi, vi, beta1, beta2, epsilon, step_size, bc2_sqrt, decay);
    *m = mi;
    *v = vi;
    *p = pi;
    return pi;
}

// PyTorch SGD over every parameter at once (one flat array): v = momentum v + g; p -= lr v, lr = rates[batch]. With
// p16 (mixed precision), the bf16 copy of each new parameter too.
extern "C" __global__ void brain_sgd_update(float* p, const float* g, float* v, brain_u64 n, const float* rates,
                                            float momentum, brain_cuda_scalars* s, int batch, brain_bf16* p16) {
    const float learning_rate = rates[batch];
    bool bad = false;
    for (brain_u64 i = blockIdx.x * (brain_u64)blockDim.x + threadIdx.x; i < n;
         i += (brain_u64)gridDim.x * blockDim.x) {
        const float value = sgd_element(p + i, g[i], v + i, learning_rate, momentum);
        bad |= !isfinite(value);
        if (p16) p16[i] = brain_to_bf16(value);
    }
    if (bad) atomicMin(&s->bad_weight_batch, batch);
}

// PyTorch Adam / AdamW over every parameter at once, with the coefficients brain_finish_batch computed. With p16
// (mixed precision), the bf16 copy of each new parameter too, in the same pass.
extern "C" __global__ void brain_adam_update(float* p, const float* g, float* m, float* v, brain_u64 n, float beta1,
                                             float beta2, float epsilon, brain_cuda_scalars* s, int batch,
                                             brain_bf16* p16) {
    const float step_size = s->step_size;
    const float bc2_sqrt = s->bias_correction2_sqrt;
    const float decay = s->decay;
    bool bad = false;
    const brain_u64 first = blockIdx.x * (brain_u64)blockDim.x + threadIdx.x;
    const brain_u64 stride = (brain_u64)gridDim.x * blockDim.x;
    brain_u64 scalar_from = 0;
    // Adam is memory-bound (28 bytes per parameter): 16-byte loads and stores where all four arrays allow them,
    // the same per-element arithmetic.
    if ((((brain_u64)p | (brain_u64)g | (brain_u64)m | (brain_u64)v) & 15) == 0 && ((brain_u64)p16 & 7) == 0) {
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
            if (p16)
                reinterpret_cast<uint2*>(p16)[q] =
                    make_uint2((unsigned)brain_to_bf16(pq.x) | ((unsigned)brain_to_bf16(pq.y) << 16),
                               (unsigned)brain_to_bf16(pq.z) | ((unsigned)brain_to_bf16(pq.w) << 16));
        }
        scalar_from = quads * 4;
    }
    for (brain_u64 i = scalar_from + first; i < n; i += stride) {
        const float value =
            adam_element(p + i, g[i], m + i, v + i, beta1, beta2, epsilon, step_size, bc2_sqrt, decay);
        bad |= !isfinite(value);
        if (p16) p16[i] = brain_to_bf16(value);
    }
    if (bad) atomicMin(&s->bad_weight_batch, batch);
}

extern "C" __global__ void brain_finish_epoch(brain_cuda_scalars* s, brain_u64 rows) {
    finish_epoch(s, rows);
}
