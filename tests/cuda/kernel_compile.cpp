// The CUDA plugin's kernels compiled by NVRTC exactly as the plugin compiles them, on any machine with the toolkit:
// no GPU is needed, so a kernel that stops compiling fails here (in CI, which has no GPU) instead of first on a GPU
// machine. Built into brain_tests only when the CUDA plugin is built (tests/CMakeLists.txt).
#include "support/catch.hpp"

#include <algorithm>
#include <atomic>
#include <brain/plugin_sdk.hpp>
#include <exception>
#include <kernel_compiler.hpp>
#include <regex>
#include <string>
#include <thread>
#include <utility>
#include <vector>

namespace {

bool contains(const std::vector<char>& image, const std::string& text) {
    return std::search(image.begin(), image.end(), text.begin(), text.end()) != image.end();
}

// ptxas's report (-Xptxas=-v, in `log`) must show the epoch kernel `kernel` free of spills on the H200's
// architecture: everything stays in registers (the tuning in docs/performance.md assumes it; a spill would slow
// every step). Checked with the toolkit the kernels were tuned with (CUDA 13); another ptxas may allocate registers
// differently, which is a warning.
void check_epoch_spills(const std::string& log, const std::string& kernel) {
    const std::regex report("Function properties for " + kernel +
                            "\\s*ptxas\\s*\\.\\s*(\\d+) bytes "
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
        WARN("NVRTC " << nvrtc_major << "." << nvrtc_minor << " spills registers in " << kernel);
}

// The fused epoch kernels, whose spill counts every sm_90 cubin checks.
constexpr const char* fused_epoch_kernels[] = {"brain_fused_epoch", "brain_fused_epoch_shares",
                                               "brain_fused_epoch_head_rows", "brain_fused_epoch_folded",
                                               "brain_fused_epoch_folded_shares"};

// One compile of the kernel program: what it was asked for and what it gave.
struct Compile {
    std::string label; // what the checks name it by
    brain::cuda::Target target;
    std::vector<std::string> options;
    std::vector<char> image;
    std::string log;
    std::string error; // empty when the compile succeeded
    brain::cuda::KernelForm form = brain::cuda::KernelForm::Calls;
};

// Runs every compile, on as many threads as the machine has (each is a whole program's compile, tens of seconds;
// NVRTC compiles separate programs concurrently). The results are checked afterwards on the test's own thread,
// since Catch2's assertions are not thread-safe.
void compile_all(std::vector<Compile>& compiles) {
    std::atomic<std::size_t> next{0};
    auto work = [&] {
        for (std::size_t i = next++; i < compiles.size(); i = next++) {
            Compile& c = compiles[i];
            try {
                c.image = brain::cuda::compile(brain::cuda::kernel_source(c.form), c.target, c.options, &c.log);
            } catch (const std::exception& e) {
                c.error = e.what();
            } catch (...) {
                c.error = "a non-standard exception";
            }
        }
    };
    const std::size_t threads =
        std::max<std::size_t>(1, std::min<std::size_t>(std::thread::hardware_concurrency(), compiles.size()));
    std::vector<std::thread> helpers;
    for (std::size_t t = 1; t < threads; ++t) helpers.emplace_back(work);
    work();
    for (std::thread& h : helpers) h.join();
}

} // namespace

TEST_CASE("CUDA kernels compile with NVRTC for Turing, Ampere and Hopper without a GPU", "[plugin][nvrtc]") {
    // sm_75 takes the fused kernel's pre-cp.async branches, sm_80 cp.async, sm_90 is the H200 it is tuned on.
    std::vector<Compile> compiles;
    for (const auto& [major, minor] : {std::pair{7, 5}, std::pair{8, 0}, std::pair{9, 0}})
        compiles.push_back({std::to_string(major * 10 + minor),
                            brain::cuda::choose_target(major, minor),
                            {"-Xptxas=-v"},
                            {},
                            {},
                            {}});
    compile_all(compiles);
    for (const Compile& c : compiles) {
        INFO(c.target.label);
        CHECK(c.target.cubin);
        INFO(c.error);
        REQUIRE(c.error.empty());
        CHECK(c.image.size() > 10000);
        for (const char* name : brain::cuda::kernel_names) {
            INFO(name);
            CHECK(contains(c.image, name));
        }
        if (c.label == "90") {
            for (const char* kernel : fused_epoch_kernels) check_epoch_spills(c.log, kernel);
            check_epoch_spills(c.log, "brain_cluster_epoch");
        }
    }
}

TEST_CASE("CUDA kernels compile with each value of their compile-time switches", "[plugin][nvrtc]") {
    // docs/cuda-plugin.md's table. The switches that force one of the paths the kernel otherwise chooses per phase
    // or per step, which the GPU tests run on every network, compile to a cubin whose epoch kernels must not spill:
    // the bias gradient's place (0, 1; 2 is the default above), the folded head (0; 1 is the default), the head's
    // weights from global memory (0; 1 is the default), the row-share kernel without its row shares (0; 1 is the
    // default), the register cap left to ptxas (0), as toolkits before CUDA 12.4 build the kernel, and tiles 32
    // wide only (0; 1, 16 x 16 tiles where they fit, is the default); the program's inline-activations form (the
    // epilogue switch at 2, its default there) and that switch at 1 likewise. The measurement switches, reached
    // only through a test build's BRAIN_CUDA_KERNEL_DEFINES, compile to PTX, which checks their code without
    // ptxas's half of the time: the tiles' floor measurements (1, 2 with the multiply-adds, 3 to 5 without one part
    // each; 0 is the default), the loss phase's stamps (1), also with the timed loads (2; 0 is the default), a
    // forward tile's stamps (here of layer 1; 0 is the default), and the shares a gradient sum loads at once (8, as
    // the row-share kernels; 32 is the default).
    const brain::cuda::Target cubin = brain::cuda::choose_target(9, 0);
    const brain::cuda::Target ptx{"--gpu-architecture=compute_90", "compute_90", false};
    std::vector<Compile> compiles;
    for (const char* define :
         {"BRAIN_FUSED_BIAS_IN_TILES=0", "BRAIN_FUSED_BIAS_IN_TILES=1", "BRAIN_FUSED_FOLDED_HEAD=0",
          "BRAIN_FUSED_HEAD_STAGED=0", "BRAIN_FUSED_ROW_SHARES=0", "BRAIN_FUSED_MAX_REGISTERS=0",
          "BRAIN_FUSED_EPILOGUE_INLINE=1", "BRAIN_FUSED_NARROW_TILES=0"})
        compiles.push_back({define, cubin, {std::string("--define-macro=") + define, "-Xptxas=-v"}, {}, {}, {}});
    compiles.push_back({"the inline-activations form",
                        cubin,
                        {"-Xptxas=-v"},
                        {},
                        {},
                        {},
                        brain::cuda::KernelForm::InlineActivations});
    for (const char* define :
         {"BRAIN_FUSED_TILE_FLOOR=1", "BRAIN_FUSED_TILE_FLOOR=2", "BRAIN_FUSED_TILE_FLOOR=3",
          "BRAIN_FUSED_TILE_FLOOR=4", "BRAIN_FUSED_TILE_FLOOR=5", "BRAIN_FUSED_LOSS_STAMPS=1",
          "BRAIN_FUSED_LOSS_STAMPS=2", "BRAIN_FUSED_TILE_STAMPS=2", "BRAIN_FUSED_GRADIENT_LOADS=8"})
        compiles.push_back({define, ptx, {std::string("--define-macro=") + define}, {}, {}, {}});
    compile_all(compiles);
    for (const Compile& c : compiles) {
        INFO(c.label);
        INFO(c.error);
        REQUIRE(c.error.empty());
        for (const char* name : brain::cuda::kernel_names) {
            INFO(name);
            // A cubin holds the names in its symbol table; PTX is text, where each kernel is an entry point.
            CHECK(contains(c.image, c.target.cubin ? std::string(name) : ".entry " + std::string(name) + "("));
        }
        if (!c.target.cubin) continue;
        for (const char* kernel : fused_epoch_kernels) check_epoch_spills(c.log, kernel);
    }
}

TEST_CASE("CUDA kernel files include each other by name, and the cache key holds all of them", "[plugin][nvrtc]") {
    const std::string source = brain::cuda::kernel_source();
    // The program itself only names the kernel files; their text comes in as NVRTC headers.
    CHECK(source.find("__global__") == std::string::npos);
    const std::string text = brain::cuda::kernel_text(source);
    CHECK(text.rfind(source, 0) == 0);
    for (const char* file : {"brain/plugin_abi.h", "device_scalars.h", "dense_math.cuh", "layer_kernels.cu",
                             "mixed_kernels.cu", "fused_epilogues.cuh", "fused_gemm.cuh", "fused_products.cuh",
                             "fused_shares.cuh", "fused_head.cuh", "fused_epoch.cu", "cluster_epoch.cu"}) {
        INFO(file);
        CHECK(text.find(std::string(1, '\0') + file + '\0') != std::string::npos);
    }
    for (const char* name : brain::cuda::kernel_names) {
        INFO(name);
        CHECK(text.find(std::string(name) + "(") != std::string::npos);
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

TEST_CASE("The kernel program's form follows the network's activations", "[plugin][nvrtc]") {
    using brain::cuda::KernelForm;
    auto network = [](std::initializer_list<int32_t> activations) {
        std::vector<brain::sdk::LayerPlan> layers;
        for (int32_t activation : activations) layers.push_back({8, 8, activation, 0.0f, 0, 0});
        return brain::cuda::kernel_form(layers);
    };
    CHECK(network({BRAIN_ACT_RELU, BRAIN_ACT_LEAKY_RELU, BRAIN_ACT_LINEAR}) == KernelForm::Calls);
    CHECK(network({BRAIN_ACT_RELU, BRAIN_ACT_SOFTMAX}) == KernelForm::Calls);
    CHECK(network({BRAIN_ACT_GELU, BRAIN_ACT_LINEAR}) == KernelForm::InlineActivations);
    CHECK(network({BRAIN_ACT_RELU, BRAIN_ACT_TANH, BRAIN_ACT_SOFTMAX}) == KernelForm::InlineActivations);
    CHECK(network({BRAIN_ACT_RELU, BRAIN_ACT_SIGMOID}) == KernelForm::InlineActivations);
    // The forms are two programs (two modules, two cache entries); only the inline one defines the form's macro.
    const std::string calls = brain::cuda::kernel_source(KernelForm::Calls);
    const std::string inlined = brain::cuda::kernel_source(KernelForm::InlineActivations);
    CHECK(calls != inlined);
    CHECK(calls.find("BRAIN_KERNEL_INLINE_ACTIVATIONS") == std::string::npos);
    CHECK(inlined.find("#define BRAIN_KERNEL_INLINE_ACTIVATIONS 1") != std::string::npos);
}
