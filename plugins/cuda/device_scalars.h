/* The per-session block of device scalars. Compiled by the host compiler and, as embedded text, by NVRTC for the
 * kernels, so both sides agree on the layout. Everything that changes from epoch to epoch or batch to batch lives
 * here (not in kernel arguments), which makes an epoch's launch sequence fixed and so capturable as a graph. */
#ifndef BRAIN_CUDA_DEVICE_SCALARS_H
#define BRAIN_CUDA_DEVICE_SCALARS_H

#include <brain/plugin_abi.h>
#include <stdint.h>

#define BRAIN_CUDA_NO_BAD_BATCH 0x7fffffff

typedef struct brain_cuda_scalars {
    double epoch_loss_sum;       /* sum over the epoch's batches of batch loss x batch rows */
    uint64_t epoch;              /* shuffle epoch of the epoch being trained */
    uint64_t step;               /* optimizer steps taken */
    int32_t bad_loss_batch;      /* first batch of the epoch whose loss was not finite, or NO_BAD_BATCH */
    int32_t bad_weight_batch;    /* first batch after whose update a parameter was not finite, or NO_BAD_BATCH */
    float result;                /* the finished epoch's mean loss; NaN when a check tripped */
    float one;                   /* cuBLAS alpha (device pointer mode) */
    float zero;                  /* cuBLAS beta */
    float step_size;             /* Adam: lr / (1 - beta1^t) */
    float bias_correction2_sqrt; /* Adam: sqrt(1 - beta2^t) */
    float decay;                 /* AdamW: 1 - lr * weight_decay; otherwise 1 */
    uint32_t barrier_arrived; /* fused epoch kernel's grid barrier: top bit flips per barrier, low bits 0 between */
} brain_cuda_scalars;

/* The fused epoch kernel (kernels/fused_epoch.cu) runs whole epochs of narrow networks in one cooperative
 * launch; its arguments travel by value in this block. Pointers are device pointers owned by the session. */
#define BRAIN_FUSED_MAX_LAYERS 16
#define BRAIN_FUSED_MAX_BATCH 1024 /* the batch's row indices are kept in shared memory */
#define BRAIN_FUSED_HEAD_WIDTH 32  /* an output layer at most this wide shares a phase with the loss */
/* Floats of a head layer's gradient (outputs x (inputs + 1)) that one warp can sum in shared memory: with at most
 * this many, the loss phase also computes the delta below and each block's share of the head's gradient. */
#define BRAIN_FUSED_HEAD_SLICE 1152
/* A hidden layer's weight gradient in row shares (row_shares): at most this many shares of the batch's rows, and
 * at most this many floats of a share's rows (deltas and inputs) in the shared memory of a block. */
#define BRAIN_FUSED_ROW_SHARES_MAX 32
#define BRAIN_FUSED_ROW_SHARE_FLOATS 9216

/* The row shares of a step of `rows` batch rows: at most BRAIN_FUSED_ROW_SHARES_MAX, at least 8 rows each. */
static inline uint32_t brain_fused_row_share_count(uint32_t rows) {
    const uint32_t count = (rows + 7) / 8;
    return count < BRAIN_FUSED_ROW_SHARES_MAX ? count : BRAIN_FUSED_ROW_SHARES_MAX;
}
/* A share row's floats in shared memory for n values: padded to whole float4s. */
static inline uint32_t brain_fused_row_share_pitch(uint32_t n) {
    return (n + 3) & ~3u;
}

typedef struct brain_fused_layer {
    float* z;               /* pre-activations, batch x outputs */
    float* a;               /* activations; equal to z for linear layers */
    float* delta;           /* dL/dz, batch x outputs */
    uint64_t weight_offset; /* into the flat parameters: W, outputs x inputs, row-major */
    uint64_t bias_offset;   /* b, outputs */
    uint32_t inputs;
    uint32_t outputs;
    int32_t activation;
    float param;
} brain_fused_layer;

/* The block epoch kernel (kernels/block_epoch.cu) trains a whole epoch of a small network on one block, with the
 * parameters and the batch's rows, activations and deltas in that block's shared memory. Its layout there, as
 * offsets in floats, from brain_block_plan: */
typedef struct brain_block_layout {
    uint32_t weights[BRAIN_FUSED_MAX_LAYERS]; /* layer l's W: outputs rows of brain_block_pitch(inputs), b last */
    uint32_t acts[BRAIN_FUSED_MAX_LAYERS]; /* its activations: batch rows of brain_block_pitch(outputs), a column of
                                              ones after them; the output layer's: rows of outputs */
    uint32_t zs[BRAIN_FUSED_MAX_LAYERS];   /* its z where the derivative needs it (GELU, leaky ReLU) and for the
                                              output layer, the same pitch; else acts[l] */
    uint32_t inputs[2];  /* the batch's input rows, pitch brain_block_pitch(inputs), a column of ones after them:
                            two buffers, the next step's copied while this one trains */
    uint32_t targets[2]; /* the batch's target rows, pitch outputs, two buffers */
    uint32_t deltas[3];  /* dL/dz of three consecutive layers (layer l's in deltas[l % 3]) */
    uint32_t delta_pitch;
    uint32_t row_loss; /* the batch's row losses */
} brain_block_layout;

/* A row's pitch in the block epoch kernel's shared memory for `width` values and the column of ones after them:
 * odd, so that a warp reading one column of consecutive rows (W's, in the forward product) hits 32 banks. */
static inline uint32_t brain_block_pitch(uint32_t width) {
    return (width + 1) | 1u;
}

/* Fills `out` for a network of `count` layers and batches of `batch` rows; returns the floats of shared memory the
 * layout takes (the offsets are valid when that fits in 32 bits). */
static inline uint64_t brain_block_plan(const brain_fused_layer* layers, uint32_t count, uint32_t batch,
                                        brain_block_layout* out) {
    /* Offsets narrow to 32 bits implicitly (no casts: the header is C and C++ alike). */
    uint64_t at = 0, rows = batch, floats;
    uint32_t widest = 0, l, pitch;
    for (l = 0; l < count; ++l) {
        out->weights[l] = at;
        floats = layers[l].outputs;
        at += floats * brain_block_pitch(layers[l].inputs);
        if (layers[l].outputs > widest) widest = layers[l].outputs;
    }
    for (l = 0; l < count; ++l) {
        const int last = l + 1 == count;
        pitch = last ? layers[l].outputs : brain_block_pitch(layers[l].outputs);
        floats = rows * pitch;
        out->acts[l] = at;
        at += floats;
        out->zs[l] = out->acts[l];
        if (last || layers[l].activation == BRAIN_ACT_GELU || layers[l].activation == BRAIN_ACT_LEAKY_RELU) {
            out->zs[l] = at;
            at += floats;
        }
    }
    pitch = count ? brain_block_pitch(layers[0].inputs) : 0;
    for (l = 0; l < 2; ++l) {
        out->inputs[l] = at;
        at += rows * pitch;
    }
    pitch = count ? layers[count - 1].outputs : 0;
    for (l = 0; l < 2; ++l) {
        out->targets[l] = at;
        at += rows * pitch;
    }
    out->delta_pitch = widest;
    for (l = 0; l < 3; ++l) {
        out->deltas[l] = at;
        at += rows * widest;
    }
    out->row_loss = at;
    return at + rows;
}

typedef struct brain_fused_epoch_args {
    brain_fused_layer layers[BRAIN_FUSED_MAX_LAYERS];
    float* params;
    float* grads;
    float* state_m;        /* SGD velocity or Adam first moment */
    float* state_v;        /* Adam second moment; null for SGD */
    const float* features; /* the resident data set, rows x input_width */
    const float* targets;  /* rows x target_width */
    uint32_t* perm;        /* the epoch's batch order; null when the data is not shuffled */
    float* row_loss;       /* batch rows */
    brain_cuda_scalars* scalars;
    uint64_t rows;
    uint64_t seed;
    uint64_t parameter_count;
    uint32_t layer_count;
    uint32_t batch_size;
    int32_t loss;
    int32_t optimizer;  /* BRAIN_OPT_* */
    const float* rates; /* the epoch's learning rate per step (batch), set before each launch */
    float beta1;
    float beta2;
    float epsilon;
    float weight_decay;
    float momentum;
    uint64_t* profile;   /* stamps of the second step's phases (test builds' profile hook); else null */
    float* head_partial; /* grid x head gradient floats: the blocks' sums of the head's gradient; null: no such
                            phase */
    float* row_shares;   /* 2 x BRAIN_FUSED_ROW_SHARES_MAX x row_share_width floats; null: none */
    uint32_t row_share_layers; /* bit l: layer l's weight gradient is summed in row shares */
    uint32_t row_share_width;  /* floats of the widest such gradient, outputs x (inputs + 1) */
} brain_fused_epoch_args;

#define BRAIN_FUSED_PROFILE_SLOTS 64 /* the phase profile's stamps (profile) */

#endif
