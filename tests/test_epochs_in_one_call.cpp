// Several epochs in one call: TrainingSession::train_epochs and fit without callbacks hand the plugin every epoch
// at once where it offers session_train_epochs (ABI 1.4), one epoch a call otherwise, with the same result; a
// failure in the middle counts the epochs before it and names the epoch that failed.
#include "support/catch.hpp"
#include "support/env.hpp"
#include "support/error_match.hpp"
#include "support/schedules.hpp"

#include <brain/brain.hpp>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <initializer_list>
#include <string>
#include <unistd.h>
#include <vector>

namespace {

using brain::ErrorCode;
using brain::TrainingBackend;
using brain::test::ScopedEnv;
using brain::test::wave;
using brain::test::wave_network;

// The epochlog test plugin (tests/plugins/epoch_log_plugin.cpp), its calls logged to a fresh file.
struct EpochLog {
    std::filesystem::path file =
        std::filesystem::temp_directory_path() / ("brain-epochlog-" + std::to_string(::getpid()) + ".txt");
    ScopedEnv path{"BRAIN_PLUGIN_PATH", std::string(BRAIN_TEST_BROKEN_PLUGIN_DIR)};
    ScopedEnv only{"BRAIN_PLUGIN_PATH_ONLY", std::string("1")};
    ScopedEnv log{"BRAIN_EPOCHLOG_FILE", file.string()};
    TrainingBackend backend = TrainingBackend::plugin("epochlog", 0, 0);

    EpochLog() { std::filesystem::remove(file); }
    ~EpochLog() { std::filesystem::remove(file); }
    // The calls so far, one line each ("epoch" or "epochs N").
    std::vector<std::string> calls() const {
        std::vector<std::string> lines;
        std::ifstream in(file);
        for (std::string line; std::getline(in, line);) lines.push_back(line);
        return lines;
    }
};

// A parameter after the plugin's epochs at these rates, in float arithmetic as the plugin takes them off.
float moved(float parameter, std::initializer_list<float> rates) {
    for (const float rate : rates) parameter -= rate;
    return parameter;
}

} // namespace

TEST_CASE("train_epochs hands a plugin of ABI 1.4 every epoch in one call", "[plugin]") {
    EpochLog log;
    auto net = wave_network(brain::Optimizer::sgd(0.25f));
    brain::TrainingSession session(net, wave(64), brain::TrainConfig{5, 16, true, 1}, log.backend);
    // The plugin's loss is the epoch's number plus one.
    CHECK(session.train_epochs(3) == std::vector<float>{1.0f, 2.0f, 3.0f});
    CHECK(session.train_epoch() == 4.0f);
    CHECK(log.calls() == std::vector<std::string>{"epochs 3", "epoch"});
    const auto checkpoint = session.checkpoint();
    CHECK(checkpoint.epochs_trained == 4);
    // Every parameter moved by 0.25 four times.
    for (std::size_t i = 0; i < net.parameter_count(); ++i)
        CHECK(checkpoint.parameters[i] == moved(net.parameters()[i], {0.25f, 0.25f, 0.25f, 0.25f}));
    brain::test::require_error([&] { (void)session.train_epochs(0); }, ErrorCode::InvalidArgument, {"0 epochs"});
}

TEST_CASE("fit without callbacks trains its epochs in one call and with them one a call to the same result",
          "[plugin]") {
    EpochLog log;
    const auto data = wave(64);
    auto quiet = wave_network(brain::Optimizer::sgd(0.25f));
    const auto once = quiet.fit_with_backend(data, brain::TrainConfig{6, 16, true, 1}, log.backend);
    CHECK(log.calls() == std::vector<std::string>{"epochs 6"});
    CHECK(once.epoch_losses == std::vector<float>{1, 2, 3, 4, 5, 6});
    CHECK(once.learning_rates == std::vector<float>(6, 0.25f));
    std::filesystem::remove(log.file);
    auto watched = wave_network(brain::Optimizer::sgd(0.25f));
    brain::FitOptions options;
    int seen = 0;
    options.on_epoch_end = [&seen](brain::FitContext&) { ++seen; };
    const auto each = watched.fit_with_backend(data, brain::TrainConfig{6, 16, true, 1}, log.backend, options);
    CHECK(seen == 6);
    CHECK(log.calls() == std::vector<std::string>(6, "epoch"));
    CHECK(each.epoch_losses == once.epoch_losses);
    CHECK(watched.parameters() == quiet.parameters());
    CHECK(watched.epochs_trained() == quiet.epochs_trained());
}

TEST_CASE("train_epochs with a schedule trains one epoch a call each at its own rate", "[plugin]") {
    EpochLog log;
    auto net = wave_network(brain::Optimizer::sgd(1.0f));
    brain::TrainingSession session(net, wave(64), brain::TrainConfig{4, 16, true, 1}, log.backend);
    session.set_schedule(brain::LearningRateSchedule::step(1, 0.5f));
    CHECK(session.train_epochs(3).size() == 3);
    CHECK(log.calls() == std::vector<std::string>(3, "epoch"));
    // 1, then 0.5, then 0.25 off every parameter.
    const auto checkpoint = session.checkpoint();
    for (std::size_t i = 0; i < net.parameter_count(); ++i)
        CHECK(checkpoint.parameters[i] == moved(net.parameters()[i], {1.0f, 0.5f, 0.25f}));
}

TEST_CASE("train_epochs failing in the middle counts the epochs before and names the epoch", "[plugin]") {
    EpochLog log;
    auto net = wave_network(brain::Optimizer::sgd(0.25f));
    SECTION("a plugin error") {
        ScopedEnv fail("BRAIN_EPOCHLOG_FAIL_AT", std::string("2"));
        brain::TrainingSession session(net, wave(64), brain::TrainConfig{5, 16, true, 1}, log.backend);
        brain::test::require_error([&] { (void)session.train_epochs(5); }, ErrorCode::NumericalError,
                                   {"epoch 2 diverged"});
        brain::test::require_error([&] { (void)session.checkpoint(); }, ErrorCode::InvalidState,
                                   {"train_epochs failed"});
    }
    SECTION("a non-finite loss without an error") {
        ScopedEnv nan("BRAIN_EPOCHLOG_NAN_AT", std::string("3"));
        brain::TrainingSession session(net, wave(64), brain::TrainConfig{5, 16, true, 1}, log.backend);
        CHECK(session.train_epochs(2) == std::vector<float>{1.0f, 2.0f});
        brain::test::require_error([&] { (void)session.train_epochs(3); }, ErrorCode::NumericalError,
                                   {"epoch 3 ", "non-finite"});
        CHECK(log.calls() == std::vector<std::string>{"epochs 2", "epochs 3"});
    }
    SECTION("a plugin that trains fewer epochs than asked and says nothing") {
        ScopedEnv short_by_one("BRAIN_EPOCHLOG_SHORT", std::string("1"));
        brain::TrainingSession session(net, wave(64), brain::TrainConfig{5, 16, true, 1}, log.backend);
        brain::test::require_error([&] { (void)session.train_epochs(4); }, ErrorCode::PluginFailure,
                                   {"trained 3 of the 4 epochs"});
    }
}
