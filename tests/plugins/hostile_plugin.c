/* Plugins that load but hand the core hostile values, one variant per compile definition: text without a NUL, huge
 * or unprintable text, impossible device counts and stats, an unfilled or impossible probe report, feature bits
 * without their entries, a table too short for the required entries, an initialize that counts its calls. The core
 * must refuse or escape each, and never crash, hang or print the bytes raw. Written in C, like the ABI. */
#define _GNU_SOURCE
#include "plugin_error.h"

#include <limits.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#ifndef HOSTILE_NAME
#error "HOSTILE_NAME must name the backend"
#endif

/* Text with everything a terminal must not receive raw: colour escapes, a carriage return, a line feed, a tab, a C1
 * control (U+009B, a one-byte escape sequence introducer), bytes that are not UTF-8. */
#define HOSTILE_TEXT                                                                                               \
    "\x1b[31mred\x1b[0m\r\n\tline2 \xc2\x9b"                                                                       \
    "2J \xff\xfe end"

/* The core releases errors through error_destroy; these errors own nothing more than the struct of plugin_error.h,
 * so a message that does not fit there is kept aside. */
static const char* g_outside_message;

static brain_error* error_with_outside_message(const char* message) {
    brain_error* e = make_error(BRAIN_ERR_DRIVER_UNAVAILABLE, "");
    g_outside_message = message;
    return e;
}

static const char* hostile_error_message(const brain_error* e) {
    return g_outside_message ? g_outside_message : error_message(e);
}

#ifdef HOSTILE_UNTERMINATED
/* A message that ends exactly where readable memory ends: no NUL follows it, only an inaccessible page. */
static const char* unterminated_message(void) {
    static const char* text;
    if (text) return text;
    const long page = sysconf(_SC_PAGESIZE);
    char* p = (char*)mmap(NULL, 2 * (size_t)page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) return "hostile test plugin: mmap failed";
    mprotect(p + page, (size_t)page, PROT_NONE);
    const char* words = "unterminated message from the hostile plugin";
    const size_t n = strlen(words);
    memcpy(p + page - n, words, n);
    text = p + page - n;
    return text;
}
#endif

#ifdef HOSTILE_LONG
/* A 4 MiB message. */
static const char* long_message(void) {
    static char* text;
    if (text) return text;
    const size_t n = 4u * 1024u * 1024u;
    text = (char*)malloc(n + 1);
    if (!text) return "hostile test plugin: out of memory";
    memset(text, 'L', n);
    text[n] = '\0';
    return text;
}
#endif

static const brain_host_api* g_host;
static int g_initialize_calls;

static brain_error* initialize(const brain_host_api* host) {
    g_host = host;
    ++g_initialize_calls;
#ifdef HOSTILE_CONTROL_TEXT
    host->log(3, "hostile log line: " HOSTILE_TEXT);
#endif
#ifdef HOSTILE_INIT_COUNTS
    char message[128];
    snprintf(message, sizeof message, "hostile test plugin: initialize call %d refused", g_initialize_calls);
    return make_error(BRAIN_ERR_DRIVER_UNAVAILABLE, message);
#else
    return NULL;
#endif
}

static brain_error* device_count(int32_t* out) {
#if defined(HOSTILE_UNTERMINATED)
    (void)out;
    return error_with_outside_message(unterminated_message());
#elif defined(HOSTILE_LONG)
    (void)out;
    return error_with_outside_message(long_message());
#elif defined(HOSTILE_CONTROL_TEXT)
    (void)out;
    return error_with_outside_message("no device: " HOSTILE_TEXT);
#elif defined(HOSTILE_DEVICE_COUNT)
    *out = HOSTILE_DEVICE_COUNT;
    return NULL;
#else
    *out = 1;
    return NULL;
#endif
}

static brain_error* probe(int32_t device, uint64_t budget, brain_device_report* out) {
    (void)device;
    (void)budget;
#if defined(HOSTILE_PROBE_UNFILLED)
    (void)out; /* success, and nothing written */
#elif defined(HOSTILE_PROBE_HUGE)
    strcpy(out->name, "hostile device");
    out->total_memory_mib = INT64_MAX;
    out->free_memory_mib = INT64_MAX;
#elif defined(HOSTILE_CONTROL_TEXT)
    memset(out->name, 'N', sizeof out->name); /* no NUL in the array */
    strcpy(out->revision, "\x1b[2J\xff");
    out->total_memory_mib = 1024;
    out->free_memory_mib = 512;
    strcpy(out->notes, HOSTILE_TEXT);
#else
    (void)out;
    return make_error(BRAIN_ERR_UNSUPPORTED, "hostile test plugin: probe is not implemented");
#endif
    return NULL;
}

/* A session that trains nothing: enough for the core to open it, train a constant loss and ask for its stats. */
struct brain_session {
    uint64_t epochs;
};

static brain_error* session_open(const brain_session_desc* desc, brain_session** out) {
    (void)desc;
    brain_session* s = (brain_session*)calloc(1, sizeof(brain_session));
    if (!s) return make_error(BRAIN_ERR_ALLOCATION_FAILED, "hostile test plugin: out of memory");
    *out = s;
    return NULL;
}
static brain_error* train_epoch(brain_session* s, float* loss) {
    s->epochs += 1;
    *loss = 0.5f;
    return NULL;
}
static brain_error* checkpoint(brain_session* s, float* p, uint64_t np, float* o, uint64_t no, uint64_t* step) {
    (void)s;
    memset(p, 0, np * sizeof(float));
    memset(o, 0, no * sizeof(float));
    *step = 0;
    return NULL;
}
static brain_error* stats(const brain_session* s, brain_session_stats* out) {
    out->epochs = s->epochs;
    out->precision = BRAIN_PRECISION_FLOAT32;
#ifdef HOSTILE_STATS_DEVICES
    out->devices = UINT32_MAX;
#else
    out->devices = 1;
#endif
    return NULL;
}
static brain_error* device_stats(const brain_session* s, uint32_t index, brain_session_stats* out) {
    (void)index;
    return stats(s, out);
}
static void session_close(brain_session* s) {
    free(s);
}

static brain_error* capabilities(brain_capabilities* out) {
    out->activations = 0x7fu;
    out->losses = 0x7u;
    out->optimizers = 0x7u;
    out->precisions = 1u;
#ifdef HOSTILE_FEATURE_BITS_ONLY
    /* Every feature claimed, while the table has none of the entries that serve them. */
    out->features = BRAIN_FEATURE_STEP_LEARNING_RATES | BRAIN_FEATURE_PREDICT | BRAIN_FEATURE_BATCH_SOURCE |
                    BRAIN_FEATURE_MULTI_DEVICE | BRAIN_FEATURE_PREDICT_CHECKS_INPUTS;
    out->max_devices = 1;
#else
    out->features = 0;
    out->max_devices = 1;
#endif
#ifdef HOSTILE_CONTROL_TEXT
    strcpy(out->notes, "notes: " HOSTILE_TEXT);
#endif
    return NULL;
}

static brain_plugin_api g_api;

BRAIN_PLUGIN_EXPORT const brain_plugin_api* brain_plugin_get_api(void) {
    g_api.struct_size = sizeof(brain_plugin_api);
    g_api.abi_major = BRAIN_ABI_VERSION_MAJOR;
    g_api.abi_minor = BRAIN_ABI_VERSION_MINOR;
    g_api.name = HOSTILE_NAME;
#ifdef HOSTILE_CONTROL_TEXT
    g_api.version = "\x1b[31m6.6.6\xff\x1b[0m";
    g_api.description = "line1\nline2\r\x1b[2K";
#else
    g_api.version = "0.0.0-test";
    g_api.description = "hostile test plugin";
#endif
    g_api.error_code = error_code;
    g_api.error_message = hostile_error_message;
    g_api.error_destroy = error_destroy;
    g_api.initialize = initialize;
    g_api.device_count = device_count;
    g_api.probe = probe;
    g_api.session_open = session_open;
    g_api.session_train_epoch = train_epoch;
    g_api.session_checkpoint = checkpoint;
    g_api.session_stats = stats;
    g_api.session_close = session_close;
    g_api.capabilities = capabilities;
    g_api.session_device_stats = device_stats;
#ifdef HOSTILE_SHORT_TABLE
    /* The table claims to end before session_stats, a required entry of ABI 1.0. */
    g_api.struct_size = offsetof(brain_plugin_api, session_stats);
#endif
    return &g_api;
}
