// What every chapter-11 example shares: the --backend/--budget/--epochs options and the one precise line an
// example prints when this machine cannot run the backend it asked for.
#pragma once

#include "app_support.hpp"

#include <CLI/CLI.hpp>
#include <brain/brain.hpp>
#include <cstddef>
#include <cstdint>
#include <iostream>
#include <optional>
#include <string>

namespace brain::examples {

// Options common to the examples; each example sets its own defaults before parsing.
struct ExampleOptions {
    std::string backend = "cuda:0";
    std::uint64_t budget_mib = 8192;
    std::uint32_t epochs = 50;
};

// Adds --backend, --budget and --epochs to `app` (with the defaults already in `options`).
inline void add_example_options(CLI::App& app, ExampleOptions& options) {
    app.add_option("--backend", options.backend, "cpu, cuda:<device>, metal:<device> or <plugin>:<device>")
        ->capture_default_str();
    app.add_option("--budget", options.budget_mib, "device memory budget in MiB")->capture_default_str();
    app.add_option("--epochs", options.epochs, "epochs to train")->capture_default_str();
}

// For an error that means "this machine cannot run that backend" (no plugin, no driver, no device, Metal off
// Apple systems): prints "<backend> cannot run on this machine: <ErrorCode>: <message>", then `next_step` if
// given, and returns 0, since that is the expected outcome on a machine without a GPU. Any other error is a real
// failure: prints "error: <ErrorCode>: <message>" and returns 2.
inline int explain_backend_error(const Error& e, const TrainingBackend& backend, const char* next_step = nullptr) {
    std::cout.flush();
    if (app::is_backend_unavailable(e.code())) {
        std::cout << backend.describe() << " cannot run on this machine: " << app::error_text(e) << std::endl;
        if (next_step) std::cout << next_step << std::endl;
        return 0;
    }
    std::cerr << app::error_line(e) << std::endl;
    return 2;
}

// What probing an example's backend found: the device's report; nothing (the CPU backend has no device to
// probe, which it says); or, when the backend cannot run here, the exit status after the error was explained.
struct DeviceProbe {
    std::optional<AcceleratorReport> report;
    std::optional<int> exit_status; // set when the example stops here
};

// accelerator_doctor(backend), with the one line an example prints when there is no report to show.
inline DeviceProbe probe_device(const TrainingBackend& backend) {
    DeviceProbe probe;
    try {
        probe.report = accelerator_doctor(backend);
    } catch (const Error& e) {
        probe.exit_status = explain_backend_error(e, backend);
        return probe;
    }
    if (!probe.report) std::cout << "CPU backend; nothing to probe\n";
    return probe;
}

// The chapter's model: inputs -> 256 ReLU -> 256 ReLU -> 1 linear, Adam (lr 1e-3), seed 42.
inline Network chapter_network(std::size_t inputs) {
    return Network::builder()
        .input_size(inputs)
        .dense(256, Activation::Relu)
        .dense(256, Activation::Relu)
        .dense(1, Activation::Linear)
        .optimizer(Optimizer::adam(0.001f))
        .seed(42)
        .build();
}

// Runs an example's body, turning an escaped brain::Error into the one-line report and exit status 2.
template <class Body>
int run_example(Body&& body) {
    try {
        return body();
    } catch (const Error& e) {
        std::cout.flush();
        std::cerr << app::error_line(e) << std::endl;
        return 2;
    } catch (const std::exception& e) {
        std::cout.flush();
        std::cerr << "error: " << e.what() << std::endl;
        return 2;
    }
}

} // namespace brain::examples

// Parse the command line like CLI11_PARSE, inside main.
#define BRAIN_EXAMPLE_PARSE(app, argc, argv)                                                                       \
    try {                                                                                                          \
        (app).parse((argc), (argv));                                                                               \
    } catch (const CLI::ParseError& e) {                                                                           \
        return (app).exit(e);                                                                                      \
    }
