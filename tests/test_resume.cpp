// Resumable checkpoints: a run saved mid-way and continued from the file ends bit for bit where the uninterrupted
// run ends (weights, optimizer state, schedule, early stopping); the file round-trips exactly; a resume that would
// not continue the same run is refused before it trains.
#include "support/catch.hpp"
#include "support/error_match.hpp"
#include "support/networks.hpp"
#include "support/tempdir.hpp"

#include <bit>
#include <brain/brain.hpp>
#include <cmath>
#include <vector>

using brain::Activation;
using brain::ErrorCode;
using brain::LearningRateSchedule;

namespace {

brain::Dataset noisy(std::size_t rows, std::uint64_t seed, std::size_t outputs = 1) {
    brain::Random rng(seed);
    brain::Matrix x(rows, 5), y(rows, outputs);
    for (std::size_t r = 0; r < rows; ++r) {
        for (std::size_t c = 0; c < 5; ++c) x(r, c) = static_cast<float>(rng.uniform(-2.0, 3.0));
        for (std::size_t k = 0; k < outputs; ++k)
            y(r, k) = std::sin(x(r, 0) + static_cast<float>(k)) + x(r, 1) * x(r, 2) +
                      0.3f * static_cast<float>(rng.uniform(-1.0, 1.0));
    }
    brain::Dataset data(std::move(x), std::move(y));
    data.standardize();
    return data;
}

brain::Network model(const brain::Optimizer& optimizer) {
    return brain::test::dense_network({{20, Activation::Relu}, {12, Activation::Tanh}, {1, Activation::Linear}}, 5,
                                      21, optimizer);
}

struct Outcome {
    brain::Network network;
    brain::FitReport report;
};

// The options of every run below: a schedule, early stopping on `monitor` and checkpoints every 5 epochs.
brain::FitOptions options_for(const brain::Dataset& validation, const LearningRateSchedule& schedule,
                              const std::string& monitor, std::uint32_t patience, const std::filesystem::path& dir,
                              std::shared_ptr<brain::EarlyStopping>& early) {
    brain::FitOptions options;
    options.validation = &validation;
    options.schedule = schedule;
    brain::EarlyStoppingOptions es;
    es.monitor = monitor;
    es.patience = patience;
    es.min_delta = 0.02;
    early = std::make_shared<brain::EarlyStopping>(es);
    auto writer = std::make_shared<brain::ModelCheckpoint>(brain::ModelCheckpointOptions{
        dir / "epoch-{epoch}.json", 5, false, "", brain::MonitorMode::Auto, true, {}});
    options.callbacks = {early, writer};
    return options;
}

} // namespace

TEST_CASE("10 epochs equal 5, a checkpoint file, a fresh network and 5 more, bit for bit (CPU)", "[plugin]") {
    const auto data = noisy(300, 1);
    const auto validation = noisy(100, 2);
    struct Case {
        const char* name;
        brain::Optimizer optimizer;
        LearningRateSchedule schedule;
        const char* monitor;
    };
    for (const Case& c : {Case{"adam, cosine with warm-up", brain::Optimizer::adam(0.01f),
                               LearningRateSchedule::cosine(1.0f, 1e-4f, 10), "val_loss"},
                          Case{"sgd with momentum, plateau on the loss", brain::Optimizer::sgd(0.2f, 0.9f),
                               LearningRateSchedule::parse("plateau:factor=0.5,patience=1,monitor=loss"), "loss"},
                          Case{"adamw, one-cycle", brain::Optimizer::adamw(0.02f, 0.05f),
                               LearningRateSchedule::one_cycle(0.3f, 25.0f, 1e4f, 10), "val_rmse"}}) {
        INFO(c.name);
        brain::test::TempDir whole_dir, first_dir, second_dir;
        std::shared_ptr<brain::EarlyStopping> early_whole, early_first, early_second;
        auto whole = model(c.optimizer);
        const auto whole_report =
            whole.fit(data, brain::TrainConfig{10, 25, true, 7},
                      options_for(validation, c.schedule, c.monitor, 100, whole_dir.path(), early_whole));

        auto first = model(c.optimizer);
        first.fit(data, brain::TrainConfig{5, 25, true, 7},
                  options_for(validation, c.schedule, c.monitor, 100, first_dir.path(), early_first));
        // The checkpoint the first half wrote, read back as another process would.
        const auto checkpoint = brain::TrainingCheckpoint::load(first_dir / "epoch-5.json");
        CHECK(checkpoint.epochs_trained() == 5);
        CHECK(checkpoint.schedule->state().epochs_done == 5);
        auto resumed = checkpoint.network;
        auto options = options_for(validation, c.schedule, c.monitor, 100, second_dir.path(), early_second);
        options.schedule.reset(); // the checkpoint's, with its state
        options.resume = &checkpoint;
        auto config = checkpoint.config;
        config.epochs = 5;
        const auto report = resumed.fit(data, config, options);

        CHECK(resumed.parameters() == whole.parameters());
        CHECK(resumed.optimizer_state() == whole.optimizer_state());
        CHECK(resumed.optimizer_step() == whole.optimizer_step());
        CHECK(resumed.epochs_trained() == 10);
        CHECK(report.epoch_losses ==
              std::vector<float>(whole_report.epoch_losses.begin() + 5, whole_report.epoch_losses.end()));
        CHECK(report.learning_rates ==
              std::vector<float>(whole_report.learning_rates.begin() + 5, whole_report.learning_rates.end()));
        CHECK(report.restored_epoch == whole_report.restored_epoch);
        CHECK(early_second->best_epoch() == early_whole->best_epoch());
        // The second half's checkpoint equals the uninterrupted run's, history included.
        const auto a = brain::TrainingCheckpoint::load(whole_dir / "epoch-10.json");
        const auto b = brain::TrainingCheckpoint::load(second_dir / "epoch-10.json");
        CHECK(a.to_json_string() == b.to_json_string());
    }
}

TEST_CASE("early stopping resumed with an earlier best restores that best's weights", "[plugin]") {
    const auto data = noisy(300, 3);
    // A high rate: the loss falls fast, then wanders, so the best epoch comes early.
    const auto optimizer = brain::Optimizer::sgd(0.1f, 0.9f);
    brain::test::TempDir dir;
    auto whole = model(optimizer);
    brain::EarlyStoppingOptions es;
    es.patience = 1000;
    es.min_delta = 0.0;
    auto early = std::make_shared<brain::EarlyStopping>(es);
    brain::FitOptions options;
    options.callbacks = {early};
    std::vector<std::vector<float>> weights;
    options.on_epoch_end = [&](brain::FitContext& context) { weights.push_back(context.network().parameters()); };
    whole.fit(data, brain::TrainConfig{12, 25, true, 7}, options);
    REQUIRE(early->best_epoch().has_value());

    for (std::uint32_t split = 2; split <= 10; split += 4) {
        INFO("interrupted after epoch " << split << "; the best epoch is " << *early->best_epoch());
        auto first = model(optimizer);
        auto early_first = std::make_shared<brain::EarlyStopping>(es);
        brain::FitOptions first_options;
        first_options.callbacks = {early_first};
        first_options.on_epoch_end = [&](brain::FitContext& context) {
            if (context.epoch() == split) context.save_checkpoint(dir / "mid.json");
        };
        first.fit(data, brain::TrainConfig{split, 25, true, 7}, first_options);
        const auto checkpoint = brain::TrainingCheckpoint::load(dir / "mid.json");
        auto resumed = checkpoint.network;
        auto early_second = std::make_shared<brain::EarlyStopping>(es);
        brain::FitOptions second_options;
        second_options.callbacks = {early_second};
        second_options.resume = &checkpoint;
        auto config = checkpoint.config;
        config.epochs = 12 - split;
        resumed.fit(data, config, second_options);
        CHECK(early_second->best_epoch() == early->best_epoch());
        CHECK(resumed.parameters() == whole.parameters());
        CHECK(resumed.parameters() == weights[*early->best_epoch() - 1]);
    }
}

TEST_CASE("a run saved as early stopping stopped it stays stopped; another monitor starts a fresh watch",
          "[plugin]") {
    const auto data = noisy(300, 3);
    const auto optimizer = brain::Optimizer::sgd(0.1f, 0.9f);
    brain::test::TempDir dir;
    brain::EarlyStoppingOptions es;
    es.patience = 2;
    // The epoch on which it stops is saved too: the checkpoint of a run that then died before its model was
    // written.
    auto stopped = model(optimizer);
    auto early = std::make_shared<brain::EarlyStopping>(es);
    brain::FitOptions options;
    options.callbacks = {early};
    options.on_epoch_end = [&](brain::FitContext& context) {
        context.save_checkpoint(dir / ("epoch-" + std::to_string(context.epoch()) + ".json"));
    };
    const auto report = stopped.fit(data, brain::TrainConfig{200, 25, true, 7}, options);
    REQUIRE(early->stopped_epoch().has_value());
    const std::uint64_t last = *early->stopped_epoch();

    const auto at_stop = brain::TrainingCheckpoint::load(dir / ("epoch-" + std::to_string(last) + ".json"));
    auto resumed = at_stop.network;
    auto early_again = std::make_shared<brain::EarlyStopping>(es);
    brain::FitOptions again;
    again.callbacks = {early_again};
    again.resume = &at_stop;
    const auto resumed_report = resumed.fit(data, at_stop.remaining(), again);
    CHECK(resumed_report.epoch_losses.empty()); // no epoch past the one that stopped it
    CHECK(resumed_report.stop_reason == report.stop_reason);
    CHECK(resumed.parameters() == stopped.parameters()); // the best epoch's weights, restored as the run did
    CHECK(resumed.epochs_trained() == stopped.epochs_trained());

    // Resumed watching another quantity, the saved best (a loss) says nothing about it: the watch starts afresh.
    const auto before = brain::TrainingCheckpoint::load(dir / "epoch-2.json");
    auto other = before.network;
    brain::EarlyStoppingOptions by_rate = es;
    by_rate.monitor = "loss";
    by_rate.mode = brain::MonitorMode::Max; // a direction the saved watch did not have
    auto early_other = std::make_shared<brain::EarlyStopping>(by_rate);
    brain::FitOptions other_options;
    other_options.callbacks = {early_other};
    other_options.resume = &before;
    auto config = before.remaining();
    config.epochs = 1;
    const auto one = other.fit(data, config, other_options);
    REQUIRE(one.epoch_losses.size() == 1);
    CHECK(early_other->best_epoch() == std::optional<std::uint64_t>(3)); // the first epoch it watched
    CHECK(early_other->best_value() == std::optional<double>(one.epoch_losses[0]));
}

TEST_CASE("a checkpoint file round-trips exactly and a broken one is refused naming the field", "[core]") {
    auto net = model(brain::Optimizer::adam(0.01f));
    // An optimizer state with values a decimal text must carry exactly: subnormals, -0, extremes.
    std::vector<float> state = net.optimizer_state();
    state[0] = std::bit_cast<float>(0x00000001u);
    state[1] = -0.0f;
    state[2] = 3.4028235e38f;
    state[3] = 1.1754944e-38f;
    // First moments of either sign; second moments (the second half) non-negative, as Adam's are.
    for (std::size_t i = 4; i < state.size(); ++i) {
        const float value = std::sin(static_cast<float>(i)) * 1e-3f;
        state[i] = i < net.parameter_count() ? value : std::abs(value);
    }
    net.restore_checkpoint(brain::Checkpoint{net.parameters(), state, 123, 7});
    brain::TrainingCheckpoint checkpoint(net);
    checkpoint.config = brain::TrainConfig{9, 17, false, 99};
    checkpoint.run_epochs = 20;
    auto schedule = LearningRateSchedule::parse("plateau:factor=0.3,patience=2,monitor=val_r2");
    schedule.start(0.01f, 6, 20);
    schedule.observe(0.25);
    schedule.finish_epoch();
    checkpoint.schedule = schedule;
    checkpoint.callbacks["early_stopping"] =
        brain::CallbackState{{{"wait", 3}, {"best_bits", ~0ull >> 2}}, {{"best_parameters", {1.5f, -2.25f}}}};
    checkpoint.losses = {0.5f, 0.25f};
    checkpoint.learning_rates = {0.01f, 0.01f};
    checkpoint.data_rows = 300;
    checkpoint.data_fingerprint = 0xfedcba9876543210ull;
    checkpoint.notes["csv"] = "data, \"quoted\".csv";

    const std::string text = checkpoint.to_json_string();
    const auto back = brain::TrainingCheckpoint::from_json_string(text, "ck.json");
    CHECK(back.to_json_string() == text);
    CHECK(std::bit_cast<std::uint32_t>(back.network.optimizer_state()[0]) == 1u);
    CHECK(std::signbit(back.network.optimizer_state()[1]));
    CHECK(back.network.optimizer_state() == net.optimizer_state());
    CHECK(back.network.optimizer_step() == 123);
    CHECK(back.epochs_trained() == 7);
    CHECK(back.remaining().epochs == 13);
    CHECK(back.config.batch_size == 17);
    CHECK_FALSE(back.config.shuffle);
    CHECK(back.config.seed == 99u);
    CHECK(back.schedule->state().plateau_best == 0.25f);
    CHECK(back.schedule->plateau().monitor == "val_r2");
    CHECK(back.callbacks.at("early_stopping").integers.at("best_bits") == (~0ull >> 2));
    CHECK(back.data_fingerprint == 0xfedcba9876543210ull);
    CHECK(back.notes.at("csv") == "data, \"quoted\".csv");

    auto without = [&](const std::string& field) {
        const auto at = text.find("  \"" + field + "\":");
        REQUIRE(at != std::string::npos);
        return text.substr(0, at) + text.substr(text.find('\n', at) + 1);
    };
    BRAIN_REQUIRE_ERROR(ErrorCode::InvalidModelFile,
                        brain::TrainingCheckpoint::from_json_string(without("optimizer_state"), "ck.json"),
                        "ck.json: /optimizer_state: missing");
    BRAIN_REQUIRE_ERROR(ErrorCode::InvalidModelFile,
                        brain::TrainingCheckpoint::from_json_string(net.to_json_string(), "m.json"),
                        "m.json: /format", "this is a model file, which holds no optimizer state");
    std::string short_state = text;
    short_state.replace(short_state.find("\"optimizer_state\": ["), 20, "\"optimizer_state\": [1,");
    BRAIN_REQUIRE_ERROR(ErrorCode::InvalidModelFile,
                        brain::TrainingCheckpoint::from_json_string(short_state, "ck.json"),
                        "/optimizer_state: expected");
    std::string bad_schedule = text;
    bad_schedule.replace(bad_schedule.find("plateau:"), 8, "plateaux:");
    BRAIN_REQUIRE_ERROR(ErrorCode::InvalidModelFile,
                        brain::TrainingCheckpoint::from_json_string(bad_schedule, "ck.json"), "/schedule/spec");
}

TEST_CASE("a resume that would not continue the same run is refused before training", "[plugin]") {
    const auto data = noisy(120, 5);
    auto net = model(brain::Optimizer::adam(0.01f));
    brain::FitOptions options;
    brain::test::TempDir dir;
    options.on_epoch_end = [&](brain::FitContext& context) {
        if (context.epoch() == 2) context.save_checkpoint(dir / "c.json");
    };
    net.fit(data, brain::TrainConfig{2, 20, true, 3}, options);
    const auto checkpoint = brain::TrainingCheckpoint::load(dir / "c.json");
    brain::FitOptions resume;
    resume.resume = &checkpoint;
    auto again = checkpoint.network;
    BRAIN_REQUIRE_ERROR(ErrorCode::InvalidData,
                        again.fit(noisy(120, 6), brain::TrainConfig{1, 20, true, 3}, resume),
                        "resume: the training data (120 rows) is not the run's");
    BRAIN_REQUIRE_ERROR(ErrorCode::InvalidArgument, again.fit(data, brain::TrainConfig{1, 30, true, 3}, resume),
                        "batch size 20", "this fit asks for 30");
    auto fresh = model(brain::Optimizer::adam(0.01f));
    BRAIN_REQUIRE_ERROR(ErrorCode::InvalidArgument, fresh.fit(data, brain::TrainConfig{1, 20, true, 3}, resume),
                        "the network has trained 0 epochs", "the checkpoint's 2");
    CHECK(again.epochs_trained() == 2); // untouched by the refusals
    again.fit(data, brain::TrainConfig{1, 20, true, 3}, resume);
    CHECK(again.epochs_trained() == 3);
}
