// `brain plugins` and `brain train` beside misbehaving plugins and misnamed plugin files: the listing escapes what
// plugins say, reports each failure and still lists the healthy plugins; warnings are printed once.
#include "support/catch.hpp"
#include "support/cli.hpp"
#include "support/process.hpp"
#include "support/tempdir.hpp"

#include <filesystem>
#include <string>
#include <unistd.h>

namespace fs = std::filesystem;

using brain::test::bin;
using brain::test::contains;
using brain::test::shell_quote;
using brain::test::TempDir;

namespace {

const std::string k_hostile_dir = BRAIN_TEST_HOSTILE_PLUGIN_DIR;

// `command` under BRAIN_PLUGIN_PATH=`dir` (the build tree's plugins still searched after it), within 60 seconds.
brain::test::ProcessResult run_with_plugins(const std::string& dir, const std::string& command) {
    brain::test::ProcessLimits limits;
    limits.timeout_seconds = 60;
    return brain::test::run_process("BRAIN_PLUGIN_PATH=" + shell_quote(dir) + " BRAIN_PLUGIN_PATH_ONLY= " + command,
                                    "", limits);
}

std::size_t count(const std::string& text, const std::string& part) {
    std::size_t n = 0;
    for (auto at = text.find(part); at != std::string::npos; at = text.find(part, at + part.size())) ++n;
    return n;
}

} // namespace

TEST_CASE("brain plugins lists hostile plugins escaped and refused, and the healthy ones beside them", "[cli]") {
    const auto r = run_with_plugins(k_hostile_dir, bin("brain") + " plugins");
    INFO(r.output);
    REQUIRE_FALSE(r.timed_out);
    REQUIRE(r.status == 0);
    CHECK(contains(r.output, "cpu  [ok]"));
    // Exceptions out of a plugin: a failure naming the entry, never the end of the listing.
    CHECK(contains(r.output, "throwint  [failed]"));
    CHECK(contains(r.output, "an exception (int) escape from its initialize call"));
    CHECK(contains(r.output, "escape from its device_count call"));
    // Impossible counts are refused naming the value.
    CHECK(contains(r.output, "reported 2147483647 devices from device_count"));
    CHECK(contains(r.output, "reported -5 devices from device_count"));
    // Plugin text arrives escaped: no escape sequence, carriage return or byte that is not UTF-8 reaches the
    // terminal.
    CHECK_FALSE(contains(r.output, "\x1b"));
    CHECK_FALSE(contains(r.output, "\r"));
    CHECK_FALSE(contains(r.output, "\xff"));
    CHECK(contains(r.output, "about:   line1\\nline2\\r\\x1B[2K\n"));
    // Only features whose entries the table has.
    CHECK(contains(r.output, "offers:  streamed data sets, data parallelism\n"));
}

TEST_CASE("brain plugins reports files whose name no backend can have as skipped", "[cli]") {
    TempDir dir;
    for (const std::string name : {"UPPER", "a.b", "sp ace", ""})
        fs::copy_file(fs::path(k_hostile_dir) / "libbrain_bitsonly.so", dir / ("libbrain_" + name + ".so"));
    const auto r = run_with_plugins(dir.path().string(), bin("brain") + " plugins");
    INFO(r.output);
    REQUIRE(r.status == 0);
    for (const char* heading :
         {"UPPER  [skipped]", "a.b  [skipped]", "sp ace  [skipped]", "libbrain_.so  [skipped]"})
        CHECK(contains(r.output, heading));
    CHECK(count(r.output, "which no backend can have") == 4);
    CHECK_FALSE(contains(r.output, "(used for backend UPPER)"));
    CHECK(contains(r.output, "cpu  [ok]"));

    const auto train = run_with_plugins(dir.path().string(), bin("brain") + " doctor --backend UPPER:0");
    INFO(train.output);
    CHECK(train.status != 0);
    CHECK(contains(train.output, "the character 'U'"));
    CHECK(contains(train.output, "1 to 64 lower-case letters, digits, '_' and '-'"));
}

TEST_CASE("brain train warns once about an entry on the plugin path that is not a plugin file", "[cli]") {
    TempDir dir;
    fs::create_directories(dir / "plugins" / "libbrain_cpu.so");
    REQUIRE(brain::test::run_process(
                bin("brain") + " generate --kind xor --rows 64 --seed 3 --out " + dir.q("xor.csv"), "")
                .status == 0);
    const auto r = run_with_plugins((dir / "plugins").string(),
                                    bin("brain") + " train --csv " + dir.q("xor.csv") +
                                        " --target y --layers 4 --epochs 1 --batch 16 --backend cpu --out " +
                                        dir.q("model.json"));
    INFO(r.output);
    REQUIRE(r.status == 0);
    CHECK(count(r.output, "is a directory") == 1);
}

TEST_CASE("brain plugins says why a plugin file cannot be read", "[cli]") {
    TempDir dir;
    fs::copy_file(fs::path(k_hostile_dir) / "libbrain_bitsonly.so", dir / "libbrain_unreadable.so");
    fs::permissions(dir / "libbrain_unreadable.so", fs::perms::none);
    // Root reads any file: the command then runs as nobody, for whom the permissions hold.
    std::string as_user;
    if (::geteuid() == 0) {
        if (!fs::exists("/usr/sbin/runuser") && !fs::exists("/sbin/runuser"))
            BRAIN_SKIP("running as root without runuser to drop to another user");
        as_user = "runuser -u nobody -- ";
    }
    const auto r = run_with_plugins(dir.path().string(), as_user + bin("brain") + " plugins");
    INFO(r.output);
    REQUIRE(r.status == 0);
    CHECK(contains(r.output, "unreadable  [failed]"));
    CHECK(contains(r.output, "stage open: it cannot be opened for reading (Permission denied)"));
}
