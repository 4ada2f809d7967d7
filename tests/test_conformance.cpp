// The cross-backend conformance suite: every in-tree plugin runs the conformance kit (brain::conformance, the same
// checks brain-conformance prints) against the CPU plugin as the reference: cpu, metal (which has no device off
// Apple systems and says why), cuda where a GPU exists, and the sample plugin. The kit itself is tested too: the
// sample plugin built with each deliberate defect fails it with a message naming the feature, a crash fails only
// the check it happened in, and the broken loader plugins fail with the right reason.
//
// These cases never load a plugin in this process: the kit runs each check in a child process, and a device runtime
// initialised here (CUDA) would not survive the fork. Hence the tag [conformance] alone, a group of its own.
#include "support/catch.hpp"
#include "support/env.hpp"

#include <brain/brain.hpp>
#include <brain/conformance.hpp>
#include <brain/plugin_abi.h>
#include <charconv>
#include <cstdlib>
#include <filesystem>
#include <sstream>

namespace {

const brain::ConformanceCheck* find_check(const brain::ConformanceReport& report, const std::string& name) {
    for (const auto& c : report.checks)
        if (c.name == name) return &c;
    return nullptr;
}

// The detail of a check that must be in the report.
std::string detail_of(const brain::ConformanceReport& report, const std::string& name) {
    const auto* check = find_check(report, name);
    INFO("check " << name);
    REQUIRE(check != nullptr);
    return check->detail;
}

bool contains(const std::string& text, const std::string& fragment) {
    return text.find(fragment) != std::string::npos;
}

// Every check of the kit is listed, in the kit's order.
void require_whole_table(const brain::ConformanceReport& report) {
    const auto& names = brain::conformance_check_names();
    REQUIRE(report.checks.size() == names.size());
    for (std::size_t i = 0; i < names.size(); ++i) CHECK(report.checks[i].name == names[i]);
}

// The names of the failed checks.
std::vector<std::string> failed_checks(const brain::ConformanceReport& report) {
    std::vector<std::string> out;
    for (const auto& c : report.checks)
        if (!c.passed) out.push_back(c.name);
    return out;
}

std::string broken_plugin(const std::string& name) {
    return std::string(BRAIN_TEST_BROKEN_PLUGIN_DIR) + "/libbrain_" + name + ".so";
}

std::string sample_plugin(const std::string& variant) {
    return std::string(BRAIN_TEST_SAMPLE_PLUGIN_DIR) + "/" + variant + "/libbrain_naive.so";
}

// The in-tree plugins as the kit is asked to test them: $BRAIN_CONFORMANCE_BACKENDS ("cpu,cuda:1"), else every
// libbrain_<name>.so of the build tree's plugin directory, found by file name only (nothing is loaded here).
std::vector<std::string> in_tree_backends() {
    std::vector<std::string> out;
    if (const char* env = std::getenv("BRAIN_CONFORMANCE_BACKENDS"); env && *env) {
        std::stringstream list(env);
        for (std::string item; std::getline(list, item, ',');)
            if (!item.empty()) out.push_back(item);
        return out;
    }
    for (const auto& entry : std::filesystem::directory_iterator(BRAIN_TEST_PLUGIN_DIR)) {
        const std::string name = brain::plugin_name_from_file(entry.path());
        if (!name.empty()) out.push_back(name);
    }
    std::sort(out.begin(), out.end());
    return out;
}

// A backend without a device here (no GPU driver, Metal off Apple) fails the kit at "devices" with the plugin's
// own reason, and lists every later check as not run.
void require_no_device(const brain::ConformanceReport& report) {
    CHECK(find_check(report, "load")->passed);
    CHECK(find_check(report, "capabilities")->passed);
    CHECK(find_check(report, "resolve")->passed);
    CHECK_FALSE(find_check(report, "devices")->passed);
    CHECK(contains(detail_of(report, "parity"), "not run: no usable device"));
    require_whole_table(report);
}

} // namespace

TEST_CASE("conformance: every in-tree plugin honours the plugin contract", "[conformance]") {
    // Plugins found by file name only: the suite must hold for every plugin the build produced.
    const auto backends = in_tree_backends();
    REQUIRE(std::find(backends.begin(), backends.end(), "cpu") != backends.end());
    for (const auto& spec : backends) {
        DYNAMIC_SECTION("backend " << spec) {
            const auto colon = spec.find(':');
            const std::string name = spec.substr(0, colon);
            brain::ConformanceOptions options;
            if (colon != std::string::npos)
                std::from_chars(spec.data() + colon + 1, spec.data() + spec.size(), options.device);
            const auto report = brain::run_conformance(name, options);
            INFO(brain::format_conformance_table(report));
            if (name == "metal") {
#if defined(__APPLE__)
                BRAIN_SKIP("the Metal stub's contract is checked off Apple systems");
#else
                require_no_device(report);
                CHECK(contains(detail_of(report, "devices"), "MetalFeatureDisabled"));
                continue;
#endif
            }
            if (name == "cuda" && !find_check(report, "devices")->passed) {
                require_no_device(report);
                BRAIN_SKIP("no CUDA device here: " + detail_of(report, "devices"));
            }
            require_whole_table(report);
            for (const auto& check : report.checks) {
                INFO("check " << check.name << ": " << check.detail);
                CHECK(check.passed);
            }
            CHECK(report.passed());
        }
    }
}

TEST_CASE("conformance: the kit reports its evidence", "[conformance]") {
    const auto report = brain::run_conformance("cpu");
    INFO(brain::format_conformance_table(report));
    REQUIRE(report.passed());
    CHECK(report.path.filename() == "libbrain_cpu.so");
    // The details carry measured values, not just "ok": the ABI version and the error messages received.
    CHECK(contains(detail_of(report, "load"), "ABI " + std::to_string(BRAIN_ABI_VERSION_MAJOR) + "."));
    CHECK(contains(detail_of(report, "budget refusal"), "BudgetExceeded"));
    CHECK(contains(detail_of(report, "budget refusal"), "which opens while"));
    CHECK(contains(detail_of(report, "device 99"), "99"));
    CHECK(contains(detail_of(report, "parity adamw"), "36 cases agree"));
    CHECK(contains(detail_of(report, "doctor"), "64 MiB of host memory, not the whole budget"));
    // The CPU plugin declares float32 products only: the report lists that, and the kit saw both refused.
    CHECK(report.unsupported == std::vector<std::string>{"tf32", "bf16"});
    CHECK(contains(detail_of(report, "precision"), "tf32 not declared, refused"));
    const auto table = brain::format_conformance_table(report);
    CHECK(contains(table, "PASS  parity sgd momentum"));
    CHECK(contains(table, "outside its capabilities (refused with Unsupported, not failures): tf32, bf16"));
    CHECK(contains(table, "the plugin conforms"));
}

TEST_CASE("conformance: the sample plugin passes as shipped and against the ABI 1.0 header", "[conformance]") {
    SECTION("as shipped") {
        const auto report = brain::run_conformance_file(sample_plugin("honest"));
        INFO(brain::format_conformance_table(report));
        CHECK(report.passed());
        CHECK(report.plugin == "naive");
        CHECK(contains(detail_of(report, "load"), "ABI 1." + std::to_string(BRAIN_ABI_VERSION_MINOR)));
    }
    SECTION("built against the frozen ABI 1.0 header: loads, is taken to run the 1.0 set, and conforms") {
        const auto report = brain::run_conformance_file(sample_plugin("abi-1.0"));
        INFO(brain::format_conformance_table(report));
        CHECK(report.passed());
        CHECK(contains(detail_of(report, "load"), "ABI 1.0 (core"));
        CHECK(contains(detail_of(report, "capabilities"), "no capabilities entry (ABI 1.0): taken to run the ABI "
                                                          "1.0 set"));
        CHECK(contains(report.capabilities, "gelu"));
        CHECK(report.unsupported == std::vector<std::string>{"tf32", "bf16"});
    }
    SECTION("declaring that it lacks GELU: refuses exactly that, and conforms") {
        const auto report = brain::run_conformance_file(sample_plugin("lacksgelu"));
        INFO(brain::format_conformance_table(report));
        CHECK(report.passed());
        CHECK(report.unsupported == std::vector<std::string>{"gelu", "tf32", "bf16"});
        CHECK(contains(detail_of(report, "unsupported"), "gelu refused"));
        // The GELU cases are left out of the grid, and say so.
        CHECK(contains(detail_of(report, "parity adam"), "skipped: the plugin declares it does not run gelu"));
    }
}

TEST_CASE("conformance: each deliberate defect fails the kit with a message naming the feature", "[conformance]") {
    struct Defect {
        const char* variant;
        std::vector<std::string> failing; // exactly the checks that must fail
        const char* names;                // what each of their details must name
    };
    const Defect defects[] = {
        {"nogelu", {"parity sgd", "parity sgd momentum", "parity adam", "parity adamw"}, "activation gelu"},
        {"nosoftmax",
         {"parity sgd", "parity sgd momentum", "parity adam", "parity adamw"},
         "categorical_cross_entropy with a softmax output"},
        {"sgdnomomentum", {"parity sgd momentum"}, "ignores the momentum"},
        {"adamwnodecay", {"parity adamw"}, "ignores the weight decay"},
        {"dropsshortbatch",
         {"parity", "parity sgd", "parity sgd momentum", "parity adam", "parity adamw", "last short batch",
          "stats", "schedule"},
         "short"},
    };
    for (const Defect& defect : defects) {
        DYNAMIC_SECTION("defect " << defect.variant) {
            const auto report = brain::run_conformance_file(sample_plugin(defect.variant));
            INFO(brain::format_conformance_table(report));
            CHECK_FALSE(report.passed());
            require_whole_table(report);
            CHECK(failed_checks(report) == defect.failing);
            for (const auto& name : defect.failing) {
                INFO("check " << name);
                CHECK(contains(detail_of(report, name), defect.names));
            }
        }
    }
    SECTION("the last short batch is named as what the plugin skips") {
        const auto report = brain::run_conformance_file(sample_plugin("dropsshortbatch"));
        CHECK(contains(detail_of(report, "last short batch"), "the plugin skips the last short batch"));
        CHECK(contains(detail_of(report, "stats"), "the last, short batch of each epoch (22 rows) is missing"));
    }
}

TEST_CASE("conformance: a crash in the plugin fails only the check it happened in, naming the signal",
          "[conformance]") {
    const auto report = brain::run_conformance_file(sample_plugin("crashes"));
    INFO(brain::format_conformance_table(report));
    require_whole_table(report);
    CHECK(failed_checks(report) == std::vector<std::string>{"doctor"});
    const std::string doctor = detail_of(report, "doctor");
#if defined(__SANITIZE_ADDRESS__)
    // The sanitizers take the fault themselves and exit: the check's process ends without a signal of its own.
    CHECK((contains(doctor, "the plugin crashed during this check: SIGSEGV") ||
           contains(doctor, "the check's process ended with exit status 1 before reporting")));
#else
    CHECK(contains(doctor, "the plugin crashed during this check: SIGSEGV (segmentation fault, signal 11)"));
#endif
}

TEST_CASE("conformance: broken plugins fail the kit with the right reason", "[conformance]") {
    brain::test::ScopedEnv path("BRAIN_PLUGIN_PATH", std::string(BRAIN_TEST_BROKEN_PLUGIN_DIR));

    SECTION("a different ABI major fails at load, naming both versions") {
        const auto report = brain::run_conformance_file(broken_plugin("badabi"));
        CHECK_FALSE(report.passed());
        const auto* load = find_check(report, "load");
        REQUIRE(load != nullptr);
        CHECK_FALSE(load->passed);
        CHECK(contains(load->detail, "PluginAbiMismatch"));
        CHECK(contains(load->detail, "99."));
        CHECK(contains(load->detail,
                       std::to_string(BRAIN_ABI_VERSION_MAJOR) + "." + std::to_string(BRAIN_ABI_VERSION_MINOR)));
        // Every later check is still listed, as not run.
        require_whole_table(report);
        CHECK(contains(detail_of(report, "parity"), "not run"));
    }
    SECTION("an error code outside the ABI is named as such") {
        const auto report = brain::run_conformance_file(broken_plugin("unknowncode"));
        CHECK(find_check(report, "load")->passed);
        CHECK(contains(detail_of(report, "devices"), "unknown error code 77"));
        CHECK_FALSE(report.passed());
    }
    SECTION("a plugin whose sessions always fail fails the session checks with its own message") {
        const auto report = brain::run_conformance_file(broken_plugin("failing"));
        CHECK(find_check(report, "load")->passed);
        CHECK(find_check(report, "devices")->passed);
        CHECK_FALSE(find_check(report, "doctor")->passed);
        CHECK(contains(detail_of(report, "doctor"), "Unsupported"));
        CHECK_FALSE(find_check(report, "parity")->passed);
        CHECK(contains(detail_of(report, "parity"), "AllocationFailed"));
        CHECK(contains(detail_of(report, "parity"), "fails on purpose"));
        CHECK_FALSE(find_check(report, "budget refusal")->passed);
    }
    SECTION("a plugin claiming success without a session is caught") {
        const auto report = brain::run_conformance_file(broken_plugin("nullsession"));
        CHECK_FALSE(find_check(report, "parity")->passed);
        CHECK(contains(detail_of(report, "parity"), "PluginFailure"));
    }
}

TEST_CASE("conformance: rows arrive as each check finishes, in process or isolated", "[conformance]") {
    for (const bool isolate : {true, false}) {
        DYNAMIC_SECTION("isolate " << isolate) {
            brain::ConformanceOptions options;
            options.isolate = isolate;
            std::vector<std::string> seen;
            options.on_check = [&seen](const brain::ConformanceCheck& c) { seen.push_back(c.name); };
            // The sample plugin, run in process too: loading it here is harmless (no device runtime), and this case
            // comes last, so that every other case forks from a process that has loaded no plugin.
            brain::test::ScopedEnv path("BRAIN_PLUGIN_PATH", std::string(BRAIN_TEST_SAMPLE_PLUGIN_DIR) + "/honest");
            const auto report = brain::run_conformance_file(sample_plugin("honest"), options);
            INFO(brain::format_conformance_table(report));
            CHECK(report.passed());
            CHECK(seen == brain::conformance_check_names());
        }
    }
}
