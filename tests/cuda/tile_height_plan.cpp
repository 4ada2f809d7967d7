// The tile heights of the fused epoch kernel's backward phases (plugins/cuda/tile_height_plan.hpp): the rule on
// networks of the shape grid and the named shapes, without a GPU.
#include "tile_height_plan.hpp"

#include "cuda/layer_plans.hpp"
#include "support/catch.hpp"

#include <cstdint>
#include <vector>

namespace {

using brain::cuda::plan_tile_heights;
using brain::test::bits;
using brain::test::layers_of;

constexpr unsigned h200_grid = 132;

} // namespace

TEST_CASE("Tile heights split a long-K delta from a short-K gradient of many tiles", "[plugin][cuda-plan]") {
    SECTION("batches of 128 through layers of 255: the gradient keeps full tiles, the delta takes half tiles") {
        const auto plan = plan_tile_heights(layers_of({49, 255, 255, 255, 255, 2}), 128, h200_grid);
        CHECK(plan.flip_dw == 0);
        CHECK(plan.flip_dx == bits(1, 3)); // 32 high, as the phase, to 16
        // At the phase's height 96 tiles leave 36 blocks, 288 warps, for 255 bias columns; at the products' own
        // heights 128 tiles leave 4 blocks, so the gradient's tiles sum the bias.
        CHECK(plan.flip_bias == bits(1, 3));
    }
    SECTION("batches of 32 through layers of 350: both take half tiles, the delta's on blocks of their own") {
        const auto plan = plan_tile_heights(layers_of({43, 350, 350, 350, 8}), 32, h200_grid);
        CHECK(plan.flip_dw == bits(1, 2));
        CHECK(plan.flip_dx == bits(1, 2));
        CHECK(plan.flip_bias == 0); // no block is free at either height: the tiles sum the bias
    }
    SECTION(
        "batches of 32 through layers of 274: the delta's half tiles leave 10 bias columns over, on blocks with "
        "short gradient tiles, so the bias stays with a warp per column") {
        const auto plan = plan_tile_heights(layers_of({120, 274, 274, 274, 6}), 32, h200_grid);
        CHECK(plan.flip_dw == 0);
        CHECK(plan.flip_dx == bits(1, 2));
        CHECK(plan.flip_bias == 0);
    }
    SECTION("batches of 1024 through layers of 151: the gradient walks a K of 1,024 on half tiles") {
        const auto plan = plan_tile_heights(layers_of({61, 151, 151, 23}), 1024, h200_grid);
        CHECK(plan.flip_dw == bits(1, 2));
        CHECK(plan.flip_dx == 0);
        CHECK(plan.flip_bias == 0); // 40 or more blocks busy either way, too few free for 151 columns
    }
}

TEST_CASE("Tile heights stay as the kernel chooses them where one height serves both products",
          "[plugin][cuda-plan]") {
    SECTION("the named shapes") {
        for (const std::size_t inputs : {16, 64, 256, 1024}) {
            INFO(inputs);
            const auto plan = plan_tile_heights(layers_of({inputs, 256, 256, 1}), 256, h200_grid);
            CHECK(plan.flip_dw == 0);
            CHECK(plan.flip_dx == 0);
            CHECK(plan.flip_bias == 0);
        }
    }
    SECTION("products small enough for a warp per output, and layer 0, which has no delta") {
        const auto small = plan_tile_heights(layers_of({8, 16, 16, 2}), 32, h200_grid);
        CHECK((small.flip_dw | small.flip_dx | small.flip_bias) == 0);
        const auto one = plan_tile_heights(layers_of({2000, 300}), 32, h200_grid);
        CHECK((one.flip_dw | one.flip_dx | one.flip_bias) == 0);
    }
    SECTION("no grid") {
        const auto none = plan_tile_heights(layers_of({43, 350, 350, 8}), 32, 0);
        CHECK((none.flip_dw | none.flip_dx | none.flip_bias) == 0);
    }
    SECTION("never layer 0, nor the layers past the network") {
        const auto plan = plan_tile_heights(layers_of({120, 274, 274, 274, 6}), 32, h200_grid);
        CHECK(plan.flip_dx == bits(1, 2));
        CHECK(((plan.flip_dw | plan.flip_dx | plan.flip_bias) & ~bits(1, 3)) == 0);
    }
}
