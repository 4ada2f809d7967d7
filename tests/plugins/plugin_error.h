/* The error object of the test plugins: a code and a bounded message, created and freed by the plugin itself. */
#ifndef BRAIN_TESTS_PLUGIN_ERROR_H
#define BRAIN_TESTS_PLUGIN_ERROR_H

#include <brain/plugin_abi.h>

#include <stdlib.h>
#include <string.h>

struct brain_error {
    int32_t code;
    char message[256];
};

static brain_error* make_error(int32_t code, const char* message) {
    brain_error* e = (brain_error*)malloc(sizeof(brain_error));
    if (!e) return NULL;
    e->code = code;
    strncpy(e->message, message, sizeof(e->message) - 1);
    e->message[sizeof(e->message) - 1] = '\0';
    return e;
}

static int32_t error_code(const brain_error* e) { return e->code; }
static const char* error_message(const brain_error* e) { return e->message; }
static void error_destroy(brain_error* e) { free(e); }

#endif
