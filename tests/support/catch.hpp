// Catch2 v2 (Debian 12) / v3 (newer systems) compatibility, plus BRAIN_SKIP(reason): a one-line skip.
#pragma once

#if __has_include(<catch2/catch_test_macros.hpp>)
#include <catch2/catch_approx.hpp>
#include <catch2/catch_test_macros.hpp>
#include <catch2/generators/catch_generators.hpp>
#include <catch2/matchers/catch_matchers_string.hpp>
#define BRAIN_SKIP(reason) SKIP(reason)
// v2 puts Approx in the global namespace; the same spelling compiles on both.
using Catch::Approx;
#else
#include <catch2/catch.hpp>
// Catch2 v2 has no SKIP: report the reason once and leave the test case.
#define BRAIN_SKIP(reason)                                                                                     \
    do {                                                                                                       \
        WARN("skipped: " << reason);                                                                           \
        return;                                                                                                \
    } while (false)
#endif
