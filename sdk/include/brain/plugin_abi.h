/* brain plugin ABI: the plain-C contract between libbrain_core.so and a backend plugin.
 *
 * Rules that hold for every declaration below:
 *  - No C++ type, exception or allocator crosses this boundary. Every entry point of a plugin must catch
 *    everything and report it as a brain_error (brain/plugin_sdk.hpp does this for C++ plugins).
 *  - Every struct that may grow starts with `struct_size`. Tables and structs only grow at the end. A reader
 *    reads only the fields that both its own and the writer's struct_size cover.
 *  - Ownership is stated on every pointer: "borrowed" (valid for the duration of the call only), "plugin-owned"
 *    (lives until the stated release call), or "caller-owned" (the caller allocated it, the callee fills it).
 *  - Threading: brain_plugin_get_api, device_count and probe may be called from any thread at any time.
 *    A brain_session is used by one thread at a time (the core serialises calls on one session); distinct
 *    sessions are independent. error_* functions are thread-safe on distinct errors.
 *  - Required and optional entries: every entry of ABI 1.0 (error_code through session_close) is required and
 *    non-NULL. Every entry appended later is optional: session_set_learning_rate (1.1) and every entry of 1.2;
 *    a NULL entry, or a table that ends before it, means "not offered", and the core reports Unsupported.
 *  - Duties the conformance kit cannot check from outside, which a plugin keeps all the same: session_close frees
 *    everything the session holds (run the kit under AddressSanitizer or Valgrind to see leaks); no entry keeps a
 *    borrowed pointer past its call; device_count and probe are safe to call concurrently. The core never calls a
 *    session after session_close, so a plugin need not detect use after close.
 *
 * Versioning: the core accepts a plugin whose abi_major equals BRAIN_ABI_VERSION_MAJOR and whose abi_minor is
 * at least BRAIN_ABI_MIN_SUPPORTED_MINOR; a different major is refused with both versions named.
 * docs/abi-changelog.md records every change. */
#ifndef BRAIN_PLUGIN_ABI_H
#define BRAIN_PLUGIN_ABI_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define BRAIN_ABI_VERSION_MAJOR 1
#define BRAIN_ABI_VERSION_MINOR 4
#define BRAIN_ABI_MIN_SUPPORTED_MINOR 0

/* The one symbol every plugin exports. */
#define BRAIN_PLUGIN_ENTRY_SYMBOL "brain_plugin_get_api"

#if defined(_WIN32)
#define BRAIN_PLUGIN_EXPORT __declspec(dllexport)
#else
#define BRAIN_PLUGIN_EXPORT __attribute__((visibility("default")))
#endif

/* Error codes. The values are stable: they are part of the ABI and equal brain::ErrorCode in C++. */
typedef enum brain_status {
    BRAIN_OK = 0,
    BRAIN_ERR_INVALID_ARGUMENT = 1,
    BRAIN_ERR_INVALID_DATA = 2,
    BRAIN_ERR_INVALID_MODEL_FILE = 3,
    BRAIN_ERR_PLUGIN_NOT_FOUND = 4,
    BRAIN_ERR_PLUGIN_LOAD_FAILED = 5,
    BRAIN_ERR_PLUGIN_ABI_MISMATCH = 6,
    BRAIN_ERR_FEATURE_DISABLED = 7,
    BRAIN_ERR_DRIVER_UNAVAILABLE = 8,
    BRAIN_ERR_DEVICE_NOT_FOUND = 9,
    BRAIN_ERR_BUDGET_EXCEEDED = 10,
    BRAIN_ERR_ALLOCATION_FAILED = 11,
    BRAIN_ERR_KERNEL_COMPILE_FAILED = 12,
    BRAIN_ERR_GEMM_FAILED = 13,
    BRAIN_ERR_NUMERICAL = 14,
    BRAIN_ERR_UNSUPPORTED = 15,
    BRAIN_ERR_INVALID_STATE = 16,
    BRAIN_ERR_PLUGIN_FAILURE = 17,
    BRAIN_ERR_IO = 18,
    BRAIN_ERR_DEVICE_FAILURE = 19
} brain_status;

/* Activation of a dense layer; the derivative is taken with respect to the pre-activation z. The formulas of every
 * activation, loss and optimizer: the SDK's math.md (installed as share/brain/sdk/docs/math.md). */
typedef enum brain_activation {
    BRAIN_ACT_LINEAR = 0,
    BRAIN_ACT_RELU = 1,
    BRAIN_ACT_LEAKY_RELU = 2, /* slope 0.01 for z < 0 (activation_param) */
    BRAIN_ACT_SIGMOID = 3,
    BRAIN_ACT_TANH = 4,
    BRAIN_ACT_SOFTMAX = 5, /* output layer only, with BRAIN_LOSS_CATEGORICAL_CROSS_ENTROPY */
    BRAIN_ACT_GELU = 6     /* exact: 0.5 z (1 + erf(z / sqrt(2))) */
} brain_activation;

/* Loss over a batch of B rows and K outputs (math.md gives the formulas):
 *  MSE: sum (y - t)^2 / (B K); BCE (sigmoid output, from logits): mean over B K; CCE (softmax output): sum / B. */
typedef enum brain_loss {
    BRAIN_LOSS_MEAN_SQUARED_ERROR = 0,
    BRAIN_LOSS_BINARY_CROSS_ENTROPY = 1,
    BRAIN_LOSS_CATEGORICAL_CROSS_ENTROPY = 2
} brain_loss;

/* Optimizers, with PyTorch's update rules (SGD momentum v = mu v + g; Adam bias-corrected; AdamW decoupled). */
typedef enum brain_optimizer_kind {
    BRAIN_OPT_SGD = 0,
    BRAIN_OPT_ADAM = 1,
    BRAIN_OPT_ADAMW = 2
} brain_optimizer_kind;

/* Arithmetic used for matrix products. FLOAT32 is the default and the reference for parity. */
typedef enum brain_precision {
    BRAIN_PRECISION_FLOAT32 = 0,
    BRAIN_PRECISION_TF32 = 1,
    BRAIN_PRECISION_BF16 = 2
} brain_precision;

/* Opaque error: created by the plugin, read with error_code / error_message, released with error_destroy
 * (of the same plugin). A NULL brain_error* means success. */
typedef struct brain_error brain_error;

/* Opaque session: created by session_open, released by session_close (of the same plugin). */
typedef struct brain_session brain_session;

/* Opaque predictor (ABI 1.2): created by predictor_open, released by predictor_close (of the same plugin). */
typedef struct brain_predictor brain_predictor;

/* What a plugin runs (ABI 1.2, the capabilities entry). Each mask has bit (1u << value) set for every value of the
 * enum that the plugin runs exactly as named; a request outside the masks is refused with UNSUPPORTED naming the
 * feature. A plugin without the entry (ABI 1.0 and 1.1) is taken to run every activation, loss and optimizer of
 * ABI 1.0, float32 products only, and none of the features. The masks describe what the plugin runs on a device it
 * has; whether it has one is device_count's answer. Caller-owned; the plugin fills it. */
typedef struct brain_capabilities {
    size_t struct_size;
    uint32_t activations; /* brain_activation bits */
    uint32_t losses;      /* brain_loss bits */
    uint32_t optimizers;  /* brain_optimizer_kind bits */
    uint32_t precisions;  /* brain_precision bits */
    uint32_t features;    /* BRAIN_FEATURE_* bits */
    uint32_t max_devices; /* devices one session can train on together (1: no data parallelism) */
    char notes[512];      /* why a feature is missing, in the user's terms; empty when nothing is */
} brain_capabilities;

/* Feature bits of brain_capabilities.features. */
#define BRAIN_FEATURE_STEP_LEARNING_RATES (1u << 0) /* session_set_step_learning_rates */
#define BRAIN_FEATURE_PREDICT (1u << 1)             /* predictor_open / predictor_run / predictor_close */
#define BRAIN_FEATURE_BATCH_SOURCE (1u << 2)        /* brain_session_desc.batch_source (streamed data sets) */
#define BRAIN_FEATURE_MULTI_DEVICE (1u << 3)        /* brain_session_desc.devices / world_size > 1 */
/* ABI 1.3: predictor_run checks its inputs itself and returns BRAIN_ERR_INVALID_DATA, writing no outputs, when one
 * is NaN or infinite; the core then names the row and column, and skips its own pass over the rows. */
#define BRAIN_FEATURE_PREDICT_CHECKS_INPUTS (1u << 4)

/* Batches pulled from the core (ABI 1.2), for data sets the core streams instead of holding in memory. Core-owned;
 * valid until session_close. */
typedef struct brain_batch_source {
    size_t struct_size;
    void* context;         /* core-owned; passed back to fetch */
    uint64_t rows;         /* rows per epoch */
    uint32_t input_width;  /* floats per feature row */
    uint32_t target_width; /* floats per target row */
    /* Fill `count` rows of caller-owned features (count x input_width) and targets (count x target_width): the
     * rows at positions [first_position, first_position + count) of epoch `epoch`'s batch order, standardised.
     * Returns BRAIN_OK (0) or a brain_status, with a NUL-terminated reason written into the caller-owned
     * message[message_size]. Called by one thread at a time, which may be a plugin's own thread. */
    int32_t (*fetch)(void* context, uint64_t epoch, uint64_t first_position, uint32_t count, float* features,
                     float* targets, char* message, size_t message_size);
} brain_batch_source;

/* Services the core offers to a plugin. Core-owned; valid until the process exits. */
typedef struct brain_host_api {
    size_t struct_size;
    uint32_t abi_major;
    uint32_t abi_minor;
    /* Log a message; level 0 trace .. 5 critical. message is borrowed. Thread-safe. */
    void (*log)(int32_t level, const char* message);
} brain_host_api;

/* One dense layer: z = x W^T + b, a = activation(z). W is outputs x inputs, row-major. */
typedef struct brain_layer_desc {
    uint32_t inputs;
    uint32_t outputs;
    int32_t activation;     /* brain_activation */
    float activation_param; /* leaky ReLU slope; unused otherwise */
} brain_layer_desc;

/* The network. Parameters are one flat float32 array: for each layer in order, W (outputs*inputs, row-major)
 * then b (outputs). */
typedef struct brain_model_desc {
    size_t struct_size;
    uint32_t layer_count;
    const brain_layer_desc* layers; /* borrowed: layer_count entries */
    int32_t loss;                   /* brain_loss */
} brain_model_desc;

/* Optimizer hyper-parameters. The state is one flat float32 array: SGD: velocity (P); Adam and AdamW: first
 * moments (P) then second moments (P); P = parameter count. */
typedef struct brain_optimizer_desc {
    size_t struct_size;
    int32_t kind; /* brain_optimizer_kind */
    float learning_rate;
    float momentum; /* SGD */
    float beta1;
    float beta2;
    float epsilon;
    float weight_decay; /* AdamW (decoupled); ignored by SGD and Adam */
} brain_optimizer_desc;

/* Training rows, already standardised by the core. Borrowed for the duration of session_open: a plugin that
 * needs the data later copies it. */
typedef struct brain_dataset_view {
    size_t struct_size;
    uint64_t rows;
    uint32_t input_width;
    uint32_t target_width;
    const float* features; /* rows * input_width, row-major */
    const float* targets;  /* rows * target_width, row-major */
} brain_dataset_view;

/* Batch order: in epoch e, batch b holds the rows brain_shuffle_index(seed, e, rows, p) for positions p in
 * [b*batch_size, min((b+1)*batch_size, rows)), or p itself when shuffle is 0. The last batch may be short and is
 * trained like any other (its loss weighted by its own row count). Epochs are numbered over the model's life, not
 * the session's: the k-th session_train_epoch call of a session (k = 0, 1, ...) trains epoch
 * e = brain_session_desc.first_epoch + k, so a session resumed from a checkpoint continues the same batch order. */
typedef struct brain_train_config {
    size_t struct_size;
    uint32_t epochs; /* informative: a session trains one epoch per session_train_epoch call */
    uint32_t batch_size;
    int32_t shuffle;
    uint64_t seed;
} brain_train_config;

/* Everything session_open needs. Every pointer is borrowed for the duration of session_open. */
typedef struct brain_session_desc {
    size_t struct_size;
    int32_t device;
    uint64_t memory_budget_bytes; /* 0: no budget (CPU). It bounds the tensors; brain/session_budget.hpp states
                                     whether the data set counts against it */
    const brain_model_desc* model;
    const brain_optimizer_desc* optimizer;
    const brain_dataset_view* dataset;
    const brain_train_config* config;
    const float* parameters; /* parameter_count floats */
    uint64_t parameter_count;
    const float* optimizer_state; /* optimizer_state_count floats (see brain_optimizer_desc) */
    uint64_t optimizer_state_count;
    uint64_t optimizer_step; /* Adam steps taken so far (bias correction) */
    uint64_t first_epoch;    /* epoch number of the first session_train_epoch call (the model's epochs so far) */
    int32_t precision;       /* brain_precision */
    /* --- ABI 1.2 --- */
    /* Non-NULL only for plugins reporting BRAIN_FEATURE_BATCH_SOURCE: the rows come from here, and dataset's
     * features and targets are NULL (its rows and widths still hold). Core-owned; valid until session_close. */
    const brain_batch_source* batch_source;
    /* Data parallelism, only for plugins reporting BRAIN_FEATURE_MULTI_DEVICE. devices (borrowed during
     * session_open, device_list_count entries) lists this process's devices; NULL means the one `device`. */
    const int32_t* devices;
    uint32_t device_list_count;
    int32_t rank;           /* this process's rank among world_size processes; 0 for one process */
    int32_t world_size;     /* processes training together; 0 or 1 for one process */
    const char* rendezvous; /* "file:<path>" or "tcp:<host>:<port>" when world_size > 1; borrowed during open */
} brain_session_desc;

/* Everything predictor_open needs (ABI 1.2). Every pointer is borrowed for the duration of predictor_open. */
typedef struct brain_predictor_desc {
    size_t struct_size;
    int32_t device;
    uint64_t memory_budget_bytes; /* 0: no budget */
    const brain_model_desc* model;
    const float* parameters; /* parameter_count floats, the layout of brain_session_desc.parameters */
    uint64_t parameter_count;
    int32_t precision;       /* brain_precision */
    uint64_t max_batch_rows; /* the most rows one predictor_run call passes; the plugin sizes its buffers by it */
} brain_predictor_desc;

/* What a device can do (accelerator_doctor). Caller-owned; the plugin fills it. Memory figures of -1 mean
 * "unknown": never a fake zero. */
typedef struct brain_device_report {
    size_t struct_size;
    char name[256];
    char revision[32]; /* e.g. compute capability "9.0" */
    int64_t total_memory_mib;
    int64_t free_memory_mib;
    int32_t gemm_available;   /* a real small matrix product was checked against its known answer */
    int32_t kernel_available; /* a real compiled kernel was launched and its result checked */
    int32_t allocation_test;  /* the allocation allocation_check names succeeded and was freed: the whole budget for
                                 a device backend; a small block for a host backend (brain/host_probe.hpp: 64 MiB,
                                 or the budget if smaller), never the whole budget of host memory */
    char notes[1024];         /* why a check failed, in one or more sentences; empty when all passed */
    /* --- ABI 1.2 --- */
    char gemm_check[64];       /* what gemm_available checked, e.g. "cuBLAS SGEMM"; empty: unnamed */
    char kernel_check[64];     /* what kernel_available checked, e.g. "NVRTC-compiled kernel" */
    char allocation_check[64]; /* what allocation_test did, e.g. "the whole budget on the device" */
} brain_device_report;

/* What a session did. Caller-owned; the plugin fills it with measured values. */
typedef struct brain_session_stats {
    size_t struct_size;
    uint64_t peak_allocated_bytes; /* peak of parameter, gradient, optimizer and batch tensors; at most the estimate
                                      of brain/session_budget.hpp (the core's estimate_tensor_memory_bytes) */
    uint64_t setup_time_ns;
    uint64_t training_time_ns;
    uint64_t checkpoint_time_ns;
    uint64_t epochs;
    uint64_t batches;
    uint64_t host_to_device_bytes;
    uint64_t device_to_host_bytes;
    int32_t dataset_resident;
    int32_t precision;       /* brain_precision in effect */
    uint64_t dataset_bytes;   /* device memory holding the data set or its staging buffers */
    uint64_t workspace_bytes; /* library workspaces (e.g. cuBLAS) charged to the budget */
    uint64_t budget_bytes;    /* the budget this session enforces; 0 if none */
    /* --- ABI 1.2 --- */
    uint32_t devices;            /* devices this session trains on (data parallelism); 1 otherwise */
    uint64_t allreduce_bytes;    /* gradient bytes summed across devices, this process's share */
    uint64_t allreduce_time_ns;  /* time spent in all-reduces not hidden behind computation, when measured */
    char arithmetic[64];         /* the arithmetic that ran, e.g. "float32", "tf32 products", "bf16 mixed" */
} brain_session_stats;

/* The plugin's function table, returned by the entry symbol. Plugin-owned, static, never freed. */
typedef struct brain_plugin_api {
    size_t struct_size;
    uint32_t abi_major;
    uint32_t abi_minor;
    const char* name;        /* static: backend name, e.g. "cpu"; the file is libbrain_<name>.so */
    const char* version;     /* static: plugin version string */
    const char* description; /* static: one line, e.g. what it was built against */

    /* Errors. All required. */
    int32_t (*error_code)(const brain_error* error);
    const char* (*error_message)(const brain_error* error); /* owned by the error; lives until error_destroy */
    void (*error_destroy)(brain_error* error);

    /* Called once after loading, before anything else. host is core-owned and outlives the plugin. A plugin
     * checks its own dependencies here; having no device is not an error. Required. */
    brain_error* (*initialize)(const brain_host_api* host);

    /* Number of usable devices (the CPU plugin: 1). An error (e.g. DRIVER_UNAVAILABLE) says why there are
     * none. Required. */
    brain_error* (*device_count)(int32_t* out_count);

    /* Probe one device under a budget (accelerator_doctor). out is caller-owned with struct_size set.
     * Required. */
    brain_error* (*probe)(int32_t device, uint64_t memory_budget_bytes, brain_device_report* out);

    /* Open a training session. *out_session is plugin-owned until session_close. The budget is checked before
     * anything is allocated; BUDGET_EXCEEDED names the largest batch size that fits (or says none does). A request
     * outside the plugin's capabilities is refused with UNSUPPORTED naming the feature. Required. */
    brain_error* (*session_open)(const brain_session_desc* desc, brain_session** out_session);

    /* Train the session's next epoch (see brain_train_config for its number and batch order); *out_loss receives
     * the sample-weighted mean loss of the epoch. Required. */
    brain_error* (*session_train_epoch)(brain_session* session, float* out_loss);

    /* Copy parameters and optimizer state to caller-owned buffers of the given sizes (which must equal the
     * session's). *out_step receives the optimizer step count. Required. */
    brain_error* (*session_checkpoint)(brain_session* session, float* parameters, uint64_t parameter_count,
                                       float* optimizer_state, uint64_t optimizer_state_count,
                                       uint64_t* out_step);

    /* Fill caller-owned stats (struct_size set by the caller). Required. */
    brain_error* (*session_stats)(const brain_session* session, brain_session_stats* out);

    /* Release a session and everything it holds. Never fails; NULL is ignored. The core makes no call on a
     * session after closing it. Required. */
    void (*session_close)(brain_session* session);

    /* --- ABI 1.1 --- */

    /* Set the learning rate used from the next optimizer step on (learning-rate schedules). learning_rate is
     * finite and > 0 (the core checks). Optional: NULL, or absent from a 1.0 table, means the backend cannot
     * change it within a session; the core then reports UNSUPPORTED. */
    brain_error* (*session_set_learning_rate)(brain_session* session, float learning_rate);

    /* --- ABI 1.2: every entry below is optional (NULL, or absent from an older table: not offered) --- */

    /* What the plugin runs (brain_capabilities). out is caller-owned with struct_size set. */
    brain_error* (*capabilities)(brain_capabilities* out);

    /* Learning rates for the optimizer steps of the NEXT session_train_epoch call only: its i-th batch uses
     * rates[i]; count equals that epoch's batch count, and every rate is finite and > 0 (the core checks). After that
     * epoch the last rate stays in effect. rates is borrowed. Requires BRAIN_FEATURE_STEP_LEARNING_RATES. */
    brain_error* (*session_set_step_learning_rates)(brain_session* session, const float* rates, uint64_t count);

    /* Open a predictor: the model's weights on the device, ready to map inputs to outputs, with no optimizer
     * state. The budget is checked before anything is allocated. *out is plugin-owned until predictor_close. */
    brain_error* (*predictor_open)(const brain_predictor_desc* desc, brain_predictor** out);

    /* Outputs for `rows` (<= max_batch_rows) standardised input rows: inputs (rows x input width, borrowed),
     * outputs (rows x output width, caller-owned) after the output activation. One thread at a time. */
    brain_error* (*predictor_run)(brain_predictor* predictor, const float* inputs, uint64_t rows, float* outputs);

    /* Release a predictor. Never fails; NULL is ignored. */
    void (*predictor_close)(brain_predictor* predictor);

    /* Stats of one device of a data-parallel session (index < stats.devices); out caller-owned. */
    brain_error* (*session_device_stats)(const brain_session* session, uint32_t index, brain_session_stats* out);

    /* --- ABI 1.3: optional; the two come together --- */

    /* Page-lock `bytes` of caller-owned host memory at `memory` so that the plugin's transfers read it directly,
     * without a staging copy (a predictor_run whose inputs lie in pinned memory). The memory stays caller-owned
     * and allocated until the matching host_memory_unpin(memory). Pins of the same address are counted: each is
     * matched by one unpin. Offered by plugins whose devices copy from the host (CUDA); a host plugin leaves both
     * entries NULL. */
    brain_error* (*host_memory_pin)(void* memory, uint64_t bytes);

    /* Undo one host_memory_pin(memory). Never fails; an address that is not pinned is ignored. */
    void (*host_memory_unpin)(void* memory);

    /* --- ABI 1.4: optional --- */

    /* Train the session's next `count` epochs (count >= 1) as `count` session_train_epoch calls would, without
     * returning between them, so that a device backend can queue each epoch behind the last instead of waiting for
     * it. out_losses (caller-owned, count floats) receives the epochs' losses in order; *out_trained the number of
     * epochs trained and written there, which is count on success. On an error *out_trained is the number of
     * epochs before the failing one, whose losses are written; the session is then in the state that epoch's
     * session_train_epoch call would leave it in. A non-finite loss ends the call like that epoch's
     * session_train_epoch would: an error (NUMERICAL), or the loss written and counted as the last epoch trained.
     * Per-step rates set with session_set_step_learning_rates apply to the first of these epochs. */
    brain_error* (*session_train_epochs)(brain_session* session, uint64_t count, float* out_losses,
                                         uint64_t* out_trained);
} brain_plugin_api;

/* Type of the entry symbol. Returns a plugin-owned static table, or NULL if the plugin cannot run at all. */
typedef const brain_plugin_api* (*brain_plugin_get_api_fn)(void);

/* The batch-order permutation shared by every backend, so that the same seed gives the same batches on any
 * device: a 4-round Feistel network over the smallest power-of-four domain >= n, cycle-walked into [0, n).
 * Pure integer arithmetic; the CUDA plugin compiles the same text on the device. */
static inline uint32_t brain_shuffle_mix32(uint32_t x, uint32_t key) {
    x ^= key;
    x *= 0x7feb352dU;
    x ^= x >> 15;
    x *= 0x846ca68bU;
    x ^= x >> 16;
    return x;
}

static inline uint64_t brain_shuffle_index(uint64_t seed, uint64_t epoch, uint64_t n, uint64_t position) {
    uint32_t half_bits = 1;
    uint32_t k0, k1, k2, k3, mask;
    uint64_t x = position;
    if (n <= 1) return 0;
    while ((1ULL << (2 * half_bits)) < n) ++half_bits;
    mask = (half_bits >= 32) ? 0xffffffffU : ((1U << half_bits) - 1U);
    k0 = brain_shuffle_mix32((uint32_t)seed, (uint32_t)(seed >> 32) ^ 0x9e3779b9U);
    k1 = brain_shuffle_mix32(k0 ^ (uint32_t)epoch, (uint32_t)(epoch >> 32) ^ 0x85ebca6bU);
    k2 = brain_shuffle_mix32(k1, 0xc2b2ae35U);
    k3 = brain_shuffle_mix32(k2, 0x27d4eb2fU);
    do {
        uint32_t left = (uint32_t)(x >> half_bits) & mask;
        uint32_t right = (uint32_t)x & mask;
        uint32_t t;
        t = right; right = left ^ (brain_shuffle_mix32(right, k0) & mask); left = t;
        t = right; right = left ^ (brain_shuffle_mix32(right, k1) & mask); left = t;
        t = right; right = left ^ (brain_shuffle_mix32(right, k2) & mask); left = t;
        t = right; right = left ^ (brain_shuffle_mix32(right, k3) & mask); left = t;
        x = ((uint64_t)left << half_bits) | right;
    } while (x >= n);
    return x;
}

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* BRAIN_PLUGIN_ABI_H */
