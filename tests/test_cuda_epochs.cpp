// Several epochs in one call on the CUDA plugin (session_train_epochs): on every epoch path the epochs are queued
// behind each other, and train exactly as one train_epoch call each; a run that diverges inside a queued group
// fails with the error one epoch at a time gives. Every case skips with a one-line reason where no GPU is present.
#include "support/catch.hpp"
#include "support/env.hpp"
#include "support/gpu.hpp"
#include "support/loss_data.hpp"

#include <brain/brain.hpp>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

using brain::Activation;
using brain::Loss;
using brain::Optimizer;
using brain::test::ScopedEnv;

namespace {

// An epoch path, chosen through the plugin's switches, the words its stats name it by, and rows enough for it.
struct EpochPath {
    const char* name;
    const char* arithmetic;
    std::string fused;                 // BRAIN_CUDA_FUSED
    std::optional<std::string> graphs; // BRAIN_CUDA_GRAPHS
    std::uint64_t budget_mib;
    std::size_t rows;
};

const std::vector<EpochPath>& epoch_paths() {
    static const std::vector<EpochPath> paths = {
        {"cluster epoch kernel", "cluster epoch kernel", "cluster", std::nullopt, 1024, 6000},
        {"fused epoch kernel", "fused epoch kernel", "1", std::nullopt, 1024, 6000},
        {"cuBLAS, one graph per epoch", "cuBLAS", "0", std::nullopt, 1024, 6000},
        {"cuBLAS, direct launches", "cuBLAS", "0", std::string("0"), 1024, 6000},
        // 1 MiB holds the tensors but not the 2.4 MB data set: batches are staged, one epoch a wait.
        {"cuBLAS, staged batches", "cuBLAS", "0", std::nullopt, 1, 40000},
    };
    return paths;
}

brain::Network small_network(const Optimizer& optimizer, Activation hidden) {
    return brain::Network::builder()
        .input_size(12)
        .dense(24, hidden)
        .dense(16, hidden)
        .dense(3, Activation::Linear)
        .loss(Loss::MeanSquaredError)
        .optimizer(optimizer)
        .seed(5)
        .build();
}

} // namespace

TEST_CASE("CUDA epochs in one call train as one call each on every epoch path", "[cuda]") {
    REQUIRE_GPU();
    // 20 epochs: more than the 16 the plugin queues between two waits.
    const brain::TrainConfig config{20, 256, true, 3};
    const auto network = small_network(Optimizer::adam(0.01f), Activation::Tanh);
    for (const EpochPath& path : epoch_paths()) {
        INFO("path: " << path.name);
        const auto data = brain::test::loss_data(path.rows, 12, 3, Loss::MeanSquaredError, 17);
        ScopedEnv fused("BRAIN_CUDA_FUSED", path.fused);
        ScopedEnv graphs("BRAIN_CUDA_GRAPHS", path.graphs);
        const auto backend = brain::TrainingBackend::cuda(0, path.budget_mib);
        brain::TrainingSession each(network, data, config, backend);
        std::vector<float> one_by_one;
        for (std::uint32_t e = 0; e < config.epochs; ++e) one_by_one.push_back(each.train_epoch());
        brain::TrainingSession together(network, data, config, backend);
        const std::vector<float> losses = together.train_epochs(config.epochs);
        const auto stats = together.stats();
        CHECK(stats.arithmetic.find(path.arithmetic) != std::string::npos);
        CHECK(stats.dataset_resident == (path.budget_mib > 1));
        CHECK(losses == one_by_one); // the same kernels on the same data: bit for bit
        CHECK(stats.epochs == config.epochs);
        CHECK(stats.device_to_host_bytes == each.stats().device_to_host_bytes); // one float per epoch
        CHECK(stats.device_to_host_bytes == config.epochs * sizeof(float));
        const auto a = each.checkpoint(), b = together.checkpoint();
        CHECK(b.parameters == a.parameters);
        CHECK(b.optimizer_state == a.optimizer_state);
        CHECK(b.optimizer_step == a.optimizer_step);
    }
}

TEST_CASE("CUDA divergence inside queued epochs names the epoch and batch that diverged first", "[cuda]") {
    REQUIRE_GPU();
    // A linear network under SGD at 1.7 diverges in its third epoch of three batches (on the CPU: epoch 2, batch 0
    // or 1), not in the first: the epochs queued after it run on its non-finite weights and must not change what
    // the error says.
    const brain::TrainConfig config{12, 200, true, 3};
    const auto network = small_network(Optimizer::sgd(1.7f), Activation::Linear);
    const auto data = brain::test::loss_data(600, 12, 3, Loss::MeanSquaredError, 19);
    for (const EpochPath& path : epoch_paths()) {
        if (path.budget_mib == 1) continue; // staged epochs go one a wait: nothing is queued after the failing one
        INFO("path: " << path.name);
        ScopedEnv fused("BRAIN_CUDA_FUSED", path.fused);
        ScopedEnv graphs("BRAIN_CUDA_GRAPHS", path.graphs);
        const auto backend = brain::TrainingBackend::cuda(0, path.budget_mib);
        std::string one_by_one;
        std::uint32_t failed_at = 0;
        {
            brain::TrainingSession each(network, data, config, backend);
            try {
                for (; failed_at < config.epochs; ++failed_at) (void)each.train_epoch();
            } catch (const brain::Error& e) {
                CHECK(e.code() == brain::ErrorCode::NumericalError);
                one_by_one = e.what();
            }
        }
        INFO("one epoch at a time: " << one_by_one);
        REQUIRE(!one_by_one.empty());
        CHECK(failed_at > 0); // so that a group holds good epochs before the bad one
        brain::TrainingSession together(network, data, config, backend);
        std::string in_one_call;
        try {
            (void)together.train_epochs(config.epochs);
        } catch (const brain::Error& e) {
            CHECK(e.code() == brain::ErrorCode::NumericalError);
            in_one_call = e.what();
        }
        CHECK(in_one_call == one_by_one);
    }
}
