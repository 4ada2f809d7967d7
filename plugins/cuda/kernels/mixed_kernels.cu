// The kernels of the mixed-precision path (precision bf16) and of the predictor, between cuBLASLt's products: the
// batch gathered and converted to bf16, float32 to bf16 conversion, bias and activation on bf16 tensors, the output
// loss with a bf16 copy of its deltas, the backward activations and bias gradients of bf16 deltas. Activations,
// derivatives and the loss are dense_math.cuh's, computed in float32; only storage is bf16.
#include "dense_math.cuh"

// Rows of features (converted to bf16) and targets (float32) of a batch: the rows at positions start .. start+rows
// of perm, or rows start .. start+rows themselves when perm is null. targets may be null (inputs only).
extern "C" __global__ void brain_gather_batch_bf16(brain_bf16* x, float* t, const float* features,
                                                   const float* targets, const uint32_t* perm, brain_u64 start,
                                                   unsigned rows, unsigned in_width, unsigned out_width) {
    const unsigned width = in_width + (t ? out_width : 0u);
    const brain_u64 total = (brain_u64)rows * width;
    for (brain_u64 i = blockIdx.x * (brain_u64)blockDim.x + threadIdx.x; i < total;
         i += (brain_u64)gridDim.x * blockDim.x) {
        const unsigned r = (unsigned)(i / width);
        const unsigned c = (unsigned)(i - (brain_u64)r * width);
        const brain_u64 src = perm ? (brain_u64)perm[start + r] : start + r;
        if (c < in_width)
            x[(brain_u64)r * in_width + c] = brain_to_bf16(features[src * in_width + c]);
        else
            t[(brain_u64)r * out_width + (c - in_width)] = targets[src * out_width + (c - in_width)];
    }
}

// *bad = 1 when any of x[0, n) is NaN or infinite; *bad is page-locked host memory the caller zeroed, written only
// then.
extern "C" __global__ void brain_flag_non_finite(const float* x, brain_u64 n, volatile unsigned* bad) {
    for (brain_u64 i = blockIdx.x * (brain_u64)blockDim.x + threadIdx.x; i < n;
         i += (brain_u64)gridDim.x * blockDim.x)
        if (!isfinite(x[i])) *bad = 1u;
}

// out[i] = bf16(in[i]).
extern "C" __global__ void brain_convert_bf16(const float* in, brain_bf16* out, brain_u64 n) {
    for (brain_u64 i = blockIdx.x * (brain_u64)blockDim.x + threadIdx.x; i < n;
         i += (brain_u64)gridDim.x * blockDim.x)
        out[i] = brain_to_bf16(in[i]);
}

// z += bias (broadcast over rows; skipped when bias is null, i.e. when the product's epilogue added it), then
// a = activation(z), both stored in bf16. a may equal z (the layer keeps no pre-activations); a is then written
// last.
extern "C" __global__ void brain_bias_activation_bf16(brain_bf16* z, brain_bf16* a, const brain_bf16* bias,
                                                      unsigned rows, unsigned width, int act, float param) {
    const brain_u64 total = (brain_u64)rows * width;
    for (brain_u64 i = blockIdx.x * (brain_u64)blockDim.x + threadIdx.x; i < total;
         i += (brain_u64)gridDim.x * blockDim.x) {
        brain_bf16 stored = z[i];
        if (bias) {
            stored = brain_to_bf16(brain_from_bf16(stored) + brain_from_bf16(bias[i % width]));
            z[i] = stored;
        }
        // The activation of the stored pre-activation, which is what the backward pass reads.
        a[i] = brain_to_bf16(brain_activate(act, brain_from_bf16(stored), param));
    }
}

// The output layer in float32, as brain_output_loss (bias, activation, the row's loss and dL/dz, a warp per row),
// plus a bf16 copy of dL/dz: the operand of the layer's backward products.
extern "C" __global__ void brain_output_loss_bf16(float* z, float* a, float* delta, brain_bf16* delta16,
                                                  const float* bias, const float* t, float* row_loss, unsigned rows,
                                                  unsigned k, int act, float param, int loss) {
    const unsigned lane = threadIdx.x % BRAIN_WARP;
    const unsigned row = blockIdx.x * (blockDim.x / BRAIN_WARP) + threadIdx.x / BRAIN_WARP;
    if (row >= rows) return;
    float* zr = z + (brain_u64)row * k;
    for (unsigned i = lane; i < k; i += BRAIN_WARP) zr[i] += bias[i];
    __syncwarp();
    float* dr = delta + (brain_u64)row * k;
    const float row_total =
        output_loss_row(zr, a + (brain_u64)row * k, dr, t + (brain_u64)row * k, rows, k, act, param, loss, lane);
    __syncwarp();
    for (unsigned i = lane; i < k; i += BRAIN_WARP) delta16[(brain_u64)row * k + i] = brain_to_bf16(dr[i]);
    if (lane == 0) row_loss[row] = row_total;
}

// delta *= activation'(z) element-wise on bf16 tensors (z may equal a for activations whose derivative needs only
// a, or whose sign z shares: ReLU).
extern "C" __global__ void brain_backprop_activation_bf16(brain_bf16* delta, const brain_bf16* z,
                                                          const brain_bf16* a, brain_u64 total, int act,
                                                          float param) {
    const brain_u64 first = blockIdx.x * (brain_u64)blockDim.x + threadIdx.x;
    const brain_u64 stride = (brain_u64)gridDim.x * blockDim.x;
    brain_u64 scalar_from = 0;
    // A memory-bound pass over three tensors: eight values per 16-byte access where all three are aligned for it
    // (two-byte accesses leave too few bytes in flight to reach the memory's rate), the same arithmetic.
    if ((((brain_u64)delta | (brain_u64)z | (brain_u64)a) & 15) == 0) {
        const brain_u64 octets = total / 8;
        for (brain_u64 q = first; q < octets; q += stride) {
            uint4 d = reinterpret_cast<uint4*>(delta)[q];
            const uint4 zq = reinterpret_cast<const uint4*>(z)[q];
            const uint4 aq = reinterpret_cast<const uint4*>(a)[q];
            unsigned int* dw = &d.x;
            const unsigned int* zw = &zq.x;
            const unsigned int* aw = &aq.x;
#pragma unroll
            for (int w = 0; w < 4; ++w) {
                unsigned int out = 0;
#pragma unroll
                for (int h = 0; h < 2; ++h) {
                    const brain_bf16 dv = (brain_bf16)(dw[w] >> (16 * h));
                    const brain_bf16 zv = (brain_bf16)(zw[w] >> (16 * h));
                    const brain_bf16 av = (brain_bf16)(aw[w] >> (16 * h));
                    const brain_bf16 r = brain_to_bf16(
                        brain_from_bf16(dv) * brain_derivative(act, brain_from_bf16(zv), brain_from_bf16(av), param));
                    out |= (unsigned int)r << (16 * h);
                }
                dw[w] = out;
            }
            reinterpret_cast<uint4*>(delta)[q] = d;
        }
        scalar_from = octets * 8;
    }
    for (brain_u64 i = scalar_from + first; i < total; i += stride)
        delta[i] = brain_to_bf16(brain_from_bf16(delta[i]) *
                                 brain_derivative(act, brain_from_bf16(z[i]), brain_from_bf16(a[i]), param));
}

// db[j] = sum over rows of a bf16 delta[r][j], in float32, in the fixed order of brain_column_sums.
extern "C" __global__ void brain_column_sums_bf16(const brain_bf16* delta, float* db, unsigned rows,
                                                  unsigned width) {
    column_sums(delta, db, rows, width);
}
