// Assert that an expression throws brain::Error with a given code and message fragments.
#pragma once

#include "support/catch.hpp"

#include <brain/error.hpp>

#include <initializer_list>
#include <string>
#include <utility>

namespace brain::test {

// Runs fn, requires a brain::Error with `code`, and returns its message for further checks.
template <class Fn>
std::string expect_error(ErrorCode code, Fn&& fn) {
    try {
        fn();
    } catch (const Error& e) {
        INFO("message: " << e.what());
        CHECK(to_string(e.code()) == to_string(code));
        return e.what();
    }
    FAIL("expected brain::Error with code " << to_string(code) << ", but nothing was thrown");
    return {};
}

// Runs f, which must throw brain::Error with `code` and a message containing every fragment.
template <class F>
void require_error(F&& f, ErrorCode code, std::initializer_list<std::string> fragments) {
    const std::string message = expect_error(code, std::forward<F>(f));
    for (const auto& fragment : fragments) {
        INFO("message: " << message << "; expected fragment: " << fragment);
        CHECK(message.find(fragment) != std::string::npos);
    }
}

// True when `text` contains every fragment.
inline bool contains_all(const std::string& text, std::initializer_list<const char*> fragments) {
    for (const char* f : fragments)
        if (text.find(f) == std::string::npos) return false;
    return true;
}

} // namespace brain::test

// REQUIRE that `expr` throws brain::Error(code) whose message contains every listed fragment.
#define BRAIN_REQUIRE_ERROR(code, expr, ...)                                                                  \
    do {                                                                                                      \
        const std::string brain_message_ = ::brain::test::expect_error((code), [&] { (void)(expr); });        \
        INFO("message: " << brain_message_);                                                                  \
        CHECK(::brain::test::contains_all(brain_message_, {__VA_ARGS__}));                                    \
    } while (false)
