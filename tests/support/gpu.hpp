// What the GPU tests share: whether a CUDA device is usable here, and REQUIRE_GPU() to skip with the reason.
#pragma once

#include "support/catch.hpp"

#include <brain/brain.hpp>

#include <dlfcn.h>

#include <optional>
#include <string>

namespace brain::test {

// True when the NVIDIA driver library can be loaded: the CI assertion below runs only when it cannot.
inline bool driver_library_present() {
    void* handle = dlopen("libcuda.so.1", RTLD_LAZY | RTLD_LOCAL);
    if (!handle) return false;
    dlclose(handle);
    return true;
}

// Why the GPU tests cannot run here, or nullopt when a CUDA device is usable (asked once per run).
inline std::optional<std::string> no_gpu_reason() {
    static const std::optional<std::string> reason = []() -> std::optional<std::string> {
        try {
            (void)brain::load_plugin("cuda");
        } catch (const brain::Error& e) {
            return std::string("the CUDA plugin is not available: ") + e.what();
        }
        try {
            (void)brain::accelerator_doctor(brain::TrainingBackend::cuda(0, 1));
            return std::nullopt;
        } catch (const brain::Error& e) {
            return std::string("no usable CUDA device: ") + e.what();
        }
    }();
    return reason;
}

} // namespace brain::test

#define REQUIRE_GPU()                                                                                              \
    do {                                                                                                           \
        if (const auto reason_ = ::brain::test::no_gpu_reason()) BRAIN_SKIP(*reason_);                            \
    } while (false)

namespace brain::test {

// An output layer, the loss it trains under and its width: one case of the GPU parity tests.
struct OutputHead {
    Activation output;
    Loss loss;
    std::size_t width;
};

// Every hidden activation, each of which the GPU parity tests train.
inline constexpr Activation k_hidden_activations[] = {Activation::Linear,  Activation::Relu, Activation::LeakyRelu,
                                                      Activation::Sigmoid, Activation::Tanh, Activation::Gelu};

// The batch size a BudgetExceeded message names as the largest that fits; the message must name one.
inline std::size_t largest_batch_named(const std::string& message) {
    const auto at = message.find("largest batch size that fits is ");
    REQUIRE(at != std::string::npos);
    return std::stoul(message.substr(at + 32));
}

} // namespace brain::test
