// The fused epoch kernel's products as fused_gemm.cuh runs them: their operands and descriptions (FusedGemm), what
// every phase shares (FusedContext), and the epilogue that finishes each output by the kind of product (forward:
// bias and activation; weight gradient: stored, or applied by the optimizer; delta: the derivative of the
// activation below).
#pragma once

#include "dense_math.cuh"

// The GPU's nanosecond clock, for the profiles' stamps.
static __device__ __forceinline__ brain_u64 global_timer() {
    brain_u64 now;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(now));
    return now;
}

// Whether a one-output head folds into the phases beside it (1, the default) instead of taking a loss phase of its
// own (0). Its dL/dz is a number per row, so the delta of the layer below is that number times g = W_head[j]
// act'(z, a), which the forward phase of the layer below can store with its outputs, together with each tile's
// share of the head's dot products (fused_epoch.cu runs the phases). The first backward
// phase then works out every row's dL/dz from those shares in each block (BRAIN_FUSED_FOLD_ROWS rows at most, in
// shared memory), scales the weight gradient's operand and the delta product's rows by it, and computes the head's
// gradient in row slices, which the next phase adds up and applies: one phase and one grid barrier fewer per step.
// Only for networks of three or more layers, a head without softmax, losses but categorical cross-entropy, and a
// layer below whose forward product goes to tiles (docs/cuda-plugin.md).
#ifndef BRAIN_FUSED_FOLDED_HEAD
#define BRAIN_FUSED_FOLDED_HEAD 1
#endif
// 0: sigmoid, tanh and GELU out of line everywhere (dense_math.cuh); 1: inline in the tiles' forward and delta
// epilogues; 2: there and in the loss phase's backward pass where blocks take the rows. The plugin compiles the
// program in two forms (kernel_compiler.hpp's KernelForm): 2 for networks with one of those activations, 0 for the
// rest, whose epilogues never call them and whose kernels the inline code only makes longer (docs/cuda-plugin.md).
#ifndef BRAIN_FUSED_EPILOGUE_INLINE
#ifdef BRAIN_KERNEL_INLINE_ACTIVATIONS
#define BRAIN_FUSED_EPILOGUE_INLINE 2
#else
#define BRAIN_FUSED_EPILOGUE_INLINE 0
#endif
#endif

// One matrix operand: element (i, j) is p[row(i) * rs + j * cs], with row(i) = index ? index[i] : i (the index
// maps batch positions to data-set rows through the epoch's permutation).
struct FusedOperand {
    const float* p;
    const uint32_t* index;
    brain_u64 rs;
    brain_u64 cs;
    __device__ __forceinline__ const float* ptr(unsigned i, unsigned j) const {
        const brain_u64 row = index ? (brain_u64)index[i] : (brain_u64)i;
        return p + row * rs + (brain_u64)j * cs;
    }
    // Plain loads, never __ldg: the kernel itself writes these arrays in earlier phases (the barrier's fences
    // make those writes visible; the read-only cache would not).
    __device__ __forceinline__ float at(unsigned i, unsigned j) const { return *ptr(i, j); }
};

// The kinds of product, each with its own epilogue; a template argument of the GEMM code (fused_gemm), so that each
// call site's copy of that code holds its own epilogue only.
enum FusedEpilogue { FUSED_FORWARD = 0, FUSED_WEIGHT_GRADIENT = 1, FUSED_DELTA = 2 };

// C (M x N) = A (M x K) B (K x N), finished by the epilogue of the kind of product the caller names.
struct FusedGemm {
    FusedOperand a;
    FusedOperand b;
    unsigned m;
    unsigned n;
    unsigned k;
    const brain_fused_layer* layer;           // the layer the GEMM belongs to
    const brain_fused_layer* below = nullptr; // FUSED_DELTA: the layer whose delta is written
    bool last = false;   // FUSED_FORWARD: the output layer (its activation is the loss phase's)
    bool update = false; // FUSED_WEIGHT_GRADIENT: apply the optimizer now instead of storing
    bool bias = false;   // FUSED_WEIGHT_GRADIENT in tiles: the bias gradient too (fused_bias_in_tiles)
    // A folded head (BRAIN_FUSED_FOLDED_HEAD). FUSED_WEIGHT_GRADIENT: A(m, k) times scale[k]; FUSED_DELTA: output
    // row m times scale[m] (the rows' dL/dz of the head, in shared memory).
    const float* scale = nullptr;
    // FUSED_FORWARD of the layer below a folded head: the head's weights (g = head_w[n] act'(z, a) goes to the
    // layer's delta) and where each tile's dot products with them go (head_dots[m * head_tiles + n / 32]).
    const float* head_w = nullptr;
    float* head_dots = nullptr;
    unsigned head_tiles = 0;
};

// What every phase needs: the arguments, this step's batch and optimizer coefficients (step_coefficients).
struct FusedContext {
    const brain_fused_epoch_args* args;
    int batch;
    float step_size; // Adam: lr / (1 - beta1^t); SGD: the step's learning rate
    float bc2_sqrt;
    float decay;
#if BRAIN_FUSED_FOLDED_HEAD
    // A folded head (BRAIN_FUSED_FOLDED_HEAD): the step's rows, their first position in the epoch's order and
    // their data-set rows (shared memory), the head's dot-product shares (rows x head_tiles) and where the rows'
    // dL/dz go (shared memory).
    unsigned rows;
    brain_u64 start;
    const uint32_t* batch_rows;
    const float* head_dots;
    unsigned head_tiles;
    float* head_dl;
#endif
};

// What an output's epilogue reads besides the sum, loaded ahead (fused_epilogue_load) so that the loads overlap
// the product instead of adding a round trip to global memory after it: the bias (forward), z and a of the layer
// below (delta), or the parameter and its optimizer state (weight gradient with the update).
struct EpilogueInputs {
    float x;
    float y;
    float w;
};

// KIND: the product's FusedEpilogue, fixed per call site so that each copy of the GEMM code holds one epilogue.
template <int KIND>
static __device__ __forceinline__ EpilogueInputs fused_epilogue_load(const FusedContext& c, const FusedGemm& g,
                                                                     unsigned m, unsigned n) {
    EpilogueInputs in = {0.0f, 0.0f, 0.0f};
    const brain_u64 at = (brain_u64)m * g.n + n;
    const brain_fused_epoch_args& a = *c.args;
    if (KIND == FUSED_FORWARD) {
        in.x = a.params[g.layer->bias_offset + n];
        if (g.head_w) in.y = g.head_w[n];
    } else if (KIND == FUSED_DELTA) {
        in.x = g.below->z[at];
        in.y = g.below->a[at];
    } else if (g.update) {
        const brain_u64 i = g.layer->weight_offset + at;
        in.x = a.params[i];
        in.y = a.state_m[i];
        if (a.optimizer != BRAIN_OPT_SGD) in.w = a.state_v[i];
    }
    return in;
}

// The optimizer step for parameter i (value p, state in m and v) with gradient g; flags the batch if the
// parameter stops being finite.
static __device__ __forceinline__ void fused_update(const FusedContext& c, brain_u64 i, float g, float p, float m,
                                                    float v) {
    const brain_fused_epoch_args& a = *c.args;
    if (a.optimizer == BRAIN_OPT_SGD) {
        p = sgd_value(p, g, m, c.step_size, a.momentum);
    } else {
        p = adam_value(p, g, m, v, a.beta1, a.beta2, a.epsilon, c.step_size, c.bc2_sqrt, c.decay);
        a.state_v[i] = v;
    }
    a.state_m[i] = m;
    a.params[i] = p;
    if (!isfinite(p)) atomicMin(&a.scalars->bad_weight_batch, c.batch);
}
static __device__ __forceinline__ void fused_update(const FusedContext& c, brain_u64 i, float g) {
    const brain_fused_epoch_args& a = *c.args;
    fused_update(c, i, g, a.params[i], a.state_m[i], a.optimizer == BRAIN_OPT_SGD ? 0.0f : a.state_v[i]);
}
// Parameter i's gradient g: applied at once when `update`, stored in grads for the last phase's pass otherwise.
static __device__ __forceinline__ void fused_gradient(const FusedContext& c, brain_u64 i, float g, bool update) {
    if (update)
        fused_update(c, i, g);
    else
        c.args->grads[i] = g;
}

// Returns the output's term of a folded head's dot product (FusedGemm::head_w), zero otherwise.
template <int KIND>
static __device__ __forceinline__ float fused_epilogue(const FusedContext& c, const FusedGemm& g, unsigned m,
                                                       unsigned n, float acc, const EpilogueInputs& in) {
    const brain_u64 at = (brain_u64)m * g.n + n;
    if (KIND == FUSED_FORWARD) {
        const brain_fused_layer& l = *g.layer;
        const float v = acc + in.x;
        l.z[at] = v;
        float activated = v;
        if (!g.last && l.a != l.z) {
            activated = brain_activate<BRAIN_FUSED_EPILOGUE_INLINE != 0>(l.activation, v, l.param);
            l.a[at] = activated;
        }
        if (g.head_w) {
            l.delta[at] = brain_derivative(l.activation, v, activated, l.param) * in.y;
            return activated * in.y;
        }
    } else if (KIND == FUSED_WEIGHT_GRADIENT) {
        const brain_u64 i = g.layer->weight_offset + at;
        if (g.update)
            fused_update(c, i, acc, in.x, in.y, in.w);
        else
            c.args->grads[i] = acc;
    } else {
        const brain_fused_layer& l = *g.below;
        if (g.scale) acc *= g.scale[m];
        l.delta[at] = acc * brain_derivative<BRAIN_FUSED_EPILOGUE_INLINE != 0>(l.activation, in.x, in.y, l.param);
    }
    return 0.0f;
}
