// What the tests of the brain command share: the programs of the build, and what a finished command printed.
#pragma once

#include "support/catch.hpp"
#include "support/process.hpp"

#include <initializer_list>
#include <string>

namespace brain::test {

// A program of the build's bin directory, quoted for a shell command.
inline std::string bin(const std::string& program) {
    return shell_quote(std::string(BRAIN_TEST_BIN_DIR) + "/" + program);
}

inline bool contains(const std::string& text, const std::string& part) {
    return text.find(part) != std::string::npos;
}

// The output of a finished command (anything with status and output), which must have exited 0; the output is
// shown when it did not.
template <class Result>
std::string succeeded(const Result& result) {
    INFO(result.output);
    REQUIRE(result.status == 0);
    return result.output;
}

// Requires a finished command to have failed with every one of `parts` in its output.
template <class Result>
void check_refused(const Result& result, std::initializer_list<const char*> parts) {
    INFO(result.output);
    CHECK(result.status != 0);
    for (const char* part : parts) {
        INFO("expected in the output: " << part);
        CHECK(contains(result.output, part));
    }
}

} // namespace brain::test
