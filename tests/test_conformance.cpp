// The cross-backend conformance suite: every plugin with a device runs the same contract checks, against the CPU
// plugin as the reference. Backends: $BRAIN_CONFORMANCE_BACKENDS (e.g. "cpu,cuda:0"), else the CPU plus every
// discovered plugin that reports a device.
#include "support/catch.hpp"
#include "support/error_match.hpp"
#include "support/numeric.hpp"

#include <brain/brain.hpp>
#include <brain/plugin_abi.h>

#include <cmath>
#include <cstdlib>
#include <sstream>

using brain::Activation;
using brain::ErrorCode;
using brain::TrainingBackend;

namespace {

constexpr std::uint64_t k_budget_mib = 1024;

std::vector<std::string> conformance_backends(std::vector<std::string>* skipped) {
    std::vector<std::string> out;
    if (const char* env = std::getenv("BRAIN_CONFORMANCE_BACKENDS"); env && *env) {
        std::stringstream list(env);
        for (std::string item; std::getline(list, item, ',');)
            if (!item.empty()) out.push_back(item);
        return out;
    }
    out.push_back("cpu");
    for (const auto& record : brain::discover_plugins()) {
        if (record.name == "cpu") continue;
        if (record.ok && record.device_count > 0) out.push_back(record.name + ":0");
        else if (skipped) skipped->push_back(record.name + ": " + (record.ok ? record.device_status : record.message));
    }
    return out;
}

TrainingBackend backend_for(const std::string& spec, std::uint64_t budget_mib = k_budget_mib) {
    return spec == "cpu" ? TrainingBackend::cpu() : TrainingBackend::parse(spec, budget_mib);
}

// A smooth regression target from seeded features.
brain::Dataset regression_data(std::size_t rows, std::size_t inputs, std::size_t outputs, std::uint64_t seed) {
    brain::Matrix x(rows, inputs), y(rows, outputs);
    std::uint64_t state = seed * 0x9e3779b97f4a7c15ull + 1;
    const auto next = [&state] {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        return static_cast<float>((state >> 11) * (1.0 / 9007199254740992.0)) * 2.0f - 1.0f;
    };
    for (std::size_t r = 0; r < rows; ++r) {
        float s = 0.0f;
        for (std::size_t c = 0; c < inputs; ++c) {
            x(r, c) = next();
            s += x(r, c) * static_cast<float>(c % 3 == 0 ? 1 : -0.5);
        }
        for (std::size_t o = 0; o < outputs; ++o) y(r, o) = std::tanh(s + 0.3f * static_cast<float>(o));
    }
    return brain::Dataset(std::move(x), std::move(y));
}

brain::Network conformance_network(brain::Optimizer optimizer = brain::Optimizer::adam(0.01f)) {
    return brain::Network::builder()
        .input_size(8)
        .dense(16, Activation::Tanh)
        .dense(12, Activation::Relu)
        .dense(3, Activation::Linear)
        .optimizer(optimizer)
        .seed(11)
        .build();
}

} // namespace

TEST_CASE("conformance: every backend honours the plugin contract", "[conformance][plugin]") {
    std::vector<std::string> skipped;
    const auto backends = conformance_backends(&skipped);
    for (const auto& reason : skipped) WARN("conformance skips " << reason);
    const auto data = regression_data(150, 8, 3, 5);
    const brain::TrainConfig config{3, 32, true, 99};

    // The reference run on the CPU plugin.
    auto reference = conformance_network();
    const auto reference_report = reference.fit(data, config);

    for (const auto& spec : backends) {
        const auto backend = backend_for(spec);
        DYNAMIC_SECTION("backend " << spec) {
            INFO("backend " << spec);
            const auto record = brain::load_plugin(backend.plugin_name());
            CHECK(record.ok);
            CHECK(record.abi_major == BRAIN_ABI_VERSION_MAJOR);
            CHECK_FALSE(record.version.empty());

            if (!backend.is_cpu()) {
                const auto report = brain::accelerator_doctor(backend);
                REQUIRE(report.has_value());
                CHECK_FALSE(report->name.empty());
                CHECK(report->total_memory_mib > 0);
                CHECK(report->gemm_available);
                CHECK(report->kernel_available);
                CHECK(report->allocation_test);
            }

            // Parity against the CPU reference: same seed, data and batch order.
            auto net = conformance_network();
            const auto report = net.fit_with_backend(data, config, backend);
            CHECK(brain::test::relative_error(net.parameters(), reference.parameters()) < 1e-4);
            REQUIRE(report.epoch_losses.size() == reference_report.epoch_losses.size());
            for (std::size_t e = 0; e < report.epoch_losses.size(); ++e)
                CHECK(brain::test::close(report.epoch_losses[e], reference_report.epoch_losses[e], 1e-4, 1e-6));

            // Stats filled with measured values; the peak within the estimate.
            const auto& s = report.stats;
            CHECK(s.epochs == config.epochs);
            CHECK(s.batches == config.epochs * ((data.size() + config.batch_size - 1) / config.batch_size));
            CHECK(s.setup_time.count() > 0);
            CHECK(s.training_time.count() > 0);
            CHECK(s.peak_allocated_bytes > 0);
            CHECK(s.peak_allocated_bytes <= brain::estimate_tensor_memory_bytes(net, config.batch_size));

            // Checkpoint and restore: two epochs in one session equal one, a checkpoint, a new session, one more.
            auto a = conformance_network();
            brain::TrainingSession whole(a, data, config, backend);
            whole.train_epoch();
            whole.train_epoch();
            const auto straight = whole.checkpoint();
            auto b = conformance_network();
            {
                brain::TrainingSession first(b, data, config, backend);
                first.train_epoch();
                b.restore_checkpoint(first.checkpoint());
            }
            CHECK(b.epochs_trained() == 1);
            brain::TrainingSession second(b, data, config, backend);
            second.train_epoch();
            const auto resumed = second.checkpoint();
            CHECK(brain::test::relative_error(resumed.parameters, straight.parameters) < 1e-6);
            CHECK(brain::test::relative_error(resumed.optimizer_state, straight.optimizer_state) < 1e-6);
            CHECK(resumed.optimizer_step == straight.optimizer_step);

            // A closed session fails cleanly, and closing twice is harmless.
            second.close();
            second.close();
            CHECK_FALSE(second.is_open());
            BRAIN_REQUIRE_ERROR(ErrorCode::InvalidState, second.train_epoch(), "not usable");
            BRAIN_REQUIRE_ERROR(ErrorCode::InvalidState, second.checkpoint(), "not usable");

            // The budget is refused before anything is allocated, naming the largest batch that fits.
            auto big = brain::Network::builder().input_size(512).dense(512, Activation::Relu).dense(3, Activation::Linear).build();
            const auto big_data = regression_data(64, 512, 3, 1);
            const auto tight = TrainingBackend::plugin(backend.plugin_name(), backend.device(), 1);
            BRAIN_REQUIRE_ERROR(ErrorCode::BudgetExceeded,
                                brain::TrainingSession(big, big_data, brain::TrainConfig{1, 64, true, 1}, tight),
                                "budget", "batch");

            // A device that does not exist.
            BRAIN_REQUIRE_ERROR(ErrorCode::DeviceNotFound,
                                brain::TrainingSession(net, data, config,
                                                       TrainingBackend::plugin(backend.plugin_name(), 99, 64)),
                                "99");
        }
    }
}
