// docs/guide.md's troubleshooting table lists, for every ErrorCode, the message a user sees (with … for the parts
// that vary). This test provokes every code for real and checks that the message the code prints matches the
// documented one. Codes that need a GPU are provoked on the GPU machine and skipped elsewhere.
#include "support/catch.hpp"
#include "support/env.hpp"
#include "support/gpu.hpp"
#include "cuda/hooks.hpp"

#include <brain/brain.hpp>

#include <fstream>
#include <functional>
#include <map>
#include <regex>
#include <sstream>

using brain::Activation;
using brain::ErrorCode;
using brain::TrainingBackend;
using brain::test::ScopedEnv;

namespace {

// code name -> documented message pattern, from the table under "## Troubleshooting" in docs/guide.md.
std::map<std::string, std::string> documented_messages() {
    std::ifstream in(std::string(BRAIN_TEST_DATA_DIR) + "/../../docs/guide.md");
    REQUIRE(in);
    std::map<std::string, std::string> out;
    std::string line;
    bool in_section = false;
    while (std::getline(in, line)) {
        if (line.rfind("## ", 0) == 0) in_section = line.find("Troubleshooting") != std::string::npos;
        if (!in_section || line.rfind("| `", 0) != 0) continue;
        // | `Code` | `message` | cause | what to do |
        std::vector<std::string> cells;
        std::stringstream row(line.substr(1));
        for (std::string cell; std::getline(row, cell, '|');) cells.push_back(cell);
        if (cells.size() < 2) continue;
        const auto strip = [](std::string s) {
            const auto a = s.find('`'), b = s.rfind('`');
            return (a == std::string::npos || b == a) ? std::string() : s.substr(a + 1, b - a - 1);
        };
        out[strip(cells[0])] = strip(cells[1]);
    }
    return out;
}

// The documented pattern as a regex: literal text, with … matching anything.
bool matches(const std::string& message, const std::string& pattern) {
    std::string regex;
    const std::string ellipsis = "\xE2\x80\xA6";
    for (std::size_t i = 0; i < pattern.size();) {
        if (pattern.compare(i, ellipsis.size(), ellipsis) == 0) {
            regex += "[\\s\\S]*";
            i += ellipsis.size();
            continue;
        }
        const char c = pattern[i++];
        if (std::string("\\^$.|?*+()[]{}").find(c) != std::string::npos) regex += '\\';
        regex += c;
    }
    return std::regex_match(message, std::regex(regex));
}

brain::Network tiny() { return brain::Network::builder().input_size(2).dense(1, Activation::Linear).seed(1).build(); }
brain::Dataset tiny_data() { return brain::Dataset(brain::Matrix{{0, 1}, {1, 0}}, brain::Matrix{{1}, {0}}); }

std::string message_of(ErrorCode expected, const std::function<void()>& provoke) {
    try {
        provoke();
    } catch (const brain::Error& e) {
        INFO("message: " << e.what());
        REQUIRE(brain::to_string(e.code()) == brain::to_string(expected));
        return e.what();
    }
    FAIL("provoking " << brain::to_string(expected) << " threw nothing");
    return {};
}

void check_documented(ErrorCode code, const std::function<void()>& provoke) {
    static const auto docs = documented_messages();
    const std::string name(brain::to_string(code));
    const auto it = docs.find(name);
    INFO("code " << name);
    REQUIRE(it != docs.end());
    const std::string message = message_of(code, provoke);
    INFO("printed:    " << message << "\ndocumented: " << it->second);
    CHECK(matches(message, it->second));
}

const std::string k_broken = BRAIN_TEST_BROKEN_PLUGIN_DIR;

} // namespace

TEST_CASE("the troubleshooting table documents every ErrorCode", "[core]") {
    const auto docs = documented_messages();
    std::size_t count = 0;
    const ErrorCode* codes = brain::all_error_codes(&count);
    for (std::size_t i = 0; i < count; ++i) {
        INFO("code " << brain::to_string(codes[i]));
        CHECK(docs.count(std::string(brain::to_string(codes[i]))) == 1);
    }
}

TEST_CASE("troubleshooting messages are the ones the code prints (no GPU needed)", "[plugin]") {
    check_documented(ErrorCode::InvalidArgument, [] { TrainingBackend::parse("cuda:x", 1024); });
    check_documented(ErrorCode::InvalidData, [] {
        brain::Dataset(brain::Matrix{{0, std::numeric_limits<float>::quiet_NaN()}}, brain::Matrix{{1}});
    });
    check_documented(ErrorCode::InvalidModelFile, [] { brain::Network::from_json_string("{}", "model.json"); });
    check_documented(ErrorCode::IoError, [] { brain::Network::load_json("/nonexistent/model.json"); });
    check_documented(ErrorCode::DeviceNotFound, [] {
        brain::TrainingSession(tiny(), tiny_data(), brain::TrainConfig{1, 2, true, 1},
                               TrainingBackend::plugin("cpu", 3, 0));
    });
    check_documented(ErrorCode::BudgetExceeded, [] {
        auto big = brain::Network::builder().input_size(512).dense(512, Activation::Relu).dense(1, Activation::Linear).build();
        brain::Dataset data(brain::Matrix(4, 512, 0.5f), brain::Matrix(4, 1, 1.0f));
        brain::TrainingSession(big, data, brain::TrainConfig{1, 4, true, 1}, TrainingBackend::plugin("cpu", 0, 1));
    });
    check_documented(ErrorCode::NumericalError, [] {
        auto net = brain::Network::builder().input_size(2).dense(8, Activation::Relu).dense(1, Activation::Linear)
                       .optimizer(brain::Optimizer::sgd(1e30f)).seed(1).build();
        net.fit(brain::Dataset(brain::Matrix{{1e3f, 1e3f}, {-1e3f, 1e3f}}, brain::Matrix{{1e3f}, {-1e3f}}),
                brain::TrainConfig{5, 2, false, 1});
    });
    check_documented(ErrorCode::Unsupported, [] {
        brain::TrainingSession(tiny(), tiny_data(), brain::TrainConfig{1, 2, true, 1},
                               TrainingBackend::cpu().with_precision(brain::Precision::Tf32));
    });
    check_documented(ErrorCode::InvalidState, [] {
        brain::TrainingSession session(tiny(), tiny_data(), brain::TrainConfig{1, 2, true, 1}, TrainingBackend::cpu());
        session.close();
        session.train_epoch();
    });
    check_documented(ErrorCode::FeatureDisabled, [] { brain::accelerator_doctor(TrainingBackend::metal(0, 8192)); });
    {
        ScopedEnv path("BRAIN_PLUGIN_PATH", k_broken);
        ScopedEnv only("BRAIN_PLUGIN_PATH_ONLY", std::string("1"));
        check_documented(ErrorCode::PluginNotFound, [] { brain::accelerator_doctor(TrainingBackend::cuda(0, 8192)); });
        check_documented(ErrorCode::PluginLoadFailed, [] { brain::load_plugin("baddep"); });
        check_documented(ErrorCode::PluginAbiMismatch, [] { brain::load_plugin("badabi"); });
        check_documented(ErrorCode::PluginFailure, [] {
            brain::TrainingSession(tiny(), tiny_data(), brain::TrainConfig{1, 2, true, 1},
                                   TrainingBackend::plugin("nullsession", 0, 1));
        });
    }
    if (!brain::test::driver_library_present()) {
        bool cuda_built = true;
        try {
            brain::load_plugin("cuda");
        } catch (const brain::Error&) {
            cuda_built = false;
        }
        if (cuda_built)
            check_documented(ErrorCode::DriverUnavailable,
                             [] { brain::accelerator_doctor(TrainingBackend::cuda(0, 8192)); });
    }
}

TEST_CASE("troubleshooting messages of the GPU-only codes are the ones the code prints", "[cuda]") {
    REQUIRE_GPU();
    REQUIRE_TEST_HOOKS();
    const brain::Dataset data(brain::Matrix(64, 4, 0.25f), brain::Matrix(64, 1, 0.5f));
    const auto net = [] {
        return brain::Network::builder().input_size(4).dense(16, Activation::Relu).dense(1, Activation::Linear)
            .seed(2).build();
    };
    const brain::TrainConfig config{1, 16, true, 1};
    {
        ScopedEnv fault("BRAIN_CUDA_TEST_FAULT", std::string("alloc:2"));
        check_documented(ErrorCode::AllocationFailed,
                         [&] { brain::TrainingSession(net(), data, config, TrainingBackend::cuda(0, 64)); });
    }
    {
        ScopedEnv cublas_path("BRAIN_CUDA_FUSED", std::string("0")); // GEMMs are the cuBLAS path's
        ScopedEnv fault("BRAIN_CUDA_TEST_FAULT", std::string("gemm:1"));
        check_documented(ErrorCode::GemmFailed, [&] {
            auto n = net();
            n.fit_with_backend(data, config, TrainingBackend::cuda(0, 64));
        });
    }
    {
        ScopedEnv fault("BRAIN_CUDA_TEST_FAULT", std::string("device:3"));
        check_documented(ErrorCode::DeviceFailure, [&] {
            auto n = net();
            n.fit_with_backend(data, config, TrainingBackend::cuda(0, 64));
        });
    }
    {
        ScopedEnv broken("BRAIN_CUDA_TEST_KERNEL_SUFFIX", std::string("this is not CUDA C++"));
        ScopedEnv cache("BRAIN_CUDA_CACHE_DIR", std::string("off"));
        check_documented(ErrorCode::KernelCompileFailed, [&] {
            auto n = net();
            n.fit_with_backend(data, config, TrainingBackend::cuda(0, 64));
        });
    }
}
