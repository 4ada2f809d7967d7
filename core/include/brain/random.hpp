// brain::Random: the one seeded generator of brain (splitmix64-seeded xoshiro256**). The core draws initial
// weights and data-set splits from it, and tests, tools and examples use it for their data, so that a seed gives
// the same numbers with every compiler and standard library. Header-only; nothing in it is exported.
#pragma once

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <numbers>
#include <utility>
#include <vector>

namespace brain {

// One splitmix64 step: advances state and returns the next output (also used to expand seeds).
inline std::uint64_t splitmix64(std::uint64_t& state) noexcept {
    std::uint64_t z = (state += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

// xoshiro256** with splitmix64 seeding; uniform and normal variates computed with explicit formulas only.
class Random {
public:
    // Seeds the generator; `stream` separates independent uses of one seed (initialisation, splits, ...).
    explicit Random(std::uint64_t seed, std::uint64_t stream = 0) noexcept {
        std::uint64_t sm = seed ^ (stream * 0xd1b54a32d192ed03ULL);
        for (auto& word : m_state) word = splitmix64(sm);
    }

    // The next 64 random bits.
    std::uint64_t next_u64() noexcept {
        const std::uint64_t result = rotl(m_state[1] * 5, 7) * 9;
        const std::uint64_t t = m_state[1] << 17;
        m_state[2] ^= m_state[0];
        m_state[3] ^= m_state[1];
        m_state[1] ^= m_state[2];
        m_state[0] ^= m_state[3];
        m_state[2] ^= t;
        m_state[3] = rotl(m_state[3], 45);
        return result;
    }

    // Uniform double in [0, 1) with 53 random bits.
    double uniform() noexcept { return static_cast<double>(next_u64() >> 11) * 0x1.0p-53; }

    // Uniform double in [lo, hi).
    double uniform(double lo, double hi) noexcept { return lo + (hi - lo) * uniform(); }

    // Uniform integer in [0, n) without modulo bias (n > 0).
    std::uint64_t below(std::uint64_t n) noexcept {
        const std::uint64_t limit = (0 - n) % n; // 2^64 mod n: values under it would bias the result
        for (;;) {
            const std::uint64_t x = next_u64();
            if (x >= limit) return x % n;
        }
    }

    // Standard normal variate (Box-Muller; the second value of each pair is kept for the next call).
    double normal() noexcept {
        if (m_has_spare) {
            m_has_spare = false;
            return m_spare;
        }
        const double u1 = 1.0 - uniform(); // (0, 1]: log stays finite
        const double u2 = uniform();
        const double r = std::sqrt(-2.0 * std::log(u1));
        const double theta = 2.0 * std::numbers::pi * u2;
        m_spare = r * std::sin(theta);
        m_has_spare = true;
        return r * std::cos(theta);
    }

    // Fisher-Yates shuffle of v.
    template <class T>
    void shuffle(std::vector<T>& v) noexcept {
        for (std::size_t i = v.size(); i > 1; --i) {
            const auto j = static_cast<std::size_t>(below(i));
            std::swap(v[i - 1], v[j]);
        }
    }

private:
    static std::uint64_t rotl(std::uint64_t x, int k) noexcept { return (x << k) | (x >> (64 - k)); }

    std::uint64_t m_state[4]{};
    double m_spare = 0.0;
    bool m_has_spare = false;
};

} // namespace brain
