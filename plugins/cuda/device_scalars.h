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
/* A one-output head folded into the phases beside it (kernels/fused_epoch.cu): at most this many batch rows, and
 * its gradient in at most this many row slices. */
#define BRAIN_FUSED_FOLD_ROWS 256
#define BRAIN_FUSED_FOLD_SHARES 32
/* Whether a step of `rows` rows folds the head into the phases beside it: a network of three or more layers whose
 * head has one output, no softmax and a loss other than categorical cross-entropy, whose layer below goes to tiles
 * (more than two outputs per warp of the grid: `grid` blocks of `block_warps`), and whose head workspace (grid x
 * (below_width + 1) floats) holds the rows' dot-product shares (one per 32 columns) and the gradient's slices. The
 * kernel asks per step (fused_epoch.cu, the same expression written out); the plugin asks for its first step, to
 * launch the kernel that has the fold's code. */
static inline int brain_fused_head_folds(uint32_t layer_count, uint32_t head_outputs, int32_t head_activation,
                                         int32_t loss, uint32_t below_width, uint32_t rows, uint32_t grid,
                                         uint32_t block_warps) {
    const uint64_t below = below_width, row_count = rows, blocks = grid, tiles = (below + 31) / 32;
    return layer_count >= 3 && head_outputs == 1 && head_activation != BRAIN_ACT_SOFTMAX &&
           loss != BRAIN_LOSS_CATEGORICAL_CROSS_ENTROPY && rows <= BRAIN_FUSED_FOLD_ROWS &&
           row_count * below > 2 * blocks * block_warps &&
           BRAIN_FUSED_FOLD_ROWS * tiles + BRAIN_FUSED_FOLD_SHARES * (below + 1) <= blocks * (below + 1);
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

/* The cluster epoch kernel (kernels/cluster_epoch.cu) trains a whole epoch of a small network on one cluster of
 * thread blocks: each block holds every parameter and its slice of each batch's rows, their activations and deltas
 * in its shared memory, and its share of the parameters' optimizer state. The layout there, as offsets in floats,
 * from brain_cluster_plan: */
#define BRAIN_CLUSTER_MAX_BLOCKS 16
typedef struct brain_cluster_layout {
    uint32_t weights[BRAIN_FUSED_MAX_LAYERS]; /* layer l's W: outputs rows of brain_cluster_pitch(inputs), b last */
    uint32_t grads[BRAIN_FUSED_MAX_LAYERS];   /* the block's rows' sum of its gradient, the same layout (in its
                                                 region of the exchange's grads where grads_global) */
    uint32_t acts[BRAIN_FUSED_MAX_LAYERS]; /* its activations: slice rows of brain_cluster_pitch(outputs), a column
                                              of ones after them; the output layer's: rows of outputs */
    uint32_t zs[BRAIN_FUSED_MAX_LAYERS];   /* its z where the derivative needs it (GELU, leaky ReLU) and for the
                                              output layer, the same pitch; else acts[l] */
    uint32_t first[BRAIN_FUSED_MAX_LAYERS + 1]; /* the index of layer l's first parameter, W's row j then b[j] */
    uint32_t inputs[2];  /* the slice's input rows, pitch brain_cluster_pitch(inputs), a column of ones after them:
                            two buffers, the next step's copied while this one trains */
    uint32_t targets[2]; /* the slice's target rows, pitch outputs, two buffers */
    uint32_t deltas[3];  /* dL/dz of three consecutive layers (layer l's in deltas[l % 3]) */
    uint32_t delta_pitch;
    uint32_t row_loss; /* the slice's row losses */
    uint32_t state;  /* the optimizer state of the block's share of the parameters: share floats of m, then of v */
    uint32_t slots;  /* each of the block's parameters' offset in the layout (share uint32_t) */
    uint32_t share;  /* parameters per block: block c updates indices [c share, (c + 1) share) */
    uint32_t slice;  /* batch rows per block: block c takes rows [c slice, (c + 1) slice) of each batch */
    uint32_t grad_floats;  /* the floats of a block's gradient share (as of its copy of the parameters) */
    uint32_t grads_global; /* 1: the gradient shares live in global memory (brain_cluster_exchange::grads) */
} brain_cluster_layout;

/* A row's pitch in the cluster epoch kernel's shared memory for `width` values and the column of ones after them:
 * odd, so that a warp reading one column of consecutive rows (W's, in the forward product) hits 32 banks. */
static inline uint32_t brain_cluster_pitch(uint32_t width) {
    return (width + 1) | 1u;
}

/* Fills `out` for a network of `count` layers, batches of `batch` rows and `clusters` clusters of `blocks` blocks
 * each, the gradient shares in shared memory or (`global_grads`) in global memory; returns the floats of shared
 * memory a block's layout takes (the offsets are valid when that fits in 32 bits). */
static inline uint64_t brain_cluster_plan(const brain_fused_layer* layers, uint32_t count, uint32_t batch,
                                          uint32_t blocks, uint32_t clusters, uint32_t global_grads,
                                          brain_cluster_layout* out) {
    /* Offsets narrow to 32 bits implicitly (no casts: the header is C and C++ alike). */
    uint64_t all = blocks, at = 0, rows, floats, weights = 0, params = 0;
    all *= clusters;
    rows = (batch + all - 1) / all;
    uint32_t widest = 0, l, pitch;
    out->slice = rows;
    for (l = 0; l < count; ++l) {
        out->first[l] = params;
        floats = layers[l].outputs;
        params += floats * (layers[l].inputs + 1);
        out->weights[l] = weights;
        weights += floats * brain_cluster_pitch(layers[l].inputs);
        if (layers[l].outputs > widest) widest = layers[l].outputs;
    }
    out->first[count] = params;
    out->grad_floats = weights;
    out->grads_global = global_grads != 0;
    at = global_grads ? weights : 2 * weights;
    for (l = 0; l < count; ++l) out->grads[l] = out->weights[l] + (global_grads ? 0 : weights);
    for (l = 0; l < count; ++l) {
        const int last = l + 1 == count;
        pitch = last ? layers[l].outputs : brain_cluster_pitch(layers[l].outputs);
        floats = rows * pitch;
        out->acts[l] = at;
        at += floats;
        out->zs[l] = out->acts[l];
        if (last || layers[l].activation == BRAIN_ACT_GELU || layers[l].activation == BRAIN_ACT_LEAKY_RELU) {
            out->zs[l] = at;
            at += floats;
        }
    }
    pitch = count ? brain_cluster_pitch(layers[0].inputs) : 0;
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
    at += rows;
    out->share = (params + blocks - 1) / blocks;
    out->state = at;
    floats = out->share;
    out->slots = at + 2 * floats;
    return at + 3 * floats;
}

/* Where the cluster epoch kernel runs several clusters (long batches), each takes its own rows of every batch and
 * the clusters add up their gradients through this workspace (device pointers owned by the session): the block of
 * rank c of each cluster writes its cluster's sums of its share of the parameters, the blocks of rank c meet at a
 * barrier on words[c] and each adds the clusters' sums in cluster order. */
typedef struct brain_cluster_exchange {
    uint32_t* words;   /* BRAIN_CLUSTER_MAX_BLOCKS barrier words (grid_barrier's form), zero at allocation */
    double* losses;    /* clusters: each cluster's sum of the epoch's batch losses */
    float* sums;       /* 2 x clusters x parameters: each cluster's gradient sums, by the step's parity */
    uint32_t clusters; /* 1: one cluster, words, losses and sums unused (null) */
    float* grads;      /* clusters x blocks x the layout's grad_floats: each block's gradient share where the
                          layout keeps them in global memory (grads_global); else null */
} brain_cluster_exchange;

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
    uint32_t tile_flip_dw;     /* bit l: layer l's weight gradient takes the other tile height than its phase's */
    uint32_t tile_flip_dx;     /* bit l: layer l's delta takes the other tile height than its phase's */
    uint32_t tile_flip_bias;   /* bit l: layer l's bias gradient is summed the other way than its phase's height
                                  decides (in the weight gradient's tiles or by a warp per column) */
} brain_fused_epoch_args;

#define BRAIN_FUSED_PROFILE_SLOTS 64 /* the phase profile's stamps (profile) */
#define BRAIN_FUSED_LOSS_STAMP_SLOT 48 /* from here: the loss phase's stamps (BRAIN_FUSED_LOSS_STAMPS) */

#endif
