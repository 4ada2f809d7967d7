#include "tile_height_plan.hpp"

#include <algorithm>
#include <vector>

namespace brain::cuda {
namespace {

// The kernel's constants (kernels/fused_gemm.cuh): threads per block, warps, a full tile's height and width and
// the K of one chunk.
constexpr std::uint64_t threads = 256, warps = threads / 32, tile = 32, chunk_k = 32;

std::uint64_t ceil_div(std::uint64_t a, std::uint64_t b) {
    return (a + b - 1) / b;
}

// An M x N product with K multiply-adds per output, as the kernel tiles it.
struct Product {
    std::uint64_t m, n, k;
    std::uint64_t tiles(std::uint64_t tm) const { return ceil_div(m, tm) * ceil_div(n, tile); }
    // fused_uses_warps: about as many outputs as the grid has warps go to a warp per output instead of tiles.
    bool uses_warps(unsigned grid) const { return m * n <= 2ull * grid * warps; }
    // fused_half_tile_blocks: what the product counts towards its phase's choice of tile height.
    std::uint64_t half_tile_blocks(unsigned grid) const {
        return uses_warps(grid) ? ceil_div(m * n, warps) : 2 * tiles(tile);
    }
    // A tile's cost in sixteenths of a 16-high tile's chunk: each chunk of K, and one chunk's worth for the tile's
    // start and epilogue. A 32-high chunk costs 26: g14's 32-high delta phases against its 16-high forward phases,
    // both walking K = 350, took 0.64 against 0.39 us a chunk (H200), so one full tile beats two half tiles.
    std::uint64_t tile_cost(std::uint64_t tm) const { return (tm == tile ? 26 : 16) * ceil_div(k, chunk_k) + 16; }
};

// How many of `count` jobs dealt round-robin from slot `start` of `slots` land on slot s.
std::uint64_t dealt(std::uint64_t count, std::uint64_t start, std::uint64_t slots, std::uint64_t s) {
    return count / slots + ((s + slots - start % slots) % slots < count % slots ? 1 : 0);
}

// Each block's work when `n1` tiles of cost c1 go round-robin over `grid` blocks from block 0 and then `n2` tiles
// of cost c2 from where the first ended (the kernel's fused_gemm, its `first`).
std::vector<std::uint64_t> block_work(std::uint64_t n1, std::uint64_t c1, std::uint64_t n2, std::uint64_t c2,
                                      unsigned grid) {
    std::vector<std::uint64_t> work(grid);
    for (unsigned b = 0; b < grid; ++b) work[b] = dealt(n1, 0, grid, b) * c1 + dealt(n2, n1, grid, b) * c2;
    return work;
}

// The longest any block works (block_work).
std::uint64_t span(std::uint64_t n1, std::uint64_t c1, std::uint64_t n2, std::uint64_t c2, unsigned grid) {
    const std::vector<std::uint64_t> work = block_work(n1, c1, n2, c2, grid);
    return *std::max_element(work.begin(), work.end());
}

// fused_bias_in_tiles: a weight gradient in tiles sums its bias in them when the blocks its phase's products leave
// free have fewer warps than the bias has columns.
bool bias_in_tiles(std::uint64_t busy, std::uint64_t outputs, unsigned grid) {
    const std::uint64_t free = busy < grid ? grid - busy : 0;
    return free * warps < outputs;
}

// A warp's sum of one bias column over the batch, on a block after its tile: its loads, warp sum and update, about
// a microsecond (g07's backward phases, H200), in the units of Product::tile_cost.
constexpr std::uint64_t bias_round_cost = 40;

// Whether a warp per bias column lengthens a phase of `n1` tiles of cost c1 and then `n2` of cost c2: the columns
// start on the warps past the last tile (the kernel's `first`), on free blocks, and wrap round onto blocks that
// hold tiles, each of which then finishes its tile and a round of columns.
bool bias_warps_lengthen(std::uint64_t n1, std::uint64_t c1, std::uint64_t n2, std::uint64_t c2,
                         std::uint64_t columns, unsigned grid) {
    const std::vector<std::uint64_t> work = block_work(n1, c1, n2, c2, grid);
    const std::uint64_t phase = *std::max_element(work.begin(), work.end());
    const std::uint64_t grid_warps = std::uint64_t{grid} * warps, first_warp = ((n1 + n2) % grid) * warps;
    for (unsigned b = 0; b < grid; ++b) {
        std::uint64_t rounds = 0; // the most columns any of the block's warps sums
        for (std::uint64_t w = b * warps; w < (b + 1) * warps; ++w)
            rounds = std::max(rounds, dealt(columns, first_warp, grid_warps, w));
        if (work[b] + rounds * bias_round_cost > phase) return true;
    }
    return false;
}

} // namespace

TileHeightPlan plan_tile_heights(const std::vector<sdk::LayerPlan>& layers, std::size_t batch, unsigned grid) {
    TileHeightPlan plan;
    if (grid == 0) return plan;
    // Layer 0 has no delta; its phase keeps the kernel's own choice.
    for (std::size_t l = 1; l < layers.size() && l < 32; ++l) {
        const sdk::LayerPlan& layer = layers[l];
        const Product dw{layer.outputs, layer.inputs, batch}; // dW = delta^T input: K = the batch's rows
        const Product dx{batch, layer.inputs, layer.outputs}; // delta W: K = the layer's outputs
        if (dw.uses_warps(grid) || dx.uses_warps(grid)) continue;
        // fused_phase_tile: 16 when both products' tiles, doubled, fit in the grid.
        const std::uint64_t base = dw.half_tile_blocks(grid) + dx.half_tile_blocks(grid) <= grid ? tile / 2 : tile;
        const auto cost = [&](std::uint64_t hw, std::uint64_t hx) {
            return span(dw.tiles(hw), dw.tile_cost(hw), dx.tiles(hx), dx.tile_cost(hx), grid);
        };
        std::uint64_t best = cost(base, base), best_w = base, best_x = base;
        for (const std::uint64_t hw : {tile / 2, tile})
            for (const std::uint64_t hx : {tile / 2, tile})
                if (const std::uint64_t c = cost(hw, hx); c < best) {
                    best = c;
                    best_w = hw;
                    best_x = hx;
                }
        if (best_w != base) plan.flip_dw |= 1u << l;
        if (best_x != base) plan.flip_dx |= 1u << l;
        // Where the products' own heights change what fused_bias_in_tiles counts, the bias goes to the tiles only
        // if its warps would lengthen the phase.
        const bool bias_base = bias_in_tiles(dw.tiles(base) + dx.tiles(base), dw.m, grid);
        if (bias_in_tiles(dw.tiles(best_w) + dx.tiles(best_x), dw.m, grid) != bias_base &&
            bias_warps_lengthen(dw.tiles(best_w), dw.tile_cost(best_w), dx.tiles(best_x), dx.tile_cost(best_x),
                                dw.m, grid) != bias_base)
            plan.flip_bias |= 1u << l;
    }
    return plan;
}

} // namespace brain::cuda
