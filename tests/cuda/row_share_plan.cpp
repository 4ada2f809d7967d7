// Which layers of a fused-epoch session sum their weight gradients in row shares (plugins/cuda/row_share_plan.hpp):
// the rule on networks of the shape grid and beside its thresholds, without a GPU.
#include "row_share_plan.hpp"

#include "cuda/layer_plans.hpp"
#include "support/catch.hpp"

#include <cstdint>
#include <vector>

namespace {

using brain::cuda::plan_row_shares;
using brain::test::bits;
using brain::test::layers_of;

} // namespace

TEST_CASE("Row shares take the narrow layers of long batches, layer 0 only at 1024 rows", "[plugin][cuda-plan]") {
    // Grid point g18: 23 inputs, six hidden layers of 37, a head of 4 whose backward pass runs in the loss phase.
    const auto g18 = layers_of({23, 37, 37, 37, 37, 37, 37, 4});
    const auto plan = plan_row_shares(g18, 1024, true);
    CHECK(plan.layers == bits(0, 5));
    CHECK(plan.width == 37u * 38u);
    CHECK(plan.bytes == 4ull * 2 * 32 * 37 * 38);
    // Without the head's shares the head has a backward phase of its own, and its gradient goes to shares too.
    CHECK(plan_row_shares(g18, 1024, false).layers == bits(0, 6));
    // At 512 rows layer 0 keeps its own weight gradient (its shares would need a phase of their own).
    CHECK(plan_row_shares(g18, 512, true).layers == bits(1, 5));
    // Below 256 rows none: a warp per output or a tile sums so few rows.
    CHECK(plan_row_shares(g18, 255, true).layers == 0);
    CHECK(plan_row_shares(g18, 255, true).bytes == 0);
}

TEST_CASE("Row shares leave wide layers in tiles and short batches to most layers or none", "[plugin][cuda-plan]") {
    // seed16's layer of 256 over 256 rows: a share's 526k multiply-adds are too many.
    CHECK(plan_row_shares(layers_of({16, 256, 256, 1}), 256, true).layers == 0);
    // A layer of 500 outputs on 100 inputs is too wide for a share's rows in shared memory; those beside it are not.
    CHECK(plan_row_shares(layers_of({16, 40, 100, 500, 10, 2}), 512, true).layers == (bits(1, 1) | bits(3, 3)));
    // Grid point g40 (eight hidden layers of 56 over 256 rows): most layers take shares, so they do.
    CHECK(plan_row_shares(layers_of({759, 56, 56, 56, 56, 56, 56, 56, 56, 3}), 256, true).layers == bits(1, 7));
    // Grid point g34 (seven of 215, a head of 29 over 256 rows): only the head would, so none does.
    const auto g34 = layers_of({240, 215, 215, 215, 215, 215, 215, 215, 29});
    CHECK(plan_row_shares(g34, 256, false).layers == 0);
    // A two-layer network's layer 0 at 1024 rows, its head's gradient in the loss phase's shares.
    CHECK(plan_row_shares(layers_of({30, 64, 3}), 1024, true).layers == bits(0, 0));
    // A one-layer network has no phase to add shares up in but its own.
    CHECK(plan_row_shares(layers_of({12, 4}), 1024, false).layers == 0);
}
