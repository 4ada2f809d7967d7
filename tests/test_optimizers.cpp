// Optimizer updates of the CPU backend against PyTorch's formulas evaluated independently in double precision:
// SGD with momentum, Adam and AdamW, one and two steps, on a one-layer linear network with MSE.
#include "support/catch.hpp"
#include "support/numeric.hpp"

#include <brain/brain.hpp>
#include <cmath>
#include <vector>

using brain::Activation;
using brain::Optimizer;

namespace {

// Three rows, two features, one target: small enough to differentiate by hand.
brain::Dataset tiny_data() {
    return brain::Dataset(brain::Matrix{{0.5f, -1.0f}, {1.5f, 0.25f}, {-0.75f, 2.0f}},
                          brain::Matrix{{1.0f}, {-0.5f}, {0.25f}});
}

brain::Network linear_network(const Optimizer& optimizer) {
    return brain::Network::builder()
        .input_size(2)
        .dense(1, Activation::Linear)
        .loss(brain::Loss::MeanSquaredError)
        .optimizer(optimizer)
        .seed(11)
        .build();
}

// The double-precision model of the network: parameters {w0, w1, b} (the ABI layout: W then b).
struct Reference {
    std::vector<double> p, m, v; // v doubles as SGD's velocity
    std::uint64_t t = 0;

    // dL/dp of MSE over rows [begin, end): L = sum (w.x + b - y)^2 / n.
    static std::vector<double> gradient(const std::vector<double>& p, const brain::Dataset& data, std::size_t begin,
                                        std::size_t end) {
        std::vector<double> g(3, 0.0);
        const double n = static_cast<double>(end - begin);
        for (std::size_t r = begin; r < end; ++r) {
            const double x0 = data.features()(r, 0), x1 = data.features()(r, 1), y = data.targets()(r, 0);
            const double e = p[0] * x0 + p[1] * x1 + p[2] - y;
            g[0] += 2.0 * e * x0 / n;
            g[1] += 2.0 * e * x1 / n;
            g[2] += 2.0 * e / n;
        }
        return g;
    }

    static double loss(const std::vector<double>& p, const brain::Dataset& data, std::size_t begin,
                       std::size_t end) {
        double total = 0.0;
        for (std::size_t r = begin; r < end; ++r) {
            const double e =
                p[0] * data.features()(r, 0) + p[1] * data.features()(r, 1) + p[2] - data.targets()(r, 0);
            total += e * e;
        }
        return total / static_cast<double>(end - begin);
    }

    void sgd(const std::vector<double>& g, double lr, double mu) {
        for (std::size_t i = 0; i < 3; ++i) {
            v[i] = mu * v[i] + g[i];
            p[i] -= lr * v[i];
        }
    }

    void adam(const std::vector<double>& g, const Optimizer& o, bool decoupled) {
        ++t;
        const double b1 = o.beta1, b2 = o.beta2, lr = o.learning_rate;
        for (std::size_t i = 0; i < 3; ++i) {
            if (decoupled) p[i] -= lr * o.weight_decay * p[i];
            m[i] = b1 * m[i] + (1.0 - b1) * g[i];
            v[i] = b2 * v[i] + (1.0 - b2) * g[i] * g[i];
            const double m_hat = m[i] / (1.0 - std::pow(b1, static_cast<double>(t)));
            const double v_hat = v[i] / (1.0 - std::pow(b2, static_cast<double>(t)));
            p[i] -= lr * m_hat / (std::sqrt(v_hat) + o.epsilon);
        }
    }
};

std::vector<float> to_float(const std::vector<double>& values) {
    return {values.begin(), values.end()};
}

Reference reference_from(const brain::Network& net) {
    Reference ref;
    ref.p.assign(net.parameters().begin(), net.parameters().end());
    ref.m.assign(3, 0.0);
    ref.v.assign(3, 0.0);
    return ref;
}

brain::TrainConfig full_batch() {
    return brain::TrainConfig{1, 3, false, 1};
}

} // namespace

TEST_CASE("SGD with momentum follows v = mu v + g, p -= lr v for one and two steps", "[plugin]") {
    const auto data = tiny_data();
    const Optimizer opt = Optimizer::sgd(0.1f, 0.9f);
    const auto net = linear_network(opt);
    REQUIRE(net.parameter_count() == 3);
    REQUIRE(net.optimizer_state().size() == 3);

    Reference ref = reference_from(net);
    brain::TrainingSession session(net, data, full_batch(), brain::TrainingBackend::cpu());

    const double expected_loss0 = Reference::loss(ref.p, data, 0, 3);
    ref.sgd(Reference::gradient(ref.p, data, 0, 3), 0.1, 0.9);
    CHECK(brain::test::close(session.train_epoch(), expected_loss0, 1e-5, 1e-7));
    auto cp = session.checkpoint();
    CHECK(brain::test::all_close(cp.parameters, to_float(ref.p), 1e-5, 1e-6));
    CHECK(brain::test::all_close(cp.optimizer_state, to_float(ref.v), 1e-5, 1e-6));

    const double expected_loss1 = Reference::loss(ref.p, data, 0, 3);
    ref.sgd(Reference::gradient(ref.p, data, 0, 3), 0.1, 0.9);
    CHECK(brain::test::close(session.train_epoch(), expected_loss1, 1e-5, 1e-7));
    cp = session.checkpoint();
    INFO("after two steps: " << cp.parameters[0] << " " << cp.parameters[1] << " " << cp.parameters[2]);
    CHECK(brain::test::all_close(cp.parameters, to_float(ref.p), 1e-5, 1e-6));
    CHECK(brain::test::all_close(cp.optimizer_state, to_float(ref.v), 1e-5, 1e-6));
}

TEST_CASE("SGD steps after every batch, and the short last batch is normalised by its own size", "[plugin]") {
    const auto data = tiny_data();
    const auto net = linear_network(Optimizer::sgd(0.05f, 0.5f));
    Reference ref = reference_from(net);

    // batch_size 2 over 3 rows, unshuffled: rows {0, 1} then row {2}.
    brain::TrainingSession session(net, data, brain::TrainConfig{1, 2, false, 1}, brain::TrainingBackend::cpu());
    const double loss_a = Reference::loss(ref.p, data, 0, 2);
    ref.sgd(Reference::gradient(ref.p, data, 0, 2), 0.05, 0.5);
    const double loss_b = Reference::loss(ref.p, data, 2, 3);
    ref.sgd(Reference::gradient(ref.p, data, 2, 3), 0.05, 0.5);

    const float loss = session.train_epoch();
    CHECK(brain::test::close(loss, (2.0 * loss_a + 1.0 * loss_b) / 3.0, 1e-5, 1e-7));
    const auto cp = session.checkpoint();
    CHECK(brain::test::all_close(cp.parameters, to_float(ref.p), 1e-5, 1e-6));
    CHECK(brain::test::all_close(cp.optimizer_state, to_float(ref.v), 1e-5, 1e-6));
    CHECK(cp.optimizer_step == 2);
    CHECK(session.stats().batches == 2);
}

TEST_CASE("Adam is bias-corrected like PyTorch for one and two steps", "[plugin]") {
    const auto data = tiny_data();
    const Optimizer opt = Optimizer::adam(0.01f);
    const auto net = linear_network(opt);
    REQUIRE(net.optimizer_state().size() == 6);
    Reference ref = reference_from(net);
    brain::TrainingSession session(net, data, full_batch(), brain::TrainingBackend::cpu());

    for (int step = 1; step <= 2; ++step) {
        INFO("step " << step);
        const std::vector<double> before = ref.p;
        const double expected_loss = Reference::loss(ref.p, data, 0, 3);
        ref.adam(Reference::gradient(ref.p, data, 0, 3), opt, false);
        CHECK(brain::test::close(session.train_epoch(), expected_loss, 1e-5, 1e-7));
        const auto cp = session.checkpoint();
        CHECK(cp.optimizer_step == static_cast<std::uint64_t>(step));
        CHECK(brain::test::all_close(cp.parameters, to_float(ref.p), 1e-5, 1e-6));
        const std::vector<float> m(cp.optimizer_state.begin(), cp.optimizer_state.begin() + 3);
        const std::vector<float> v(cp.optimizer_state.begin() + 3, cp.optimizer_state.end());
        CHECK(brain::test::all_close(m, to_float(ref.m), 1e-5, 1e-7));
        CHECK(brain::test::all_close(v, to_float(ref.v), 1e-5, 1e-9));
        if (step == 1) {
            // The first bias-corrected step moves every parameter by almost exactly lr (m_hat / sqrt(v_hat) = +-1).
            for (std::size_t i = 0; i < 3; ++i)
                CHECK(std::fabs(std::fabs(cp.parameters[i] - before[i]) - 0.01) < 1e-5);
        }
    }
}

TEST_CASE("AdamW decays the weights before the Adam update (decoupled)", "[plugin]") {
    const auto data = tiny_data();
    const Optimizer opt = Optimizer::adamw(0.05f, 0.2f);
    const auto net = linear_network(opt);
    Reference ref = reference_from(net);
    Reference adam_only = reference_from(net);
    brain::TrainingSession session(net, data, full_batch(), brain::TrainingBackend::cpu());

    for (int step = 1; step <= 2; ++step) {
        INFO("step " << step);
        ref.adam(Reference::gradient(ref.p, data, 0, 3), opt, true);
        adam_only.adam(Reference::gradient(adam_only.p, data, 0, 3), opt, false);
        session.train_epoch();
        const auto cp = session.checkpoint();
        CHECK(brain::test::all_close(cp.parameters, to_float(ref.p), 1e-5, 1e-6));
        // The decay is visible: plain Adam would land elsewhere.
        CHECK(brain::test::relative_error(cp.parameters, to_float(adam_only.p)) > 1e-4);
        const std::vector<float> m(cp.optimizer_state.begin(), cp.optimizer_state.begin() + 3);
        CHECK(brain::test::all_close(m, to_float(ref.m), 1e-5, 1e-7));
    }
}

TEST_CASE("Adam resumes its bias correction from a restored network", "[plugin]") {
    const auto data = tiny_data();
    const Optimizer opt = Optimizer::adam(0.02f);
    auto net = linear_network(opt);
    Reference ref = reference_from(net);
    {
        brain::TrainingSession first(net, data, full_batch(), brain::TrainingBackend::cpu());
        first.train_epoch();
        net.restore_checkpoint(first.checkpoint());
    }
    REQUIRE(net.optimizer_step() == 1);
    ref.adam(Reference::gradient(ref.p, data, 0, 3), opt, false);
    ref.adam(Reference::gradient(ref.p, data, 0, 3), opt, false);

    brain::TrainingSession second(net, data, full_batch(), brain::TrainingBackend::cpu());
    second.train_epoch();
    const auto cp = second.checkpoint();
    CHECK(cp.optimizer_step == 2);
    CHECK(brain::test::all_close(cp.parameters, to_float(ref.p), 1e-5, 1e-6));
}
