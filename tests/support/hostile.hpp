// The hostile-input suites' machinery (test_hostile_input.cpp, test_hostile_output.cpp): a directory with data
// and models made by the brain command itself, one table row per defect class, and the bounds every row is held
// to: under 30 s, under 2 GiB of peak memory, no standard-library text, one error line, no temporary left behind.
// Rows marked memory_limited run under an address-space limit of 2 GiB (ulimit -v), except under AddressSanitizer.
#pragma once

#include "support/catch.hpp"
#include "support/npz.hpp"
#include "support/process.hpp"

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iostream>
#include <sstream>
#include <string>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <vector>

namespace brain::test::hostile {

namespace fs = std::filesystem;

inline constexpr std::uint64_t k_memory_bound = std::uint64_t{2} << 30; // bytes, every row
inline constexpr double k_time_bound = 30.0;                            // seconds, every row

// Texts of the standard library (or of its exceptions) that must never reach a user.
inline const char* const k_library_texts[] = {
    "std::",     "basic_string",         "_M_create",        "filesystem error",
    "bad_alloc", "bad_array_new_length", "terminate called", "what():"};

inline bool contains(const std::string& haystack, const std::string& needle) {
    return haystack.find(needle) != std::string::npos;
}

inline std::size_t count(const std::string& haystack, const std::string& needle) {
    std::size_t n = 0;
    for (auto at = haystack.find(needle); at != std::string::npos; at = haystack.find(needle, at + 1)) ++n;
    return n;
}

inline std::string read_file(const fs::path& path) {
    std::ifstream in(path, std::ios::binary);
    std::ostringstream out;
    out << in.rdbuf();
    return out.str();
}

inline void write_file(const fs::path& path, const std::string& text) {
    std::ofstream out(path, std::ios::binary | std::ios::trunc);
    out << text;
}

// The directory every row runs in, with a small data set and a model of each kind.
class Fixture {
public:
    Fixture() {
        static std::atomic<int> counter{0};
        m_dir = fs::temp_directory_path() /
                ("brain_hostile_" + std::to_string(::getpid()) + "_" + std::to_string(counter++));
        fs::remove_all(m_dir);
        fs::create_directories(m_dir);
        brain = brain::test::shell_quote(std::string(BRAIN_TEST_BIN_DIR) + "/brain");
        const auto setup = [this](const std::string& command) {
            const auto r = brain::test::run_process(command, m_dir.string());
            INFO(command << "\n" << r.output);
            REQUIRE(r.status == 0);
        };
        setup(brain + " generate --kind churn --rows 300 --seed 1 --out c.csv");
        setup(brain + " generate --kind regression --rows 200 --seed 2 --out r.csv");
        setup(brain + " train --csv c.csv --target churned --layers 8 --epochs 2 --out m.json");
        setup(brain + " train --csv r.csv --target y --layers 8 --epochs 2 --out rm.json");
        // A character device of our own (/dev/null's numbers) where we may: replacing it would harm nothing.
        // Without the right to make one, /dev/null itself only where this process cannot replace it anyway.
        if (::mknod((m_dir / "device").c_str(), S_IFCHR | 0666, makedev(1, 3)) == 0)
            device = "device";
        else if (::geteuid() != 0 && ::access("/dev", W_OK) != 0)
            device = "/dev/null";
    }
    ~Fixture() {
        std::error_code ec;
        fs::remove_all(m_dir, ec);
    }
    Fixture(const Fixture&) = delete;
    Fixture& operator=(const Fixture&) = delete;

    fs::path operator/(const std::string& name) const { return m_dir / name; }
    const fs::path& dir() const { return m_dir; }
    void write(const std::string& name, const std::string& text) const { write_file(m_dir / name, text); }
    std::string read(const std::string& name) const { return read_file(m_dir / name); }

    // Temporary files a write left behind (".<name>.tmp-XXXXXX"), anywhere under the directory.
    std::vector<std::string> leftovers() const {
        std::vector<std::string> found;
        std::error_code ec;
        for (auto it = fs::recursive_directory_iterator(m_dir, ec); !ec && it != fs::recursive_directory_iterator();
             it.increment(ec))
            if (contains(it->path().filename().string(), ".tmp-")) found.push_back(it->path().string());
        return found;
    }

    std::string brain;  // the brain command, quoted
    std::string device; // a character device safe to aim at, or empty

private:
    fs::path m_dir;
};

struct Case {
    using Setup = std::function<void(Fixture&)>;
    using After = std::function<void(Fixture&, const ProcessResult&)>;
    Case() = default;
    Case(std::string defect_, std::string name_, Setup setup_, std::string command_, int status_,
         std::vector<std::string> says_, After after_ = {})
        : defect(std::move(defect_)), name(std::move(name_)), setup(std::move(setup_)),
          command(std::move(command_)), status(status_), says(std::move(says_)), after(std::move(after_)) {}

    std::string defect; // the defect's number in docs/reliability.md
    std::string name;
    Setup setup;         // optional
    std::string command; // /bin/sh, in the fixture's directory; {brain} is the command
    int status = 2;
    std::vector<std::string> says; // fragments the output must hold
    After after;                   // optional checks of what is on disk
    bool memory_limited = false;   // run under ulimit -v 2 GiB
};

inline std::string expand(std::string command, const Fixture& f) {
    for (auto at = command.find("{brain}"); at != std::string::npos; at = command.find("{brain}"))
        command.replace(at, 7, f.brain);
    return command;
}

// Runs every row in the fixture's directory and holds each to the suite's bounds; prints the suite's own figures
// ("<suite>: N rows (...), slowest X s, largest peak RSS Y MiB").
inline void run_rows(const std::vector<Case>& rows, Fixture& f, const char* suite) {
    double slowest = 0.0;
    std::uint64_t largest_kib = 0;
    std::size_t limited = 0, skipped = 0;
    for (const auto& row : rows) {
        INFO("defect " << row.defect << ": " << row.name);
        if (row.memory_limited && brain::test::k_asan) {
            WARN("skipped under AddressSanitizer (its shadow memory needs terabytes of address space, so ulimit -v "
                 "cannot apply): "
                 << row.name);
            ++skipped;
            continue;
        }
        // A build without libzip refuses every .npz with Unsupported, before the defect a row aims at.
        if (!brain::npz_supported() && contains(row.command, "npz")) {
            WARN("skipped: " << k_no_npz_reason << ": " << row.name);
            ++skipped;
            continue;
        }
        if (row.setup) row.setup(f);
        brain::test::ProcessLimits limits;
        if (row.memory_limited) {
            limits.address_space_bytes = k_memory_bound;
            ++limited;
        }
        const std::string command = expand(row.command, f);
        const ProcessResult r = brain::test::run_process(
            "OPENBLAS_NUM_THREADS=1; export OPENBLAS_NUM_THREADS; " + command, f.dir().string(), limits);
        INFO("command: " << command << "\noutput:\n" << r.output);
        CHECK_FALSE(r.timed_out);
        CHECK(r.signal == 0);
        CHECK(r.status == row.status);
        for (const auto& fragment : row.says) {
            INFO("expected: " << fragment);
            CHECK(contains(r.output, fragment));
        }
        for (const char* text : k_library_texts) {
            INFO("standard-library text: " << text);
            CHECK_FALSE(contains(r.output, text));
        }
        if (row.status == 2) CHECK(count(r.output, "error: ") == 1);
        CHECK(r.seconds < k_time_bound);
        CHECK(r.max_rss_kib * 1024 < k_memory_bound);
        CHECK(f.leftovers().empty());
        if (row.after) row.after(f, r);
        slowest = std::max(slowest, r.seconds);
        largest_kib = std::max(largest_kib, r.max_rss_kib);
    }
    std::cout << suite << ": " << rows.size() - skipped << " rows (" << limited << " under ulimit -v 2 GiB, "
              << skipped << " skipped), slowest " << slowest << " s, largest peak RSS " << largest_kib / 1024
              << " MiB\n";
}

} // namespace brain::test::hostile
