// REQUIRE_TEST_HOOKS(): skip, with the reason, a test that needs the plugins' test hooks (fault injection, kernel
// text from the environment) in a build that has them off. brain_tests gets BRAIN_TEST_HOOKS (0 or 1) from CMake.
#pragma once

#include "support/catch.hpp"

#define REQUIRE_TEST_HOOKS()                                                                                       \
    do {                                                                                                           \
        if (!BRAIN_TEST_HOOKS) BRAIN_SKIP("this build has no test hooks: configure with -DBRAIN_TEST_HOOKS=ON");   \
    } while (false)
