/* The per-session block of device scalars. Compiled by the host compiler and, as embedded text, by NVRTC for the
 * kernels, so both sides agree on the layout. Everything that changes from epoch to epoch or batch to batch lives
 * here (not in kernel arguments), which makes an epoch's launch sequence fixed and so capturable as a graph. */
#ifndef BRAIN_CUDA_DEVICE_SCALARS_H
#define BRAIN_CUDA_DEVICE_SCALARS_H

#include <stdint.h>

#define BRAIN_CUDA_NO_BAD_BATCH 0x7fffffff

typedef struct brain_cuda_scalars {
    double epoch_loss_sum;    /* sum over the epoch's batches of batch loss x batch rows */
    uint64_t epoch;           /* shuffle epoch of the epoch being trained */
    uint64_t step;            /* optimizer steps taken */
    int32_t bad_loss_batch;   /* first batch of the epoch whose loss was not finite, or NO_BAD_BATCH */
    int32_t bad_weight_batch; /* first batch after whose update a parameter was not finite, or NO_BAD_BATCH */
    float result;             /* the finished epoch's mean loss; NaN when a check tripped */
    float one;                /* cuBLAS alpha (device pointer mode) */
    float zero;               /* cuBLAS beta */
    float step_size;          /* Adam: lr / (1 - beta1^t) */
    float bias_correction2_sqrt; /* Adam: sqrt(1 - beta2^t) */
    float decay;              /* AdamW: 1 - lr * weight_decay; otherwise 1 */
} brain_cuda_scalars;

#endif
