// Training on several devices and processes: the backend request (cuda:0,1, cuda:all, ranks and the rendezvous),
// the CLI's flags and environment variables, the refusals that need no GPU, and on GPUs the data-parallel session
// against the single-device path.
#include "cuda/hooks.hpp"
#include "support/catch.hpp"
#include "support/env.hpp"
#include "support/error_match.hpp"
#include "support/gpu.hpp"
#include "support/process.hpp"

#include <brain/brain.hpp>
#include <cmath>
#include <cstring>
#include <dlfcn.h>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

using brain::ErrorCode;
using brain::TrainingBackend;
namespace fs = std::filesystem;

namespace {

brain::Dataset make_data(std::size_t rows, std::size_t inputs, std::size_t outputs, std::uint64_t seed) {
    brain::Random rng(seed);
    brain::Matrix x(rows, inputs), y(rows, outputs);
    for (std::size_t r = 0; r < rows; ++r) {
        float s = 0.0f;
        for (std::size_t c = 0; c < inputs; ++c) {
            x(r, c) = static_cast<float>(rng.uniform(-1.0, 1.0));
            s += x(r, c) * (c % 2 ? 1.0f : -0.5f);
        }
        for (std::size_t k = 0; k < outputs; ++k) y(r, k) = std::sin(s + static_cast<float>(k));
    }
    return brain::Dataset(std::move(x), std::move(y));
}

// Wide enough for the cuBLAS path (the fused epoch kernel takes layers of at most 1024).
brain::Network make_network(std::size_t inputs, std::size_t outputs, const brain::Optimizer& optimizer) {
    return brain::Network::builder()
        .input_size(inputs)
        .dense(1536, brain::Activation::Relu)
        .dense(256, brain::Activation::Tanh)
        .dense(outputs, brain::Activation::Linear)
        .loss(brain::Loss::MeanSquaredError)
        .optimizer(optimizer)
        .seed(7)
        .build();
}

// ||a - b|| / ||b||: the measure of the stated tolerance (docs/multi-gpu.md).
double relative_l2(const std::vector<float>& a, const std::vector<float>& b) {
    double diff = 0, norm = 0;
    for (std::size_t i = 0; i < a.size(); ++i) {
        diff += (static_cast<double>(a[i]) - b[i]) * (static_cast<double>(a[i]) - b[i]);
        norm += static_cast<double>(b[i]) * b[i];
    }
    return std::sqrt(diff / norm);
}

struct Run {
    std::vector<float> losses;
    brain::Checkpoint checkpoint;
    brain::AcceleratorStats stats;
    std::vector<brain::AcceleratorStats> devices;
};

Run train(const brain::Network& network, const brain::Dataset& data, const brain::TrainConfig& config,
          const TrainingBackend& backend) {
    Run run;
    brain::TrainingSession session(network, data, config, backend);
    for (std::uint32_t e = 0; e < config.epochs; ++e) run.losses.push_back(session.train_epoch());
    run.checkpoint = session.checkpoint();
    run.stats = session.stats();
    run.devices = session.device_stats();
    return run;
}

// Why NCCL cannot be used here, or empty.
std::string nccl_missing_reason() {
    void* handle = dlopen("libnccl.so.2", RTLD_LAZY | RTLD_LOCAL);
    if (handle) {
        dlclose(handle);
        return {};
    }
    return "libnccl.so.2 cannot be opened here";
}

std::string brain_binary() {
    return brain::test::shell_quote(std::string(BRAIN_TEST_BIN_DIR) + "/brain");
}

} // namespace

TEST_CASE("a backend over several devices parses, validates and describes itself", "[core]") {
    const auto pair = TrainingBackend::parse("cuda:0,1", 4096);
    CHECK(pair.devices() == std::vector<int>{0, 1});
    CHECK(pair.device() == 0);
    CHECK(pair.describe() == "cuda:0,1 (budget 4096 MiB per device)");
    CHECK(TrainingBackend::cuda({3, 1, 2}, 64).devices() == std::vector<int>{3, 1, 2});
    const auto all = TrainingBackend::parse("cuda:all", 64);
    CHECK(all.all_devices());
    CHECK(all.devices().empty());
    CHECK(all.describe() == "cuda:all (budget 64 MiB per device)");
    CHECK(TrainingBackend::cuda_all(64).all_devices());
    CHECK(TrainingBackend::parse("cuda:2", 64).devices() == std::vector<int>{2});
    CHECK(TrainingBackend::parse("cuda:2", 64).describe() == "cuda:2 (budget 64 MiB)");
    BRAIN_REQUIRE_ERROR(ErrorCode::InvalidArgument, TrainingBackend::parse("cuda:0,0", 64), "appears twice");
    BRAIN_REQUIRE_ERROR(ErrorCode::InvalidArgument, TrainingBackend::parse("cuda:0,", 64), "is not a number");
    BRAIN_REQUIRE_ERROR(ErrorCode::InvalidArgument, TrainingBackend::parse("cuda:0,x", 64), "'x'");
    BRAIN_REQUIRE_ERROR(ErrorCode::InvalidArgument, TrainingBackend::parse("cuda:0,-1", 64), "0 or more");
    BRAIN_REQUIRE_ERROR(ErrorCode::InvalidArgument, TrainingBackend::parse("cpu:0,1", 0), "one device, 0");
    BRAIN_REQUIRE_ERROR(ErrorCode::InvalidArgument, TrainingBackend::cuda(std::vector<int>{}, 64), "empty");
    BRAIN_REQUIRE_ERROR(ErrorCode::InvalidArgument, TrainingBackend::cuda({0, 1}, 0), "0 MiB");

    const auto rank1 = TrainingBackend::cuda(0, 64).with_processes(1, 2, "file:/tmp/meet");
    CHECK(rank1.rank() == 1);
    CHECK(rank1.world_size() == 2);
    CHECK(rank1.rendezvous() == "file:/tmp/meet");
    CHECK(rank1.describe() == "cuda:0 (budget 64 MiB), rank 1 of 2");
    BRAIN_REQUIRE_ERROR(ErrorCode::InvalidArgument, TrainingBackend::cuda(0, 64).with_processes(2, 2, "file:/x"),
                        "0 <= rank < 2");
    BRAIN_REQUIRE_ERROR(ErrorCode::InvalidArgument, TrainingBackend::cuda(0, 64).with_processes(0, 2, "/x"),
                        "file:<path>", "tcp:<host>:<port>");
    CHECK(TrainingBackend::cuda(0, 64).with_processes(0, 1, "").world_size() == 1);
}

TEST_CASE("a plugin without data parallelism is refused several devices or processes before it opens", "[plugin]") {
    const auto data = make_data(64, 4, 1, 1);
    const auto network = make_network(4, 1, brain::Optimizer::sgd(0.01f));
    BRAIN_REQUIRE_ERROR(ErrorCode::Unsupported,
                        brain::TrainingSession(network, data, brain::TrainConfig{},
                                               TrainingBackend::cpu().with_processes(0, 2, "file:/tmp/x")),
                        "trains on one device in one process", "2 processes");
}

TEST_CASE("the CUDA plugin declares data parallelism; without NCCL it says which library to install", "[plugin]") {
    if (!fs::exists(fs::path(BRAIN_TEST_PLUGIN_DIR) / "libbrain_cuda.so"))
        BRAIN_SKIP("the CUDA plugin is not built here (no CUDA toolkit, or a sanitizer build without it)");
    const auto caps = brain::plugin_capabilities("cuda");
    CHECK((caps.features & BRAIN_FEATURE_MULTI_DEVICE) != 0);
    CHECK(caps.max_devices >= 2);
    REQUIRE_TEST_HOOKS();
    brain::test::ScopedEnv absent("BRAIN_CUDA_TEST_NCCL_LIBRARY", std::string("libnccl-absent-for-a-test.so.2"));
    brain::test::ScopedEnv always("BRAIN_CUDA_DATA_PARALLEL", std::string("always"));
    const auto data = make_data(64, 4, 1, 1);
    const auto network = make_network(4, 1, brain::Optimizer::sgd(0.01f));
    BRAIN_REQUIRE_ERROR(
        ErrorCode::FeatureDisabled,
        brain::TrainingSession(network, data, brain::TrainConfig{}, TrainingBackend::cuda({0, 1}, 64)),
        "libnccl.so.2", "training on 2 device(s) (0,1)", "install NCCL");
}

TEST_CASE("brain train reads ranks from flags or RANK/WORLD_SIZE and checks them before loading anything",
          "[cli]") {
    const std::string csv = std::string(BRAIN_TEST_DATA_DIR) + "/regression.csv";
    const std::string base =
        brain_binary() + " train --csv " + brain::test::shell_quote(csv) +
        " --target y --layers 4 --epochs 1 --out " +
        brain::test::shell_quote((fs::temp_directory_path() / "brain_multi_device_never.json").string()) +
        " --backend ";
    auto run = [](const std::string& command) { return brain::test::run_process(command, ""); };
    auto r = run(base + "cuda:0,1 --world-size 2 --rank 2 --rendezvous file:/tmp/x");
    CHECK(r.status != 0);
    CHECK(r.output.find("the rank is 2 (--rank)") != std::string::npos);
    r = run(base + "cuda:0 --world-size 2 --rank 1");
    CHECK(r.status != 0);
    CHECK(r.output.find("needs --rendezvous") != std::string::npos);
    r = run("RANK=3 WORLD_SIZE=2 " + base + "cuda:0 --rendezvous tcp:localhost:29500");
    CHECK(r.status != 0);
    CHECK(r.output.find("the rank is 3 (RANK)") != std::string::npos);
    r = run("WORLD_SIZE=two " + base + "cuda:0");
    CHECK(r.status != 0);
    CHECK(r.output.find("WORLD_SIZE is \"two\"") != std::string::npos);
    r = run(base + "cuda:0,0");
    CHECK(r.status != 0);
    CHECK(r.output.find("appears twice") != std::string::npos);
    // LOCAL_RANK picks the device of a spec without one, and a rank's run names itself.
    r = run("LOCAL_RANK=1 " + base + "cuda --rank 1 --world-size 2 --rendezvous file:/tmp/brain-never-met");
    CHECK(r.output.find("on cuda:1 (budget 8192 MiB), rank 1 of 2") != std::string::npos);
    r = run("LOCAL_RANK=1 " + base + "cuda:0");
    CHECK(r.output.find("on cuda:0 (budget 8192 MiB)") != std::string::npos);
    r = run(base + "cuda:0 --rendezvous udp:host:1 --world-size 2");
    CHECK(r.status != 0);
    CHECK(r.output.find("tcp:<host>:<port>") != std::string::npos);
}

TEST_CASE("a one-rank NCCL communicator trains bit-identically to the single-device path", "[cuda]") {
    REQUIRE_GPU();
    if (const auto reason = nccl_missing_reason(); !reason.empty()) BRAIN_SKIP(reason);
    const auto data = make_data(1000, 24, 3, 5);
    const auto network = make_network(24, 3, brain::Optimizer::adam(0.001f));
    brain::TrainConfig config;
    config.epochs = 3;
    config.batch_size = 96; // 10 full batches and a short one of 40 rows
    Run plain, nccl;
    {
        brain::test::ScopedEnv never("BRAIN_CUDA_DATA_PARALLEL", std::string("never"));
        plain = train(network, data, config, TrainingBackend::cuda(0, 2048));
    }
    {
        brain::test::ScopedEnv always("BRAIN_CUDA_DATA_PARALLEL", std::string("always"));
        nccl = train(network, data, config, TrainingBackend::cuda(0, 2048));
    }
    CHECK(plain.losses == nccl.losses);
    REQUIRE(plain.checkpoint.parameters.size() == nccl.checkpoint.parameters.size());
    CHECK(std::memcmp(plain.checkpoint.parameters.data(), nccl.checkpoint.parameters.data(),
                      4 * plain.checkpoint.parameters.size()) == 0);
    CHECK(std::memcmp(plain.checkpoint.optimizer_state.data(), nccl.checkpoint.optimizer_state.data(),
                      4 * plain.checkpoint.optimizer_state.size()) == 0);
    CHECK(plain.checkpoint.optimizer_step == nccl.checkpoint.optimizer_step);
    CHECK(nccl.stats.devices == 1);
    CHECK(nccl.stats.allreduce_bytes == 4ull * network.parameter_count() * 11 * 3);
    CHECK(nccl.stats.arithmetic.find("data parallel") != std::string::npos);
    CHECK(plain.stats.allreduce_bytes == 0);
}

TEST_CASE("a device failing mid-epoch stops the data-parallel session with a precise error, weights kept",
          "[cuda]") {
    REQUIRE_GPU();
    if (const auto reason = nccl_missing_reason(); !reason.empty()) BRAIN_SKIP(reason);
    REQUIRE_TEST_HOOKS();
    brain::test::ScopedEnv always("BRAIN_CUDA_DATA_PARALLEL", std::string("always"));
    const auto data = make_data(600, 16, 2, 3);
    auto network = make_network(16, 2, brain::Optimizer::sgd(0.01f, 0.9f));
    brain::TrainConfig config;
    config.batch_size = 64;
    brain::TrainingSession session(network, data, config, TrainingBackend::cuda(0, 2048));
    session.train_epoch();
    network.restore_checkpoint(session.checkpoint());
    const std::vector<float> good = network.parameters();
    {
        brain::test::ScopedEnv fault("BRAIN_CUDA_TEST_FAULT", std::string("gemm:7"));
        BRAIN_REQUIRE_ERROR(ErrorCode::GemmFailed, session.train_epoch(), "device 0", "rank 0 of 1",
                            "last checkpoint");
    }
    CHECK_FALSE(session.is_open());
    CHECK(network.parameters() == good);
}

TEST_CASE("two devices train as one within the stated tolerance, in the seeded batch order", "[cuda]") {
    REQUIRE_GPU();
    if (const auto reason = nccl_missing_reason(); !reason.empty()) BRAIN_SKIP(reason);
    try {
        (void)brain::accelerator_doctor(TrainingBackend::cuda(1, 1));
    } catch (const brain::Error& e) {
        BRAIN_SKIP(std::string("needs 2 GPUs; device 1 is not usable here: ") + e.what());
    }
    const auto data = make_data(1001, 24, 3, 9);
    const auto network = make_network(24, 3, brain::Optimizer::sgd(0.02f, 0.9f));
    brain::TrainConfig config;
    config.epochs = 3;
    config.batch_size = 97; // uneven shares (49 + 48) and a short last batch of 31 rows (16 + 15)
    const Run one = train(network, data, config, TrainingBackend::cuda(0, 2048));
    const Run two = train(network, data, config, TrainingBackend::cuda({0, 1}, 2048));
    CHECK(relative_l2(two.checkpoint.parameters, one.checkpoint.parameters) <= 1e-3);
    for (std::size_t e = 0; e < one.losses.size(); ++e)
        CHECK(std::fabs(two.losses[e] - one.losses[e]) <= 1e-3 * std::fabs(one.losses[e]));
    CHECK(two.stats.devices == 2);
    REQUIRE(two.devices.size() == 2);
    CHECK(two.devices[0].allreduce_bytes == two.devices[1].allreduce_bytes);
    CHECK(two.devices[0].allreduce_bytes == 4ull * network.parameter_count() * 11 * 3);
}
