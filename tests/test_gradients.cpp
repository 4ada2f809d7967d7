// Finite-difference gradient checks of the CPU backend through the public API. One full-batch, unshuffled SGD
// step (momentum 0) with learning rate lr moves every parameter by -lr * dL/dp, so (p_before - p_after) / lr is
// the backend's gradient; it is compared with central differences of Network::evaluate(...).loss.
#include "support/catch.hpp"
#include "support/error_match.hpp"
#include "support/numeric.hpp"

#include <algorithm>
#include <brain/brain.hpp>
#include <cmath>
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

using brain::Activation;
using brain::Loss;

namespace {

struct GradientCase {
    std::string name;
    std::vector<Activation> layers;  // activation of each dense layer; the last is the output
    std::vector<std::size_t> widths; // units of each dense layer
    Loss loss;
};

// Features uniform in [-1, 1); targets one-hot (every class present), random 0/1 or in [-0.8, 0.8) for the loss.
brain::Dataset make_data(std::size_t rows, std::size_t inputs, std::size_t outputs, Loss loss, std::uint64_t seed) {
    brain::Random rng(seed);
    brain::Matrix x(rows, inputs), y(rows, outputs);
    for (std::size_t r = 0; r < rows; ++r) {
        for (auto& v : x.row(r)) v = static_cast<float>(rng.uniform(-1.0, 1.0));
        if (loss == Loss::CategoricalCrossEntropy) {
            y(r, r % outputs) = 1.0f;
        } else {
            for (auto& v : y.row(r))
                v = static_cast<float>(loss == Loss::BinaryCrossEntropy ? rng.below(2) : rng.uniform(-0.8, 0.8));
        }
    }
    return brain::Dataset(std::move(x), std::move(y));
}

double activate(Activation a, double z) {
    switch (a) {
    case Activation::Relu:
        return z > 0 ? z : 0;
    case Activation::LeakyRelu:
        return z > 0 ? z : 0.01 * z;
    case Activation::Sigmoid:
        return 1 / (1 + std::exp(-z));
    case Activation::Tanh:
        return std::tanh(z);
    case Activation::Gelu:
        return 0.5 * z * (1 + std::erf(z / std::sqrt(2.0)));
    default:
        return z;
    }
}

// The smallest |z| over every hidden ReLU-like unit and row, from an independent double forward pass: a
// parameter step of h moves z by at most h * (1 + |input|), so a margin well above that keeps every finite
// difference on one side of the kink.
double kink_margin(const brain::Network& net, const brain::Dataset& data) {
    double margin = std::numeric_limits<double>::infinity();
    const auto& p = net.parameters();
    for (std::size_t r = 0; r < data.size(); ++r) {
        std::vector<double> in(data.features().row(r).begin(), data.features().row(r).end());
        std::size_t offset = 0;
        for (std::size_t l = 0; l < net.layers().size(); ++l) {
            const auto& layer = net.layers()[l];
            std::vector<double> out(layer.outputs);
            for (std::size_t o = 0; o < layer.outputs; ++o) {
                double z = p[offset + layer.outputs * layer.inputs + o];
                for (std::size_t i = 0; i < layer.inputs; ++i) z += p[offset + o * layer.inputs + i] * in[i];
                if (layer.activation == Activation::Relu || layer.activation == Activation::LeakyRelu)
                    margin = std::min(margin, std::fabs(z));
                out[o] = activate(layer.activation, z);
            }
            offset += layer.outputs * layer.inputs + layer.outputs;
            in = std::move(out);
        }
    }
    return margin;
}

brain::Network build(const GradientCase& c, std::size_t inputs, float lr, std::uint64_t seed) {
    auto builder = brain::Network::builder();
    builder.input_size(inputs);
    for (std::size_t l = 0; l < c.layers.size(); ++l) builder.dense(c.widths[l], c.layers[l]);
    builder.loss(c.loss).optimizer(brain::Optimizer::sgd(lr, 0.0f)).seed(seed);
    return builder.build();
}

void check_gradient(const GradientCase& c) {
    INFO("case: " << c.name);
    constexpr std::size_t inputs = 3, rows = 12;
    constexpr float lr = 1.0f; // one step of exactly -g keeps (p_before - p_after) / lr free of scaling error
    constexpr double h = 1e-3;

    // Pick the first seed whose hidden ReLU units all stay clear of their kink.
    std::uint64_t seed = 1;
    brain::Network net = build(c, inputs, lr, seed);
    brain::Dataset data = make_data(rows, inputs, c.widths.back(), c.loss, seed);
    while (kink_margin(net, data) < 20 * h) {
        ++seed;
        REQUIRE(seed < 200);
        net = build(c, inputs, lr, seed);
        data = make_data(rows, inputs, c.widths.back(), c.loss, seed);
    }

    const std::vector<float> before = net.parameters();
    brain::TrainingSession session(net, data, brain::TrainConfig{1, static_cast<std::uint32_t>(rows), false, 3},
                                   brain::TrainingBackend::cpu());
    const float epoch_loss = session.train_epoch();
    const auto after = session.checkpoint().parameters;
    REQUIRE(after.size() == before.size());

    // The loss train_epoch reports is the loss before the step, the same quantity evaluate computes.
    const float evaluated = net.evaluate(data).loss;
    CHECK(brain::test::close(epoch_loss, evaluated, 1e-5, 1e-7));

    std::vector<float> analytic(before.size()), numeric(before.size());
    for (std::size_t i = 0; i < before.size(); ++i) {
        analytic[i] = (before[i] - after[i]) / lr;
        std::vector<float> plus = before, minus = before;
        plus[i] = static_cast<float>(before[i] + h);
        minus[i] = static_cast<float>(before[i] - h);
        brain::Network probe = net;
        probe.set_parameters(plus);
        const double loss_plus = probe.evaluate(data).loss;
        probe.set_parameters(minus);
        const double loss_minus = probe.evaluate(data).loss;
        // Divide by the step float arithmetic really took.
        numeric[i] = static_cast<float>((loss_plus - loss_minus) / (static_cast<double>(plus[i]) - minus[i]));
    }
    const double error = brain::test::relative_error(analytic, numeric);
    INFO("relative error " << error << " (seed " << seed << ")");
    double norm = 0;
    for (float g : numeric) norm += static_cast<double>(g) * g;
    REQUIRE(std::sqrt(norm) > 1e-4); // a vanishing gradient would make the comparison meaningless
    CHECK(error < 1e-2);
}

} // namespace

TEST_CASE("CPU gradients of every hidden activation match finite differences (MSE, linear output)", "[plugin]") {
    for (Activation hidden : {Activation::Linear, Activation::Relu, Activation::LeakyRelu, Activation::Sigmoid,
                              Activation::Tanh, Activation::Gelu}) {
        check_gradient({"hidden " + std::string(brain::to_string(hidden)),
                        {hidden, Activation::Linear},
                        {5, 2},
                        Loss::MeanSquaredError});
    }
}

TEST_CASE("CPU gradients of MSE through non-linear output activations match finite differences", "[plugin]") {
    for (Activation out : {Activation::Sigmoid, Activation::Tanh, Activation::Gelu, Activation::LeakyRelu}) {
        check_gradient({"MSE with " + std::string(brain::to_string(out)) + " output",
                        {Activation::Tanh, out},
                        {4, 2},
                        Loss::MeanSquaredError});
    }
}

TEST_CASE("CPU gradients of binary cross-entropy with sigmoid output match finite differences", "[plugin]") {
    check_gradient({"BCE one output", {Activation::Relu, Activation::Sigmoid}, {4, 1}, Loss::BinaryCrossEntropy});
    check_gradient(
        {"BCE three outputs", {Activation::Gelu, Activation::Sigmoid}, {4, 3}, Loss::BinaryCrossEntropy});
}

TEST_CASE("CPU gradients of categorical cross-entropy with softmax output match finite differences", "[plugin]") {
    check_gradient({"CCE softmax", {Activation::Tanh, Activation::Softmax}, {5, 3}, Loss::CategoricalCrossEntropy});
    check_gradient({"CCE softmax, sigmoid hidden",
                    {Activation::Sigmoid, Activation::Softmax},
                    {4, 4},
                    Loss::CategoricalCrossEntropy});
}

TEST_CASE("CPU gradients propagate through several hidden layers", "[plugin]") {
    check_gradient({"relu-tanh-gelu-linear",
                    {Activation::Relu, Activation::Tanh, Activation::Gelu, Activation::Linear},
                    {6, 5, 4, 2},
                    Loss::MeanSquaredError});
    check_gradient({"leaky-sigmoid-softmax",
                    {Activation::LeakyRelu, Activation::Sigmoid, Activation::Softmax},
                    {5, 4, 3},
                    Loss::CategoricalCrossEntropy});
}

TEST_CASE("binary cross-entropy targets outside 0 to 1 are refused naming the row and column", "[plugin]") {
    auto net = brain::Network::builder()
                   .input_size(2)
                   .dense(2, Activation::Sigmoid)
                   .loss(Loss::BinaryCrossEntropy)
                   .optimizer(brain::Optimizer::sgd(0.1f))
                   .seed(1)
                   .build();
    const std::vector<float> before = net.parameters();
    brain::Matrix x(4, 2, 0.5f);
    const brain::TrainConfig config{1, 2, false, 1};
    for (const float value : {1.5f, -0.25f, 3.0f}) {
        INFO(value);
        brain::Matrix y(4, 2);
        y(2, 1) = value;
        const brain::Dataset data(x, y);
        const std::string message =
            brain::test::expect_error(brain::ErrorCode::InvalidData, [&] { net.fit(data, config); });
        CHECK(message.find("target row 2, column 1") != std::string::npos);
        CHECK(message.find("from 0 to 1") != std::string::npos);
        CHECK(net.parameters() == before);
    }
    // Labels and probabilities from 0 to 1, both ends included, train.
    brain::Matrix y(4, 2);
    y(0, 0) = 1.0f;
    y(1, 1) = 0.25f;
    y(3, 0) = 0.0f;
    net.fit(brain::Dataset(x, y), config);
    CHECK(net.parameters() != before);
}

TEST_CASE("softmax targets that are not one probability distribution per row are refused, naming the row",
          "[plugin]") {
    auto net = brain::Network::builder()
                   .input_size(2)
                   .dense(3, Activation::Softmax)
                   .optimizer(brain::Optimizer::sgd(0.1f))
                   .seed(1)
                   .build();
    const std::vector<float> before = net.parameters();
    brain::Matrix x(3, 2);
    const auto targets_with = [](std::vector<float> row1) {
        brain::Matrix y(3, 3);
        y(0, 0) = 1.0f;
        for (std::size_t c = 0; c < 3; ++c) y(1, c) = row1[c];
        y(2, 2) = 1.0f;
        return y;
    };
    const brain::TrainConfig config{1, 3, false, 1};
    for (const auto& [row, fragment] :
         std::vector<std::pair<std::vector<float>, std::string>>{{{0.0f, 0.0f, 0.0f}, "sums to 0"},
                                                                 {{1.0f, 1.0f, 0.0f}, "sums to 2"},
                                                                 {{1.5f, -0.5f, 0.0f}, "negative"}}) {
        INFO(fragment);
        const brain::Dataset data(x, targets_with(row));
        const std::string message =
            brain::test::expect_error(brain::ErrorCode::InvalidData, [&] { net.fit(data, config); });
        CHECK(message.find("target row 1") != std::string::npos);
        CHECK(message.find(fragment) != std::string::npos);
        CHECK(message.find("probability distribution") != std::string::npos);
        CHECK(net.parameters() == before);
    }
    // Soft labels that sum to 1 (within float rounding) train.
    const brain::Dataset soft(x, targets_with({0.2f, 0.7f, 0.1f}));
    net.fit(soft, config);
    CHECK(net.parameters() != before);
}
