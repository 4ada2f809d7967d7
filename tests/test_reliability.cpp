// Reliability: bad arguments to the public API, saving under SIGKILL, and concurrent predict.
#include "support/catch.hpp"
#include "support/error_match.hpp"
#include "support/numeric.hpp"

#include <atomic>
#include <brain/brain.hpp>
#include <cmath>
#include <filesystem>
#include <functional>
#include <limits>
#include <signal.h>
#include <sys/wait.h>
#include <thread>
#include <unistd.h>

using brain::Activation;
using brain::ErrorCode;
using brain::TrainingBackend;

namespace {

brain::Network small_net(std::size_t inputs = 2, std::size_t outputs = 1) {
    return brain::Network::builder()
        .input_size(inputs)
        .dense(4, Activation::Tanh)
        .dense(outputs, Activation::Linear)
        .seed(3)
        .build();
}

brain::Dataset small_data(std::size_t rows = 4, std::size_t inputs = 2, std::size_t outputs = 1) {
    brain::Matrix x(rows, inputs), y(rows, outputs);
    for (std::size_t r = 0; r < rows; ++r) {
        for (std::size_t c = 0; c < inputs; ++c) x(r, c) = static_cast<float>(r + c) * 0.25f;
        for (std::size_t c = 0; c < outputs; ++c) y(r, c) = static_cast<float>(r) * 0.5f;
    }
    return brain::Dataset(std::move(x), std::move(y));
}

struct BadCall {
    const char* what;
    ErrorCode code;
    std::function<void()> call;
    std::vector<const char*> fragments;
};

} // namespace

TEST_CASE("bad arguments to the public API each raise their code and name the value", "[core][plugin]") {
    const float nan = std::numeric_limits<float>::quiet_NaN();
    const float inf = std::numeric_limits<float>::infinity();
    const std::vector<BadCall> table = {
        {"zero-width layer", ErrorCode::InvalidArgument,
         [] { brain::Network::builder().input_size(2).dense(0, Activation::Relu).build(); }, {"0"}},
        {"zero input size", ErrorCode::InvalidArgument,
         [] { brain::Network::builder().input_size(0).dense(1, Activation::Linear).build(); }, {"0"}},
        {"batch size 0", ErrorCode::InvalidArgument,
         [] { small_net().fit(small_data(), brain::TrainConfig{1, 0, true, 1}); }, {"batch_size is 0"}},
        {"batch size larger than the data", ErrorCode::InvalidArgument,
         [] { small_net().fit(small_data(4), brain::TrainConfig{1, 10, true, 1}); },
         {"batch_size is 10", "only 4 rows"}},
        {"epochs 0", ErrorCode::InvalidArgument,
         [] { small_net().fit(small_data(), brain::TrainConfig{0, 2, true, 1}); }, {"epochs is 0"}},
        {"negative budget (wrapped)", ErrorCode::InvalidArgument,
         [] { TrainingBackend::cuda(0, static_cast<std::uint64_t>(-1)); }, {"absurd"}},
        {"zero budget for an accelerator", ErrorCode::InvalidArgument, [] { TrainingBackend::cuda(0, 0); },
         {"0 MiB"}},
        {"negative device index", ErrorCode::InvalidArgument, [] { TrainingBackend::cuda(-1, 1024); }, {"-1"}},
        {"device index that does not exist", ErrorCode::DeviceNotFound,
         [] { small_net().fit_with_backend(small_data(), brain::TrainConfig{1, 2, true, 1},
                                           TrainingBackend::plugin("cpu", 3, 0)); },
         {"3"}},
        {"mismatched input width", ErrorCode::InvalidArgument,
         [] { small_net(2).fit(small_data(4, 3), brain::TrainConfig{1, 2, true, 1}); },
         {"3 feature columns", "input size is 2"}},
        {"targets of the wrong width", ErrorCode::InvalidArgument,
         [] { small_net(2, 1).fit(small_data(4, 2, 2), brain::TrainConfig{1, 2, true, 1}); },
         {"2 target columns", "1 units"}},
        {"NaN in the data", ErrorCode::InvalidData,
         [nan] { brain::Dataset(brain::Matrix{{0, nan}}, brain::Matrix{{1}}); }, {"row"}},
        {"infinity in the targets", ErrorCode::InvalidData,
         [inf] { brain::Dataset(brain::Matrix{{0, 1}}, brain::Matrix{{inf}}); }, {"row"}},
        {"empty data set", ErrorCode::InvalidArgument,
         [] { brain::Dataset(brain::Matrix(0, 2), brain::Matrix(0, 1)); }, {"no rows"}},
        {"predict with the wrong width", ErrorCode::InvalidArgument,
         [] { small_net(2).predict(brain::Matrix{{1, 2, 3}}); }, {"3", "2"}},
        {"unknown backend name", ErrorCode::PluginNotFound,
         [] { brain::accelerator_doctor(TrainingBackend::plugin("nosuchbackend", 0, 1)); },
         {"libbrain_nosuchbackend.so"}},
        {"bad backend spec", ErrorCode::InvalidArgument, [] { TrainingBackend::parse("cuda:x", 1024); },
         {"cuda:x"}},
    };
    for (const auto& row : table) {
        DYNAMIC_SECTION(row.what) {
            const std::string message = brain::test::expect_error(row.code, row.call);
            for (const char* fragment : row.fragments) {
                INFO("message: " << message << "; expected fragment: " << fragment);
                CHECK(message.find(fragment) != std::string::npos);
            }
        }
    }
}

TEST_CASE("predict from 8 threads gives the answers of one thread", "[core][concurrency]") {
    auto net = brain::Network::builder()
                   .input_size(16)
                   .dense(64, Activation::Gelu)
                   .dense(32, Activation::Tanh)
                   .dense(3, Activation::Softmax)
                   .seed(5)
                   .build();
    brain::Matrix x(200, 16);
    brain::Random rng(1);
    for (auto& v : x.data()) v = static_cast<float>(rng.uniform(-2.0, 2.0));
    const auto expected = net.predict(x);
    std::atomic<int> mismatches{0};
    std::vector<std::thread> threads;
    for (int t = 0; t < 8; ++t)
        threads.emplace_back([&] {
            for (int i = 0; i < 20; ++i)
                if (net.predict(x).data() != expected.data()) ++mismatches;
        });
    for (auto& t : threads) t.join();
    CHECK(mismatches.load() == 0);
}

TEST_CASE("SIGKILL in the middle of save_json never leaves a broken model file", "[core][faults]") {
    const auto dir = std::filesystem::temp_directory_path() / ("brain-kill-" + std::to_string(getpid()));
    std::filesystem::create_directories(dir);
    const auto path = dir / "model.json";
    // Two distinguishable models, large enough that a save takes a while.
    const auto build = [](std::uint64_t seed) {
        return brain::Network::builder().input_size(64).dense(256, Activation::Relu).dense(8, Activation::Linear)
            .seed(seed).build();
    };
    const auto a = build(1), b = build(2);
    a.save_json(path);
    brain::Random rng(42);
    int kills = 0;
    for (int round = 0; round < 25; ++round) {
        const pid_t child = fork();
        REQUIRE(child >= 0);
        if (child == 0) {
            // The child alternates the two models forever; only SIGKILL stops it.
            for (std::uint64_t i = 0;; ++i) (i % 2 ? a : b).save_json(path);
        }
        usleep(static_cast<useconds_t>(200 + rng.below(40000 - 200 + 1)));
        kill(child, SIGKILL);
        int status = 0;
        waitpid(child, &status, 0);
        if (WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL) ++kills;
        const auto loaded = brain::Network::load_json(path); // throws if the file were torn
        const bool whole = loaded.parameters() == a.parameters() || loaded.parameters() == b.parameters();
        CHECK(whole);
    }
    CHECK(kills == 25);
    std::filesystem::remove_all(dir);
}
