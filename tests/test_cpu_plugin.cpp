// The CPU backend end to end through the public API (convergence, determinism, budget, stats, device errors),
// and the Metal stub's MetalFeatureDisabled contract.
#include "support/catch.hpp"
#include "support/error_match.hpp"
#include "support/numeric.hpp"

#include <brain/brain.hpp>
#include <cmath>
#include <string>
#include <vector>

using brain::Activation;
using brain::ErrorCode;
using brain::Optimizer;
using brain::TrainingBackend;

namespace {

brain::Dataset xor_data() {
    return brain::Dataset(brain::Matrix{{0, 0}, {0, 1}, {1, 0}, {1, 1}}, brain::Matrix{{0}, {1}, {1}, {0}});
}

// 2 inputs -> `hidden` tanh units -> one `output` unit, trained with Adam.
brain::Network two_input_network(std::size_t hidden, Activation output, float learning_rate, std::uint64_t seed) {
    return brain::Network::builder()
        .input_size(2)
        .dense(hidden, Activation::Tanh)
        .dense(1, output)
        .optimizer(Optimizer::adam(learning_rate))
        .seed(seed)
        .build();
}

brain::Network xor_network(std::uint64_t seed) {
    return two_input_network(8, Activation::Sigmoid, 0.05f, seed);
}

// y = 0.7 x0 - 0.4 x1 + 0.2 x0 x1 + 0.1 on a grid in [-1, 1]^2.
brain::Dataset regression_data() {
    brain::Matrix x(64, 2), y(64, 1);
    for (std::size_t r = 0; r < 64; ++r) {
        const float a = -1.0f + 2.0f * static_cast<float>(r % 8) / 7.0f;
        const float b = -1.0f + 2.0f * static_cast<float>(r / 8) / 7.0f;
        x(r, 0) = a;
        x(r, 1) = b;
        y(r, 0) = 0.7f * a - 0.4f * b + 0.2f * a * b + 0.1f;
    }
    return brain::Dataset(std::move(x), std::move(y));
}

brain::Network regression_network(std::uint64_t seed) {
    return two_input_network(16, Activation::Linear, 0.01f, seed);
}

// The number that follows `marker` in `text`, or -1.
long long number_after(const std::string& text, const std::string& marker) {
    const auto at = text.find(marker);
    if (at == std::string::npos) return -1;
    std::size_t pos = at + marker.size();
    long long value = -1;
    while (pos < text.size() && text[pos] >= '0' && text[pos] <= '9')
        value = (value < 0 ? 0 : value * 10) + (text[pos++] - '0');
    return value;
}

} // namespace

TEST_CASE("CPU backend learns XOR to accuracy 1", "[plugin]") {
    auto net = xor_network(5);
    const auto data = xor_data();
    const auto report = net.fit(data, brain::TrainConfig{400, 4, true, 9});
    REQUIRE(report.epoch_losses.size() == 400);
    CHECK(report.epoch_losses.back() < 0.1f * report.epoch_losses.front());
    const auto evaluation = net.evaluate(data);
    REQUIRE(evaluation.accuracy.has_value());
    CHECK(*evaluation.accuracy == 1.0f);
    CHECK(net.predict_classes(data.features()) == std::vector<std::size_t>{0, 1, 1, 0});
    CHECK(report.stats.epochs == 400);
    CHECK(report.stats.batches == 400);
    CHECK(report.stats.dataset_resident);
    CHECK(report.stats.host_to_device_bytes == 0);
    CHECK(report.stats.dataset_bytes == 4 * (2 + 1) * sizeof(float));
}

TEST_CASE("CPU backend fits a smooth regression", "[plugin]") {
    auto net = regression_network(3);
    const auto data = regression_data();
    const float initial = net.evaluate(data).loss;
    const auto report = net.fit(data, brain::TrainConfig{300, 16, true, 4});
    const float final_loss = net.evaluate(data).loss;
    INFO("initial " << initial << ", final " << final_loss);
    CHECK(final_loss < 2e-3f);
    CHECK(final_loss < 0.02f * initial);
    // Four batches of 16 per epoch.
    CHECK(report.stats.batches == 300 * 4);
    const auto prediction = net.predict(brain::Matrix{{0.5f, -0.5f}});
    CHECK(std::fabs(prediction(0, 0) - (0.35f + 0.2f - 0.05f + 0.1f)) < 0.05f);
}

TEST_CASE("CPU training is bitwise deterministic for a seed and depends on the batch seed", "[plugin]") {
    const auto data = regression_data();
    auto a = regression_network(3), b = regression_network(3), c = regression_network(3);
    const auto report_a = a.fit(data, brain::TrainConfig{20, 8, true, 42});
    const auto report_b = b.fit(data, brain::TrainConfig{20, 8, true, 42});
    c.fit(data, brain::TrainConfig{20, 8, true, 43});
    CHECK(a.parameters() == b.parameters()); // exact, element by element
    CHECK(a.optimizer_state() == b.optimizer_state());
    CHECK(report_a.epoch_losses == report_b.epoch_losses);
    CHECK(a.parameters() != c.parameters());
    CHECK(brain::test::relative_error(c.parameters(), a.parameters()) > 1e-6);
}

TEST_CASE("CPU sessions continue the shuffle stream: two fits of 3 epochs equal one fit of 6", "[plugin]") {
    const auto data = regression_data();
    auto once = regression_network(8), twice = regression_network(8);
    once.fit(data, brain::TrainConfig{6, 8, true, 5});
    twice.fit(data, brain::TrainConfig{3, 8, true, 5});
    twice.fit(data, brain::TrainConfig{3, 8, true, 5});
    CHECK(twice.epochs_trained() == 6);
    CHECK(once.parameters() == twice.parameters());
}

TEST_CASE("CPU session stays within the core's tensor estimate and reports real timings", "[plugin]") {
    const auto data = regression_data();
    for (std::uint32_t batch : {1u, 7u, 16u, 64u}) {
        auto net = brain::Network::builder()
                       .input_size(2)
                       .dense(32, Activation::Relu)
                       .dense(8, Activation::Linear)
                       .dense(1, Activation::Sigmoid)
                       .loss(brain::Loss::MeanSquaredError)
                       .seed(1)
                       .build();
        brain::TrainingSession session(net, data, brain::TrainConfig{1, batch, true, 1}, TrainingBackend::cpu());
        session.train_epoch();
        session.checkpoint();
        const auto stats = session.stats();
        INFO("batch " << batch << ": peak " << stats.peak_allocated_bytes);
        CHECK(stats.peak_allocated_bytes > 0);
        CHECK(stats.peak_allocated_bytes <= brain::estimate_tensor_memory_bytes(net, batch));
        CHECK(stats.training_time.count() > 0);
        CHECK(stats.setup_time.count() > 0);
        CHECK(stats.checkpoint_time.count() > 0);
        CHECK(stats.epochs == 1);
        CHECK(stats.batches == (64 + batch - 1) / batch);
        CHECK(stats.budget_bytes == 0);
    }
}

TEST_CASE("CPU plugin refuses a budget it cannot meet and names the largest batch that fits", "[plugin]") {
    brain::Matrix x(4096, 16, 0.5f), y(4096, 1, 0.25f);
    const brain::Dataset data(std::move(x), std::move(y));
    auto net = brain::Network::builder()
                   .input_size(16)
                   .dense(64, Activation::Relu)
                   .dense(1, Activation::Linear)
                   .seed(2)
                   .build();
    constexpr std::uint64_t budget = 1024 * 1024;
    REQUIRE(brain::estimate_tensor_memory_bytes(net, 4096) > budget);
    const auto backend = TrainingBackend::plugin("cpu", 0, 1);

    const std::string message = brain::test::expect_error(ErrorCode::BudgetExceeded, [&] {
        brain::TrainingSession session(net, data, brain::TrainConfig{1, 4096, true, 1}, backend);
    });
    const long long largest = number_after(message, "largest batch size that fits is ");
    INFO(message);
    REQUIRE(largest > 0);
    CHECK(largest < 4096);
    CHECK(message.find(std::to_string(budget)) != std::string::npos);
    // The estimate is an upper bound, so anything it allows must fit; and the named batch really opens.
    CHECK(static_cast<std::size_t>(largest) >= brain::largest_batch_within(net, budget));
    brain::TrainingSession fits(net, data, brain::TrainConfig{1, static_cast<std::uint32_t>(largest), true, 1},
                                backend);
    fits.train_epoch();
    CHECK(fits.stats().peak_allocated_bytes <= budget);
    CHECK(fits.stats().budget_bytes == budget);
    const std::string again = brain::test::expect_error(ErrorCode::BudgetExceeded, [&] {
        brain::TrainingSession session(
            net, data, brain::TrainConfig{1, static_cast<std::uint32_t>(largest + 1), true, 1}, backend);
    });
    CHECK(number_after(again, "largest batch size that fits is ") == largest);
}

TEST_CASE("CPU plugin has exactly one device", "[plugin]") {
    const auto data = xor_data();
    const auto net = xor_network(1);
    BRAIN_REQUIRE_ERROR(
        ErrorCode::DeviceNotFound,
        brain::TrainingSession(net, data, brain::TrainConfig{1, 4, true, 1}, TrainingBackend::plugin("cpu", 1, 0)),
        "one device", "got 1");
    CHECK_FALSE(brain::accelerator_doctor(TrainingBackend::cpu()).has_value());
}

TEST_CASE("CPU plugin reports divergence as NumericalError and the session stays closed", "[plugin]") {
    brain::Matrix x(32, 1), y(32, 1);
    for (std::size_t r = 0; r < 32; ++r) {
        x(r, 0) = static_cast<float>(r);
        y(r, 0) = 1e3f * static_cast<float>(r);
    }
    const brain::Dataset data(std::move(x), std::move(y));
    auto net = brain::Network::builder()
                   .input_size(1)
                   .dense(1, Activation::Linear)
                   .optimizer(Optimizer::sgd(10.0f))
                   .seed(1)
                   .build();
    const auto before = net.parameters();
    brain::TrainingSession session(net, data, brain::TrainConfig{1, 32, false, 1}, TrainingBackend::cpu());
    bool diverged = false;
    for (int epoch = 0; epoch < 50 && !diverged; ++epoch) {
        try {
            session.train_epoch();
        } catch (const brain::Error& e) {
            CHECK(e.code() == ErrorCode::NumericalError);
            CHECK(std::string(e.what()).find("epoch") != std::string::npos);
            diverged = true;
        }
    }
    REQUIRE(diverged);
    BRAIN_REQUIRE_ERROR(ErrorCode::InvalidState, session.train_epoch());
    // fit leaves the network untouched when training fails.
    BRAIN_REQUIRE_ERROR(ErrorCode::NumericalError, net.fit(data, brain::TrainConfig{50, 32, false, 1}));
    CHECK(net.parameters() == before);
}

TEST_CASE("Metal backend reports MetalFeatureDisabled off Apple systems", "[plugin]") {
#if defined(__APPLE__)
    BRAIN_SKIP("the Metal stub's contract is tested off Apple systems");
#else
    const auto backend = TrainingBackend::metal(0, 8192);
    auto net = xor_network(1);
    const auto data = xor_data();
    const auto check_message = [](const std::string& message) {
        CHECK(message.rfind("MetalFeatureDisabled", 0) == 0);
        CHECK(message.find("Apple") != std::string::npos);
        CHECK(message.find("TrainingBackend::cpu()") != std::string::npos);
    };
    check_message(brain::test::expect_error(ErrorCode::FeatureDisabled, [&] {
        brain::TrainingSession session(net, data, brain::TrainConfig{1, 4, true, 1}, backend);
    }));
    check_message(brain::test::expect_error(ErrorCode::MetalFeatureDisabled, [&] {
        net.fit_with_backend(data, brain::TrainConfig{1, 4, true, 1}, backend);
    }));
    check_message(
        brain::test::expect_error(ErrorCode::FeatureDisabled, [&] { brain::accelerator_doctor(backend); }));
#endif
}
