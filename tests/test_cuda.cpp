// The CUDA backend against the chapter's contract. On a machine without a driver (CI) only the DriverUnavailable
// assertion runs; every GPU test skips with a one-line reason there and runs on a machine with a GPU.
#include "cuda/hooks.hpp"
#include "support/catch.hpp"
#include "support/env.hpp"
#include "support/error_match.hpp"
#include "support/gpu.hpp"
#include "support/numeric.hpp"

#include <algorithm>
#include <brain/brain.hpp>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <dlfcn.h>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <optional>
#include <string>
#include <unistd.h>
#include <vector>
#if __has_include(<device_scalars.h>) // the CUDA plugin's, where it is built: the cluster epoch kernel's layout
#include <device_scalars.h>
#define BRAIN_TEST_CLUSTER_LAYOUT 1
#endif

using brain::Activation;
using brain::ErrorCode;
using brain::Loss;
using brain::Optimizer;
using brain::TrainingBackend;

namespace {

// `rows` rows of `inputs` features; targets suited to `loss` over `outputs` columns (one-hot for CCE, 0/1 for
// BCE, a smooth function for MSE).
brain::Dataset make_data(std::size_t rows, std::size_t inputs, std::size_t outputs, Loss loss, std::uint64_t seed) {
    brain::Random rng(seed);
    const auto noise_next = [&rng] { return static_cast<float>(rng.uniform(-1.0, 1.0)); };
    brain::Matrix x(rows, inputs), y(rows, outputs);
    for (std::size_t r = 0; r < rows; ++r) {
        float s = 0.0f;
        for (std::size_t c = 0; c < inputs; ++c) {
            x(r, c) = noise_next();
            s += x(r, c) * static_cast<float>(c % 3 == 0 ? 1 : -1);
        }
        for (std::size_t k = 0; k < outputs; ++k) {
            const float v = std::sin(s + static_cast<float>(k)) + 0.1f * noise_next();
            if (loss == Loss::MeanSquaredError) y(r, k) = v;
            if (loss == Loss::BinaryCrossEntropy) y(r, k) = v > 0.0f ? 1.0f : 0.0f;
        }
        if (loss == Loss::CategoricalCrossEntropy)
            y(r, static_cast<std::size_t>(std::fabs(s) * 7.0f) % outputs) = 1.0f;
    }
    return brain::Dataset(std::move(x), std::move(y));
}

brain::Network make_network(std::size_t inputs, std::size_t hidden, Activation activation, std::size_t outputs,
                            Activation output, Loss loss, const Optimizer& optimizer, std::uint64_t seed) {
    return brain::Network::builder()
        .input_size(inputs)
        .dense(hidden, activation)
        .dense(hidden / 2, activation)
        .dense(outputs, output)
        .loss(loss)
        .optimizer(optimizer)
        .seed(seed)
        .build();
}

// One regression output under mean squared error: the data and the network most tests train.
brain::Dataset regression_data(std::size_t rows, std::size_t inputs, std::uint64_t seed) {
    return make_data(rows, inputs, 1, Loss::MeanSquaredError, seed);
}
brain::Network regression_network(std::size_t inputs, std::size_t hidden, Activation activation,
                                  const Optimizer& optimizer, std::uint64_t seed) {
    return make_network(inputs, hidden, activation, 1, Activation::Linear, Loss::MeanSquaredError, optimizer, seed);
}

TrainingBackend gpu(std::uint64_t budget_mib = 1024) {
    return TrainingBackend::cuda(0, budget_mib);
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
// the head's gradient, and narrow heads without their backward pass in the loss phase, with their weights copied to
// shared memory and with too many for it.
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
        FusedCase("a head of 8 on 350 inputs (its weights read from shared memory: its gradient is too wide for a "
                  "warp's slice)",
                  {40, 350, 8}, Tanh, Softmax, CategoricalCrossEntropy, Optimizer::sgd(0.05f, 0.9f), 256, 32),
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
// shared memory (the layout's floats and the kernel's own 15 KiB) is well inside their 227 KiB in clusters of
// the size asked (BRAIN_CUDA_TEST_CLUSTER_BLOCKS) or of 16, no where it is past it at every size the session
// tries (it then chooses as when the variable is unset), either in between (nullopt).
std::optional<bool> cluster_mode_takes_cluster(const FusedCase& c) {
#ifdef BRAIN_TEST_CLUSTER_LAYOUT
    brain_fused_layer layers[BRAIN_FUSED_MAX_LAYERS] = {};
    for (std::size_t l = 0; l + 1 < c.widths.size(); ++l) {
        layers[l].inputs = static_cast<uint32_t>(c.widths[l]);
        layers[l].outputs = static_cast<uint32_t>(c.widths[l + 1]);
        layers[l].activation = static_cast<int32_t>(l + 2 < c.widths.size() ? c.hidden : c.output);
    }
    const auto bytes = [&](uint32_t blocks) {
        brain_cluster_layout layout;
        return 4 * brain_cluster_plan(layers, static_cast<uint32_t>(c.widths.size() - 1), c.batch,
                                      std::min<uint32_t>(blocks, c.batch), &layout);
    };
    const char* asked = std::getenv("BRAIN_CUDA_TEST_CLUSTER_BLOCKS");
    const uint32_t blocks = asked ? static_cast<uint32_t>(std::atoi(asked)) : 16u;
    if (bytes(blocks) <= 200 * 1024) return true;
    if (bytes(blocks) > 232448 && (asked || (bytes(8) > 232448 && bytes(4) > 232448))) return false;
#else
    (void)c;
#endif
    return std::nullopt;
}

// Trains `c`, shuffled and not, on the cuBLAS path, the CPU and the fused kernel of each variant: the same weights,
// optimizer state, step count and losses, and one float read back per epoch on either path.
void check_fused_case(const FusedCase& c, const std::vector<KernelVariant>& variants) {
    for (const bool shuffle : {true, false}) {
        INFO(c.name << ", shuffle " << shuffle);
        const std::size_t inputs = c.widths.front(), outputs = c.widths.back();
        const auto data = make_data(c.rows, inputs, outputs, c.loss, 29);
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
            if (std::string(variant.value) == "cluster") {
                const std::optional<bool> cluster = cluster_mode_takes_cluster(c);
                if (cluster) CHECK((fused_report.stats.arithmetic == "float32 (cluster epoch kernel)") == *cluster);
            }
            if (&variant == &variants.front()) {
                // Deterministic: every output is summed by one thread or warp in a fixed order.
                auto again = base;
                train_fused(variant, again);
                CHECK(again.parameters() == fused.parameters());
            }
            CHECK(brain::test::relative_error(fused.parameters(), cublas.parameters()) < 1e-4);
            CHECK(brain::test::relative_error(fused.parameters(), cpu.parameters()) < 1e-4);
            CHECK(brain::test::relative_error(fused.optimizer_state(), cublas.optimizer_state()) < 1e-4);
            CHECK(fused.optimizer_step() == cublas.optimizer_step());
            CHECK(brain::test::relative_error(fused_report.epoch_losses, cublas_report.epoch_losses) < 1e-4);
            // Only the epoch's loss comes back, on either path.
            CHECK(fused_report.stats.device_to_host_bytes == cublas_report.stats.device_to_host_bytes);
        }
    }
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

TEST_CASE("CUDA without a driver reports DriverUnavailable in one sentence", "[cuda]") {
    if (brain::test::driver_library_present()) {
        // With a driver, the same request must not claim that there is none.
        try {
            (void)brain::accelerator_doctor(TrainingBackend::cuda(0, 64));
            SUCCEED("libcuda.so.1 is present and the device answered");
        } catch (const brain::Error& e) {
            INFO("message: " << e.what());
            CHECK(e.code() != ErrorCode::DriverUnavailable);
        }
        return;
    }
    if (const auto reason = brain::test::no_gpu_reason();
        reason && reason->find("not available") != std::string::npos)
        BRAIN_SKIP(*reason);
    const std::string message = brain::test::expect_error(
        ErrorCode::DriverUnavailable, [] { (void)brain::accelerator_doctor(TrainingBackend::cuda(0, 8192)); });
    CHECK(brain::test::contains_all(message, {"no CUDA driver", "libcuda.so.1", "nvidia-smi"}));
    CHECK(message.find('\n') == std::string::npos);

    // Training fails the same way, and the network keeps its weights.
    auto net = regression_network(3, 8, Activation::Relu, Optimizer::adam(0.01f), 1);
    const auto before = net.parameters();
    const auto data = regression_data(16, 3, 2);
    BRAIN_REQUIRE_ERROR(
        ErrorCode::DriverUnavailable,
        net.fit_with_backend(data, brain::TrainConfig{2, 4, true, 3}, TrainingBackend::cuda(0, 8192)),
        "no CUDA driver");
    CHECK(net.parameters() == before);
}

TEST_CASE("CUDA doctor reports the device and real checks", "[cuda]") {
    REQUIRE_GPU();
    const auto report = brain::accelerator_doctor(gpu(1024));
    REQUIRE(report.has_value());
    INFO("notes: " << report->notes);
    CHECK(!report->name.empty());
    CHECK(report->revision.find('.') != std::string::npos);
    CHECK(report->total_memory_mib > 1024);
    REQUIRE(report->free_memory_mib.has_value());
    CHECK(*report->free_memory_mib > 0);
    CHECK(*report->free_memory_mib <= report->total_memory_mib);
    CHECK(report->gemm_available);
    CHECK(report->kernel_available);
    CHECK(report->allocation_test);
    CHECK(report->notes.empty());

    // A budget larger than the card cannot pass the allocation test, and the notes say why.
    const auto too_big = brain::accelerator_doctor(gpu(static_cast<std::uint64_t>(report->total_memory_mib) * 2));
    REQUIRE(too_big.has_value());
    CHECK(!too_big->allocation_test);
    CHECK(too_big->notes.find("Allocation test failed") != std::string::npos);
}

TEST_CASE("CUDA device that does not exist is DeviceNotFound naming the count", "[cuda]") {
    REQUIRE_GPU();
    BRAIN_REQUIRE_ERROR(ErrorCode::DeviceNotFound, brain::accelerator_doctor(TrainingBackend::cuda(99, 1024)),
                        "device 99", "this machine has");
}

TEST_CASE("CUDA training matches the CPU for every activation, loss and optimizer", "[cuda][slow]") {
    REQUIRE_GPU();
    const brain::test::OutputHead heads[] = {{Activation::Linear, Loss::MeanSquaredError, 2},
                                             {Activation::Sigmoid, Loss::BinaryCrossEntropy, 3},
                                             {Activation::Softmax, Loss::CategoricalCrossEntropy, 4},
                                             {Activation::Tanh, Loss::MeanSquaredError, 2},
                                             {Activation::Sigmoid, Loss::MeanSquaredError, 3}};
    const Optimizer optimizers[] = {Optimizer::sgd(0.05f, 0.9f), Optimizer::adam(0.01f),
                                    Optimizer::adamw(0.01f, 0.05f)};
    const brain::TrainConfig config{3, 32, true, 11};
    for (const Activation activation : brain::test::k_hidden_activations)
        for (const brain::test::OutputHead& head : heads)
            for (const Optimizer& optimizer : optimizers) {
                INFO("hidden " << brain::to_string(activation) << ", output " << brain::to_string(head.output)
                               << ", loss " << brain::to_string(head.loss) << ", optimizer "
                               << brain::to_string(optimizer.kind));
                const auto data = make_data(300, 6, head.width, head.loss, 17);
                auto cpu = make_network(6, 16, activation, head.width, head.output, head.loss, optimizer, 5);
                auto cuda = cpu;
                const auto cpu_report = cpu.fit(data, config);
                const auto cuda_report = cuda.fit_with_backend(data, config, gpu());
                CHECK(brain::test::relative_error(cuda.parameters(), cpu.parameters()) < 1e-4);
                CHECK(brain::test::relative_error(cuda.optimizer_state(), cpu.optimizer_state()) < 1e-3);
                CHECK(cuda.optimizer_step() == cpu.optimizer_step());
                REQUIRE(cuda_report.epoch_losses.size() == cpu_report.epoch_losses.size());
                CHECK(brain::test::relative_error(cuda_report.epoch_losses, cpu_report.epoch_losses) < 1e-4);
            }
}

TEST_CASE("CUDA unshuffled and staged epochs match the CPU", "[cuda]") {
    REQUIRE_GPU();
    const auto data = make_data(20000, 32, 2, Loss::MeanSquaredError, 23);
    const auto base = make_network(32, 32, Activation::Tanh, 2, Activation::Linear, Loss::MeanSquaredError,
                                   Optimizer::adam(0.005f), 9);
    for (const bool shuffle : {true, false}) {
        INFO("shuffle " << shuffle);
        const brain::TrainConfig config{2, 500, shuffle, 4};
        auto cpu = base, resident = base, staged = base;
        cpu.fit(data, config);
        const auto resident_report = resident.fit_with_backend(data, config, gpu(256));
        // 2 MiB holds the tensors but not the 2.6 MB data set: batches are staged through pinned memory.
        const auto staged_report = staged.fit_with_backend(data, config, gpu(2));
        CHECK(resident_report.stats.dataset_resident);
        CHECK(!staged_report.stats.dataset_resident);
        CHECK(staged_report.stats.dataset_bytes == 0);
        CHECK(resident_report.stats.dataset_bytes >= data.size() * (32 + 2) * sizeof(float));
        // Staging moves every batch across the bus each epoch; residency uploads the data once.
        CHECK(staged_report.stats.host_to_device_bytes >= 2 * data.size() * (32 + 2) * sizeof(float));
        CHECK(resident_report.stats.host_to_device_bytes < 2 * data.size() * (32 + 2) * sizeof(float));
        CHECK(brain::test::relative_error(staged.parameters(), resident.parameters()) < 1e-5);
        CHECK(brain::test::relative_error(resident.parameters(), cpu.parameters()) < 1e-4);
        CHECK(staged_report.stats.peak_allocated_bytes <= 2ull << 20);
    }
}

TEST_CASE("CUDA graph replay and direct launches give the same weights", "[cuda]") {
    REQUIRE_GPU();
    const auto data = make_data(1000, 8, 3, Loss::CategoricalCrossEntropy, 31);
    const auto base = make_network(8, 32, Activation::Relu, 3, Activation::Softmax, Loss::CategoricalCrossEntropy,
                                   Optimizer::adam(0.01f), 12);
    const brain::TrainConfig config{4, 64, true, 8};
    // Graphs belong to the cuBLAS path; a network this small would otherwise take the fused epoch kernel.
    brain::test::ScopedEnv cublas_path("BRAIN_CUDA_FUSED", std::string("0"));
    auto graphed = base, direct = base;
    graphed.fit_with_backend(data, config, gpu());
    {
        brain::test::ScopedEnv no_graphs("BRAIN_CUDA_GRAPHS", std::string("0"));
        direct.fit_with_backend(data, config, gpu());
    }
    CHECK(brain::test::relative_error(graphed.parameters(), direct.parameters()) < 1e-6);
}

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
    // where they fit); weight gradients by a warp per output or tiles over the whole batch (as it is, in row shares
    // where the batch has 256 rows or more and the shares are small enough); and the register count left to ptxas,
    // as toolkits before CUDA 12.4 build it.
    const std::vector<KernelVariant> variants = {
        {"bias gradients in the tiles", "BRAIN_CUDA_KERNEL_DEFINES", "BRAIN_FUSED_BIAS_IN_TILES=1"},
        {"no folded head", "BRAIN_CUDA_KERNEL_DEFINES", "BRAIN_FUSED_FOLDED_HEAD=0"},
        {"no head gradient shares", "BRAIN_CUDA_TEST_HEAD_SHARES", "0"},
        {"head weights from global memory", "BRAIN_CUDA_KERNEL_DEFINES", "BRAIN_FUSED_HEAD_STAGED=0"},
        {"no row shares", "BRAIN_CUDA_KERNEL_DEFINES", "BRAIN_FUSED_ROW_SHARES=0"},
        {"registers left to ptxas", "BRAIN_CUDA_KERNEL_DEFINES", "BRAIN_FUSED_MAX_REGISTERS=0"}};
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
    // session's arithmetic says which kernel ran): the first in clusters as large as the device runs, the second in
    // clusters of 4 blocks (longer slices, more parameters per block).
    const std::vector<KernelVariant> cluster = {{"cluster epoch kernel", "BRAIN_CUDA_FUSED", "cluster"}};
    for (const FusedCase& c : fused_cases()) DYNAMIC_SECTION(c.name) check_fused_case(c, cluster);
    brain::test::ScopedEnv four("BRAIN_CUDA_TEST_CLUSTER_BLOCKS", std::string("4"));
    for (const FusedCase& c : small_cases()) DYNAMIC_SECTION("small: " << c.name) check_fused_case(c, cluster);
}

TEST_CASE("CUDA budget is checked before allocating and names the largest batch", "[cuda]") {
    REQUIRE_GPU();
    // 64 -> 1024 -> 1024 -> 1: about 1.1 M parameters, 17 MiB for four copies of them.
    const auto net = brain::Network::builder()
                         .input_size(64)
                         .dense(1024, Activation::Relu)
                         .dense(1024, Activation::Relu)
                         .dense(1, Activation::Linear)
                         .optimizer(Optimizer::adam(0.001f))
                         .seed(3)
                         .build();
    const auto data = regression_data(4096, 64, 5);
    // Parameters alone exceed 8 MiB: not even one row fits.
    BRAIN_REQUIRE_ERROR(ErrorCode::BudgetExceeded,
                        brain::TrainingSession(net, data, brain::TrainConfig{1, 4096, true, 1}, gpu(8)),
                        "memory budget", "batch size");
    // 24 MiB holds the parameters but not 4096 rows: the message names a batch size that does fit.
    const std::string message = brain::test::expect_error(ErrorCode::BudgetExceeded, [&] {
        brain::TrainingSession(net, data, brain::TrainConfig{1, 4096, true, 1}, gpu(24));
    });
    const std::size_t largest = brain::test::largest_batch_named(message);
    CHECK(largest > 0);
    CHECK(largest < 4096);
    brain::TrainingSession session(net, data, brain::TrainConfig{1, static_cast<std::uint32_t>(largest), true, 1},
                                   gpu(24));
    CHECK(std::isfinite(session.train_epoch()));
    const auto stats = session.stats();
    CHECK(stats.peak_allocated_bytes + stats.dataset_bytes + stats.workspace_bytes <= 24ull << 20);
    BRAIN_REQUIRE_ERROR(
        ErrorCode::BudgetExceeded,
        brain::TrainingSession(net, data, brain::TrainConfig{1, static_cast<std::uint32_t>(largest + 1), true, 1},
                               gpu(24)),
        "memory budget");
}

TEST_CASE("CUDA peak tensor memory never exceeds the estimate", "[cuda]") {
    REQUIRE_GPU();
    struct Shape {
        std::size_t inputs, hidden, outputs, batch;
        Activation activation;
    };
    const Shape shapes[] = {{16, 256, 1, 256, Activation::Relu},
                            {1, 1, 1, 1, Activation::Linear},
                            {300, 64, 10, 1000, Activation::Tanh},
                            {33, 7, 3, 17, Activation::Sigmoid}};
    for (const Shape& shape : shapes) {
        INFO("inputs " << shape.inputs << " hidden " << shape.hidden << " batch " << shape.batch);
        const auto net = make_network(shape.inputs, shape.hidden * 2, shape.activation, shape.outputs,
                                      Activation::Linear, Loss::MeanSquaredError, Optimizer::adam(0.001f), 1);
        const auto data = make_data(shape.batch * 3 + 1, shape.inputs, shape.outputs, Loss::MeanSquaredError, 2);
        brain::TrainingSession session(
            net, data, brain::TrainConfig{1, static_cast<std::uint32_t>(shape.batch), true, 1}, gpu());
        session.train_epoch();
        const auto stats = session.stats();
        CHECK(stats.peak_allocated_bytes > 0);
        CHECK(stats.peak_allocated_bytes <= brain::estimate_tensor_memory_bytes(net, shape.batch));
        CHECK(stats.budget_bytes == 1024ull << 20);
    }
}

TEST_CASE("CUDA session moves one float per epoch and fills every stat", "[cuda]") {
    REQUIRE_GPU();
    const auto data = regression_data(2048, 16, 41);
    auto net = regression_network(16, 64, Activation::Relu, Optimizer::adam(0.001f), 2);
    brain::TrainingSession session(net, data, brain::TrainConfig{1, 256, true, 7}, gpu());
    const auto opened = session.stats();
    CHECK(opened.setup_time.count() > 0);
    CHECK(opened.host_to_device_bytes >= data.size() * 17 * sizeof(float));
    CHECK(opened.dataset_resident);
    float last = 0.0f;
    for (int epoch = 0; epoch < 5; ++epoch) {
        const auto before = session.stats();
        last = session.train_epoch();
        const auto after = session.stats();
        CHECK(after.device_to_host_bytes - before.device_to_host_bytes == sizeof(float));
        CHECK(after.host_to_device_bytes == before.host_to_device_bytes);
        CHECK(std::isfinite(last));
    }
    const auto before_checkpoint = session.stats();
    const auto checkpoint = session.checkpoint();
    const auto stats = session.stats();
    CHECK(stats.device_to_host_bytes - before_checkpoint.device_to_host_bytes >=
          (checkpoint.parameters.size() + checkpoint.optimizer_state.size()) * sizeof(float));
    CHECK(checkpoint.optimizer_step == 5 * 8);
    CHECK(stats.epochs == 5);
    CHECK(stats.batches == 5 * 8);
    CHECK(stats.training_time.count() > 0);
    CHECK(stats.checkpoint_time.count() > 0);
    CHECK(stats.precision == brain::Precision::Float32);
    CHECK(stats.workspace_bytes > 0);
    CHECK(stats.budget_bytes == 1024ull << 20);
    // The session's checkpoint equals a CPU session's after the same epochs.
    brain::TrainingSession cpu(net, data, brain::TrainConfig{1, 256, true, 7}, TrainingBackend::cpu());
    for (int epoch = 0; epoch < 5; ++epoch) cpu.train_epoch();
    CHECK(brain::test::relative_error(checkpoint.parameters, cpu.checkpoint().parameters) < 1e-4);
}

TEST_CASE("CUDA divergence is a NumericalError and the network keeps its weights", "[cuda]") {
    REQUIRE_GPU();
    const auto data = regression_data(512, 8, 3);
    auto net = regression_network(8, 32, Activation::Relu, Optimizer::sgd(1e30f), 4);
    const auto before = net.parameters();
    BRAIN_REQUIRE_ERROR(ErrorCode::NumericalError,
                        net.fit_with_backend(data, brain::TrainConfig{3, 64, true, 1}, gpu()), "epoch", "batch");
    CHECK(net.parameters() == before);
    CHECK(net.epochs_trained() == 0);
}

TEST_CASE("CUDA kernel compile errors carry the NVRTC log", "[cuda]") {
    REQUIRE_TEST_HOOKS();
    REQUIRE_GPU();
    brain::test::ScopedEnv broken("BRAIN_CUDA_TEST_KERNEL_SUFFIX", std::string("this_is_not_cuda x;"));
    const auto data = regression_data(64, 4, 3);
    const auto net = regression_network(4, 8, Activation::Relu, Optimizer::adam(0.01f), 4);
    BRAIN_REQUIRE_ERROR(ErrorCode::KernelCompileFailed,
                        brain::TrainingSession(net, data, brain::TrainConfig{1, 16, true, 1}, gpu()), "NVRTC log",
                        "this_is_not_cuda");
}

TEST_CASE("CUDA-trained network predicts and saves like a CPU-trained one", "[cuda]") {
    REQUIRE_GPU();
    const auto data = regression_data(1000, 5, 8);
    const auto base = regression_network(5, 32, Activation::Gelu, Optimizer::adam(0.01f), 6);
    const brain::TrainConfig config{5, 50, true, 2};
    auto cpu = base, cuda = base;
    const auto cpu_report = cpu.fit(data, config);
    const auto cuda_report = cuda.fit_with_backend(data, config, gpu());
    CHECK(cuda_report.epoch_losses.back() < cuda_report.epoch_losses.front());
    CHECK(cuda.epochs_trained() == cpu.epochs_trained());
    const auto cpu_out = cpu.predict(data.features());
    const auto cuda_out = cuda.predict(data.features());
    CHECK(brain::test::relative_error(cuda_out.data(), cpu_out.data()) < 1e-4);
    const auto reloaded = brain::Network::from_json_string(cuda.to_json_string());
    CHECK(brain::test::relative_error(reloaded.predict(data.features()).data(), cuda_out.data()) < 1e-6);
}

TEST_CASE("CUDA TF32 precision is reported and stays close to float32", "[cuda]") {
    REQUIRE_GPU();
    const auto data = regression_data(4096, 64, 12);
    const auto base = regression_network(64, 256, Activation::Relu, Optimizer::adam(0.001f), 1);
    const brain::TrainConfig config{3, 256, true, 5};
    auto fp32 = base, tf32 = base;
    const auto fp32_report = fp32.fit_with_backend(data, config, gpu());
    const auto tf32_report = tf32.fit_with_backend(data, config, gpu().with_precision(brain::Precision::Tf32));
    CHECK(fp32_report.stats.precision == brain::Precision::Float32);
    CHECK(tf32_report.stats.precision == brain::Precision::Tf32);
    CHECK(std::fabs(tf32_report.epoch_losses.back() - fp32_report.epoch_losses.back()) <
          0.01 * fp32_report.epoch_losses.back());
}

TEST_CASE("CUDA kernel cache on disk survives corrupt entries", "[cuda]") {
    REQUIRE_GPU();
    const std::filesystem::path brain_cli = std::filesystem::path(BRAIN_TEST_BIN_DIR) / "brain";
    if (!std::filesystem::exists(brain_cli))
        BRAIN_SKIP("bin/brain is not built: the cache is tested across processes");
    const std::filesystem::path dir =
        std::filesystem::temp_directory_path() / ("brain-cuda-cache-test-" + std::to_string(::getpid()));
    std::filesystem::remove_all(dir);
    // Each process compiles (or loads) the kernels once; the cache only matters across processes.
    const std::string command = "BRAIN_CUDA_CACHE_DIR='" + dir.string() + "' '" + brain_cli.string() +
                                "' doctor --backend cuda:0 --budget 64 > '" + dir.string() + ".log' 2>&1";
    auto doctor_ok = [&] {
        const int status = std::system(command.c_str());
        std::ifstream log(dir.string() + ".log");
        const std::string text((std::istreambuf_iterator<char>(log)), std::istreambuf_iterator<char>());
        INFO("brain doctor said: " << text);
        return status == 0 && text.find("kernels: true") != std::string::npos;
    };
    auto entries = [&] {
        std::vector<std::filesystem::path> files;
        if (std::filesystem::exists(dir))
            for (const auto& entry : std::filesystem::directory_iterator(dir)) files.push_back(entry.path());
        return files;
    };
    REQUIRE(doctor_ok());
    const auto written = entries();
    REQUIRE(written.size() == 1);
    const auto size = std::filesystem::file_size(written[0]);
    CHECK(size > 1000);
    REQUIRE(doctor_ok()); // a warm start from the entry
    {
        std::ofstream corrupt(written[0], std::ios::binary | std::ios::trunc);
        corrupt << "not a cubin";
    }
    REQUIRE(doctor_ok()); // the corrupt entry is ignored and rewritten
    CHECK(std::filesystem::file_size(written[0]) == size);
    CHECK(entries().size() == 1);
    std::filesystem::remove_all(dir);
    std::filesystem::remove(dir.string() + ".log");
}
