// CUDA faults on a real GPU: an allocation the card cannot satisfy, and the injected faults of test builds
// (BRAIN_CUDA_TEST_FAULT: a failed allocation in the middle of session set-up, a failed GEMM, a failed CUDA call).
// Each returns its own error; the Network and the last checkpoint stay intact and usable.
#include "cuda/hooks.hpp"
#include "support/catch.hpp"
#include "support/env.hpp"
#include "support/error_match.hpp"
#include "support/gpu.hpp"
#include "support/numeric.hpp"

#include <brain/brain.hpp>
#include <optional>
#include <string>

using brain::Activation;
using brain::ErrorCode;
using brain::TrainingBackend;
using brain::test::ScopedEnv;

namespace {

brain::Dataset ramp(std::size_t rows, std::size_t inputs) {
    brain::Matrix x(rows, inputs), y(rows, 1);
    for (std::size_t r = 0; r < rows; ++r) {
        for (std::size_t c = 0; c < inputs; ++c) x(r, c) = static_cast<float>((r * 7 + c * 3) % 11) / 11.0f;
        y(r, 0) = static_cast<float>(r % 5) / 5.0f;
    }
    return brain::Dataset(std::move(x), std::move(y));
}

brain::Network net(std::size_t inputs, std::size_t hidden) {
    return brain::Network::builder()
        .input_size(inputs)
        .dense(hidden, Activation::Relu)
        .dense(1, Activation::Linear)
        .seed(9)
        .build();
}

} // namespace

TEST_CASE("CUDA allocation the card cannot hold is AllocationFailed, within the budget", "[cuda]") {
    REQUIRE_GPU();
    // One huge batch: the tensors fit the (absurdly large) budget but not the card.
    const auto data = ramp(1'000'000, 1);
    auto model = net(1, 40000);
    const auto before = model.parameters();
    BRAIN_REQUIRE_ERROR(
        ErrorCode::AllocationFailed,
        model.fit_with_backend(data, brain::TrainConfig{1, 1'000'000, false, 1}, TrainingBackend::cuda(0, 600'000)),
        "cudaMalloc of", "cudaErrorMemoryAllocation", "lower the batch size");
    CHECK(model.parameters() == before);
}

TEST_CASE("CUDA injected faults each return their own error and leave the network usable", "[cuda]") {
    REQUIRE_TEST_HOOKS();
    REQUIRE_GPU();
    const auto data = ramp(512, 8);
    const brain::TrainConfig config{2, 64, true, 3};
    auto model = net(8, 32);
    brain::TrainingSession good(model, data, config, TrainingBackend::cuda(0, 256));
    good.train_epoch();
    const auto checkpoint = good.checkpoint();
    model.restore_checkpoint(checkpoint);
    const auto before = model.parameters();

    // Each fault: its BRAIN_CUDA_TEST_FAULT value, the error it must give, and two parts of that error's message.
    struct Injected {
        const char* section;
        const char* fault;
        ErrorCode code;
        const char* first;
        const char* second;
    };
    const Injected faults[] = {
        {"an allocation in the middle of session set-up", "alloc:3", ErrorCode::AllocationFailed, "cudaMalloc of",
         "cudaErrorMemoryAllocation"},
        {"a matrix product", "gemm:2", ErrorCode::GemmFailed, "cublasGemmEx", "CUBLAS_STATUS_EXECUTION_FAILED"},
        {"a CUDA call", "device:5", ErrorCode::DeviceFailure, "cudaErrorLaunchFailure", " failed: "}};
    for (const Injected& injected : faults) DYNAMIC_SECTION(injected.section) {
            // GEMMs are the cuBLAS path's; this network would otherwise train in the fused epoch kernel.
            std::optional<ScopedEnv> cublas_path;
            if (injected.code == ErrorCode::GemmFailed) cublas_path.emplace("BRAIN_CUDA_FUSED", std::string("0"));
            ScopedEnv fault("BRAIN_CUDA_TEST_FAULT", std::string(injected.fault));
            BRAIN_REQUIRE_ERROR(injected.code, model.fit_with_backend(data, config, TrainingBackend::cuda(0, 256)),
                                injected.first, injected.second);
        }
    // Nothing changed, the checkpoint still restores, and training works again once the fault is gone.
    CHECK(model.parameters() == before);
    auto again = net(8, 32);
    again.restore_checkpoint(checkpoint);
    CHECK(again.parameters() == before);
    const auto report = again.fit_with_backend(data, config, TrainingBackend::cuda(0, 256));
    CHECK(report.epoch_losses.size() == 2);
}
