// Learning-rate schedules: each formula against its closed form on the host, the text form, reduce-on-plateau's
// rule, and how a schedule reaches a plugin: per-step rates (ABI 1.2) that train bit-identically to
// set_learning_rate where both apply, the per-epoch path for a plugin without them, and the precise Unsupported
// where neither does.
#include "support/catch.hpp"
#include "support/env.hpp"
#include "support/error_match.hpp"
#include "support/schedules.hpp"

#include <brain/brain.hpp>
#include <brain/plugin_abi.h>
#include <cmath>
#include <functional>
#include <numbers>
#include <vector>

using brain::Activation;
using brain::ErrorCode;
using brain::LearningRateSchedule;
using brain::TrainingBackend;
using brain::test::ScopedEnv;
using brain::test::wave;
using brain::test::wave_network;

namespace {

// Every rate of `epochs` epochs of `steps` steps against expected(step), within one float rounding; returns them.
std::vector<float> check_rates(LearningRateSchedule schedule, float base, std::uint64_t steps, std::uint64_t epochs,
                               const std::function<double(std::uint64_t)>& expected) {
    schedule.start(base, steps, epochs);
    std::vector<float> all;
    for (std::uint64_t e = 0; e < epochs; ++e) {
        const std::vector<float> rates = schedule.next_epoch_rates();
        REQUIRE(rates.size() == steps);
        for (std::uint64_t i = 0; i < steps; ++i) {
            const std::uint64_t s = e * steps + i;
            const double want = expected(s);
            INFO(schedule.to_string() << ", step " << s << ": rate " << rates[i] << ", closed form " << want);
            CHECK(std::fabs(rates[i] - want) <= want * 0x1p-23);
            CHECK(std::fabs(schedule.rate_at(s) - want) <= want * 1e-12);
            all.push_back(rates[i]);
        }
        schedule.finish_epoch();
    }
    return all;
}

const std::vector<brain::Optimizer>& optimizers() {
    static const std::vector<brain::Optimizer> all = {
        brain::Optimizer::sgd(0.05f, 0.9f), brain::Optimizer::adam(0.01f), brain::Optimizer::adamw(0.01f, 0.05f)};
    return all;
}

} // namespace

TEST_CASE("each schedule's rate per step equals its closed form", "[core]") {
    const double base = 0.01f; // the float the schedule starts from
    const double pi = std::numbers::pi;
    SECTION("constant, with a linear warm-up of one and a half epochs") {
        const auto r = check_rates(LearningRateSchedule::constant(1.5f), 0.01f, 4, 4,
                                   [&](std::uint64_t s) { return s < 6 ? base * (s + 1) / 6.0 : base; });
        CHECK(r[5] == 0.01f); // the warm-up's last step reaches the base exactly
    }
    SECTION("step: times gamma every two epochs") {
        const auto r = check_rates(LearningRateSchedule::step(2, 0.5f), 0.01f, 3, 7,
                                   [&](std::uint64_t s) { return base * std::pow(0.5, std::floor(s / 3 / 2.0)); });
        CHECK(r[5] == 0.01f);
        CHECK(r[6] == 0.005f);
        CHECK(r[18] == 0.00125f);
    }
    SECTION("exponential") {
        check_rates(LearningRateSchedule::exponential(0.9f), 0.01f, 2, 6,
                    [&](std::uint64_t s) { return base * std::pow(static_cast<double>(0.9f), s / 2); });
    }
    SECTION("cosine with a warm-up of one epoch over a horizon of four, then held") {
        const double low = static_cast<double>(1e-4f);
        const auto r = check_rates(LearningRateSchedule::cosine(1.0f, 1e-4f, 4), 0.01f, 5, 6, [&](std::uint64_t s) {
            if (s < 5) return base * (s + 1) / 5.0;
            const std::uint64_t at = std::min<std::uint64_t>(s, 19);
            return low + (base - low) * 0.5 * (1.0 + std::cos(pi * (at - 5) / 15.0));
        });
        CHECK(r[4] == 0.01f);
        CHECK(r[5] == 0.01f);
        CHECK(r[29] == r[19]); // past the horizon the last rate holds
        CHECK(r[19] > 1e-4f);
    }
    SECTION("cosine without warm-up, its horizon the run's epochs") {
        check_rates(LearningRateSchedule::cosine(), 0.01f, 4, 3,
                    [&](std::uint64_t s) { return base * 0.5 * (1.0 + std::cos(pi * s / 12.0)); });
    }
    SECTION("one-cycle, PyTorch's OneCycleLR") {
        const double initial = base / 10.0, final_rate = initial / 100.0;
        const auto anneal = [&](double from, double to, double pct) {
            return to + (from - to) / 2.0 * (std::cos(pi * pct) + 1.0);
        };
        const auto r = check_rates(LearningRateSchedule::one_cycle(0.25f, 10.0f, 100.0f, 4), 0.01f, 5, 4,
                                   [&](std::uint64_t s) {
                                       const double rise_end = 0.25 * 20 - 1; // 4
                                       if (s <= rise_end) return anneal(initial, base, s / rise_end);
                                       return anneal(base, final_rate, (s - rise_end) / (19 - rise_end));
                                   });
        CHECK(std::fabs(r[0] - 0.001f) <= 0.001f * 0x1p-22);
        CHECK(r[4] == 0.01f);
        CHECK(std::fabs(r[19] - 1e-5f) <= 1e-5f * 0x1p-22);
    }
}

TEST_CASE("a schedule's text form round-trips and bad text is refused naming the key", "[core]") {
    for (const char* text :
         {"constant", "constant:warmup=2", "step:every=3,gamma=0.5", "exponential:gamma=0.95",
          "cosine:warmup=0.5,min=1e-05,epochs=20", "onecycle:pct=0.3,div=25,final_div=10000",
          "plateau:factor=0.5,patience=2,threshold=0.001,cooldown=1,min=1e-06,monitor=val_loss"}) {
        const auto parsed = LearningRateSchedule::parse(text);
        INFO(text << " -> " << parsed.to_string());
        CHECK(LearningRateSchedule::parse(parsed.to_string()).to_string() == parsed.to_string());
    }
    CHECK(LearningRateSchedule::parse("Cosine : warmup = 2").warmup_epochs() == 2.0f);
    BRAIN_REQUIRE_ERROR(ErrorCode::InvalidArgument, LearningRateSchedule::parse("linear"), "unknown learning-rate",
                        "cosine");
    BRAIN_REQUIRE_ERROR(ErrorCode::InvalidArgument, LearningRateSchedule::parse("cosine:gamma=0.5"), "'gamma'",
                        "warmup, min, epochs");
    BRAIN_REQUIRE_ERROR(ErrorCode::InvalidArgument, LearningRateSchedule::parse("step:gamma=0.5"), "every=N");
    BRAIN_REQUIRE_ERROR(ErrorCode::InvalidArgument, LearningRateSchedule::parse("exponential:gamma=x"),
                        "gamma='x' is not a finite number");
    BRAIN_REQUIRE_ERROR(ErrorCode::InvalidArgument, LearningRateSchedule::parse("onecycle:pct=1"), "(0, 1)");
    BRAIN_REQUIRE_ERROR(ErrorCode::InvalidArgument, LearningRateSchedule::parse("plateau:factor=2"), "(0, 1)");
    BRAIN_REQUIRE_ERROR(ErrorCode::InvalidArgument, LearningRateSchedule::parse("plateau:warmup=1"),
                        "'warmup' is not a parameter of plateau");
    // A key given twice is refused with both values, whatever its case, not "the last one wins".
    BRAIN_REQUIRE_ERROR(ErrorCode::InvalidArgument, LearningRateSchedule::parse("step:every=2,gamma=0.5,Every=3"),
                        "'every' is given twice (every='2', then every='3')", "at most once");
    BRAIN_REQUIRE_ERROR(ErrorCode::InvalidArgument, LearningRateSchedule::parse("cosine:min=0,min=0"),
                        "'min' is given twice");
    // A floor above the rate it starts from would raise the rate: refused when the schedule starts.
    for (const char* text : {"cosine:min=0.5", "plateau:min=0.5"}) {
        auto high = LearningRateSchedule::parse(text);
        BRAIN_REQUIRE_ERROR(ErrorCode::InvalidArgument, high.start(0.01f, 4, 10),
                            "min=0.5, above the learning rate 0.01");
        CHECK_FALSE(high.started());
        high.start(0.5f, 4, 10); // a floor equal to the rate holds it
        CHECK(std::fabs(high.rate_at(7) - 0.5) <= 0.5 * 0x1p-22);
    }
}

TEST_CASE("reduce-on-plateau multiplies the rate after patience epochs without improvement", "[core]") {
    brain::PlateauOptions options;
    options.factor = 0.5f;
    options.patience = 1;
    options.cooldown = 1;
    options.min_rate = 0.02f;
    auto schedule = LearningRateSchedule::reduce_on_plateau(options);
    schedule.start(0.1f, 3, 10);
    // Hand-computed (PyTorch's rule, relative threshold 1e-4): the values seen after each epoch and the rate of
    // the epoch after it.
    const std::vector<double> seen = {1.0, 0.9, 0.9, 0.9, 0.9, 0.9, 0.8, 0.8, 0.8, 0.8};
    const std::vector<float> next = {0.1f, 0.1f, 0.1f, 0.05f, 0.05f, 0.05f, 0.05f, 0.05f, 0.025f, 0.025f};
    for (std::size_t e = 0; e < seen.size(); ++e) {
        schedule.observe(seen[e]);
        schedule.finish_epoch();
        const auto rates = schedule.next_epoch_rates();
        INFO("after epoch " << e + 1);
        CHECK(rates == std::vector<float>(3, next[e]));
    }
    // The floor holds (after the cooldown epoch and two without improvement: 0.0125, raised to the floor).
    for (int e = 0; e < 6; ++e) {
        schedule.observe(0.8);
        schedule.finish_epoch();
    }
    CHECK(schedule.next_epoch_rates().front() == 0.02f);
    CHECK(brain::resolve_monitor_mode(brain::MonitorMode::Auto, "val_accuracy") == brain::MonitorMode::Max);
    CHECK(brain::resolve_monitor_mode(brain::MonitorMode::Auto, "val_loss") == brain::MonitorMode::Min);
}

TEST_CASE("per-step rates constant within each epoch train bit-identically to set_learning_rate per epoch (CPU)",
          "[plugin]") {
    const auto data = wave(100); // 7 batches of 16, the last of 4
    const std::vector<float> per_epoch = {0.01f, 0.004f, 0.0025f, 0.02f};
    const std::vector<float> varying = {0.05f, 0.04f, 0.03f, 0.02f, 0.01f, 0.005f, 0.003f};
    const brain::TrainConfig config{4, 16, true, 5};
    for (const auto& optimizer : optimizers()) {
        INFO(brain::to_string(optimizer.kind));
        brain::TrainingSession by_epoch(wave_network(optimizer), data, config, TrainingBackend::cpu());
        brain::TrainingSession by_step(wave_network(optimizer), data, config, TrainingBackend::cpu());
        REQUIRE(by_step.supports_step_learning_rates());
        REQUIRE(by_step.batches_per_epoch() == 7);
        brain::test::check_epoch_rates(by_epoch, by_step, per_epoch, 7);
        brain::test::check_same_state(by_epoch, by_step);
        // After an epoch of per-step rates the last one stays in effect.
        brain::test::vary_then_hold(by_epoch, by_step, varying);
        CHECK(by_epoch.checkpoint().parameters == by_step.checkpoint().parameters);
        CHECK(by_step.learning_rate() == 0.003f);
    }
}

TEST_CASE("fit follows a schedule exactly as a session driven by hand (CPU)", "[plugin]") {
    const auto data = wave(100);
    const brain::TrainConfig config{5, 16, true, 5};
    for (const auto& schedule : {LearningRateSchedule::step(2, 0.5f), LearningRateSchedule::cosine(1.0f, 1e-4f),
                                 LearningRateSchedule::one_cycle()}) {
        INFO(schedule.to_string());
        auto fitted = wave_network(brain::Optimizer::adam(0.01f));
        brain::FitOptions options;
        options.schedule = schedule;
        const auto report = fitted.fit(data, config, options);
        REQUIRE(report.schedule.has_value());
        CHECK(report.schedule->state().epochs_done == 5);

        LearningRateSchedule by_hand = schedule;
        by_hand.start(0.01f, 7, 5);
        brain::TrainingSession session(wave_network(brain::Optimizer::adam(0.01f)), data, config,
                                       TrainingBackend::cpu());
        std::vector<float> last_rates;
        for (int e = 0; e < 5; ++e) {
            const auto rates = by_hand.next_epoch_rates();
            session.set_step_learning_rates(rates);
            session.train_epoch();
            by_hand.finish_epoch();
            last_rates.push_back(rates.back());
        }
        CHECK(session.checkpoint().parameters == fitted.parameters());
        CHECK(report.learning_rates == last_rates);
    }
}

TEST_CASE("a plugin without per-step rates follows per-epoch schedules through set_learning_rate", "[core]") {
    ScopedEnv path("BRAIN_PLUGIN_PATH", std::string(BRAIN_TEST_BROKEN_PLUGIN_DIR));
    ScopedEnv only("BRAIN_PLUGIN_PATH_ONLY", std::string("1"));
    const auto backend = TrainingBackend::plugin("ratelog", 0, 0);
    const auto data = wave(64);
    const brain::TrainConfig config{6, 16, true, 1};
    // The ratelog plugin reports each epoch's rate as its loss.
    SECTION("step decay: one set_learning_rate per change") {
        auto net = wave_network(brain::Optimizer::adam(0.1f));
        brain::FitOptions options;
        options.schedule = LearningRateSchedule::step(2, 0.5f);
        const auto report = net.fit_with_backend(data, config, backend, options);
        CHECK(report.epoch_losses == std::vector<float>{0.1f, 0.1f, 0.05f, 0.05f, 0.025f, 0.025f});
        CHECK(report.learning_rates == report.epoch_losses);
    }
    SECTION("reduce-on-plateau on the loss") {
        auto net = wave_network(brain::Optimizer::adam(0.1f));
        brain::PlateauOptions plateau;
        plateau.factor = 0.5f;
        plateau.patience = 1;
        brain::FitOptions options;
        options.schedule = LearningRateSchedule::reduce_on_plateau(plateau);
        const auto report = net.fit_with_backend(data, brain::TrainConfig{7, 16, true, 1}, backend, options);
        // The loss is the rate: flat, so after two epochs without improvement the rate halves, and so on.
        CHECK(report.epoch_losses == std::vector<float>{0.1f, 0.1f, 0.1f, 0.05f, 0.05f, 0.05f, 0.025f});
    }
    SECTION("a per-step schedule is refused before training, naming the plugin, its ABI and the schedule") {
        auto net = wave_network(brain::Optimizer::adam(0.1f));
        brain::FitOptions options;
        options.schedule = LearningRateSchedule::cosine(1.0f);
        const std::string who =
            "backend \"ratelog\" (its plugin built against ABI 1." + std::to_string(BRAIN_ABI_VERSION_MINOR) + ")";
        BRAIN_REQUIRE_ERROR(ErrorCode::Unsupported, net.fit_with_backend(data, config, backend, options),
                            who.c_str(), "cosine:warmup=1", "session_set_step_learning_rates");
        brain::TrainingSession session(net, data, config, backend);
        CHECK_FALSE(session.supports_step_learning_rates());
        BRAIN_REQUIRE_ERROR(ErrorCode::Unsupported, session.set_step_learning_rates(std::vector<float>(4, 0.1f)),
                            "does not take per-step learning rates");
        CHECK(session.train_epoch() == 0.1f); // nothing reached the plugin
    }
    SECTION("a plugin of ABI 1.0 cannot change its rate at all") {
        const auto old = TrainingBackend::plugin("oldminor", 0, 0);
        brain::TrainingSession session(wave_network(brain::Optimizer::adam(0.1f)), wave(8),
                                       brain::TrainConfig{1, 4, true, 1}, old);
        BRAIN_REQUIRE_ERROR(ErrorCode::Unsupported, session.set_schedule(LearningRateSchedule::step(1, 0.5f)),
                            "backend \"oldminor\" (its plugin built against ABI 1.0)", "step:every=1",
                            "session_set_learning_rate arrived in ABI 1.1");
        session.set_schedule(LearningRateSchedule::constant()); // a fixed rate needs nothing
        CHECK(session.train_epoch() == 0.5f);
    }
}

TEST_CASE("set_step_learning_rates checks its rates before the plugin sees them", "[plugin]") {
    brain::TrainingSession session(wave_network(brain::Optimizer::adam(0.01f)), wave(64),
                                   brain::TrainConfig{1, 16, true, 1}, TrainingBackend::cpu());
    BRAIN_REQUIRE_ERROR(ErrorCode::InvalidArgument, session.set_step_learning_rates(std::vector<float>(3, 0.1f)),
                        "expected 4 rates", "found 3");
    BRAIN_REQUIRE_ERROR(ErrorCode::InvalidArgument,
                        session.set_step_learning_rates(std::vector<float>{0.1f, 0.0f, 0.1f, 0.1f}), "rate 1 is 0");
    BRAIN_REQUIRE_ERROR(ErrorCode::InvalidArgument,
                        session.set_step_learning_rates(std::vector<float>{0.1f, 0.1f, std::nanf(""), 0.1f}),
                        "rate 2");
    CHECK(session.is_open());
    session.set_step_learning_rates(std::vector<float>{0.1f, 0.05f, 0.02f, 0.01f});
    CHECK(session.learning_rate() == 0.01f);
    CHECK(std::isfinite(session.train_epoch()));
}
