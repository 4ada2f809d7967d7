// REQUIRE_NPZ(): skips a test case, with the reason, where this build has no .npz support (built without libzip).
#pragma once

#include "support/catch.hpp"

#include <brain/npy_file.hpp>

namespace brain::test {
// Why a test that needs .npz archives does not run here.
inline constexpr const char* k_no_npz_reason =
    "this build has no .npz support (built without libzip; scripts/install-deps installs libzip-dev)";
} // namespace brain::test

#define REQUIRE_NPZ()                                                                                              \
    do {                                                                                                           \
        if (!::brain::npz_supported()) BRAIN_SKIP(::brain::test::k_no_npz_reason);                                 \
    } while (false)
