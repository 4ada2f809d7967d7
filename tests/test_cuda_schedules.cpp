// The training library on the GPU, on every epoch path (the cuBLAS graph and the fused epoch kernel):
// per-step rates train bit-identically to set_learning_rate where both apply and as the CPU does where they vary,
// a resumed run ends bit for bit where the uninterrupted one does, and early stopping restores exactly the best
// weights with one copy per new best. Each case skips with a one-line reason where no GPU is usable.
#include "support/catch.hpp"
#include "support/env.hpp"
#include "support/gpu.hpp"
#include "support/networks.hpp"
#include "support/numeric.hpp"
#include "support/schedules.hpp"
#include "support/tempdir.hpp"

#include <brain/brain.hpp>
#include <cmath>
#include <limits>
#include <optional>
#include <vector>

using brain::Activation;
using brain::LearningRateSchedule;
using brain::Optimizer;
using brain::TrainingBackend;
using brain::test::ScopedEnv;

namespace {

// The epoch paths, as BRAIN_CUDA_FUSED selects them.
struct Path {
    const char* name;
    const char* fused;
};
const Path k_paths[] = {{"cuBLAS graph", "0"}, {"fused epoch kernel", "1"}};

brain::Dataset data_of(std::size_t rows, std::uint64_t seed) {
    brain::Random rng(seed);
    brain::Matrix x(rows, 6), y(rows, 2);
    for (std::size_t r = 0; r < rows; ++r) {
        float s = 0.0f;
        for (std::size_t c = 0; c < 6; ++c) {
            x(r, c) = static_cast<float>(rng.uniform(-1.0, 1.0));
            s += x(r, c) * (c % 2 ? 1.0f : -0.5f);
        }
        y(r, 0) = std::sin(2.0f * s);
        y(r, 1) = s * x(r, 0) + 0.1f * static_cast<float>(rng.uniform(-1.0, 1.0));
    }
    return brain::Dataset(std::move(x), std::move(y));
}

brain::Network net_of(const Optimizer& optimizer) {
    return brain::test::dense_network({{32, Activation::Relu}, {16, Activation::Tanh}, {2, Activation::Linear}}, 6,
                                      8, optimizer);
}

TrainingBackend gpu() {
    return TrainingBackend::cuda(0, 512);
}

} // namespace

TEST_CASE("CUDA per-step rates constant within each epoch are bit-identical to set_learning_rate, every epoch path",
          "[cuda]") {
    REQUIRE_GPU();
    const auto data = data_of(300, 1); // 10 batches of 32, the last of 12
    const std::vector<float> per_epoch = {0.01f, 0.004f, 0.0025f, 0.02f};
    const std::vector<float> varying = {0.05f, 0.04f, 0.03f, 0.02f, 0.015f, 0.01f, 0.008f, 0.006f, 0.004f, 0.003f};
    for (const Path& path : k_paths) {
        ScopedEnv fused("BRAIN_CUDA_FUSED", std::string(path.fused));
        for (const auto& optimizer :
             {Optimizer::sgd(0.05f, 0.9f), Optimizer::adam(0.01f), Optimizer::adamw(0.01f, 0.05f)}) {
            INFO(path.name << ", " << brain::to_string(optimizer.kind));
            const brain::TrainConfig config{6, 32, true, 5};
            brain::TrainingSession by_epoch(net_of(optimizer), data, config, gpu());
            brain::TrainingSession by_step(net_of(optimizer), data, config, gpu());
            REQUIRE(by_step.supports_step_learning_rates());
            brain::test::check_epoch_rates(by_epoch, by_step, per_epoch, 10);
            // Varying rates, then the last one held for another epoch, against set_learning_rate of that last rate.
            brain::test::vary_then_hold(by_epoch, by_step, varying);
            brain::test::check_same_state(by_epoch, by_step);
        }
    }
}

TEST_CASE(
    "CUDA follows per-step schedules as the CPU does, on every epoch path, past the kernels' coefficient table",
    "[cuda]") {
    REQUIRE_GPU();
    // Batches of 2: 300 steps an epoch, more than the 256 steps the fused kernels' coefficient table holds at once.
    const auto data = data_of(600, 2);
    const brain::TrainConfig config{3, 2, true, 9};
    for (const auto& schedule : {LearningRateSchedule::cosine(0.5f, 1e-4f), LearningRateSchedule::one_cycle()}) {
        for (const auto& optimizer : {Optimizer::sgd(0.02f, 0.9f), Optimizer::adamw(0.003f, 0.01f)}) {
            brain::FitOptions options;
            options.schedule = schedule;
            auto cpu = net_of(optimizer);
            const auto cpu_report = cpu.fit(data, config, options);
            for (const Path& path : k_paths) {
                INFO(schedule.to_string() << ", " << brain::to_string(optimizer.kind) << ", " << path.name);
                ScopedEnv fused("BRAIN_CUDA_FUSED", std::string(path.fused));
                auto device = net_of(optimizer);
                const auto report = device.fit_with_backend(data, config, gpu(), options);
                CHECK(report.learning_rates == cpu_report.learning_rates); // one formula, on the host
                CHECK(brain::test::relative_error(device.parameters(), cpu.parameters()) < 1e-4);
                CHECK(brain::test::relative_error(device.optimizer_state(), cpu.optimizer_state()) < 1e-4);
                CHECK(brain::test::relative_error(report.epoch_losses, cpu_report.epoch_losses) < 1e-4);
            }
        }
    }
}

TEST_CASE("CUDA: 10 epochs equal 5, a checkpoint file, a new session and 5 more, bit for bit, every epoch path",
          "[cuda]") {
    REQUIRE_GPU();
    const auto data = data_of(400, 3);
    const auto validation = data_of(100, 4);
    brain::test::TempDir dir;
    for (const Path& path : k_paths) {
        ScopedEnv fused("BRAIN_CUDA_FUSED", std::string(path.fused));
        for (const auto& optimizer : {Optimizer::sgd(0.05f, 0.9f), Optimizer::adam(0.01f)}) {
            INFO(path.name << ", " << brain::to_string(optimizer.kind));
            auto options_with = [&](std::shared_ptr<brain::EarlyStopping>& early) {
                brain::FitOptions options;
                options.validation = &validation;
                options.schedule = LearningRateSchedule::cosine(1.0f, 1e-4f, 10);
                brain::EarlyStoppingOptions es;
                es.patience = 100;
                es.min_delta = 0.01;
                early = std::make_shared<brain::EarlyStopping>(es);
                options.callbacks = {early};
                return options;
            };
            std::shared_ptr<brain::EarlyStopping> e1, e2, e3;
            auto whole = net_of(optimizer);
            const auto whole_report =
                whole.fit_with_backend(data, brain::TrainConfig{10, 32, true, 7}, gpu(), options_with(e1));

            auto first = net_of(optimizer);
            auto first_options = options_with(e2);
            first_options.on_epoch_end = [&](brain::FitContext& context) {
                if (context.epoch() == 5) context.save_checkpoint(dir / "half.json");
            };
            first.fit_with_backend(data, brain::TrainConfig{5, 32, true, 7}, gpu(), first_options);
            // Read back as a new process would, into a new session.
            const auto checkpoint = brain::TrainingCheckpoint::load(dir / "half.json");
            auto resumed = checkpoint.network;
            auto second_options = options_with(e3);
            second_options.schedule.reset(); // the checkpoint's, with its state
            second_options.resume = &checkpoint;
            const auto report =
                resumed.fit_with_backend(data, brain::TrainConfig{5, 32, true, 7}, gpu(), second_options);
            CHECK(resumed.parameters() == whole.parameters());
            CHECK(resumed.optimizer_state() == whole.optimizer_state());
            CHECK(resumed.optimizer_step() == whole.optimizer_step());
            CHECK(report.epoch_losses ==
                  std::vector<float>(whole_report.epoch_losses.begin() + 5, whole_report.epoch_losses.end()));
            CHECK(e3->best_epoch() == e1->best_epoch());
        }
    }
    // A checkpoint written on the CPU continues on the GPU, within the backends' tolerance of each other.
    brain::test::TempDir cpu_dir;
    auto cpu_half = net_of(Optimizer::adam(0.01f));
    brain::FitOptions save;
    save.on_epoch_end = [&](brain::FitContext& context) {
        if (context.epoch() == 5) context.save_checkpoint(cpu_dir / "cpu.json");
    };
    cpu_half.fit(data, brain::TrainConfig{5, 32, true, 7}, save);
    const auto from_cpu = brain::TrainingCheckpoint::load(cpu_dir / "cpu.json");
    brain::FitOptions resume;
    resume.resume = &from_cpu;
    auto on_gpu = from_cpu.network, on_cpu = from_cpu.network;
    on_gpu.fit_with_backend(data, brain::TrainConfig{5, 32, true, 7}, gpu(), resume);
    on_cpu.fit(data, brain::TrainConfig{5, 32, true, 7}, resume);
    CHECK(brain::test::relative_error(on_gpu.parameters(), on_cpu.parameters()) < 1e-4);
    CHECK(on_gpu.optimizer_step() == on_cpu.optimizer_step());
}

TEST_CASE("CUDA early stopping restores exactly the best weights, copying them once per new best", "[cuda]") {
    REQUIRE_GPU();
    const auto data = data_of(320, 5);
    const auto optimizer = Optimizer::sgd(0.3f, 0.9f);
    for (const Path& path : k_paths) {
        INFO(path.name);
        ScopedEnv fused("BRAIN_CUDA_FUSED", std::string(path.fused));
        // Every epoch's loss and weights, copied each epoch.
        std::vector<double> losses;
        std::vector<std::vector<float>> weights;
        auto recorded = net_of(optimizer);
        brain::FitOptions record;
        record.on_epoch_end = [&](brain::FitContext& context) {
            losses.push_back(context.loss());
            weights.push_back(context.network().parameters());
        };
        recorded.fit_with_backend(data, brain::TrainConfig{40, 32, true, 3}, gpu(), record);
        // Keras's rule with patience 2 and min_delta 0.005, written out.
        std::size_t stop = 0, best = 0, improvements = 0, wait = 0;
        double best_value = std::numeric_limits<double>::infinity();
        for (std::size_t i = 0; i < losses.size() && !stop; ++i) {
            ++wait;
            if (losses[i] < best_value - 0.005) {
                best_value = losses[i];
                best = i + 1;
                ++improvements;
                wait = 0;
            } else if (wait >= 2) {
                stop = i + 1;
            }
        }
        REQUIRE(stop > 0);
        brain::EarlyStoppingOptions es;
        es.monitor = "loss";
        es.patience = 2;
        es.min_delta = 0.005;
        auto early = std::make_shared<brain::EarlyStopping>(es);
        brain::FitOptions options;
        options.callbacks = {early};
        auto net = net_of(optimizer);
        const auto report = net.fit_with_backend(data, brain::TrainConfig{40, 32, true, 3}, gpu(), options);
        CHECK(report.epoch_losses.size() == stop);
        CHECK(report.restored_epoch == best);
        CHECK(net.parameters() == weights[best - 1]);
        CHECK(report.weight_copies == improvements);
        // What crossed back: one float per epoch and one checkpoint (parameters, optimizer state, step) per new
        // best.
        const std::uint64_t checkpoint_bytes = 4ull * (net.parameter_count() + net.optimizer_state().size()) + 8;
        CHECK(report.stats.device_to_host_bytes == 4ull * stop + improvements * checkpoint_bytes);
    }
}

TEST_CASE(
    "CUDA per-step rates on the bf16 mixed-precision and the staged paths: as set_learning_rate, and as the CPU",
    "[cuda]") {
    REQUIRE_GPU();
    const auto data = data_of(60000, 6); // 1.9 MB of float32 rows and a 240 KB permutation: 2 MiB stages them
    const brain::TrainConfig config{3, 500, true, 4};
    const std::vector<float> per_epoch = {0.01f, 0.004f, 0.002f};
    struct Case {
        const char* name;
        TrainingBackend backend;
    };
    const Case cases[] = {
        {"bf16 mixed precision", TrainingBackend::cuda(0, 512).with_precision(brain::Precision::Bf16)},
        {"staged batches", TrainingBackend::cuda(0, 2)}};
    for (const Case& c : cases) {
        INFO(c.name);
        for (const auto& optimizer : {Optimizer::sgd(0.05f, 0.9f), Optimizer::adam(0.01f)}) {
            INFO(brain::to_string(optimizer.kind));
            brain::TrainingSession by_epoch(net_of(optimizer), data, config, c.backend);
            brain::TrainingSession by_step(net_of(optimizer), data, config, c.backend);
            REQUIRE(by_step.supports_step_learning_rates());
            for (float rate : per_epoch) {
                by_epoch.set_learning_rate(rate);
                const float a = by_epoch.train_epoch();
                by_step.set_step_learning_rates(std::vector<float>(by_step.batches_per_epoch(), rate));
                CHECK(a == by_step.train_epoch());
            }
            CHECK(by_epoch.checkpoint().parameters == by_step.checkpoint().parameters);
        }
        // A per-step schedule: the epochs' rates are the host's; the float32 staged path trains as the CPU does
        // (bf16 follows float32 only within the rounding of its operands, which test_cuda_bf16 bounds).
        brain::FitOptions options;
        options.schedule = LearningRateSchedule::cosine(0.5f, 1e-4f);
        auto cpu = net_of(Optimizer::adam(0.01f));
        const auto cpu_report = cpu.fit(data, config, options);
        auto device = net_of(Optimizer::adam(0.01f));
        const auto report = device.fit_with_backend(data, config, c.backend, options);
        CHECK(report.learning_rates == cpu_report.learning_rates);
        const bool bf16 = c.backend.precision() == brain::Precision::Bf16;
        CHECK(report.stats.dataset_resident == bf16); // the 2 MiB case is staged
        if (!bf16) CHECK(brain::test::relative_error(device.parameters(), cpu.parameters()) < 1e-4);
    }
}
