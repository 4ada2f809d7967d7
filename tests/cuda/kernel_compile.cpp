// The CUDA plugin's kernels compiled by NVRTC exactly as the plugin compiles them, on any machine with the toolkit:
// no GPU is needed, so a kernel that stops compiling fails here (in CI, which has no GPU) instead of first on a GPU
// machine. Built into brain_tests only when the CUDA plugin is built (tests/CMakeLists.txt).
#include "support/catch.hpp"
#include "support/env.hpp"

#include <algorithm>
#include <brain/plugin_sdk.hpp>
#include <kernel_compiler.hpp>
#include <regex>
#include <string>
#include <utility>
#include <vector>

namespace {

bool contains(const std::vector<char>& image, const std::string& text) {
    return std::search(image.begin(), image.end(), text.begin(), text.end()) != image.end();
}

// The kernels the plugin looks up by name (kernel_module.cpp).
const char* const kernel_names[] = {"brain_shuffle_permutation", "brain_gather_batch", "brain_bias_activation",
                                    "brain_bias_softmax",        "brain_output_loss",  "brain_backprop_activation",
                                    "brain_backprop_softmax",    "brain_column_sums",  "brain_finish_batch",
                                    "brain_sgd_update",          "brain_adam_update",  "brain_finish_epoch",
                                    "brain_fused_epoch"};

} // namespace

TEST_CASE("CUDA kernels compile with NVRTC for Turing, Ampere and Hopper without a GPU", "[plugin][nvrtc]") {
    const std::string source = brain::cuda::kernel_source();
    // sm_75 takes the fused kernel's pre-cp.async branches, sm_80 cp.async, sm_90 is the H200 it is tuned on.
    for (const auto& [major, minor] : {std::pair{7, 5}, std::pair{8, 0}, std::pair{9, 0}}) {
        const brain::cuda::Target target = brain::cuda::choose_target(major, minor);
        INFO(target.label);
        CHECK(target.cubin);
        std::string log;
        std::vector<char> image;
        REQUIRE_NOTHROW(image = brain::cuda::compile(source, target, {"-Xptxas=-v"}, &log));
        CHECK(image.size() > 10000);
        for (const char* name : kernel_names) {
            INFO(name);
            CHECK(contains(image, name));
        }
        // ptxas's report for the fused epoch kernel on the H200's architecture: everything stays in registers (the
        // tuning in docs/performance.md assumes it; a spill would slow every step). Checked with the toolkit the
        // kernel was tuned with (CUDA 13); another ptxas may allocate registers differently, which is a warning.
        if (major == 9) {
            const std::regex report("Function properties for brain_fused_epoch\\s*ptxas\\s*\\.\\s*(\\d+) bytes "
                                    "stack frame, (\\d+) bytes spill stores, (\\d+) bytes spill loads");
            std::smatch match;
            INFO(log);
            REQUIRE(std::regex_search(log, match, report));
            const bool spills = match[2].str() != "0" || match[3].str() != "0";
            int nvrtc_major = 0, nvrtc_minor = 0;
            REQUIRE(nvrtcVersion(&nvrtc_major, &nvrtc_minor) == NVRTC_SUCCESS);
            if (nvrtc_major == 13)
                CHECK_FALSE(spills);
            else if (spills)
                WARN("NVRTC " << nvrtc_major << "." << nvrtc_minor << " spills registers in brain_fused_epoch");
        }
    }
}

TEST_CASE("CUDA kernel compile errors name the architecture and carry NVRTC's log", "[plugin][nvrtc]") {
    const brain::cuda::Target target = brain::cuda::choose_target(9, 0);
    const std::string broken = brain::cuda::kernel_source() + "\nthis_is_not_a_type broken_declaration;\n";
    try {
        (void)brain::cuda::compile(broken, target);
        FAIL("a broken kernel source compiled");
    } catch (const brain::sdk::Failure& failure) {
        CHECK(failure.code() == BRAIN_ERR_KERNEL_COMPILE_FAILED);
        const std::string message = failure.what();
        CHECK(message.find("sm_90") != std::string::npos);
        CHECK(message.find("NVRTC log") != std::string::npos);
        CHECK(message.find("this_is_not_a_type") != std::string::npos);
    }
}

TEST_CASE("CUDA kernels target the newest architecture NVRTC knows below an unknown device", "[plugin][nvrtc]") {
    // A compute capability newer than any toolkit: PTX for the newest virtual architecture, which the driver
    // finishes. One older than every architecture NVRTC knows: an error that says to install another toolkit.
    const brain::cuda::Target future = brain::cuda::choose_target(99, 9);
    CHECK_FALSE(future.cubin);
    CHECK(future.label.rfind("compute_", 0) == 0);
    try {
        (void)brain::cuda::choose_target(1, 0);
        FAIL("compute capability 1.0 was accepted");
    } catch (const brain::sdk::Failure& failure) {
        CHECK(failure.code() == BRAIN_ERR_KERNEL_COMPILE_FAILED);
        CHECK(std::string(failure.what()).find("install a CUDA toolkit") != std::string::npos);
    }
}

TEST_CASE("CUDA kernel tuning defines become #define lines and bad ones are refused by name", "[plugin][nvrtc]") {
    const std::string plain = brain::cuda::kernel_source();
    {
        brain::test::ScopedEnv defines("BRAIN_CUDA_KERNEL_DEFINES",
                                       std::string("BRAIN_TILE_STAGES=3,,BRAIN_FUSED_BIAS_IN_TILES=1,BRAIN_FLAG"));
        const std::string tuned = brain::cuda::kernel_source();
        CHECK(tuned ==
              "#define BRAIN_TILE_STAGES 3\n#define BRAIN_FUSED_BIAS_IN_TILES 1\n#define BRAIN_FLAG\n" + plain);
        // The switches are the kernels' own: the tuned source compiles.
        CHECK_FALSE(brain::cuda::compile(tuned, brain::cuda::choose_target(9, 0)).empty());
    }
    // Every other switch away from its default compiles too (the GPU tests and scripts/gpu-variants set them).
    for (const char* variant :
         {"BRAIN_FUSED_HEAD_BACKWARD=0", "BRAIN_GRID_BARRIER_ACQ_REL=0", "BRAIN_FUSED_STORED_UPDATE=0",
          "BRAIN_FUSED_STORED_UPDATE=1", "BRAIN_FUSED_COEFFICIENT_TABLE=0", "BRAIN_TILE_VECTOR_COPIES=0",
          "BRAIN_TILE_VECTOR_COPIES=2", "BRAIN_FUSED_QUARTER_TILES=1", "BRAIN_TILE_PROLOGUE_LOOP=0",
          "BRAIN_FUSED_FOLDED_HEAD=0", "BRAIN_FUSED_ONE_HEIGHT=1", "BRAIN_FUSED_MAX_REGISTERS=0",
          "BRAIN_TILE_LOADS_FIRST=0", "BRAIN_TILE_LOADS_FIRST=4", "BRAIN_ACT_OUT_OF_LINE=0", "BRAIN_TILE_ABLATE=15",
          "BRAIN_FUSED_PROFILE_EPOCH=1", "BRAIN_GRID_BARRIER_ACQ_REL=1"}) {
        INFO(variant);
        brain::test::ScopedEnv defines("BRAIN_CUDA_KERNEL_DEFINES", std::string(variant));
        CHECK_FALSE(brain::cuda::compile(brain::cuda::kernel_source(), brain::cuda::choose_target(9, 0)).empty());
    }
    for (const char* bad : {"3STAGES=1", "BRAIN TILE=2", "=4", "BRAIN_X=1\n#include <x>"}) {
        INFO("BRAIN_CUDA_KERNEL_DEFINES=" << bad);
        brain::test::ScopedEnv defines("BRAIN_CUDA_KERNEL_DEFINES", std::string(bad));
        try {
            (void)brain::cuda::kernel_source();
            FAIL("an invalid define was accepted");
        } catch (const brain::sdk::Failure& failure) {
            CHECK(failure.code() == BRAIN_ERR_INVALID_ARGUMENT);
            CHECK(std::string(failure.what()).find("BRAIN_CUDA_KERNEL_DEFINES") != std::string::npos);
        }
    }
}
