// The CUDA backend against the chapter's contract. On a machine without a driver (CI) only the DriverUnavailable
// assertion runs; every GPU test skips with a one-line reason there and runs on a machine with a GPU.
#include "cuda/hooks.hpp"
#include "support/catch.hpp"
#include "support/env.hpp"
#include "support/error_match.hpp"
#include "support/gpu.hpp"
#include "support/loss_data.hpp"
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

using brain::Activation;
using brain::ErrorCode;
using brain::Loss;
using brain::Optimizer;
using brain::TrainingBackend;

namespace {

using brain::test::loss_data;

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
    return loss_data(rows, inputs, 1, Loss::MeanSquaredError, seed);
}
brain::Network regression_network(std::size_t inputs, std::size_t hidden, Activation activation,
                                  const Optimizer& optimizer, std::uint64_t seed) {
    return make_network(inputs, hidden, activation, 1, Activation::Linear, Loss::MeanSquaredError, optimizer, seed);
}

TrainingBackend gpu(std::uint64_t budget_mib = 1024) {
    return TrainingBackend::cuda(0, budget_mib);
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
                const auto data = loss_data(300, 6, head.width, head.loss, 17);
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
    const auto data = loss_data(20000, 32, 2, Loss::MeanSquaredError, 23);
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
    const auto data = loss_data(1000, 8, 3, Loss::CategoricalCrossEntropy, 31);
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
        const auto data = loss_data(shape.batch * 3 + 1, shape.inputs, shape.outputs, Loss::MeanSquaredError, 2);
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
