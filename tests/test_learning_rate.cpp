// TrainingSession::set_learning_rate (ABI 1.1) and the ABI's evolution: a plugin built against the frozen 1.0
// header still loads into this core and reports Unsupported for what 1.0 lacks.
#include "support/catch.hpp"
#include "support/env.hpp"
#include "support/error_match.hpp"
#include "support/gpu.hpp"
#include "support/numeric.hpp"
#include "support/schedules.hpp"

#include <brain/brain.hpp>
#include <brain/plugin_abi.h>

using brain::ErrorCode;
using brain::TrainingBackend;
using brain::test::ScopedEnv;

namespace {

// Train `first` epochs at the network's rate, switch to `rate`, train `second` more; the final checkpoint.
brain::Checkpoint schedule(const TrainingBackend& backend, const brain::Optimizer& optimizer, float rate) {
    const auto data = brain::test::wave(96);
    brain::TrainingSession session(brain::test::wave_network(optimizer), data, brain::TrainConfig{3, 16, true, 5},
                                   backend);
    session.train_epoch();
    session.set_learning_rate(rate);
    session.train_epoch();
    session.train_epoch();
    return session.checkpoint();
}

} // namespace

TEST_CASE("set_learning_rate changes the rate from the next step on (CPU)", "[plugin]") {
    // A vanishing rate freezes SGD: the weights after it equal the weights before it.
    const auto data = brain::test::wave(96);
    brain::TrainingSession session(brain::test::wave_network(brain::Optimizer::sgd(0.1f)), data,
                                   brain::TrainConfig{2, 16, true, 5}, TrainingBackend::cpu());
    session.train_epoch();
    const auto before = session.checkpoint();
    session.set_learning_rate(1e-30f);
    session.train_epoch();
    const auto after = session.checkpoint();
    CHECK(after.parameters == before.parameters);
    CHECK(after.optimizer_step == before.optimizer_step + 6);
    // A real change of rate changes the trajectory; the same schedule twice is deterministic.
    const auto a = schedule(TrainingBackend::cpu(), brain::Optimizer::adam(0.01f), 0.001f);
    const auto b = schedule(TrainingBackend::cpu(), brain::Optimizer::adam(0.01f), 0.001f);
    const auto c = schedule(TrainingBackend::cpu(), brain::Optimizer::adam(0.01f), 0.01f);
    CHECK(a.parameters == b.parameters);
    CHECK(a.parameters != c.parameters);
    BRAIN_REQUIRE_ERROR(ErrorCode::InvalidArgument, session.set_learning_rate(-1.0f), "learning rate -1");
    BRAIN_REQUIRE_ERROR(ErrorCode::InvalidArgument, session.set_learning_rate(std::nanf("")), "learning rate");
    CHECK(session.is_open()); // a refused argument never reaches the plugin
}

TEST_CASE("a plugin built against the frozen ABI 1.0 header loads and reports Unsupported for 1.1 calls", "[core]") {
    ScopedEnv path("BRAIN_PLUGIN_PATH", std::string(BRAIN_TEST_BROKEN_PLUGIN_DIR));
    ScopedEnv only("BRAIN_PLUGIN_PATH_ONLY", std::string("1"));
    const auto record = brain::load_plugin("oldminor");
    CHECK(record.ok);
    CHECK(record.abi_major == 1u);
    CHECK(record.abi_minor == 0u);
    CHECK(BRAIN_ABI_VERSION_MINOR >= 1);
    brain::TrainingSession session(brain::test::wave_network(brain::Optimizer::adam(0.01f)), brain::test::wave(8),
                                   brain::TrainConfig{1, 4, true, 1}, TrainingBackend::plugin("oldminor", 0, 0));
    CHECK(session.train_epoch() == 0.5f);
    BRAIN_REQUIRE_ERROR(ErrorCode::Unsupported, session.set_learning_rate(0.1f), "built against ABI 1.0",
                        "session_set_learning_rate arrived in ABI 1.1");
    CHECK(session.train_epoch() == 0.5f); // still usable: nothing was called
}

TEST_CASE("set_learning_rate on CUDA matches the CPU (the epoch graph is re-captured)", "[cuda]") {
    REQUIRE_GPU();
    for (const auto& optimizer : {brain::Optimizer::sgd(0.05f, 0.9f), brain::Optimizer::adam(0.01f),
                                  brain::Optimizer::adamw(0.01f, 0.05f)}) {
        const auto cpu = schedule(TrainingBackend::cpu(), optimizer, 0.002f);
        const auto gpu = schedule(TrainingBackend::cuda(0, 256), optimizer, 0.002f);
        CHECK(brain::test::relative_error(gpu.parameters, cpu.parameters) < 1e-4);
        CHECK(brain::test::relative_error(gpu.optimizer_state, cpu.optimizer_state) < 1e-4);
    }
}
