// The plugin loader: search order, and a precise error (file, stage, reason) for every broken plugin.
#include "support/catch.hpp"
#include "support/env.hpp"
#include "support/error_match.hpp"

#include <brain/brain.hpp>

#include <algorithm>
#include <filesystem>

using brain::ErrorCode;
using brain::TrainingBackend;
using brain::test::ScopedEnv;

namespace {

const std::string k_broken_dir = BRAIN_TEST_BROKEN_PLUGIN_DIR;

brain::Network tiny_network() {
    return brain::Network::builder().input_size(2).dense(1, brain::Activation::Linear).seed(1).build();
}

brain::Dataset tiny_data() { return brain::Dataset(brain::Matrix{{0, 1}, {1, 0}}, brain::Matrix{{1}, {0}}); }

} // namespace

TEST_CASE("search path: BRAIN_PLUGIN_PATH first, then beside the core, never the current directory", "[core]") {
    ScopedEnv path("BRAIN_PLUGIN_PATH", std::string("/nonexistent/a::/nonexistent/b"));
    ScopedEnv only("BRAIN_PLUGIN_PATH_ONLY", std::nullopt);
    const auto dirs = brain::plugin_search_paths();
    REQUIRE(dirs.size() >= 3);
    CHECK(dirs[0] == "/nonexistent/a");
    CHECK(dirs[1] == "/nonexistent/b");
    CHECK(dirs[2].filename() == "plugins");
    CHECK(dirs[2].parent_path().filename() == "brain");
    for (const auto& d : dirs) CHECK(d != std::filesystem::path("."));
}

TEST_CASE("cuda(...) without the plugin names the file, the directories searched and how to build it", "[core]") {
    ScopedEnv path("BRAIN_PLUGIN_PATH", std::string("/nonexistent/plugins"));
    ScopedEnv only("BRAIN_PLUGIN_PATH_ONLY", std::string("1"));
    BRAIN_REQUIRE_ERROR(ErrorCode::PluginNotFound, brain::accelerator_doctor(TrainingBackend::cuda(0, 8192)),
                        "backend \"cuda\" is not available: libbrain_cuda.so was not found",
                        "searched: /nonexistent/plugins", "-DBRAIN_BUILD_CUDA_PLUGIN=ON", "BRAIN_PLUGIN_PATH");
    auto net = tiny_network();
    const auto before = net.parameters();
    BRAIN_REQUIRE_ERROR(ErrorCode::PluginNotFound,
                        net.fit_with_backend(tiny_data(), brain::TrainConfig{1, 2, false, 1},
                                             TrainingBackend::cuda(0, 8192)),
                        "libbrain_cuda.so was not found");
    CHECK(net.parameters() == before); // nothing changed, nothing ran on the CPU instead
}

TEST_CASE("broken plugins are refused with file, stage and reason", "[core]") {
    ScopedEnv path("BRAIN_PLUGIN_PATH", k_broken_dir);
    ScopedEnv only("BRAIN_PLUGIN_PATH_ONLY", std::string("1"));

    SECTION("no entry symbol") {
        BRAIN_REQUIRE_ERROR(ErrorCode::PluginLoadFailed, brain::load_plugin("nosymbol"), "libbrain_nosymbol.so",
                            "stage symbol", "does not export brain_plugin_get_api");
    }
    SECTION("wrong ABI major names both versions") {
        BRAIN_REQUIRE_ERROR(ErrorCode::PluginAbiMismatch, brain::load_plugin("badabi"), "libbrain_badabi.so",
                            "stage abi", "built against ABI 99.", "this core speaks ABI 1.");
    }
    SECTION("a required function left null is named") {
        BRAIN_REQUIRE_ERROR(ErrorCode::PluginAbiMismatch, brain::load_plugin("nullfn"),
                            "required function session_stats is missing");
    }
    SECTION("entry point returning NULL") {
        BRAIN_REQUIRE_ERROR(ErrorCode::PluginLoadFailed, brain::load_plugin("nulltable"), "returned NULL");
    }
    SECTION("a dependency that does not resolve gives the dynamic loader's own message") {
        BRAIN_REQUIRE_ERROR(ErrorCode::PluginLoadFailed, brain::load_plugin("baddep"), "libbrain_baddep.so",
                            "stage open", "libbrain_test_missing_dependency.so",
                            "cannot open shared object file");
    }
    SECTION("not a shared library") {
        BRAIN_REQUIRE_ERROR(ErrorCode::PluginLoadFailed, brain::load_plugin("notelf"), "libbrain_notelf.so",
                            "stage open");
    }
    SECTION("a truncated file") {
        BRAIN_REQUIRE_ERROR(ErrorCode::PluginLoadFailed, brain::load_plugin("truncated"), "libbrain_truncated.so",
                            "stage open");
    }
    SECTION("a file whose plugin calls itself something else") {
        BRAIN_REQUIRE_ERROR(ErrorCode::PluginLoadFailed, brain::load_plugin("wrongname"),
                            "named for backend \"wrongname\"", "calls itself \"other\"");
    }
    SECTION("initialisation failure keeps the plugin's code and reason") {
        BRAIN_REQUIRE_ERROR(ErrorCode::DriverUnavailable, brain::load_plugin("initfails"), "failed to initialise",
                            "initialisation refused on purpose");
    }
    SECTION("errors returned by a plugin's calls reach the caller with their code and message") {
        BRAIN_REQUIRE_ERROR(ErrorCode::Unsupported,
                            brain::accelerator_doctor(TrainingBackend::plugin("failing", 0, 64)),
                            "probe is not implemented");
        BRAIN_REQUIRE_ERROR(ErrorCode::AllocationFailed,
                            brain::TrainingSession(tiny_network(), tiny_data(), brain::TrainConfig{1, 2, false, 1},
                                                   TrainingBackend::plugin("failing", 0, 64)),
                            "session_open fails on purpose");
    }
    SECTION("malformed results: success without a session, an unknown error code") {
        BRAIN_REQUIRE_ERROR(ErrorCode::PluginFailure,
                            brain::TrainingSession(tiny_network(), tiny_data(), brain::TrainConfig{1, 2, false, 1},
                                                   TrainingBackend::plugin("nullsession", 0, 64)),
                            "returned no session");
        const auto records = brain::discover_plugins();
        const auto it = std::find_if(records.begin(), records.end(), [](const auto& r) { return r.name == "unknowncode"; });
        REQUIRE(it != records.end());
        CHECK(it->ok);
        CHECK(it->device_count == 0);
        CHECK(it->device_status.find("unknown error code 77") != std::string::npos);
    }
}

TEST_CASE("discovery reports every broken plugin without throwing", "[core]") {
    ScopedEnv path("BRAIN_PLUGIN_PATH", k_broken_dir);
    ScopedEnv only("BRAIN_PLUGIN_PATH_ONLY", std::string("1"));
    const auto records = brain::discover_plugins();
    const auto find = [&](const std::string& name) {
        const auto it = std::find_if(records.begin(), records.end(), [&](const auto& r) { return r.name == name; });
        REQUIRE(it != records.end());
        return *it;
    };
    CHECK(find("nosymbol").stage == brain::PluginStage::Symbol);
    CHECK_FALSE(find("nosymbol").ok);
    CHECK(find("badabi").stage == brain::PluginStage::Abi);
    CHECK(find("badabi").abi_major == 99u);
    CHECK(find("baddep").stage == brain::PluginStage::Open);
    CHECK(find("initfails").stage == brain::PluginStage::Initialize);
    CHECK(find("failing").ok);
    CHECK(find("failing").device_count == 1);
}

TEST_CASE("a broken plugin does not disturb other backends", "[plugin]") {
    {
        ScopedEnv path("BRAIN_PLUGIN_PATH", k_broken_dir);
        ScopedEnv only("BRAIN_PLUGIN_PATH_ONLY", std::string("1"));
        CHECK_THROWS_AS(brain::load_plugin("baddep"), brain::Error);
        CHECK_THROWS_AS(brain::load_plugin("badabi"), brain::Error);
    }
    ScopedEnv only("BRAIN_PLUGIN_PATH_ONLY", std::nullopt);
    auto net = tiny_network();
    const auto report = net.fit(tiny_data(), brain::TrainConfig{2, 2, false, 1});
    CHECK(report.epoch_losses.size() == 2);
    CHECK(brain::load_plugin("cpu").ok);
}
