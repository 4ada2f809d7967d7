// brain::Random, the one seeded generator: its streams are fixed forever, because saved models, data-set splits
// and every test's data are reproduced from seeds.
#include "support/catch.hpp"

#include <algorithm>
#include <brain/network.hpp>
#include <brain/random.hpp>
#include <cmath>
#include <cstdint>
#include <vector>

TEST_CASE("Random gives the same numbers for a seed on every build", "[core]") {
    brain::Random rng(42);
    CHECK(rng.next_u64() == 0x15780b2e0c2ec716ull);
    CHECK(rng.next_u64() == 0x6104d9866d113a7eull);
    CHECK(rng.next_u64() == 0xae17533239e499a1ull);
    brain::Random stream(7, 1);
    CHECK(stream.uniform() == 0x1.05cd78e1ba0ccp-2);
    CHECK(stream.normal() == 0x1.a957f7f364883p-2);
    CHECK(stream.below(1000) == 854);
}

TEST_CASE("a network's initial weights for a seed never change", "[core]") {
    const auto net = brain::Network::builder()
                         .input_size(3)
                         .dense(4, brain::Activation::Relu)
                         .dense(2, brain::Activation::Tanh)
                         .seed(42)
                         .build();
    // He-normal for the ReLU layer and Glorot-uniform for the tanh layer, biases zero, from Random(42, 1).
    const std::vector<float> expected = {0x1.fcd11p-6f,
                                         0x1.140b86p-8f,
                                         0x1.01d7bp+0f,
                                         0x1.b324e6p-3f,
                                         -0x1.0dd8f6p-1f,
                                         0x1.07492cp-3f,
                                         -0x1.c5101ep-2f,
                                         -0x1.1380f8p-4f,
                                         -0x1.3f3a72p-1f,
                                         0x1.6dcb5cp-2f,
                                         0x1.3896b4p-3f,
                                         -0x1.1614a6p+0f,
                                         0.0f,
                                         0.0f,
                                         0.0f,
                                         0.0f,
                                         -0x1.b89282p-3f,
                                         0x1.b3f81ap-1f,
                                         -0x1.4f32fp-4f,
                                         0x1.6c5e32p-3f,
                                         -0x1.89c656p-1f,
                                         -0x1.f657fep-1f,
                                         -0x1.9bb824p-2f,
                                         0x1.1f3f4ep-2f,
                                         0.0f,
                                         0.0f};
    CHECK(net.parameters() == expected);
}

TEST_CASE("Random's draws stay in their ranges and below() is unbiased", "[core]") {
    brain::Random rng(3);
    std::vector<int> counts(6, 0);
    double sum = 0.0, sum_sq = 0.0;
    const int n = 60000;
    for (int i = 0; i < n; ++i) {
        const double u = rng.uniform(-2.0, 3.0);
        REQUIRE(u >= -2.0);
        REQUIRE(u < 3.0);
        const std::uint64_t k = rng.below(6);
        REQUIRE(k < 6);
        ++counts[k];
        const double z = rng.normal();
        sum += z;
        sum_sq += z * z;
    }
    for (int c : counts) CHECK(std::abs(c - n / 6) < 500); // about 5 standard deviations
    CHECK(std::abs(sum / n) < 0.02);
    CHECK(std::abs(sum_sq / n - 1.0) < 0.03);

    std::vector<int> order = {0, 1, 2, 3, 4, 5, 6, 7};
    brain::Random(9).shuffle(order);
    std::vector<int> again = {0, 1, 2, 3, 4, 5, 6, 7};
    brain::Random(9).shuffle(again);
    CHECK(order == again);
    std::vector<int> sorted = order;
    std::sort(sorted.begin(), sorted.end());
    CHECK(sorted == std::vector<int>{0, 1, 2, 3, 4, 5, 6, 7});
}
