// The shape grid of brain_bench --grid: the same points as bench/torch_mlp.py's grid(), drawn by the same
// integer-only generator (splitmix64), so both sides agree on every shape without sharing a file. Standard library
// only: brain_gemm_rate, which must not link brain::core, draws the same points from it.
#pragma once

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <string>
#include <utility>
#include <vector>

namespace bench {

// One workload: the named configs (bench/torch_mlp.py's CONFIGS: ReLU, MSE, Adam) and the grid's points.
struct Workload {
    std::size_t inputs;
    std::vector<std::size_t> hidden;
    std::size_t outputs;
    std::size_t rows;
    std::uint32_t batch;
    std::uint32_t epochs;
    std::string activation = "relu"; // of the hidden layers
    std::string loss = "mse";        // mse (linear output), bce (sigmoid output), cce (softmax output)
    std::string optimizer = "adam";  // sgd (lr 0.01, momentum 0.9), adam (lr 1e-3), adamw (lr 1e-3, decay 0.01)
};

// Multiply-adds of one optimizer step: forward, weight gradient and input delta of every layer.
inline std::uint64_t multiply_adds(const Workload& w) {
    std::vector<std::size_t> widths = {w.inputs};
    widths.insert(widths.end(), w.hidden.begin(), w.hidden.end());
    widths.push_back(w.outputs);
    std::uint64_t sum = 0;
    for (std::size_t l = 0; l + 1 < widths.size(); ++l) sum += std::uint64_t{widths[l]} * widths[l + 1];
    return 3ull * w.batch * sum;
}

inline constexpr std::array<const char*, 6> grid_activations = {"linear", "relu", "leaky_relu",
                                                                "sigmoid", "tanh", "gelu"};
inline constexpr std::array<const char*, 3> grid_losses = {"mse", "bce", "cce"};
inline constexpr std::array<const char*, 3> grid_optimizers = {"sgd", "adam", "adamw"};
inline constexpr std::uint32_t grid_steps = 16; // batches per epoch: rows = 16 x batch

// splitmix64, as torch_mlp.py's SplitMix64.
class GridRandom {
public:
    explicit GridRandom(std::uint64_t seed) : m_state(seed) {}
    std::uint64_t next() {
        m_state += 0x9E3779B97F4A7C15ull;
        std::uint64_t z = m_state;
        z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
        z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
        return z ^ (z >> 31);
    }
    // An integer in [2^o, 2^(o+1)] for an octave o drawn uniformly from [lo, hi): log-uniform, integers only.
    std::size_t octave(unsigned lo, unsigned hi) {
        const unsigned o = lo + static_cast<unsigned>(next() % (hi - lo));
        const std::uint64_t base = std::uint64_t{1} << o;
        return static_cast<std::size_t>(base + next() % (base + 1));
    }

private:
    std::uint64_t m_state;
};

// The grid's `points` points in order (names g00, g01, ...): hidden depth 1-8, widths 32-1024, batch 32-1024,
// inputs 8-1024, outputs 1-32 (2-32 classes under categorical cross-entropy), the hidden activation, loss and
// optimizer cycling so that every one appears; `work` multiply-adds of timed training per point set the epochs (2 to
// 20).
inline std::vector<std::pair<std::string, Workload>> grid(std::size_t points, std::uint64_t seed,
                                                          std::uint64_t work) {
    GridRandom rng(seed);
    std::vector<std::pair<std::string, Workload>> out;
    for (std::size_t i = 0; i < points; ++i) {
        Workload w{};
        const std::size_t depth = 1 + static_cast<std::size_t>(rng.next() % 8);
        const std::size_t width = rng.octave(5, 10);
        w.batch = static_cast<std::uint32_t>(1u << (5 + rng.next() % 6));
        w.inputs = rng.octave(3, 10);
        w.outputs = rng.octave(0, 5);
        w.loss = grid_losses[i % 3];
        if (w.loss == "cce" && w.outputs < 2) w.outputs = 2;
        w.hidden.assign(depth, width);
        w.rows = std::size_t{grid_steps} * w.batch;
        w.activation = grid_activations[(i / 3) % 6];
        w.optimizer = grid_optimizers[(i + i / 3) % 3];
        const std::uint64_t steps = grid_steps * multiply_adds(w);
        w.epochs = static_cast<std::uint32_t>(std::min<std::uint64_t>(20, std::max<std::uint64_t>(2, (work + steps - 1) / steps)));
        char name[32];
        std::snprintf(name, sizeof name, "g%02zu", i);
        out.emplace_back(name, std::move(w));
    }
    return out;
}

} // namespace bench
