// The conformance kit's vocabulary: a table that runs named checks and records PASS/FAIL rows, the assertions a
// check makes, and raw outcomes of calls made straight into a plugin's function table.
#pragma once

#include <brain/conformance.hpp>
#include <brain/error.hpp>
#include <brain/plugin_abi.h>
#include <cstdint>
#include <exception>
#include <functional>
#include <initializer_list>
#include <string>
#include <vector>

namespace brain::conformance {

// A check that did not hold; detail says what was expected, what was found and what to do.
struct CheckFailed {
    std::string detail;
};

// Fails the running check with `detail`.
[[noreturn]] void fail_check(std::string detail);
// Fails the running check with `detail` unless `condition` holds.
void require(bool condition, const std::string& detail);
// "<ErrorCode>: <message>" of a brain::Error.
std::string error_text(const Error& e);
// The name of an error code, e.g. "InvalidArgument".
std::string code_name(ErrorCode code);
// True when `code` is one of the ABI's brain_status values.
bool is_abi_code(std::int32_t code);
// A value in scientific notation with two decimals, e.g. "3.10e-07".
std::string sci(double value);
// Norm-wise relative error of two float vectors; infinity when their sizes differ.
double relative_error(const std::vector<float>& a, const std::vector<float>& b);

// Runs fn, which must throw brain::Error(code) with a message holding every fragment; returns the message.
std::string expect_error(ErrorCode code, const std::function<void()>& fn,
                         std::initializer_list<const char*> fragments, const std::string& what);

// An error read straight from the plugin's table, before the core translates it.
struct RawOutcome {
    bool ok = true;
    std::int32_t code = 0;
    std::string message;
};

// Reads and releases a plugin error (nullptr: success).
RawOutcome take(const brain_plugin_api& api, brain_error* error);
// "success", or the code's name and the message.
std::string describe(const RawOutcome& outcome);
// The outcome must be the given error, with a known code and a message the user can act on; returns the message.
std::string require_raw_error(const RawOutcome& outcome, ErrorCode code, const std::string& what);

// The rows of one report, in the kit's fixed order.
class CheckTable {
public:
    explicit CheckTable(ConformanceReport& report) : m_report(report) {}

    // Runs one check: fn returns the success detail, or throws CheckFailed / brain::Error. True when it held.
    template <class Fn>
    bool run(const char* name, Fn&& fn) {
        try {
            add(name, true, fn());
            return true;
        } catch (const CheckFailed& f) {
            add(name, false, f.detail);
        } catch (const Error& e) {
            add(name, false, error_text(e));
        } catch (const std::exception& e) {
            add(name, false, std::string("unexpected exception: ") + e.what());
        }
        return false;
    }

    // Lists every check not yet in the table as failed: not run, for `reason`.
    void skip_rest(const std::string& reason);

private:
    void add(const char* name, bool passed, std::string detail);

    ConformanceReport& m_report;
};

} // namespace brain::conformance
