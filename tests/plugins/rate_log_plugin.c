/* libbrain_ratelog.so: a test plugin that changes its learning rate only through session_set_learning_rate (as a
 * plugin of ABI 1.1 does: no capabilities, no per-step rates) and reports, as each epoch's "loss", the rate that
 * epoch trained at; its weights never change. The schedule tests read from it which rate the core set per epoch. */
#include "plugin_error.h"

#include <stdlib.h>
#include <string.h>

struct brain_session {
    float* parameters;
    float* state;
    uint64_t parameter_count;
    uint64_t state_count;
    uint64_t step;
    uint64_t batches;
    uint64_t epochs;
    float rate;
};

static brain_error* initialize(const brain_host_api* host) {
    (void)host;
    return NULL;
}
static brain_error* device_count(int32_t* out) {
    *out = 1;
    return NULL;
}
static brain_error* probe(int32_t device, uint64_t budget, brain_device_report* out) {
    (void)device; (void)budget; (void)out;
    return make_error(BRAIN_ERR_UNSUPPORTED, "ratelog test plugin: probe is not implemented");
}

static void session_close(brain_session* s) {
    if (!s) return;
    free(s->parameters);
    free(s->state);
    free(s);
}

static brain_error* session_open(const brain_session_desc* desc, brain_session** out) {
    brain_session* s = (brain_session*)calloc(1, sizeof(brain_session));
    if (!s) return make_error(BRAIN_ERR_ALLOCATION_FAILED, "ratelog test plugin: out of memory");
    s->parameter_count = desc->parameter_count;
    s->state_count = desc->optimizer_state_count;
    s->parameters = (float*)malloc((s->parameter_count + 1) * sizeof(float));
    s->state = (float*)malloc((s->state_count + 1) * sizeof(float));
    if (!s->parameters || !s->state) {
        session_close(s);
        return make_error(BRAIN_ERR_ALLOCATION_FAILED, "ratelog test plugin: out of memory");
    }
    memcpy(s->parameters, desc->parameters, s->parameter_count * sizeof(float));
    memcpy(s->state, desc->optimizer_state, s->state_count * sizeof(float));
    s->step = desc->optimizer_step;
    s->batches = (desc->dataset->rows + desc->config->batch_size - 1) / desc->config->batch_size;
    s->rate = desc->optimizer->learning_rate;
    *out = s;
    return NULL;
}

static brain_error* train_epoch(brain_session* s, float* loss) {
    s->step += s->batches;
    s->epochs += 1;
    *loss = s->rate;
    return NULL;
}

static brain_error* checkpoint(brain_session* s, float* p, uint64_t np, float* o, uint64_t no, uint64_t* step) {
    if (np != s->parameter_count || no != s->state_count)
        return make_error(BRAIN_ERR_INVALID_ARGUMENT, "ratelog test plugin: checkpoint sizes differ");
    memcpy(p, s->parameters, np * sizeof(float));
    memcpy(o, s->state, no * sizeof(float));
    *step = s->step;
    return NULL;
}

static brain_error* stats(const brain_session* s, brain_session_stats* out) {
    const size_t size = out->struct_size;
    memset(out, 0, size < sizeof(*out) ? size : sizeof(*out));
    out->struct_size = size;
    out->epochs = s->epochs;
    out->batches = s->epochs * s->batches;
    return NULL;
}

static brain_error* set_learning_rate(brain_session* s, float rate) {
    s->rate = rate;
    return NULL;
}

static const brain_plugin_api k_api = {
    sizeof(brain_plugin_api), BRAIN_ABI_VERSION_MAJOR, BRAIN_ABI_VERSION_MINOR, "ratelog", "0.0.0-test",
    "test plugin: the learning rate through session_set_learning_rate only", error_code, error_message,
    error_destroy, initialize, device_count, probe, session_open, train_epoch, checkpoint, stats, session_close,
    set_learning_rate,
    /* ABI 1.2's entries: none (capabilities, per-step rates, predictor, device stats). */
};

BRAIN_PLUGIN_EXPORT const brain_plugin_api* brain_plugin_get_api(void) {
    return &k_api;
}
