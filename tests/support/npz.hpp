// REQUIRE_NPZ(): skips a test case, with the reason, where this build has no .npz support (built without libzip).
#pragma once

#include "support/catch.hpp"

#include <brain/npy_file.hpp>

#define REQUIRE_NPZ()                                                                                              \
    do {                                                                                                           \
        if (!::brain::npz_supported())                                                                             \
            BRAIN_SKIP("this build has no .npz support (built without libzip; scripts/install-deps installs "      \
                       "libzip-dev)");                                                                             \
    } while (false)
