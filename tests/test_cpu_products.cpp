// The CPU plugin's matrix products by OpenBLAS and by oneDNN (BRAIN_CPU_GEMM): the same training and prediction
// either way, the stats naming the libraries that ran, and a bad value refused with its name.
#include "support/catch.hpp"
#include "support/cli.hpp"
#include "support/env.hpp"
#include "support/error_match.hpp"
#include "support/tempdir.hpp"

#include <atomic>
#include <brain/brain.hpp>
#include <cmath>
#include <csignal>
#include <cstdint>
#include <string>
#include <sys/time.h>
#include <vector>

using brain::Activation;
using brain::ErrorCode;
using brain::TrainingBackend;
using brain::test::ScopedEnv;

namespace {

// 64 inputs -> 256 -> 256 -> 4: with batches of 128 every hidden product on one or two threads is over a million
// multiply-adds (oneDNN's share under BRAIN_CPU_GEMM=auto), its head and layer 0's weight gradient split finer.
brain::Network wide_network() {
    return brain::Network::builder()
        .input_size(64)
        .dense(256, Activation::Relu)
        .dense(256, Activation::Tanh)
        .dense(4, Activation::Linear)
        .optimizer(brain::Optimizer::adam(1e-3f))
        .seed(11)
        .build();
}

brain::Matrix rows(std::size_t count, std::size_t width, std::uint32_t seed) {
    brain::Matrix m(count, width);
    std::uint32_t state = seed;
    for (std::size_t r = 0; r < count; ++r)
        for (std::size_t c = 0; c < width; ++c) {
            state = state * 1664525u + 1013904223u;
            m(r, c) = static_cast<float>(state >> 8) / 16777216.0f - 0.5f;
        }
    return m;
}

struct Run {
    std::vector<float> losses;
    std::vector<float> parameters;
    brain::Matrix predictions;
    std::string arithmetic;
};

Run train(const char* choice) {
    ScopedEnv env("BRAIN_CPU_GEMM", std::string(choice));
    // Two threads whatever the machine: on sixteen, each thread's share of a product falls below oneDNN's.
    ScopedEnv threads("BRAIN_CPU_THREADS", std::string("2"));
    brain::Network net = wide_network();
    const brain::Matrix x = rows(512, 64, 3);
    brain::Matrix y(512, 4);
    for (std::size_t r = 0; r < 512; ++r)
        for (std::size_t c = 0; c < 4; ++c) y(r, c) = x(r, c) - 0.5f * x(r, c + 4);
    const brain::Dataset data(x, std::move(y));
    const auto report = net.fit_with_backend(data, brain::TrainConfig{3, 128, true, 5}, TrainingBackend::cpu());
    Run run{report.epoch_losses, net.parameters(),
            net.predict_with_backend(rows(300, 64, 9), TrainingBackend::cpu()), report.stats.arithmetic};
    return run;
}

double relative_difference(const std::vector<float>& a, const std::vector<float>& b) {
    double diff = 0.0, norm = 0.0;
    for (std::size_t i = 0; i < a.size(); ++i) {
        diff += (static_cast<double>(a[i]) - b[i]) * (static_cast<double>(a[i]) - b[i]);
        norm += static_cast<double>(b[i]) * b[i];
    }
    return std::sqrt(diff / norm);
}

std::atomic<int> g_alarms{0};

extern "C" void count_alarm(int) {
    g_alarms.fetch_add(1, std::memory_order_relaxed);
}

// SIGALRM every 100 us to a handler that counts them, as a profiler or an interpreter's Ctrl-C handler would
// interrupt a program; the previous handler and timer are put back.
class AlarmStorm {
public:
    AlarmStorm() {
        struct sigaction action {};
        action.sa_handler = count_alarm;
        sigemptyset(&action.sa_mask);
        sigaction(SIGALRM, &action, &m_previous);
        const itimerval every{{0, 100}, {0, 100}};
        setitimer(ITIMER_REAL, &every, &m_previous_timer);
    }
    ~AlarmStorm() {
        setitimer(ITIMER_REAL, &m_previous_timer, nullptr);
        sigaction(SIGALRM, &m_previous, nullptr);
    }
    AlarmStorm(const AlarmStorm&) = delete;
    AlarmStorm& operator=(const AlarmStorm&) = delete;

private:
    struct sigaction m_previous {};
    itimerval m_previous_timer{};
};

} // namespace

TEST_CASE("signals handled while oneDNN's products run leave training intact", "[plugin]") {
    // oneDNN before 3.11.2 runs its f32 products with the stack pointer in the heap: a handled signal then wrote
    // its frame over the heap and the process aborted in a later free (most runs of this size, unprotected).
    const Run quiet = train("auto");
    if (quiet.arithmetic == "float32 (OpenBLAS)") BRAIN_SKIP("oneDNN (libdnnl) is not installed");
    g_alarms = 0;
    std::vector<Run> runs;
    {
        AlarmStorm storm;
        for (int i = 0; i < 8; ++i) runs.push_back(train("onednn"));
    }
    INFO(g_alarms.load() << " signals handled");
    CHECK(g_alarms.load() > 0);
    const Run reference = train("onednn");
    for (const Run& run : runs) CHECK(run.parameters == reference.parameters);
}

TEST_CASE("the CPU plugin trains and predicts the same by OpenBLAS and by oneDNN, and says which ran", "[plugin]") {
    const Run openblas = train("openblas");
    CHECK(openblas.arithmetic == "float32 (OpenBLAS)");
    const Run automatic = train("auto");
    if (automatic.arithmetic == "float32 (OpenBLAS)") {
        // No oneDNN on this machine: asking for it by name must fail, naming why, not train on OpenBLAS.
        BRAIN_REQUIRE_ERROR(ErrorCode::PluginLoadFailed, train("onednn"), "BRAIN_CPU_GEMM=onednn",
                            "oneDNN is not installed");
        BRAIN_SKIP("oneDNN (libdnnl) is not installed: only its absence was checked");
    }
    CHECK(automatic.arithmetic == "float32 (OpenBLAS and oneDNN)");
    const Run dnnl = train("onednn");
    CHECK(dnnl.arithmetic == "float32 (oneDNN)");
    // Sums in another order: float32 rounding apart, not more.
    for (const Run* run : {&automatic, &dnnl}) {
        REQUIRE(run->losses.size() == openblas.losses.size());
        for (std::size_t e = 0; e < run->losses.size(); ++e)
            CHECK(std::abs(run->losses[e] - openblas.losses[e]) <= 1e-4f * std::abs(openblas.losses[e]));
        CHECK(relative_difference(run->parameters, openblas.parameters) < 1e-5);
        CHECK(relative_difference(run->predictions.data(), openblas.predictions.data()) < 1e-5);
    }
    CHECK(openblas.losses.back() < openblas.losses.front()); // it trains
    // Each library is deterministic: the same run again gives the same bits.
    CHECK(train("onednn").parameters == dnnl.parameters);
    CHECK(train("auto").parameters == automatic.parameters);
}

TEST_CASE("BRAIN_CPU_GEMM with an unknown value stops a CPU session, naming the variable and its values",
          "[plugin]") {
    ScopedEnv env("BRAIN_CPU_GEMM", std::string("fastest"));
    const brain::Dataset data(rows(8, 64, 1), rows(8, 4, 2));
    brain::Network net = wide_network();
    BRAIN_REQUIRE_ERROR(ErrorCode::InvalidArgument,
                        net.fit_with_backend(data, brain::TrainConfig{1, 8, true, 1}, TrainingBackend::cpu()),
                        "BRAIN_CPU_GEMM must be auto, openblas or onednn", "'fastest'");
}

TEST_CASE("without oneDNN the CPU plugin trains on OpenBLAS, and BRAIN_CPU_GEMM=onednn is refused naming why",
          "[plugin][cli]") {
#if BRAIN_TEST_HOOKS
    using brain::test::bin;
    using brain::test::run_process;
    brain::test::TempDir dir;
    REQUIRE(
        run_process(bin("brain") + " generate --kind xor --rows 200 --seed 3 --out train.csv", dir.path().string())
            .status == 0);
    const std::string absent = "BRAIN_CPU_TEST_ONEDNN_LIBRARY=libdnnl-absent-for-a-test.so.3 ";
    const std::string train = bin("brain") +
                              " train --csv train.csv --target y --layers 8 --epochs 2 --backend cpu "
                              "--out model.json";
    const std::string trained = brain::test::succeeded(run_process(absent + train, dir.path().string()));
    CHECK(brain::test::contains(trained, "float32 (OpenBLAS)"));
    brain::test::check_refused(run_process(absent + "BRAIN_CPU_GEMM=onednn " + train, dir.path().string()),
                               {"BRAIN_CPU_GEMM=onednn", "oneDNN is not installed",
                                "libdnnl-absent-for-a-test.so.3", "apt install libdnnl-dev"});
#else
    BRAIN_SKIP("needs the test hooks (BRAIN_TEST_HOOKS=ON) to hide oneDNN");
#endif
}
