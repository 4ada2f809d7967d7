// What each plugin runs (the ABI 1.2 capabilities entry, or the ABI 1.0 set for an older plugin), as the core reads
// it at load and holds sessions to it: a feature a backend does not run is refused with Unsupported naming it
// before the plugin sees the session.
#include "support/catch.hpp"
#include "support/env.hpp"

#include <brain/brain.hpp>
#include <functional>
#include <string>
#include <vector>

namespace {

using brain::Activation;
using brain::ErrorCode;
using brain::Precision;
using brain::TrainingBackend;

brain::Network network_with(Activation hidden) {
    return brain::Network::builder().input_size(2).dense(3, hidden).dense(1, Activation::Linear).seed(1).build();
}

brain::Dataset tiny_data() {
    return brain::Dataset(brain::Matrix{{0, 1}, {1, 0}, {1, 1}}, brain::Matrix{{1}, {0}, {1}});
}

std::string message_of(const std::function<void()>& fn, ErrorCode expected) {
    try {
        fn();
    } catch (const brain::Error& e) {
        CHECK(e.code() == expected);
        return e.what();
    }
    FAIL("expected " << brain::to_string(expected) << " but the call succeeded");
    return {};
}

} // namespace

TEST_CASE("the CPU plugin declares every activation, loss and optimizer, float32 only", "[plugin]") {
    const auto record = brain::load_plugin("cpu");
    const brain::PluginCapabilities& c = record.capabilities;
    CHECK(c.declared);
    for (int a = 0; a <= 6; ++a) CHECK(c.runs(static_cast<Activation>(a)));
    for (int l = 0; l <= 2; ++l) CHECK(c.runs(static_cast<brain::Loss>(l)));
    for (int k = 0; k <= 2; ++k) CHECK(c.runs(static_cast<brain::Optimizer::Kind>(k)));
    CHECK(c.runs(Precision::Float32));
    CHECK_FALSE(c.runs(Precision::Tf32));
    CHECK_FALSE(c.runs(Precision::Bf16));
    CHECK(c.max_devices == 1);
    CHECK(brain::missing_features(c) == std::vector<std::string>{"tf32", "bf16"});
    CHECK(brain::describe(c) ==
          "activations: linear, relu, leaky_relu, sigmoid, tanh, softmax, gelu; losses: mean_squared_error, "
          "binary_cross_entropy, categorical_cross_entropy; optimizers: sgd, adam, adamw; precisions: float32");
    CHECK(brain::plugin_capabilities("cpu").precisions == c.precisions);
}

TEST_CASE("a plugin built against the ABI 1.0 header is taken to run the ABI 1.0 set", "[plugin]") {
    brain::test::ScopedEnv path("BRAIN_PLUGIN_PATH", std::string(BRAIN_TEST_BROKEN_PLUGIN_DIR));
    const auto record = brain::load_plugin("oldminor");
    REQUIRE(record.abi_minor == 0);
    const brain::PluginCapabilities& c = record.capabilities;
    CHECK_FALSE(c.declared);
    CHECK(brain::missing_features(c) == std::vector<std::string>{"tf32", "bf16"});
    CHECK(c.features == 0);
    // TF32 is outside the 1.0 set: the core refuses it up front, saying why.
    const std::string message = message_of(
        [] {
            (void)brain::TrainingSession(network_with(Activation::Relu), tiny_data(),
                                         brain::TrainConfig{1, 2, true, 1},
                                         TrainingBackend::plugin("oldminor", 0, 0).with_precision(Precision::Tf32));
        },
        ErrorCode::Unsupported);
    CHECK(message.find("backend \"oldminor\" does not compute in tf32") != std::string::npos);
    CHECK(message.find("built against ABI 1.0, has no capabilities entry") != std::string::npos);
}

TEST_CASE("a feature outside a plugin's capabilities is refused before a session opens", "[plugin]") {
    SECTION("a precision the CPU plugin does not list") {
        const std::string message = message_of(
            [] {
                (void)brain::TrainingSession(network_with(Activation::Relu), tiny_data(),
                                             brain::TrainConfig{1, 2, true, 1},
                                             TrainingBackend::cpu().with_precision(Precision::Bf16));
            },
            ErrorCode::Unsupported);
        CHECK(message.find("backend \"cpu\" does not compute in bf16") != std::string::npos);
        CHECK(message.find("; it computes in float32. Use float32 (Precision::Float32; --precision float32") !=
              std::string::npos);
    }
    SECTION("an activation the sample plugin declares it lacks, named with its layer and the plugin's reason") {
        brain::test::ScopedEnv path("BRAIN_PLUGIN_PATH", std::string(BRAIN_TEST_SAMPLE_PLUGIN_DIR) + "/lacksgelu");
        CHECK_FALSE(brain::plugin_capabilities("naive").runs(Activation::Gelu));
        const std::string message = message_of(
            [] {
                auto net = network_with(Activation::Gelu);
                net.fit_with_backend(tiny_data(), brain::TrainConfig{1, 2, true, 1},
                                     TrainingBackend::plugin("naive", 0, 64));
            },
            ErrorCode::Unsupported);
        CHECK(message.find("backend \"naive\" does not run the gelu activation of layer 0") != std::string::npos);
        CHECK(message.find("the plugin says: this build of the naive backend has no GELU") != std::string::npos);
        // Everything it does run still trains.
        auto net = network_with(Activation::Tanh);
        CHECK_NOTHROW(net.fit_with_backend(tiny_data(), brain::TrainConfig{1, 2, true, 1},
                                           TrainingBackend::plugin("naive", 0, 64)));
    }
}

TEST_CASE("a plugin whose capabilities entry fails does not load, saying so", "[plugin]") {
    brain::test::ScopedEnv path("BRAIN_PLUGIN_PATH", std::string(BRAIN_TEST_BROKEN_PLUGIN_DIR));
    try {
        (void)brain::load_plugin("badcaps");
        FAIL("a plugin whose capabilities entry fails was loaded");
    } catch (const brain::Error& e) {
        CHECK(e.code() == ErrorCode::PluginFailure);
        const std::string message = e.what();
        CHECK(message.find("failed to initialise: its capabilities entry failed") != std::string::npos);
        CHECK(message.find("capabilities fails on purpose") != std::string::npos);
    }
}
