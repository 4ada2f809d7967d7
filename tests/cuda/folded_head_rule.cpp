// Which steps of a fused-epoch session fold a one-output head into the phases beside it
// (brain_fused_head_folds, plugins/cuda/device_scalars.h): the rule the plugin picks the folded kernel by, beside
// each of its thresholds, without a GPU.
#include "device_scalars.h"
#include "support/catch.hpp"

#include <cstdint>

namespace {

constexpr uint32_t warps = 8;  // a fused block's warps
constexpr uint32_t h100 = 132; // the grid: one block per SM

// A network of `layers` layers whose layer below the head has `below` outputs, a linear head and mean squared
// error.
int folds(uint32_t layers, uint32_t outputs, uint32_t below, uint32_t rows, uint32_t grid = h100,
          int32_t activation = BRAIN_ACT_LINEAR, int32_t loss = BRAIN_LOSS_MEAN_SQUARED_ERROR) {
    return brain_fused_head_folds(layers, outputs, activation, loss, below, rows, grid, warps);
}

} // namespace

TEST_CASE("A one-output head folds on the benchmark's shapes and on no other head or loss", "[plugin][cuda-plan]") {
    // seed16 ... x1024: two hidden layers of 256, one output, batches of 256.
    CHECK(folds(3, 1, 256, 256));
    CHECK(folds(3, 1, 256, 256, h100, BRAIN_ACT_SIGMOID, BRAIN_LOSS_BINARY_CROSS_ENTROPY));
    // Two layers: the layer below the head is layer 0, whose forward phase is the step's first.
    CHECK_FALSE(folds(2, 1, 256, 256));
    // Two outputs, a softmax head or categorical cross-entropy: the loss needs every output of a row at once.
    CHECK_FALSE(folds(3, 2, 256, 256));
    CHECK_FALSE(folds(3, 1, 256, 256, h100, BRAIN_ACT_SOFTMAX, BRAIN_LOSS_CATEGORICAL_CROSS_ENTROPY));
    CHECK_FALSE(folds(3, 1, 256, 256, h100, BRAIN_ACT_LINEAR, BRAIN_LOSS_CATEGORICAL_CROSS_ENTROPY));
}

TEST_CASE("A folded head needs at most 256 rows, a layer below in tiles and room in the head's workspace",
          "[plugin][cuda-plan]") {
    // Rows: the rows' dL/dz live in shared memory, BRAIN_FUSED_FOLD_ROWS of them.
    CHECK(folds(3, 1, 256, BRAIN_FUSED_FOLD_ROWS));
    CHECK_FALSE(folds(3, 1, 256, BRAIN_FUSED_FOLD_ROWS + 1));
    // The layer below goes to tiles with more than two outputs per warp of the grid: 2 x 132 x 8 = 2,112 outputs.
    CHECK_FALSE(folds(3, 1, 256, 8)); // 2,048 outputs
    CHECK(folds(3, 1, 256, 9));       // 2,304
    CHECK_FALSE(folds(4, 1, 32, 66)); // 2,112
    CHECK(folds(4, 1, 32, 67));       // 2,144
    // The workspace (grid x 257 floats) holds 256 rows x 8 tiles of dot products and 32 slices of 257: 10,272.
    CHECK(folds(3, 1, 256, 256, 40));       // 10,280 floats
    CHECK_FALSE(folds(3, 1, 256, 256, 39)); // 10,023
}
