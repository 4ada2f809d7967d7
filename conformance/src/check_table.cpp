// The kit's assertions and its PASS/FAIL table.
#include "check_table.hpp"

#include "kit_fixtures.hpp"

#include <algorithm>
#include <brain/dense_math.hpp>
#include <cctype>
#include <cmath>
#include <sstream>

namespace brain::conformance {

void fail_check(std::string detail) {
    throw CheckFailed{std::move(detail)};
}

void require(bool condition, const std::string& detail) {
    if (!condition) fail_check(detail);
}

std::string error_text(const Error& e) {
    return std::string(to_string(e.code())) + ": " + e.what();
}

std::string code_name(ErrorCode code) {
    return std::string(to_string(code));
}

bool is_abi_code(std::int32_t code) {
    std::size_t count = 0;
    const ErrorCode* codes = all_error_codes(&count);
    return std::any_of(codes, codes + count, [code](ErrorCode c) { return static_cast<std::int32_t>(c) == code; });
}

std::string sci(double value) {
    std::ostringstream out;
    out.precision(2);
    out << std::scientific << value;
    return out.str();
}

double relative_error(const std::vector<float>& a, const std::vector<float>& b) {
    return a.size() == b.size() ? math::relative_error(a.data(), b.data(), a.size()) : INFINITY;
}

bool names(const std::string& text, const std::string& name) {
    std::string wanted;
    for (char c : name)
        if (std::isalnum(static_cast<unsigned char>(c))) wanted += static_cast<char>(std::tolower(c));
    // The words of the text, lower-case; a run of up to three consecutive words joined may spell the name.
    std::vector<std::string> words(1);
    for (char c : text) {
        if (std::isalnum(static_cast<unsigned char>(c)))
            words.back() += static_cast<char>(std::tolower(c));
        else if (!words.back().empty())
            words.emplace_back();
    }
    for (std::size_t i = 0; i < words.size(); ++i) {
        std::string joined;
        for (std::size_t j = i; j < words.size() && j < i + 3; ++j)
            if ((joined += words[j]) == wanted) return true;
    }
    return false;
}

std::string expect_error(ErrorCode code, const std::function<void()>& fn,
                         std::initializer_list<const char*> fragments, const std::string& what) {
    try {
        fn();
    } catch (const Error& e) {
        if (e.code() != code) fail_check(what + ": expected " + code_name(code) + ", got " + error_text(e));
        const std::string message = e.what();
        for (const char* fragment : fragments)
            if (message.find(fragment) == std::string::npos)
                fail_check(what + ": the " + code_name(code) + " message should mention \"" + fragment +
                           "\" but says: " + message);
        return message;
    }
    fail_check(what + ": expected " + code_name(code) + " but the call succeeded");
}

RawOutcome take(const brain_plugin_api& api, brain_error* error) {
    RawOutcome out;
    if (!error) return out;
    out.ok = false;
    out.code = api.error_code(error);
    const char* text = api.error_message(error);
    out.message = text ? text : "";
    api.error_destroy(error);
    return out;
}

std::string describe(const RawOutcome& outcome) {
    if (outcome.ok) return "success";
    std::string code = is_abi_code(outcome.code) ? code_name(static_cast<ErrorCode>(outcome.code))
                                                 : "unknown error code " + std::to_string(outcome.code) +
                                                       " (the ABI defines 1 to 19; use one of brain_status)";
    return code + ": " + (outcome.message.empty() ? "(no message)" : outcome.message);
}

std::string require_raw_error(const RawOutcome& outcome, ErrorCode code, const std::string& what) {
    require(!outcome.ok, what + ": expected " + code_name(code) + " but the call succeeded");
    require(outcome.code == static_cast<std::int32_t>(code),
            what + ": expected " + code_name(code) + ", got " + describe(outcome));
    require(!outcome.message.empty(), what + ": " + code_name(code) +
                                          " arrived without a message; say what was "
                                          "expected, what was found and what to do");
    return outcome.message;
}

CheckOutcome run_here(const Check& check, KitContext& context) {
    CheckOutcome out;
    try {
        out.detail = check(context);
        out.passed = true;
    } catch (const CheckFailed& f) {
        out.detail = f.detail;
    } catch (const Error& e) {
        out.detail = error_text(e);
    } catch (const std::exception& e) {
        out.detail = std::string("unexpected exception: ") + e.what();
    } catch (...) {
        out.detail = "unexpected exception of a type that is not std::exception (no exception may leave a plugin)";
    }
    out.facts = context.take_facts();
    return out;
}

CheckTable::CheckTable(ConformanceReport& report, KitContext& context) : m_report(report), m_context(context) {}

CheckOutcome CheckTable::run(const char* name, const Check& check) {
    const ConformanceOptions& options = m_context.options();
    CheckOutcome outcome =
        options.isolate ? run_isolated(check, m_context, options.check_timeout_s) : run_here(check, m_context);
    add(name, outcome.passed, outcome.detail);
    return outcome;
}

void CheckTable::skip_rest(const std::string& reason) {
    for (const std::string& name : conformance_check_names()) {
        const bool present = std::any_of(m_report.checks.begin(), m_report.checks.end(),
                                         [&name](const ConformanceCheck& c) { return c.name == name; });
        if (!present) add(name, false, "not run: " + reason);
    }
}

void CheckTable::add(const std::string& name, bool passed, std::string detail) {
    m_report.checks.push_back(ConformanceCheck{name, passed, std::move(detail)});
    if (m_context.options().on_check) m_context.options().on_check(m_report.checks.back());
}

} // namespace brain::conformance
