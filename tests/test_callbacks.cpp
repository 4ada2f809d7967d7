// fit's callbacks: early stopping stops at the right epoch and restores exactly the best weights with one copy per
// new best; ModelCheckpoint writes at its cadence or on improvement; a plain hook sees every epoch and can stop.
#include "support/catch.hpp"
#include "support/error_match.hpp"
#include "support/tempdir.hpp"

#include <brain/brain.hpp>
#include <cmath>
#include <limits>
#include <vector>

using brain::Activation;
using brain::ErrorCode;

namespace {

brain::Dataset noisy(std::size_t rows, std::uint64_t seed) {
    brain::Random rng(seed);
    brain::Matrix x(rows, 4), y(rows, 1);
    for (std::size_t r = 0; r < rows; ++r) {
        for (std::size_t c = 0; c < 4; ++c) x(r, c) = static_cast<float>(rng.uniform(-1.0, 1.0));
        y(r, 0) = std::sin(3.0f * x(r, 0)) + x(r, 1) * x(r, 2) + 0.3f * static_cast<float>(rng.uniform(-1.0, 1.0));
    }
    return brain::Dataset(std::move(x), std::move(y));
}

brain::Network model() {
    // A high SGD rate: the loss falls, then wanders, so there are improvements and epochs without.
    return brain::Network::builder()
        .input_size(4)
        .dense(24, Activation::Tanh)
        .dense(1, Activation::Linear)
        .optimizer(brain::Optimizer::sgd(0.3f, 0.9f))
        .seed(11)
        .build();
}

// Every epoch's monitored value and weights, from a run that copies the weights after each epoch.
struct Recorded {
    std::vector<double> values;
    std::vector<std::vector<float>> parameters;
};

Recorded record(const brain::Dataset& data, const brain::Dataset* validation, const std::string& monitor,
                std::uint32_t epochs) {
    Recorded r;
    auto net = model();
    brain::FitOptions options;
    options.validation = validation;
    options.on_epoch_end = [&](brain::FitContext& context) {
        r.values.push_back(*context.monitored(monitor));
        r.parameters.push_back(context.network().parameters());
    };
    net.fit(data, brain::TrainConfig{epochs, 32, true, 3}, options);
    return r;
}

// Keras's rule, written out: where a run with this patience and min_delta stops, its best epoch and how many new
// bests it saw (1-based epochs).
struct Expected {
    std::size_t stop = 0; // 0: does not stop
    std::size_t best = 0;
    std::size_t improvements = 0;
};
Expected expect(const std::vector<double>& values, std::size_t patience, double min_delta) {
    Expected e;
    double best = std::numeric_limits<double>::infinity();
    std::size_t wait = 0;
    for (std::size_t i = 0; i < values.size(); ++i) {
        ++wait;
        if (values[i] < best - min_delta) {
            best = values[i];
            e.best = i + 1;
            ++e.improvements;
            wait = 0;
            continue;
        }
        if (wait >= patience) {
            e.stop = i + 1;
            return e;
        }
    }
    return e;
}

} // namespace

TEST_CASE("early stopping stops at the right epoch and restores exactly the best weights (CPU)", "[plugin]") {
    const auto data = noisy(320, 1);
    const auto validation = noisy(120, 2);
    struct Case {
        const char* monitor;
        bool with_validation;
        std::uint32_t patience;
        double min_delta;
    };
    for (const Case& c : {Case{"loss", false, 2, 0.01}, Case{"val_loss", true, 3, 0.0},
                          Case{"loss", false, 0, 0.05}, Case{"val_rmse", true, 2, 0.001}}) {
        INFO("monitor " << c.monitor << ", patience " << c.patience << ", min_delta " << c.min_delta);
        const brain::Dataset* v = c.with_validation ? &validation : nullptr;
        const Recorded run = record(data, v, c.monitor, 40);
        const Expected want = expect(run.values, c.patience, c.min_delta);
        REQUIRE(want.stop > 0); // the case is one where it stops
        REQUIRE(want.best < want.stop);

        auto net = model();
        brain::EarlyStoppingOptions es;
        es.monitor = c.monitor;
        es.patience = c.patience;
        es.min_delta = c.min_delta;
        auto early = std::make_shared<brain::EarlyStopping>(es);
        brain::FitOptions options;
        options.validation = v;
        options.callbacks = {early};
        const auto report = net.fit(data, brain::TrainConfig{40, 32, true, 3}, options);
        CHECK(report.epoch_losses.size() == want.stop);
        CHECK(early->stopped_epoch() == want.stop);
        CHECK(early->best_epoch() == want.best);
        CHECK(early->best_value() == run.values[want.best - 1]);
        CHECK(report.restored_epoch == want.best);
        CHECK(net.parameters() == run.parameters[want.best - 1]);
        CHECK(net.epochs_trained() == want.stop); // the batch order goes on from where training stopped
        CHECK(report.stop_reason.find("early stopping: " + std::string(c.monitor) + " did not improve") == 0);
        // The weights come back once per new best, and once per epoch only where validation needs them.
        CHECK(report.weight_copies == (c.with_validation ? want.stop : want.improvements));
    }
}

TEST_CASE("early stopping without restore keeps the last weights; start_from_epoch skips the first epochs",
          "[plugin]") {
    const auto data = noisy(320, 1);
    const Recorded run = record(data, nullptr, "loss", 30);
    brain::EarlyStoppingOptions es;
    es.patience = 1;
    es.restore_best_weights = false;
    es.start_from_epoch = 3;
    auto early = std::make_shared<brain::EarlyStopping>(es);
    auto net = model();
    brain::FitOptions options;
    options.callbacks = {early};
    const auto report = net.fit(data, brain::TrainConfig{30, 32, true, 3}, options);
    std::vector<double> watched(run.values.begin() + 3, run.values.end());
    const Expected want = expect(watched, 1, 0.0);
    REQUIRE(want.stop > 0);
    CHECK(report.epoch_losses.size() == want.stop + 3);
    CHECK_FALSE(report.restored_epoch.has_value());
    CHECK(net.parameters() == run.parameters[want.stop + 3 - 1]);
    CHECK(report.weight_copies == 1); // only the end of the run
}

TEST_CASE("ModelCheckpoint writes every N epochs or on improvement, atomically and loadable", "[plugin]") {
    brain::test::TempDir dir;
    const auto data = noisy(200, 3);
    const auto validation = noisy(80, 4);
    auto every = std::make_shared<brain::ModelCheckpoint>(
        brain::ModelCheckpointOptions{dir / "run-{epoch}.json", 3, false, "", brain::MonitorMode::Auto, true, {}});
    auto best = std::make_shared<brain::ModelCheckpoint>(
        brain::ModelCheckpointOptions{dir / "best.json", 1, true, "val_loss", brain::MonitorMode::Auto, false, {}});
    std::vector<float> val_losses;
    auto net = model();
    brain::FitOptions options;
    options.validation = &validation;
    options.callbacks = {every, best};
    const auto report = net.fit(data, brain::TrainConfig{7, 32, true, 3}, options);
    CHECK(every->written() == std::vector<std::filesystem::path>{dir / "run-3.json", dir / "run-6.json"});
    const auto resumable = brain::TrainingCheckpoint::load(dir / "run-6.json");
    CHECK(resumable.epochs_trained() == 6);
    CHECK(resumable.losses == std::vector<float>(report.epoch_losses.begin(), report.epoch_losses.begin() + 6));
    // The best model file holds the weights of the epoch with the lowest validation loss.
    const auto lowest = std::min_element(report.validation_losses.begin(), report.validation_losses.end());
    const auto saved = brain::Network::load_json(dir / "best.json");
    CHECK(saved.epochs_trained() == static_cast<std::uint64_t>(lowest - report.validation_losses.begin()) + 1);
    CHECK(saved.evaluate(validation).loss == *lowest);
    // A path that cannot be written fails before the first epoch.
    auto bad = std::make_shared<brain::ModelCheckpoint>(brain::ModelCheckpointOptions{
        dir / "missing" / "x-{epoch}.json", 1, false, "", brain::MonitorMode::Auto, true, {}});
    options.callbacks = {bad};
    auto untouched = model();
    BRAIN_REQUIRE_ERROR(ErrorCode::IoError, untouched.fit(data, brain::TrainConfig{2, 32, true, 3}, options),
                        "missing");
    CHECK(untouched.epochs_trained() == 0);
}

TEST_CASE("every checkpoint path of the run is checked before the first epoch, not when its epoch comes",
          "[plugin]") {
    brain::test::TempDir dir;
    const auto data = noisy(64, 3);
    const auto options_for = [&](std::uint32_t every, bool best) {
        return brain::ModelCheckpointOptions{
            dir / "e-{epoch}.json", every, best, "", brain::MonitorMode::Auto, true, {dir / "e-4.json"}};
    };
    const brain::ModelCheckpoint cadence(options_for(3, false));
    CHECK(cadence.paths_between(1, 10) ==
          std::vector<std::filesystem::path>{dir / "e-3.json", dir / "e-6.json", dir / "e-9.json"});
    CHECK(cadence.paths_between(4, 5).empty());
    CHECK(brain::ModelCheckpoint(options_for(3, true)).paths_between(4, 6).size() == 3);
    CHECK(cadence.paths_between(1, 1'000'000'000, 5).size() == 5);
    brain::ModelCheckpointOptions fixed = options_for(1, false);
    fixed.path = dir / "last.json";
    CHECK(brain::ModelCheckpoint(fixed).paths_between(1, 100) ==
          std::vector<std::filesystem::path>{dir / "last.json"});

    // Epoch 4's path is an input (as the model a run continues from): refused before epoch 1, nothing written.
    std::filesystem::create_directory(dir / "e-3.json");
    brain::write_file_safely(dir / "e-4.json", "the run's input");
    for (const auto& [every, fragment] : {std::pair{1u, "e-3.json': it is a directory"}, {2u, "e-4.json"}}) {
        brain::FitOptions options;
        options.callbacks = {std::make_shared<brain::ModelCheckpoint>(options_for(every, false))};
        auto net = model();
        BRAIN_REQUIRE_ERROR(ErrorCode::IoError, net.fit(data, brain::TrainConfig{5, 32, true, 3}, options),
                            fragment);
        CHECK(net.epochs_trained() == 0);
        CHECK_FALSE(std::filesystem::exists(dir / "e-1.json"));
        CHECK_FALSE(std::filesystem::exists(dir / "e-2.json"));
    }
}

TEST_CASE("a hook sees each epoch's figures and can stop training; a bad monitor is named", "[plugin]") {
    const auto data = noisy(100, 5);
    auto net = model();
    std::vector<std::uint64_t> epochs;
    std::vector<float> rates;
    brain::FitOptions options;
    options.schedule = brain::LearningRateSchedule::step(1, 0.5f);
    options.on_epoch_end = [&](brain::FitContext& context) {
        epochs.push_back(context.epoch());
        rates.push_back(context.learning_rate());
        CHECK(context.loss() == *context.monitored("loss"));
        CHECK_FALSE(context.monitored("val_loss").has_value());
        if (context.epoch() == 3) context.stop_training("enough");
    };
    const auto report = net.fit(data, brain::TrainConfig{10, 20, true, 1}, options);
    CHECK(epochs == std::vector<std::uint64_t>{1, 2, 3});
    CHECK(rates == std::vector<float>{0.3f, 0.15f, 0.075f});
    CHECK(report.stop_reason == "enough");
    // A second fit continues the epoch count.
    epochs.clear();
    options.on_epoch_end = [&](brain::FitContext& context) { epochs.push_back(context.epoch()); };
    options.schedule.reset();
    net.fit(data, brain::TrainConfig{2, 20, true, 1}, options);
    CHECK(epochs == std::vector<std::uint64_t>{4, 5});

    brain::EarlyStoppingOptions es;
    es.monitor = "val_accuracy";
    options.callbacks = {std::make_shared<brain::EarlyStopping>(es)};
    BRAIN_REQUIRE_ERROR(ErrorCode::InvalidArgument, net.fit(data, brain::TrainConfig{2, 20, true, 1}, options),
                        "early stopping monitors 'val_accuracy'", "it reports loss");
    es.monitor = "accuracy";
    options.callbacks = {std::make_shared<brain::EarlyStopping>(es)};
    options.validation = &data;
    BRAIN_REQUIRE_ERROR(ErrorCode::InvalidArgument, net.fit(data, brain::TrainConfig{2, 20, true, 1}, options),
                        "'accuracy'", "loss, val_loss, val_rmse, val_mae, val_r2", "monitor val_<name>");
}
