/* The per-session block of device scalars. Compiled by the host compiler and, as embedded text, by NVRTC for the
 * kernels, so both sides agree on the layout. Everything that changes from epoch to epoch or batch to batch lives
 * here (not in kernel arguments), which makes an epoch's launch sequence fixed and so capturable as a graph. */
#ifndef BRAIN_CUDA_DEVICE_SCALARS_H
#define BRAIN_CUDA_DEVICE_SCALARS_H

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
