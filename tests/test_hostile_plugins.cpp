// Plugins that load but misbehave (tests/plugins/hostile_plugin.c, throwing_plugin.cpp): text without a NUL, huge
// or unprintable text, impossible counts, exceptions out of every kind of entry. Each is refused or escaped with
// PluginFailure naming the plugin, and the process, the other plugins and the listing carry on.
#include "support/catch.hpp"
#include "support/env.hpp"
#include "support/error_match.hpp"
#include "support/tempdir.hpp"

#include <algorithm>
#include <brain/brain.hpp>
#include <chrono>
#include <cstddef>
#include <filesystem>
#include <string>
#include <sys/stat.h>
#include <unistd.h>

using brain::ErrorCode;
using brain::PluginRecord;
using brain::TrainingBackend;
using brain::test::ScopedEnv;

namespace fs = std::filesystem;

namespace {

const std::string k_hostile_dir = BRAIN_TEST_HOSTILE_PLUGIN_DIR;

brain::Network tiny_network() {
    return brain::Network::builder().input_size(2).dense(1, brain::Activation::Linear).seed(1).build();
}

brain::Dataset tiny_data() {
    return brain::Dataset(brain::Matrix{{0, 1}, {1, 0}}, brain::Matrix{{1}, {0}});
}

brain::TrainingSession open_session(const std::string& plugin) {
    return brain::TrainingSession(tiny_network(), tiny_data(), brain::TrainConfig{1, 2, false, 1},
                                  TrainingBackend::plugin(plugin, 0, 0));
}

PluginRecord find(const std::vector<PluginRecord>& records, const std::string& name) {
    const auto it = std::find_if(records.begin(), records.end(), [&](const auto& r) { return r.name == name; });
    REQUIRE(it != records.end());
    return *it;
}

// True when `text` holds no control byte and no byte that is not UTF-8: it prints as it reads.
bool printable(const std::string& text) {
    for (std::size_t i = 0; i < text.size(); ++i) {
        const auto c = static_cast<unsigned char>(text[i]);
        if (c < 0x20 || c == 0x7F || c == 0xFF || c == 0xFE) return false;
        if (c == 0xC2 && i + 1 < text.size() && static_cast<unsigned char>(text[i + 1]) < 0xA0) return false;
    }
    return true;
}

bool has(const std::string& text, const std::string& part) {
    return text.find(part) != std::string::npos;
}

} // namespace

TEST_CASE("plugin text is read with a bound and escaped before anyone sees it", "[plugin]") {
    ScopedEnv path("BRAIN_PLUGIN_PATH", k_hostile_dir);
    ScopedEnv only("BRAIN_PLUGIN_PATH_ONLY", std::string("1"));
    const auto records = brain::discover_plugins();

    SECTION("a message without a NUL before unreadable memory is cut there, not read past") {
        const auto r = find(records, "unterminated");
        CHECK(r.ok);
        CHECK(has(r.device_status, "unterminated message from the hostile plugin"));
        CHECK(has(r.device_status, "no terminating NUL"));
    }
    SECTION("a 4 MiB message is cut at 4096 bytes, saying so") {
        const auto r = find(records, "longmessage");
        CHECK(has(r.device_status, "LLLL"));
        CHECK(has(r.device_status, "cut at 4096 bytes"));
        CHECK(r.device_status.size() < 4096 + 200);
    }
    SECTION("escapes, line breaks, C1 controls and bytes that are not UTF-8 are written as escapes") {
        const auto r = find(records, "controltext");
        for (const std::string* text : {&r.version, &r.description, &r.device_status, &r.capabilities.notes}) {
            INFO(*text);
            CHECK(printable(*text));
        }
        CHECK(has(r.version, "\\x1B[31m6.6.6\\xFF\\x1B[0m"));
        CHECK(r.description == "line1\\nline2\\r\\x1B[2K");
        CHECK(has(r.device_status, "\\x1B[31mred\\x1B[0m\\r\\n\\tline2 \\xC2\\x9B2J \\xFF\\xFE end"));
        CHECK(has(r.capabilities.notes, "notes: \\x1B[31mred"));
    }
    SECTION("a device report's name without a NUL and a revision with escapes") {
        const auto report = brain::accelerator_doctor(TrainingBackend::plugin("controltext", 0, 64));
        REQUIRE(report);
        CHECK(report->name == std::string(256, 'N'));
        CHECK(report->revision == "\\x1B[2J\\xFF");
        CHECK(printable(report->notes));
    }
}

TEST_CASE("an exception escaping any plugin entry is PluginFailure naming the plugin and the call", "[plugin]") {
    ScopedEnv path("BRAIN_PLUGIN_PATH", k_hostile_dir);
    ScopedEnv only("BRAIN_PLUGIN_PATH_ONLY", std::string("1"));

    SECTION("at load: the entry point, initialize (also a thrown int), capabilities") {
        BRAIN_REQUIRE_ERROR(ErrorCode::PluginFailure, brain::load_plugin("throwentry"), "plugin \"throwentry\"",
                            "stage abi", "escape from its brain_plugin_get_api call", "std::runtime_error",
                            "brain_plugin_get_api threw on purpose");
        BRAIN_REQUIRE_ERROR(ErrorCode::PluginFailure, brain::load_plugin("throwinit"), "failed to initialise",
                            "escape from its initialize call", "initialize threw on purpose");
        BRAIN_REQUIRE_ERROR(ErrorCode::PluginFailure, brain::load_plugin("throwint"), "an exception (int)",
                            "escape from its initialize call", "brain::sdk::guard");
        BRAIN_REQUIRE_ERROR(ErrorCode::PluginFailure, brain::load_plugin("throwcaps"),
                            "escape from its capabilities call");
    }
    SECTION("device_count and error_message, in discovery and in a session over every device") {
        const auto records = brain::discover_plugins();
        CHECK(has(find(records, "throwcount").device_status, "escape from its device_count call"));
        CHECK(has(find(records, "throwmessage").device_status, "escape from its error_message call"));
        CHECK(find(records, "throwint").stage == brain::PluginStage::Initialize);
        BRAIN_REQUIRE_ERROR(ErrorCode::PluginFailure,
                            brain::TrainingSession(tiny_network(), tiny_data(), brain::TrainConfig{1, 2, false, 1},
                                                   TrainingBackend::parse("throwcount:all", 0)),
                            "plugin \"throwcount\"", "device_count");
    }
    SECTION("probe, session_open, session_train_epoch; the session is closed after the failed call") {
        BRAIN_REQUIRE_ERROR(ErrorCode::PluginFailure,
                            brain::accelerator_doctor(TrainingBackend::plugin("throwprobe", 0, 64)),
                            "escape from its probe call", "probe threw on purpose");
        BRAIN_REQUIRE_ERROR(ErrorCode::PluginFailure, open_session("throwopen"),
                            "escape from its session_open call");
        auto session = open_session("throwtrain");
        BRAIN_REQUIRE_ERROR(ErrorCode::PluginFailure, session.train_epoch(),
                            "escape from its session_train_epoch call");
        CHECK_FALSE(session.is_open());
        BRAIN_REQUIRE_ERROR(ErrorCode::InvalidState, session.train_epoch(), "train_epoch failed (PluginFailure)");
    }
    SECTION("session_close, which never fails: the exception is logged and the process goes on") {
        {
            auto session = open_session("throwclose");
            CHECK(session.train_epoch() == 0.5f);
        }
        auto session = open_session("throwclose");
        session.close();
        CHECK_FALSE(session.is_open());
    }
}

TEST_CASE("impossible device counts and stats are refused before anything is sized by them", "[plugin]") {
    ScopedEnv path("BRAIN_PLUGIN_PATH", k_hostile_dir);
    ScopedEnv only("BRAIN_PLUGIN_PATH_ONLY", std::string("1"));

    SECTION("2^31 - 1 devices for x:all, at once") {
        const auto start = std::chrono::steady_clock::now();
        BRAIN_REQUIRE_ERROR(ErrorCode::PluginFailure,
                            brain::TrainingSession(tiny_network(), tiny_data(), brain::TrainConfig{1, 2, false, 1},
                                                   TrainingBackend::parse("manydevices:all", 0)),
                            "plugin \"manydevices\" reported 2147483647 devices", "0 to 4096");
        CHECK(std::chrono::steady_clock::now() - start < std::chrono::seconds(5));
    }
    SECTION("a negative count is not taken for 'unknown'") {
        const auto r = find(brain::discover_plugins(), "negativedevices");
        CHECK(r.device_count == 0);
        CHECK(r.stage == brain::PluginStage::Devices);
        CHECK(has(r.device_status, "reported -5 devices"));
    }
    SECTION("stats claiming 2^32 - 1 devices for a session on one") {
        auto session = open_session("statsdevices");
        CHECK(session.train_epoch() == 0.5f);
        BRAIN_REQUIRE_ERROR(ErrorCode::PluginFailure, session.stats(), "plugin \"statsdevices\"",
                            "stats for 4294967295 devices", "trains on 1");
        BRAIN_REQUIRE_ERROR(ErrorCode::PluginFailure, session.device_stats(), "4294967295 devices");
    }
}

TEST_CASE("a plugin that failed to load is not initialised again", "[plugin]") {
    ScopedEnv path("BRAIN_PLUGIN_PATH", k_hostile_dir);
    ScopedEnv only("BRAIN_PLUGIN_PATH_ONLY", std::string("1"));
    for (int attempt = 0; attempt < 3; ++attempt)
        BRAIN_REQUIRE_ERROR(ErrorCode::DriverUnavailable, brain::load_plugin("initcounts"), "failed to initialise",
                            "initialize call 1 refused");
    const auto r = find(brain::discover_plugins(), "initcounts");
    CHECK_FALSE(r.ok);
    CHECK(r.stage == brain::PluginStage::Initialize);
    CHECK(has(r.message, "initialize call 1 refused"));
}

TEST_CASE("probe reports, capabilities and tables are taken for what they really hold", "[plugin]") {
    ScopedEnv path("BRAIN_PLUGIN_PATH", k_hostile_dir);
    ScopedEnv only("BRAIN_PLUGIN_PATH_ONLY", std::string("1"));

    SECTION("a probe that writes nothing reports unknown memory, not zeros") {
        const auto report = brain::accelerator_doctor(TrainingBackend::plugin("probeunfilled", 0, 64));
        REQUIRE(report);
        CHECK(report->total_memory_mib == -1);
        CHECK_FALSE(report->free_memory_mib.has_value());
    }
    SECTION("memory above 1 PiB is impossible") {
        BRAIN_REQUIRE_ERROR(ErrorCode::PluginFailure,
                            brain::accelerator_doctor(TrainingBackend::plugin("probehuge", 0, 64)),
                            "impossible device report", "total_memory_mib (above 1 PiB)");
    }
    SECTION("feature bits without the entries that serve them are not offered") {
        const auto caps = brain::plugin_capabilities("bitsonly");
        CHECK_FALSE(caps.offers(BRAIN_FEATURE_STEP_LEARNING_RATES));
        CHECK_FALSE(caps.offers(BRAIN_FEATURE_PREDICT));
        CHECK_FALSE(caps.offers(BRAIN_FEATURE_PREDICT_CHECKS_INPUTS));
        CHECK(caps.offers(BRAIN_FEATURE_BATCH_SOURCE)); // a field of the session, not an entry
        CHECK(caps.offers(BRAIN_FEATURE_MULTI_DEVICE));
    }
    SECTION("a table that ends before a required entry is too short, not 'missing'") {
        const std::string size = "struct_size " + std::to_string(offsetof(brain_plugin_api, session_stats));
        BRAIN_REQUIRE_ERROR(ErrorCode::PluginAbiMismatch, brain::load_plugin("shorttable"),
                            "its function table is too short", size.c_str(),
                            "ends before the required field session_stats");
    }
}

TEST_CASE("backend names follow one rule, and files whose name breaks it are listed as skipped", "[plugin]") {
    brain::test::TempDir dir;
    const fs::path plugin = fs::path(k_hostile_dir) / "libbrain_bitsonly.so";
    const std::string long_name(65, 'a');
    for (const std::string name : {"UPPER", "a.b", "sp ace", "", long_name.c_str()})
        fs::copy_file(plugin, dir / ("libbrain_" + name + ".so"));
    fs::copy_file(plugin, dir / "libbrain_bitsonly.so");
    ScopedEnv path("BRAIN_PLUGIN_PATH", dir.path().string());
    ScopedEnv only("BRAIN_PLUGIN_PATH_ONLY", std::string("1"));

    const auto records = brain::discover_plugins();
    CHECK(find(records, "bitsonly").ok);
    for (const std::string name : {"UPPER", "a.b", "sp ace", "", long_name.c_str()}) {
        INFO("libbrain_" << name << ".so");
        const auto r = find(records, name);
        CHECK(r.selection == PluginRecord::Selection::Skipped);
        CHECK_FALSE(r.ok);
        CHECK(has(r.message, "which no backend can have"));
        CHECK(has(r.message, "1 to 64 lower-case letters, digits, '_' and '-'"));
    }
    CHECK(has(find(records, "UPPER").message, "the character 'U'"));
    CHECK(has(find(records, "").message, "it is empty"));
    CHECK(has(find(records, long_name).message, "65 bytes long"));

    BRAIN_REQUIRE_ERROR(ErrorCode::InvalidArgument, TrainingBackend::parse("UPPER:0", 0), "'UPPER'",
                        "the character 'U'", "1 to 64 lower-case letters");
    BRAIN_REQUIRE_ERROR(ErrorCode::InvalidArgument, TrainingBackend::parse(long_name + ":0", 0), "65 bytes long",
                        "1 to 64");
    BRAIN_REQUIRE_ERROR(ErrorCode::InvalidArgument, brain::load_plugin("UPPER"), "cannot name a plugin");
    BRAIN_REQUIRE_ERROR(ErrorCode::PluginLoadFailed, brain::load_plugin_file(dir / "libbrain_a.b.so"),
                        "does not name a backend", "the character '.'");
}

TEST_CASE("a plugin file that cannot be read says why", "[plugin]") {
    if (::geteuid() == 0) BRAIN_SKIP("running as root, which reads any file whatever its permissions");
    brain::test::TempDir dir;
    fs::copy_file(fs::path(k_hostile_dir) / "libbrain_bitsonly.so", dir / "libbrain_unreadable.so");
    ::chmod((dir / "libbrain_unreadable.so").c_str(), 0);
    ScopedEnv path("BRAIN_PLUGIN_PATH", dir.path().string());
    ScopedEnv only("BRAIN_PLUGIN_PATH_ONLY", std::string("1"));
    BRAIN_REQUIRE_ERROR(ErrorCode::PluginLoadFailed, brain::load_plugin("unreadable"), "stage open",
                        "cannot be opened for reading (Permission denied)");
}
