// Network construction (validation, defaults, seeded initialisation), host inference (predict, evaluate) against
// hand-computed values, state management, and the enum names of types.hpp.
#include "support/catch.hpp"
#include "support/error_match.hpp"
#include "support/numeric.hpp"

#include <brain/dataset.hpp>
#include <brain/error.hpp>
#include <brain/network.hpp>
#include <brain/types.hpp>
#include <cmath>
#include <limits>
#include <string>
#include <vector>

using brain::Activation;
using brain::Dataset;
using brain::ErrorCode;
using brain::Loss;
using brain::Matrix;
using brain::Network;
using brain::Optimizer;

using brain::test::require_error;

namespace {

double sigmoid(double z) {
    return 1.0 / (1.0 + std::exp(-z));
}

// Population mean and standard deviation of a range of the parameters.
std::pair<double, double> moments(const std::vector<float>& v, std::size_t begin, std::size_t end) {
    double mean = 0, sq = 0;
    for (std::size_t i = begin; i < end; ++i) mean += v[i];
    mean /= static_cast<double>(end - begin);
    for (std::size_t i = begin; i < end; ++i) sq += (v[i] - mean) * (v[i] - mean);
    return {mean, std::sqrt(sq / static_cast<double>(end - begin))};
}

// 2 -> 2 (relu) -> 1 (linear) with hand-chosen weights.
Network tiny_regressor() {
    Network net = Network::builder().input_size(2).dense(2, Activation::Relu).dense(1, Activation::Linear).build();
    // W1 = [[1, -1], [0.5, 2]], b1 = [0.1, -0.2], W2 = [[2, -3]], b2 = [0.5]
    net.set_parameters({1.0f, -1.0f, 0.5f, 2.0f, 0.1f, -0.2f, 2.0f, -3.0f, 0.5f});
    return net;
}

} // namespace

TEST_CASE("Enum names round-trip and parse case-insensitively with aliases", "[core]") {
    for (auto a : {Activation::Linear, Activation::Relu, Activation::LeakyRelu, Activation::Sigmoid,
                   Activation::Tanh, Activation::Softmax, Activation::Gelu})
        CHECK(brain::parse_activation(brain::to_string(a)) == a);
    for (auto l : {Loss::MeanSquaredError, Loss::BinaryCrossEntropy, Loss::CategoricalCrossEntropy})
        CHECK(brain::parse_loss(brain::to_string(l)) == l);
    for (auto p : {brain::Precision::Float32, brain::Precision::Tf32, brain::Precision::Bf16})
        CHECK(brain::parse_precision(brain::to_string(p)) == p);
    CHECK(brain::parse_activation("ReLU") == Activation::Relu);
    CHECK(brain::parse_activation("leaky_relu") == Activation::LeakyRelu);
    CHECK(brain::parse_activation("LeakyRelu") == Activation::LeakyRelu);
    CHECK(brain::parse_loss("MSE") == Loss::MeanSquaredError);
    CHECK(brain::parse_loss("bce") == Loss::BinaryCrossEntropy);
    CHECK(brain::parse_loss("Categorical_Cross_Entropy") == Loss::CategoricalCrossEntropy);
    CHECK(brain::parse_precision("FP32") == brain::Precision::Float32);
    CHECK(brain::parse_precision("bf16") == brain::Precision::Bf16);
    CHECK(brain::to_string(Optimizer::Kind::AdamW) == "adamw");

    require_error([] { (void)brain::parse_activation("swish"); }, ErrorCode::InvalidArgument,
                  {"'swish'", "relu", "leaky_relu", "gelu"});
    require_error([] { (void)brain::parse_loss("hinge"); }, ErrorCode::InvalidArgument, {"'hinge'", "mse", "cce"});
    require_error([] { (void)brain::parse_precision("fp16"); }, ErrorCode::InvalidArgument, {"'fp16'", "tf32"});
    require_error([] { (void)brain::parse_activation(""); }, ErrorCode::InvalidArgument, {"activation"});
}

TEST_CASE("Optimizer factories set kind and hyper-parameters", "[core]") {
    const auto sgd = Optimizer::sgd(0.1f, 0.9f);
    CHECK(sgd.kind == Optimizer::Kind::Sgd);
    CHECK(sgd.learning_rate == 0.1f);
    CHECK(sgd.momentum == 0.9f);
    CHECK(sgd.state_per_parameter() == 1);
    const auto adam = Optimizer::adam(0.01f);
    CHECK(adam.kind == Optimizer::Kind::Adam);
    CHECK(adam.learning_rate == 0.01f);
    CHECK(adam.state_per_parameter() == 2);
    const auto adamw = Optimizer::adamw(0.02f, 0.05f);
    CHECK(adamw.kind == Optimizer::Kind::AdamW);
    CHECK(adamw.weight_decay == 0.05f);
}

TEST_CASE("NetworkBuilder: layout, defaults and optimizer state", "[core]") {
    const Network net = Network::builder()
                            .input_size(3)
                            .dense(4, Activation::Relu)
                            .dense(2, Activation::Softmax)
                            .optimizer(Optimizer::adam(0.01f))
                            .seed(5)
                            .build();
    REQUIRE(net.layers().size() == 2);
    CHECK(net.layers()[0].inputs == 3);
    CHECK(net.layers()[0].outputs == 4);
    CHECK(net.layers()[1].inputs == 4);
    CHECK(net.input_size() == 3);
    CHECK(net.output_size() == 2);
    CHECK(net.parameter_count() == 3 * 4 + 4 + 4 * 2 + 2);
    CHECK(net.optimizer_state().size() == 2 * net.parameter_count());
    CHECK(net.optimizer_step() == 0);
    CHECK(net.epochs_trained() == 0);
    CHECK(net.seed() == 5);
    CHECK(net.loss() == Loss::CategoricalCrossEntropy);
    CHECK(net.is_classifier());
    for (float s : net.optimizer_state()) CHECK(s == 0.0f);
    // Biases start at zero: offsets 12..15 and 24..25.
    for (std::size_t i : {12, 13, 14, 15, 24, 25}) CHECK(net.parameters()[i] == 0.0f);

    const auto sgd =
        Network::builder().input_size(2).dense(1, Activation::Sigmoid).optimizer(Optimizer::sgd(0.1f)).build();
    CHECK(sgd.loss() == Loss::BinaryCrossEntropy);
    CHECK(sgd.optimizer_state().size() == sgd.parameter_count());
    CHECK(sgd.is_classifier());
    const auto reg =
        Network::builder().input_size(2).dense(3, Activation::Tanh).dense(1, Activation::Linear).build();
    CHECK(reg.loss() == Loss::MeanSquaredError);
    CHECK_FALSE(reg.is_classifier());
    const auto explicit_loss =
        Network::builder().input_size(2).dense(1, Activation::Sigmoid).loss(Loss::MeanSquaredError).build();
    CHECK(explicit_loss.loss() == Loss::MeanSquaredError);
}

TEST_CASE("NetworkBuilder: validation errors name the layer and the value", "[core]") {
    using B = brain::NetworkBuilder;
    auto check = [](B b, std::initializer_list<std::string> fragments) {
        require_error([&] { (void)b.build(); }, ErrorCode::InvalidArgument, fragments);
    };
    check(B().dense(2, Activation::Relu), {"input size", "found 0"});
    check(B().input_size(3), {"no layers"});
    check(B().input_size(3).dense(4, Activation::Relu).dense(0, Activation::Relu).dense(1, Activation::Linear),
          {"layer 1", "found 0"});
    check(B().input_size(3).dense(4, Activation::Softmax).dense(2, Activation::Softmax),
          {"layer 0", "softmax", "output layer only"});
    check(B().input_size(3).dense(2, Activation::Linear).loss(Loss::BinaryCrossEntropy),
          {"binary_cross_entropy", "sigmoid", "linear"});
    check(B().input_size(3).dense(2, Activation::Sigmoid).loss(Loss::CategoricalCrossEntropy),
          {"categorical_cross_entropy", "softmax", "sigmoid"});
    check(B().input_size(3).dense(3, Activation::Softmax).loss(Loss::MeanSquaredError),
          {"softmax", "categorical_cross_entropy"});
    check(B().input_size(3).dense(1, Activation::Softmax), {">= 2 units", "found 1"});
    check(B().input_size(3).dense(1, Activation::Linear).optimizer(Optimizer::sgd(0.0f)), {"learning rate", "0"});
    check(B().input_size(3).dense(1, Activation::Linear).optimizer(Optimizer::adam(std::nanf(""))),
          {"learning rate", "nan"});
    check(B().input_size(3).dense(1, Activation::Linear).optimizer(Optimizer::sgd(-1.0f)), {"learning rate", "-1"});
    Optimizer bad_beta = Optimizer::adam(0.01f);
    bad_beta.beta1 = 1.0f;
    check(B().input_size(3).dense(1, Activation::Linear).optimizer(bad_beta), {"beta1", "[0, 1)", "1"});
    bad_beta.beta1 = 0.9f;
    bad_beta.beta2 = -0.5f;
    check(B().input_size(3).dense(1, Activation::Linear).optimizer(bad_beta), {"beta2", "-0.5"});
}

TEST_CASE("Initialisation is fully determined by the seed", "[core]") {
    auto build = [](std::uint64_t seed) {
        return Network::builder()
            .input_size(8)
            .dense(16, Activation::Relu)
            .dense(3, Activation::Tanh)
            .seed(seed)
            .build();
    };
    const auto a = build(42), b = build(42), c = build(43);
    CHECK(a.parameters() == b.parameters());
    CHECK(a.parameters() != c.parameters());
    std::size_t differing = 0;
    for (std::size_t i = 0; i < a.parameter_count(); ++i) differing += a.parameters()[i] != c.parameters()[i];
    CHECK(differing > a.parameter_count() / 2);
    // Independent of the optimizer: only the seed decides the weights.
    const auto d = Network::builder()
                       .input_size(8)
                       .dense(16, Activation::Relu)
                       .dense(3, Activation::Tanh)
                       .seed(42)
                       .optimizer(Optimizer::sgd(0.5f))
                       .build();
    CHECK(a.parameters() == d.parameters());
}

TEST_CASE("Initialisation scales: He normal for ReLU-like layers, Glorot uniform otherwise", "[core]") {
    for (Activation act : {Activation::Relu, Activation::LeakyRelu, Activation::Gelu}) {
        const std::size_t in = 400, out = 500;
        const auto net = Network::builder().input_size(in).dense(out, act).seed(11).build();
        const auto& p = net.parameters();
        const auto [mean, sd] = moments(p, 0, in * out);
        const double expected = std::sqrt(2.0 / in);
        INFO(brain::to_string(act) << ": mean " << mean << ", sd " << sd << ", expected sd " << expected);
        CHECK(std::fabs(mean) < 0.01 * expected);
        CHECK(std::fabs(sd / expected - 1.0) < 0.01);
        // Normal, not uniform: about 68.27% within one deviation, and some values beyond 3 deviations.
        std::size_t within = 0, beyond3 = 0;
        for (std::size_t i = 0; i < in * out; ++i) {
            within += std::fabs(p[i]) <= expected;
            beyond3 += std::fabs(p[i]) > 3 * expected;
        }
        CHECK(std::fabs(static_cast<double>(within) / (in * out) - 0.6827) < 0.005);
        CHECK(beyond3 > 200); // 0.27% of 200000 = 540 expected
    }
    for (Activation act : {Activation::Linear, Activation::Tanh, Activation::Sigmoid}) {
        const std::size_t in = 300, out = 500;
        const auto net =
            Network::builder().input_size(in).dense(out, act).loss(Loss::MeanSquaredError).seed(3).build();
        const auto& p = net.parameters();
        const double limit = std::sqrt(6.0 / (in + out));
        const auto [mean, sd] = moments(p, 0, in * out);
        INFO(brain::to_string(act) << ": mean " << mean << ", sd " << sd << ", limit " << limit);
        CHECK(std::fabs(mean) < 0.01 * limit);
        CHECK(std::fabs(sd / (limit / std::sqrt(3.0)) - 1.0) < 0.01);
        float lo = 0, hi = 0;
        for (std::size_t i = 0; i < in * out; ++i) {
            lo = std::min(lo, p[i]);
            hi = std::max(hi, p[i]);
        }
        CHECK(hi <= limit);
        CHECK(lo >= -limit);
        CHECK(hi > 0.99 * limit);
        CHECK(lo < -0.99 * limit);
    }
}

TEST_CASE("predict: a hand-built network against hand-computed values", "[core]") {
    const Network net = tiny_regressor();
    const Matrix out = net.predict(Matrix{{1, 2}, {3, -1}, {0, 0}});
    REQUIRE(out.rows() == 3);
    REQUIRE(out.cols() == 1);
    // Row 0: z1 = [1 - 2 + 0.1, 0.5 + 4 - 0.2] = [-0.9, 4.3] -> relu [0, 4.3] -> 0 - 12.9 + 0.5 = -12.4
    CHECK(brain::test::close(out(0, 0), -12.4, 1e-6, 1e-6));
    // Row 1: z1 = [3 + 1 + 0.1, 1.5 - 2 - 0.2] = [4.1, -0.7] -> [4.1, 0] -> 8.2 + 0.5 = 8.7
    CHECK(brain::test::close(out(1, 0), 8.7, 1e-6, 1e-6));
    // Row 2: z1 = [0.1, -0.2] -> [0.1, 0] -> 0.2 + 0.5 = 0.7
    CHECK(brain::test::close(out(2, 0), 0.7, 1e-6, 1e-6));
    CHECK(net.predict(Matrix(0, 2)).rows() == 0);

    require_error(
        [&] {
            (void)net.predict(Matrix{{1, 2, 3}});
        },
        ErrorCode::InvalidArgument, {"expected 2 input columns", "found 3"});
    require_error(
        [&] {
            (void)net.predict(Matrix{{1, std::nanf("")}});
        },
        ErrorCode::InvalidData, {"row 0, column 1"});
}

TEST_CASE("predict: every activation matches its formula", "[core]") {
    const std::vector<float> w{0.5f, -1.0f, 2.0f, 0.25f, -0.75f, 1.5f};
    const std::vector<float> b{0.1f, -0.3f, 0.2f};
    const Matrix x{{1.0f, 2.0f}, {-1.5f, 0.5f}, {0.0f, -2.0f}, {3.0f, 1.0f}, {-0.2f, 0.1f}};
    for (Activation act : {Activation::Linear, Activation::Relu, Activation::LeakyRelu, Activation::Sigmoid,
                           Activation::Tanh, Activation::Softmax, Activation::Gelu}) {
        Network net = Network::builder().input_size(2).dense(3, act).build();
        std::vector<float> params = w;
        params.insert(params.end(), b.begin(), b.end());
        net.set_parameters(params);
        const Matrix out = net.predict(x);
        for (std::size_t r = 0; r < x.rows(); ++r) {
            double z[3], expected[3], sum = 0;
            for (std::size_t o = 0; o < 3; ++o) z[o] = w[o * 2] * x(r, 0) + w[o * 2 + 1] * x(r, 1) + b[o];
            for (std::size_t o = 0; o < 3; ++o) {
                switch (act) {
                case Activation::Relu:
                    expected[o] = std::max(z[o], 0.0);
                    break;
                case Activation::LeakyRelu:
                    expected[o] = z[o] > 0 ? z[o] : 0.01 * z[o];
                    break;
                case Activation::Sigmoid:
                    expected[o] = sigmoid(z[o]);
                    break;
                case Activation::Tanh:
                    expected[o] = std::tanh(z[o]);
                    break;
                case Activation::Gelu:
                    expected[o] = 0.5 * z[o] * (1 + std::erf(z[o] / std::sqrt(2.0)));
                    break;
                case Activation::Softmax:
                    expected[o] = std::exp(z[o]);
                    sum += expected[o];
                    break;
                default:
                    expected[o] = z[o];
                }
            }
            for (std::size_t o = 0; o < 3; ++o) {
                if (act == Activation::Softmax) expected[o] /= sum;
                INFO(brain::to_string(act) << " row " << r << " output " << o);
                CHECK(brain::test::close(out(r, o), expected[o], 1e-5, 1e-6));
            }
        }
    }
}

TEST_CASE("predict: wide layers agree with a naive double-precision product", "[core]") {
    // Sizes not multiples of the kernel's blocks exercise every tail path.
    const std::size_t in = 37, hidden = 70, out = 5, rows = 9;
    const Network net = Network::builder()
                            .input_size(in)
                            .dense(hidden, Activation::Tanh)
                            .dense(out, Activation::Linear)
                            .seed(9)
                            .build();
    Matrix x(rows, in);
    for (std::size_t i = 0; i < x.data().size(); ++i) x.data()[i] = std::sin(0.37f * static_cast<float>(i));
    const Matrix y = net.predict(x);
    const auto& p = net.parameters();
    std::vector<float> expected;
    for (std::size_t r = 0; r < rows; ++r) {
        std::vector<double> h(hidden);
        for (std::size_t o = 0; o < hidden; ++o) {
            double z = p[in * hidden + o];
            for (std::size_t i = 0; i < in; ++i) z += static_cast<double>(p[o * in + i]) * x(r, i);
            h[o] = std::tanh(z);
        }
        const std::size_t off = in * hidden + hidden;
        for (std::size_t o = 0; o < out; ++o) {
            double z = p[off + hidden * out + o];
            for (std::size_t i = 0; i < hidden; ++i) z += static_cast<double>(p[off + o * hidden + i]) * h[i];
            expected.push_back(static_cast<float>(z));
        }
    }
    CHECK(brain::test::relative_error(y.data(), expected) < 1e-5);
}

TEST_CASE("predict applies the network's standardisation to raw inputs", "[core]") {
    Network net = Network::builder().input_size(2).dense(1, Activation::Linear).build();
    net.set_parameters({1.0f, 10.0f, 0.0f});
    Dataset d(Matrix{{0, 100}, {4, 100}, {2, 104}, {2, 96}}, Matrix{{0}, {1}, {2}, {3}});
    d.set_names({"size", "weight"}, {"price"});
    d.standardize(); // mean (2, 100), stddev (sqrt(2), sqrt(8))
    net.adopt_dataset_metadata(d);
    CHECK(net.feature_names() == std::vector<std::string>{"size", "weight"});
    CHECK(net.target_names() == std::vector<std::string>{"price"});
    REQUIRE(net.standardization().has_value());
    const Matrix out = net.predict(Matrix{{4, 104}});
    // (4 - 2) / sqrt(2) + 10 * (104 - 100) / sqrt(8)
    CHECK(brain::test::close(out(0, 0), 2 / std::sqrt(2.0) + 40 / std::sqrt(8.0), 1e-6, 1e-6));
    require_error([&] { (void)net.predict(Matrix{{1}}); }, ErrorCode::InvalidArgument, {"size, weight", "found 1"});

    Dataset wrong(Matrix{{1, 2, 3}}, Matrix{{0}});
    require_error([&] { net.adopt_dataset_metadata(wrong); }, ErrorCode::InvalidArgument,
                  {"2 feature columns", "3"});
}

TEST_CASE("predict reads a MatrixView of rows held elsewhere in place", "[core]") {
    Network net =
        Network::builder().input_size(3).dense(4, Activation::Tanh).dense(2, Activation::Linear).seed(5).build();
    // Rows 1 and 2 of a buffer that is not a Matrix, with a NaN beyond the view that must never be read.
    const std::vector<float> buffer{9, 9, 9, 0.5f, -1, 2, 3, 0.25f, -4, std::numeric_limits<float>::quiet_NaN()};
    const brain::MatrixView view(buffer.data() + 3, 2, 3);
    CHECK(view.size() == 6);
    CHECK(view(1, 2) == -4.0f);
    const Matrix copy{{0.5f, -1, 2}, {3, 0.25f, -4}};
    CHECK(net.predict(view).data() == net.predict(copy).data());
    CHECK(net.predict(brain::MatrixView(copy)).data() == net.predict(copy).data());
    CHECK(net.predict(brain::MatrixView(buffer.data(), 0, 3)).rows() == 0);
    require_error([&] { (void)net.predict(brain::MatrixView(buffer.data(), 2, 4)); }, ErrorCode::InvalidArgument,
                  {"expected 3 input columns", "found 4"});
    require_error([&] { (void)net.predict(brain::MatrixView(buffer.data() + 1, 3, 3)); }, ErrorCode::InvalidData,
                  {"row 2, column 2", "nan"});
}

TEST_CASE("predict_classes: argmax for softmax, 0.5 threshold for one sigmoid", "[core]") {
    Network soft = Network::builder().input_size(2).dense(3, Activation::Softmax).build();
    // Logits: [x0, x1, -x0 - x1]
    soft.set_parameters({1, 0, 0, 1, -1, -1, 0, 0, 0});
    CHECK(soft.predict_classes(Matrix{{2, 1}, {0, 3}, {-1, -1}}) == std::vector<std::size_t>{0, 1, 2});

    Network sig = Network::builder().input_size(1).dense(1, Activation::Sigmoid).build();
    sig.set_parameters({1.0f, 0.0f});
    CHECK(sig.predict_classes(Matrix{{-2}, {0.5f}, {0}, {-0.01f}}) == std::vector<std::size_t>{0, 1, 1, 0});

    const Network reg = tiny_regressor();
    require_error(
        [&] {
            (void)reg.predict_classes(Matrix{{1, 2}});
        },
        ErrorCode::InvalidArgument, {"linear", "not a classifier"});
}

TEST_CASE("evaluate: MSE over B rows and K outputs", "[core]") {
    Network net = Network::builder().input_size(1).dense(2, Activation::Linear).build();
    net.set_parameters({1.0f, 2.0f, 0.0f, 1.0f}); // y = [x, 2x + 1]
    const Dataset d(Matrix{{1}, {2}}, Matrix{{1, 1}, {0, 0}});
    // Outputs [1, 3] and [2, 5]: squared errors 0 + 4 + 4 + 25 = 33, over B K = 4.
    const auto e = net.evaluate(d);
    CHECK(brain::test::close(e.loss, 33.0 / 4.0, 1e-6, 0));
    CHECK_FALSE(e.accuracy.has_value());

    require_error(
        [&] {
            (void)net.evaluate(Dataset(Matrix{{1, 2}}, Matrix{{1, 1}}));
        },
        ErrorCode::InvalidArgument, {"expects 1 feature", "has 2"});
    require_error([&] { (void)net.evaluate(Dataset(Matrix{{1}}, Matrix{{1}})); }, ErrorCode::InvalidArgument,
                  {"2 outputs", "1 target"});
}

TEST_CASE("evaluate: BCE from logits and the sigmoid accuracy", "[core]") {
    Network net = Network::builder().input_size(1).dense(1, Activation::Sigmoid).build();
    net.set_parameters({1.0f, 0.0f});
    const Dataset d(Matrix{{0}, {2}, {-1}, {30}}, Matrix{{1}, {0}, {0}, {1}});
    const auto e = net.evaluate(d);
    const double expected =
        (-std::log(sigmoid(0)) - std::log(1 - sigmoid(2)) - std::log(1 - sigmoid(-1)) - std::log(sigmoid(30))) / 4;
    CHECK(brain::test::close(e.loss, expected, 1e-5, 1e-7));
    REQUIRE(e.accuracy.has_value());
    // Predictions 1 (p = 0.5), 1, 0, 1 against 1, 0, 0, 1.
    CHECK(brain::test::close(*e.accuracy, 0.75, 1e-6, 0));
}

TEST_CASE("evaluate: CCE sums over classes and averages over rows", "[core]") {
    Network net = Network::builder().input_size(2).dense(3, Activation::Softmax).build();
    const std::vector<float> params{1, -1, 0.5f, 0.5f, -1, 2, 0.1f, 0, -0.1f};
    net.set_parameters(params);
    const Matrix x{{1, 2}, {-1, 0.5f}, {3, -2}};
    const Matrix t{{0, 0, 1}, {1, 0, 0}, {0.2f, 0.8f, 0}}; // soft targets count too
    const auto e = net.evaluate(Dataset(x, t));
    double total = 0;
    std::size_t correct = 0;
    for (std::size_t r = 0; r < 3; ++r) {
        double z[3], norm = 0;
        for (std::size_t o = 0; o < 3; ++o) {
            z[o] = params[o * 2] * x(r, 0) + params[o * 2 + 1] * x(r, 1) + params[6 + o];
            norm += std::exp(z[o]);
        }
        std::size_t best = 0, target = 0;
        for (std::size_t o = 0; o < 3; ++o) {
            total -= t(r, o) * std::log(std::exp(z[o]) / norm);
            if (z[o] > z[best]) best = o;
            if (t(r, o) > t(r, target)) target = o;
        }
        correct += best == target;
    }
    CHECK(brain::test::close(e.loss, total / 3, 1e-5, 1e-7));
    REQUIRE(e.accuracy.has_value());
    CHECK(brain::test::close(*e.accuracy, static_cast<double>(correct) / 3, 1e-6, 0));
}

TEST_CASE("evaluate uses the network's standardisation", "[core]") {
    Network net = Network::builder().input_size(1).dense(1, Activation::Linear).build();
    net.set_parameters({1.0f, 0.0f});
    Dataset d(Matrix{{1}, {3}}, Matrix{{-1}, {1}});
    d.standardize();                    // mean 2, stddev 1: standardised inputs equal the targets
    CHECK(net.evaluate(d).loss > 1.0f); // not adopted yet: raw inputs
    net.adopt_dataset_metadata(d);
    CHECK(net.evaluate(d).loss == 0.0f);
}

TEST_CASE("set_parameters and restore_checkpoint check sizes and values", "[core]") {
    Network net = tiny_regressor();
    require_error([&] { net.set_parameters(std::vector<float>(5)); }, ErrorCode::InvalidArgument,
                  {"expected 9", "found 5"});
    std::vector<float> bad(9, 0.0f);
    bad[8] = std::numeric_limits<float>::infinity();
    require_error([&] { net.set_parameters(bad); }, ErrorCode::InvalidArgument, {"layer 1 bias [0]", "inf"});
    bad[8] = 0.0f;
    bad[3] = std::nanf("");
    require_error([&] { net.set_parameters(bad); }, ErrorCode::InvalidArgument, {"layer 0 weight [1, 1]"});

    brain::Checkpoint cp;
    cp.parameters = std::vector<float>(9, 0.5f);
    cp.optimizer_state = std::vector<float>(18, 0.25f);
    cp.optimizer_step = 12;
    cp.epochs_trained = 3;
    Network copy = net;
    copy.restore_checkpoint(cp);
    CHECK(copy.parameters() == cp.parameters);
    CHECK(copy.optimizer_state() == cp.optimizer_state);
    CHECK(copy.optimizer_step() == 12);
    CHECK(copy.epochs_trained() == 3);
    // Copies are independent.
    CHECK(net.parameters() != copy.parameters());
    CHECK(net.optimizer_step() == 0);

    cp.optimizer_state.resize(9);
    require_error([&] { copy.restore_checkpoint(cp); }, ErrorCode::InvalidArgument, {"expected 18", "9"});
    cp.optimizer_state.resize(18);
    cp.parameters.resize(10);
    require_error([&] { copy.restore_checkpoint(cp); }, ErrorCode::InvalidArgument, {"expected 9", "10"});
    cp.parameters = std::vector<float>(9, std::nanf(""));
    require_error([&] { copy.restore_checkpoint(cp); }, ErrorCode::NumericalError, {"layer 0 weight [0, 0]"});
    CHECK(copy.optimizer_step() == 12); // a rejected checkpoint changes nothing
}

TEST_CASE("predict and evaluate handle inputs larger than one internal chunk", "[core]") {
    Network net =
        Network::builder().input_size(2).dense(3, Activation::Tanh).dense(1, Activation::Linear).seed(2).build();
    const std::size_t rows = 2500;
    Matrix x(rows, 2);
    Matrix t(rows, 1);
    for (std::size_t r = 0; r < rows; ++r) {
        x(r, 0) = static_cast<float>(r % 17) * 0.25f - 2.0f;
        x(r, 1) = static_cast<float>(r % 5) - 2.0f;
        t(r, 0) = static_cast<float>(r % 3);
    }
    Dataset d(x, t);
    d.standardize();
    net.adopt_dataset_metadata(d);
    const Matrix all = net.predict(x);
    REQUIRE(all.rows() == rows);
    double sq = 0;
    for (std::size_t r : {std::size_t{0}, std::size_t{1023}, std::size_t{1024}, std::size_t{2048}, rows - 1}) {
        const Matrix one = net.predict(Matrix(1, 2, {x(r, 0), x(r, 1)}));
        CHECK(one(0, 0) == all(r, 0));
    }
    for (std::size_t r = 0; r < rows; ++r) sq += (static_cast<double>(all(r, 0)) - t(r, 0)) * (all(r, 0) - t(r, 0));
    CHECK(brain::test::close(net.evaluate(d).loss, sq / rows, 1e-5, 0));
}
