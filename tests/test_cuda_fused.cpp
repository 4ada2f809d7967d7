// The CUDA plugin's epoch kernels against the cuBLAS path and the CPU: the fused epoch kernel as it is and in
// each of its variants, on small networks, and the cluster epoch kernel on one cluster and on several. Every case
// skips with a one-line reason where no GPU is present.
#include "cuda/hooks.hpp"
#include "support/catch.hpp"
#include "support/env.hpp"
#include "support/gpu.hpp"
#include "support/loss_data.hpp"
#include "support/numeric.hpp"

#include <algorithm>
#include <brain/brain.hpp>
#include <cstdint>
#include <cstdlib>
#include <optional>
#include <string>
#include <vector>
#if __has_include(<device_scalars.h>) // the CUDA plugin's, where it is built: the cluster epoch kernel's layout
#include <device_scalars.h>
#define BRAIN_TEST_CLUSTER_LAYOUT 1
#endif

using brain::Activation;
using brain::Loss;
using brain::Optimizer;
using brain::TrainingBackend;
using brain::test::loss_data;

namespace {

TrainingBackend gpu() {
    return TrainingBackend::cuda(0, 1024);
}

// A network the fused epoch kernel and the cuBLAS path are compared on.
struct FusedCase {
    const char* name;
    std::vector<std::size_t> widths; // inputs, hidden..., outputs
    Activation hidden;
    Activation output;
    Loss loss;
    Optimizer optimizer;
    std::size_t rows;
    std::uint32_t batch;
};

// Widths and batches that are not multiples of the kernel's 32 x 32 tiles, outputs small enough for its
// warp-per-output path and large enough for its tiles, a weight gradient in more tiles than the grid has blocks,
// batches of 10 (a K shorter than one chunk), one to five layers, every loss and optimizer, output layers narrow
// enough to share a phase with the loss and one too wide for that, heads whose backward pass runs in the loss phase
// on two- and deeper networks, one with more inputs than a warp holds in registers, an epoch of 300 steps (the
// kernel works out its optimizer coefficients 256 steps at a time), batches of 1024 through narrow layers (weight
// gradients in row shares, or, without them, by a warp per output summing 1024 rows), row shares on some hidden
// layers and not on others, with a last batch of fewer rows, under a folded head and on a two-layer network beside
// the head's gradient, narrow heads without their backward pass in the loss phase, with their weights copied to
// shared memory and with too many for it, and a backward phase whose two products take tiles of different heights.
const std::vector<FusedCase>& fused_cases() {
    using enum Activation;
    using enum Loss;
    static const std::vector<FusedCase> cases = {
        FusedCase("relu mse adam", {70, 100, 45, 1}, Relu, Linear, MeanSquaredError, Optimizer::adam(0.005f), 1000,
                  77),
        FusedCase("gelu softmax cce sgd", {33, 64, 64, 5}, Gelu, Softmax, CategoricalCrossEntropy,
                  Optimizer::sgd(0.05f, 0.9f), 700, 128),
        FusedCase("sigmoid bce adamw", {16, 200, 3}, Sigmoid, Sigmoid, BinaryCrossEntropy,
                  Optimizer::adamw(0.01f, 0.05f), 513, 256),
        FusedCase("leaky relu, tanh output, five layers", {9, 40, 40, 40, 40, 2}, LeakyRelu, Tanh, MeanSquaredError,
                  Optimizer::adam(0.002f), 400, 50),
        FusedCase("output wider than a warp (the loss in a phase of its own)", {24, 48, 40}, Relu, Linear,
                  MeanSquaredError, Optimizer::adam(0.003f), 300, 60),
        FusedCase("a wide first layer (its weight gradient in more tiles than the grid has blocks)",
                  {1100, 160, 40, 1}, Relu, Linear, MeanSquaredError, Optimizer::adam(0.001f), 200, 64),
        FusedCase("batches of 10 (weight gradients summed over 10 rows)", {40, 64, 1}, Tanh, Linear,
                  MeanSquaredError, Optimizer::adamw(0.004f, 0.01f), 333, 10),
        FusedCase("a head on 300 inputs (its rows taken through registers in chunks in the loss phase)",
                  {20, 160, 300, 1}, Relu, Linear, MeanSquaredError, Optimizer::adam(0.002f), 500, 100),
        FusedCase("batches of 2 (more steps in an epoch than the kernel's table of optimizer coefficients holds)",
                  {6, 12, 1}, Tanh, Linear, MeanSquaredError, Optimizer::adam(0.01f), 600, 2),
        FusedCase(
            "tanh hidden layers, a sigmoid head under binary cross-entropy (a folded head's other activations)",
            {12, 48, 72, 1}, Tanh, Sigmoid, BinaryCrossEntropy, Optimizer::adam(0.003f), 480, 96),
        FusedCase("one layer", {12, 4}, Linear, Sigmoid, MeanSquaredError, Optimizer::sgd(0.1f, 0.0f), 333, 64),
        FusedCase("batches of 1024 through layers of 37 (weight gradients in row shares, or a warp per output over "
                  "1024 rows)",
                  {23, 37, 37, 37, 4}, Relu, Linear, MeanSquaredError, Optimizer::sgd(0.02f, 0.9f), 2500, 1024),
        FusedCase("a head of 12 on 350 inputs (a row per block, its weights read from shared memory: more outputs "
                  "than a block has warps)",
                  {40, 350, 12}, Tanh, Softmax, CategoricalCrossEntropy, Optimizer::sgd(0.05f, 0.9f), 256, 32),
        FusedCase("a head of 32 on 300 inputs (its weights too many for shared memory)", {30, 300, 32}, Relu,
                  Linear, MeanSquaredError, Optimizer::adam(0.002f), 200, 40),
        FusedCase("batches of 512, weight gradients in row shares on layers 1 and 3, not on 2 (too wide) nor 0 "
                  "(too few rows)",
                  {16, 40, 100, 500, 10, 2}, Tanh, Softmax, CategoricalCrossEntropy, Optimizer::adam(0.003f), 1200,
                  512),
        FusedCase("a folded head over a layer in row shares (batches of 256)", {10, 40, 40, 40, 1}, Relu, Linear,
                  MeanSquaredError, Optimizer::sgd(0.02f, 0.9f), 700, 256),
        FusedCase("two layers on batches of 1024 (layer 0's row shares beside the head's gradient)", {30, 64, 3},
                  Gelu, Sigmoid, BinaryCrossEntropy, Optimizer::adam(0.003f), 2200, 1024),
        FusedCase("a short-K weight gradient in full tiles beside a long-K delta in half tiles", {40, 200, 200, 2},
                  LeakyRelu, Sigmoid, BinaryCrossEntropy, Optimizer::sgd(0.05f, 0.9f), 384, 128),
    };
    return cases;
}

// The fused kernel as a test builds it: a variable of the test hooks and its value (none: the kernel as it is).
struct KernelVariant {
    const char* name;
    const char* variable;
    const char* value;
};

// Whether BRAIN_CUDA_FUSED=cluster takes the cluster epoch kernel for `c` on an H100 or H200: yes where a block's
// shared memory (the layout's floats and the kernel's own 15 KiB) is well inside their 227 KiB on one cluster of
// the size asked (BRAIN_CUDA_TEST_CLUSTER_BLOCKS) or of 16, with the gradient shares in shared or in global
// memory, no where it is past it at every size the session tries, even on as many clusters as give slices of 8
// rows and with the shares in global memory (it then chooses as when the variable is unset), either in between
// (nullopt).
std::optional<bool> cluster_mode_takes_cluster(const FusedCase& c) {
#ifdef BRAIN_TEST_CLUSTER_LAYOUT
    brain_fused_layer layers[BRAIN_FUSED_MAX_LAYERS] = {};
    for (std::size_t l = 0; l + 1 < c.widths.size(); ++l) {
        layers[l].inputs = static_cast<uint32_t>(c.widths[l]);
        layers[l].outputs = static_cast<uint32_t>(c.widths[l + 1]);
        layers[l].activation = static_cast<int32_t>(l + 2 < c.widths.size() ? c.hidden : c.output);
    }
    // On `clusters` clusters of `blocks` (0: as many as give slices of 8 rows, the most the session runs), the
    // gradient shares in global memory where `global`.
    const auto bytes = [&](uint32_t blocks, uint32_t clusters, bool global) {
        brain_cluster_layout layout;
        const uint32_t used = std::min<uint32_t>(blocks, c.batch);
        if (clusters == 0) clusters = (c.batch + 8 * used - 1) / (8 * used);
        return 4 * brain_cluster_plan(layers, static_cast<uint32_t>(c.widths.size() - 1), c.batch, used, clusters,
                                      global, &layout);
    };
    const char* asked = std::getenv("BRAIN_CUDA_TEST_CLUSTER_BLOCKS");
    const uint32_t blocks = asked ? static_cast<uint32_t>(std::atoi(asked)) : 16u;
    if (bytes(blocks, 1, false) <= 200 * 1024 || bytes(blocks, 1, true) <= 200 * 1024) return true;
    if (bytes(blocks, 0, true) > 232448 && (asked || (bytes(8, 0, true) > 232448 && bytes(4, 0, true) > 232448)))
        return false;
#else
    (void)c;
#endif
    return std::nullopt;
}

// Trains `c`, shuffled and not, on the cuBLAS path, the CPU and the fused kernel of each variant: the same weights,
// optimizer state, step count and losses, and one float read back per epoch on either path. Returns what ran for
// the first variant (the stats' arithmetic).
std::string check_fused_case(const FusedCase& c, const std::vector<KernelVariant>& variants) {
    std::string first_arithmetic;
    for (const bool shuffle : {true, false}) {
        INFO(c.name << ", shuffle " << shuffle);
        const std::size_t inputs = c.widths.front(), outputs = c.widths.back();
        const auto data = loss_data(c.rows, inputs, outputs, c.loss, 29);
        auto builder = brain::Network::builder().input_size(inputs);
        for (std::size_t l = 1; l + 1 < c.widths.size(); ++l) builder.dense(c.widths[l], c.hidden);
        const auto base = builder.dense(outputs, c.output).loss(c.loss).optimizer(c.optimizer).seed(21).build();
        const brain::TrainConfig config{3, c.batch, shuffle, 6};
        auto cublas = base, cpu = base;
        brain::FitReport cublas_report;
        {
            brain::test::ScopedEnv path("BRAIN_CUDA_FUSED", std::string("0"));
            cublas_report = cublas.fit_with_backend(data, config, gpu());
        }
        cpu.fit(data, config);
        // Trains `net` on the fused kernel as `variant` builds it.
        const auto train_fused = [&](const KernelVariant& variant, brain::Network& net) {
            brain::test::ScopedEnv path("BRAIN_CUDA_FUSED", std::string("1"));
            std::optional<brain::test::ScopedEnv> hook;
            if (*variant.variable) hook.emplace(variant.variable, std::string(variant.value));
            return net.fit_with_backend(data, config, gpu());
        };
        for (const KernelVariant& variant : variants) {
            INFO("kernel variant: " << variant.name);
            auto fused = base;
            const brain::FitReport fused_report = train_fused(variant, fused);
            if (&variant == &variants.front()) first_arithmetic = fused_report.stats.arithmetic;
            if (std::string(variant.value) == "cluster") {
                const std::optional<bool> cluster = cluster_mode_takes_cluster(c);
                const std::string arithmetic = fused_report.stats.arithmetic;
                const bool took = arithmetic.rfind("float32 (cluster epoch kernel", 0) == 0;
                if (cluster) CHECK(took == *cluster);
                // Forced into global memory, the gradient shares say so.
                const char* grads = std::getenv("BRAIN_CUDA_TEST_CLUSTER_GRADS");
                if (took && grads && std::string(grads) == "global")
                    CHECK(arithmetic == "float32 (cluster epoch kernel, global gradient shares)");
            }
            if (&variant == &variants.front()) {
                // Deterministic: every output is summed by one thread or warp in a fixed order.
                auto again = base;
                train_fused(variant, again);
                CHECK(again.parameters() == fused.parameters());
            }
            CHECK(brain::test::relative_error(fused.parameters(), cublas.parameters()) < 1e-4);
            // Adam scales each step by the gradient's running size, so a gradient that round-off leaves near zero
            // steps by up to the learning rate either way: the CPU plugin's own thread count and OpenBLAS kernel
            // move the eight-layer ReLU network's weights by up to 6.4e-4 (16 threads on the Haswell kernels
            // against one thread). Against the CPU the bound is that spread's; against cuBLAS, the same device,
            // 1e-4.
            CHECK(brain::test::relative_error(fused.parameters(), cpu.parameters()) < 2e-3);
            CHECK(brain::test::relative_error(fused.optimizer_state(), cublas.optimizer_state()) < 1e-4);
            CHECK(fused.optimizer_step() == cublas.optimizer_step());
            CHECK(brain::test::relative_error(fused_report.epoch_losses, cublas_report.epoch_losses) < 1e-4);
            // Only the epoch's loss comes back, on either path.
            CHECK(fused_report.stats.device_to_host_bytes == cublas_report.stats.device_to_host_bytes);
        }
    }
    return first_arithmetic;
}

// Small networks for the fused epoch kernel beside fused_cases: eight layers of 128, twelve of 48, widths that are
// not multiples of four, a first layer of 300 inputs (streamed in chunks), one row per block (batch 32), batches of
// 2 (300 steps), a head of 100 outputs (wider than a warp), two layers and one; every activation, loss and
// optimizer; and a last batch shorter than the others in every epoch but the batches of 2 and 32.
const std::vector<FusedCase>& small_cases() {
    using enum Activation;
    using enum Loss;
    static const std::vector<FusedCase> cases = {
        FusedCase("eight layers of 128, relu mse adam", {64, 128, 128, 128, 128, 128, 128, 128, 1}, Relu, Linear,
                  MeanSquaredError, Optimizer::adam(0.001f), 1000, 256),
        FusedCase("twelve layers of 48, gelu, sigmoid head, bce, adamw",
                  {20, 48, 48, 48, 48, 48, 48, 48, 48, 48, 48, 48, 3}, Gelu, Sigmoid, BinaryCrossEntropy,
                  Optimizer::adamw(0.002f, 0.01f), 1000, 256),
        FusedCase("tanh, widths not multiples of four, softmax cce sgd", {37, 50, 50, 50, 7}, Tanh, Softmax,
                  CategoricalCrossEntropy, Optimizer::sgd(0.05f, 0.9f), 777, 100),
        FusedCase("gelu, 300 inputs, sigmoid bce adamw", {300, 64, 64, 3}, Gelu, Sigmoid, BinaryCrossEntropy,
                  Optimizer::adamw(0.003f, 0.05f), 500, 64),
        FusedCase("leaky relu, one row per block, tanh head", {16, 32, 32, 32, 32, 1}, LeakyRelu, Tanh,
                  MeanSquaredError, Optimizer::adam(0.002f), 320, 32),
        FusedCase("sigmoid, batches of 2", {6, 12, 12, 1}, Sigmoid, Linear, MeanSquaredError,
                  Optimizer::adam(0.01f), 600, 2),
        FusedCase("linear hidden layers, a head of 100 outputs", {24, 128, 96, 100}, Linear, Linear,
                  MeanSquaredError, Optimizer::adam(0.003f), 300, 60),
        FusedCase("two layers", {8, 16, 1}, Relu, Sigmoid, BinaryCrossEntropy, Optimizer::sgd(0.1f, 0.0f), 333, 64),
        FusedCase("one layer", {12, 4}, Linear, Softmax, CategoricalCrossEntropy, Optimizer::adam(0.01f), 250, 50),
    };
    return cases;
}

} // namespace

TEST_CASE("CUDA fused epoch kernel and the cuBLAS path give the same weights", "[cuda]") {
    REQUIRE_GPU();
    // A section per network, so that a slow tool (racecheck in scripts/gpu-check) can run one of them (-c).
    for (const FusedCase& c : fused_cases()) DYNAMIC_SECTION(c.name) check_fused_case(c, {{"as it is", "", ""}});
}

TEST_CASE("CUDA fused epoch kernel variants give the same weights as the cuBLAS path", "[cuda]") {
    REQUIRE_TEST_HOOKS();
    REQUIRE_GPU();
    // The paths the kernel takes only for some shapes or budgets, on every network: the bias gradient always summed
    // in the weight gradient's tiles (as it is, only where the phase leaves too few blocks free for a warp per
    // column); a one-output head in a loss phase of its own (as it is, folded into the phases beside it where it
    // can: four networks fold, with three or more layers, one output and the layer below in tiles); a narrow
    // head's backward pass in a phase of its own, as when the budget has no room for its gradient's shares (as it
    // is, in the loss phase); such a head's weights read from global memory (as it is, from a copy in shared memory
    // where they fit and, with a row per block, where the row has more outputs than the block has warps); weight
    // gradients by a warp per output or tiles over the whole batch (as it is, in row shares where the batch has 256
    // rows or more and the shares are small enough); the register count left to ptxas, as toolkits before CUDA 12.4
    // build it; one tile height for both products of a backward phase (as it is, each its own where that shortens
    // the phase); a warp per batch row in the loss phase (as it is, a row per block where the grid has a block
    // for every row of a batch: every network here but those on batches of 256 and more); and forward and delta
    // products in tiles 32 wide only (as it is, 16 x 16 tiles where a product's all fit in the blocks its phase
    // leaves it).
    const std::vector<KernelVariant> variants = {
        {"bias gradients in the tiles", "BRAIN_CUDA_KERNEL_DEFINES", "BRAIN_FUSED_BIAS_IN_TILES=1"},
        {"no folded head", "BRAIN_CUDA_KERNEL_DEFINES", "BRAIN_FUSED_FOLDED_HEAD=0"},
        {"no head gradient shares", "BRAIN_CUDA_TEST_HEAD_SHARES", "0"},
        {"head weights from global memory", "BRAIN_CUDA_KERNEL_DEFINES", "BRAIN_FUSED_HEAD_STAGED=0"},
        {"no row shares", "BRAIN_CUDA_KERNEL_DEFINES", "BRAIN_FUSED_ROW_SHARES=0"},
        {"registers left to ptxas", "BRAIN_CUDA_KERNEL_DEFINES", "BRAIN_FUSED_MAX_REGISTERS=0"},
        {"one tile height per backward phase", "BRAIN_CUDA_TEST_TILE_HEIGHTS", "0"},
        {"a warp per row in the loss phase", "BRAIN_CUDA_TEST_HEAD_ROWS", "0"},
        {"no narrow tiles", "BRAIN_CUDA_KERNEL_DEFINES", "BRAIN_FUSED_NARROW_TILES=0"}};
    for (const FusedCase& c : fused_cases()) DYNAMIC_SECTION(c.name) check_fused_case(c, variants);
}

TEST_CASE("CUDA fused epoch kernel on small networks gives the same weights as the cuBLAS path", "[cuda]") {
    REQUIRE_GPU();
    for (const FusedCase& c : small_cases())
        DYNAMIC_SECTION(c.name) check_fused_case(c, {{"fused epoch kernel", "BRAIN_CUDA_FUSED", "1"}});
}

TEST_CASE("CUDA cluster epoch kernel gives the same weights as the cuBLAS path", "[cuda]") {
    REQUIRE_GPU();
    // Every network of both lists on the cluster epoch kernel, where a cluster holds it and its batch (the
    // session's arithmetic says which kernel ran): the first in clusters as large as the device runs, batches of
    // more than 128 rows on several clusters (2 to 8) and again on one, and again with the gradient shares in
    // global memory; the second in clusters of 4 blocks (longer slices, more parameters per block; batches of more
    // than 32 rows on 2 to 8 clusters).
    const std::vector<KernelVariant> cluster = {{"cluster epoch kernel", "BRAIN_CUDA_FUSED", "cluster"}};
    for (const FusedCase& c : fused_cases()) DYNAMIC_SECTION(c.name) check_fused_case(c, cluster);
    {
        brain::test::ScopedEnv one("BRAIN_CUDA_TEST_CLUSTERS", std::string("1"));
        for (const FusedCase& c : fused_cases())
            if (c.batch > 128) DYNAMIC_SECTION("one cluster: " << c.name) check_fused_case(c, cluster);
    }
    {
        brain::test::ScopedEnv global("BRAIN_CUDA_TEST_CLUSTER_GRADS", std::string("global"));
        for (const FusedCase& c : fused_cases())
            DYNAMIC_SECTION("gradient shares in global memory: " << c.name) check_fused_case(c, cluster);
    }
    {
        // Left to choose, a deep narrow network that a block holds once but not twice, on batches of 32, takes the
        // cluster kernel with its gradient shares in global memory where the device has clusters (9.0 or newer).
        using enum brain::Activation;
        const FusedCase deep("automatic choice: eight layers of 64 on batches of 32",
                             {40, 64, 64, 64, 64, 64, 64, 64, 2}, Tanh, Linear, brain::Loss::MeanSquaredError,
                             brain::Optimizer::adam(0.003f), 320, 32);
        DYNAMIC_SECTION(deep.name) {
            const std::string arithmetic =
                check_fused_case(deep, {{"automatic choice", "BRAIN_CUDA_FUSED", "auto"}});
            const auto report = brain::accelerator_doctor(gpu());
            REQUIRE(report);
            if (std::stoi(report->revision) >= 9)
                CHECK(arithmetic == "float32 (cluster epoch kernel, global gradient shares)");
            else
                CHECK(arithmetic == "float32 (fused epoch kernel)");
        }
    }
    brain::test::ScopedEnv four("BRAIN_CUDA_TEST_CLUSTER_BLOCKS", std::string("4"));
    for (const FusedCase& c : small_cases()) DYNAMIC_SECTION("small: " << c.name) check_fused_case(c, cluster);
}
