// The cross-backend conformance suite: every plugin with a device runs the conformance kit (brain::conformance,
// the same checks brain-conformance prints), against the CPU plugin as the reference. Backends:
// $BRAIN_CONFORMANCE_BACKENDS (e.g. "cpu,cuda:0"), else the CPU plus every discovered plugin that reports a
// device. The kit itself is tested too: the deliberately broken plugins must fail it with the right reason.
#include "support/catch.hpp"
#include "support/env.hpp"

#include <brain/brain.hpp>
#include <brain/conformance.hpp>
#include <brain/plugin_abi.h>
#include <charconv>
#include <cstdlib>
#include <sstream>

namespace {

// The checks the kit must always report, whatever the plugin.
const std::vector<std::string> k_required_checks = {
    "load",      "resolve",          "devices",         "doctor",          "parity",
    "stats",     "peak in estimate", "checkpoint",      "schedule",        "closed session",  "budget refusal",
    "device 99", "invalid argument", "use after error", "numerical error", "precision",
};

std::vector<std::string> conformance_backends(std::vector<std::string>* skipped) {
    std::vector<std::string> out;
    if (const char* env = std::getenv("BRAIN_CONFORMANCE_BACKENDS"); env && *env) {
        std::stringstream list(env);
        for (std::string item; std::getline(list, item, ',');)
            if (!item.empty()) out.push_back(item);
        return out;
    }
    out.push_back("cpu");
    for (const auto& record : brain::discover_plugins()) {
        if (record.name == "cpu") continue;
        if (record.ok && record.device_count > 0)
            out.push_back(record.name + ":0");
        else if (skipped)
            skipped->push_back(record.name + ": " + (record.ok ? record.device_status : record.message));
    }
    return out;
}

const brain::ConformanceCheck* find_check(const brain::ConformanceReport& report, const std::string& name) {
    for (const auto& c : report.checks)
        if (c.name == name) return &c;
    return nullptr;
}

std::string broken_plugin(const std::string& name) {
    return std::string(BRAIN_TEST_BROKEN_PLUGIN_DIR) + "/libbrain_" + name + ".so";
}

} // namespace

TEST_CASE("conformance: every backend honours the plugin contract", "[conformance][plugin]") {
    std::vector<std::string> skipped;
    const auto backends = conformance_backends(&skipped);
    for (const auto& reason : skipped) WARN("conformance skips " << reason);

    for (const auto& spec : backends) {
        DYNAMIC_SECTION("backend " << spec) {
            const auto colon = spec.find(':');
            brain::ConformanceOptions options;
            if (colon != std::string::npos)
                std::from_chars(spec.data() + colon + 1, spec.data() + spec.size(), options.device);
            const auto report = brain::run_conformance(spec.substr(0, colon), options);
            INFO(brain::format_conformance_table(report));
            for (const auto& name : k_required_checks) {
                const auto* check = find_check(report, name);
                INFO("check " << name);
                REQUIRE(check != nullptr);
                INFO(check->detail);
                CHECK(check->passed);
            }
            CHECK(report.passed());
        }
    }
}

TEST_CASE("conformance: the kit reports its evidence", "[conformance][plugin]") {
    const auto report = brain::run_conformance("cpu");
    REQUIRE(report.passed());
    CHECK(report.path.filename() == "libbrain_cpu.so");
    // The details carry measured values, not just "ok": the ABI version and the error messages received.
    CHECK(find_check(report, "load")->detail.find("ABI " + std::to_string(BRAIN_ABI_VERSION_MAJOR) + ".") !=
          std::string::npos);
    CHECK(find_check(report, "budget refusal")->detail.find("BudgetExceeded") != std::string::npos);
    CHECK(find_check(report, "device 99")->detail.find("99") != std::string::npos);
    const auto table = brain::format_conformance_table(report);
    CHECK(table.find("PASS  parity") != std::string::npos);
    CHECK(table.find("the plugin conforms") != std::string::npos);
}

TEST_CASE("conformance: broken plugins fail the kit with the right reason", "[conformance][plugin]") {
    brain::test::ScopedEnv path("BRAIN_PLUGIN_PATH", std::string(BRAIN_TEST_BROKEN_PLUGIN_DIR));

    SECTION("a different ABI major fails at load, naming both versions") {
        const auto report = brain::run_conformance_file(broken_plugin("badabi"));
        CHECK_FALSE(report.passed());
        const auto* load = find_check(report, "load");
        REQUIRE(load != nullptr);
        CHECK_FALSE(load->passed);
        CHECK(load->detail.find("PluginAbiMismatch") != std::string::npos);
        CHECK(load->detail.find("99.") != std::string::npos);
        CHECK(load->detail.find(std::to_string(BRAIN_ABI_VERSION_MAJOR) + "." +
                                std::to_string(BRAIN_ABI_VERSION_MINOR)) != std::string::npos);
        // Every later check is still listed, as not run.
        for (const auto& name : k_required_checks) REQUIRE(find_check(report, name) != nullptr);
        CHECK(find_check(report, "parity")->detail.find("not run") != std::string::npos);
    }
    SECTION("an error code outside the ABI is named as such") {
        const auto report = brain::run_conformance_file(broken_plugin("unknowncode"));
        CHECK(find_check(report, "load")->passed);
        const auto* devices = find_check(report, "devices");
        REQUIRE(devices != nullptr);
        CHECK_FALSE(devices->passed);
        CHECK(devices->detail.find("unknown error code 77") != std::string::npos);
        CHECK_FALSE(report.passed());
    }
    SECTION("a plugin whose sessions always fail fails the session checks with its own message") {
        const auto report = brain::run_conformance_file(broken_plugin("failing"));
        CHECK(find_check(report, "load")->passed);
        CHECK(find_check(report, "devices")->passed);
        const auto* doctor = find_check(report, "doctor");
        CHECK_FALSE(doctor->passed);
        CHECK(doctor->detail.find("Unsupported") != std::string::npos);
        const auto* parity = find_check(report, "parity");
        CHECK_FALSE(parity->passed);
        CHECK(parity->detail.find("AllocationFailed") != std::string::npos);
        CHECK(parity->detail.find("fails on purpose") != std::string::npos);
        CHECK_FALSE(find_check(report, "budget refusal")->passed);
    }
    SECTION("a plugin claiming success without a session is caught") {
        const auto report = brain::run_conformance_file(broken_plugin("nullsession"));
        const auto* parity = find_check(report, "parity");
        CHECK_FALSE(parity->passed);
        CHECK(parity->detail.find("PluginFailure") != std::string::npos);
    }
}
