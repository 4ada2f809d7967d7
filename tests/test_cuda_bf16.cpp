// The CUDA backend's mixed precision (precision bf16: bf16 operands and storage, float32 master weights, optimizer
// and accumulation through cuBLASLt) and its predictor. Every case needs a GPU and skips with the reason elsewhere.
#include "support/catch.hpp"
#include "support/env.hpp"
#include "support/error_match.hpp"
#include "support/gpu.hpp"
#include "support/numeric.hpp"

#include <brain/brain.hpp>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

using brain::Activation;
using brain::ErrorCode;
using brain::Loss;
using brain::Optimizer;
using brain::Precision;
using brain::TrainingBackend;
using brain::test::ScopedEnv;

namespace {

TrainingBackend gpu(Precision precision = Precision::Float32, std::uint64_t budget_mib = 1024) {
    return TrainingBackend::cuda(0, budget_mib).with_precision(precision);
}

// `rows` rows of `inputs` features in [-1, 1) and targets suited to `loss` over `outputs` columns.
brain::Dataset make_data(std::size_t rows, std::size_t inputs, std::size_t outputs, Loss loss, std::uint64_t seed) {
    brain::Random rng(seed);
    brain::Matrix x(rows, inputs), y(rows, outputs);
    for (std::size_t r = 0; r < rows; ++r) {
        float s = 0.0f;
        for (std::size_t c = 0; c < inputs; ++c) {
            x(r, c) = static_cast<float>(rng.uniform(-1.0, 1.0));
            s += x(r, c) * (c % 3 == 0 ? 1.0f : -0.5f);
        }
        for (std::size_t k = 0; k < outputs; ++k) {
            const float v = std::sin(s + static_cast<float>(k));
            if (loss == Loss::MeanSquaredError) y(r, k) = v;
            if (loss == Loss::BinaryCrossEntropy) y(r, k) = v > 0.0f ? 1.0f : 0.0f;
        }
        if (loss == Loss::CategoricalCrossEntropy)
            y(r, static_cast<std::size_t>(std::fabs(s) * 5.0f) % outputs) = 1;
    }
    return brain::Dataset(std::move(x), std::move(y));
}

brain::Network make_network(const std::vector<std::size_t>& widths, Activation hidden, Activation head, Loss loss,
                            const Optimizer& optimizer) {
    auto builder = brain::Network::builder().input_size(widths.front());
    for (std::size_t l = 1; l + 1 < widths.size(); ++l) builder.dense(widths[l], hidden);
    return builder.dense(widths.back(), head).loss(loss).optimizer(optimizer).seed(17).build();
}

} // namespace

TEST_CASE("CUDA bf16 is mixed precision, says so, and gives other bits than tf32", "[cuda]") {
    REQUIRE_GPU();
    const auto data = make_data(4096, 256, 4, Loss::MeanSquaredError, 3);
    const auto base = make_network({256, 512, 512, 4}, Activation::Relu, Activation::Linear, Loss::MeanSquaredError,
                                   Optimizer::adam(0.001f));
    const brain::TrainConfig config{3, 256, true, 5};
    auto fp32 = base, tf32 = base, bf16 = base;
    const auto fp32_report = fp32.fit_with_backend(data, config, gpu());
    const auto tf32_report = tf32.fit_with_backend(data, config, gpu(Precision::Tf32));
    const auto bf16_report = bf16.fit_with_backend(data, config, gpu(Precision::Bf16));
    CHECK(bf16_report.stats.precision == Precision::Bf16);
    CHECK(bf16_report.stats.arithmetic == "bf16 mixed, float32 master weights (cuBLASLt)");
    CHECK(tf32_report.stats.arithmetic == "tf32 products, float32 storage (cuBLAS)");
    CHECK(bf16.parameters() != tf32.parameters());
    CHECK(bf16_report.epoch_losses != tf32_report.epoch_losses);
    // bf16 trains: the loss falls, and ends near float32's.
    CHECK(bf16_report.epoch_losses.back() < bf16_report.epoch_losses.front());
    CHECK(brain::test::close(bf16_report.epoch_losses.back(), fp32_report.epoch_losses.back(), 0.1, 1e-3));
    // The master weights are float32: they are not bf16 values (whose low 16 bits are zero).
    std::size_t full_precision = 0;
    for (const float w : bf16.parameters()) {
        std::uint32_t bits = 0;
        std::memcpy(&bits, &w, sizeof bits);
        full_precision += (bits & 0xffffu) != 0 ? 1 : 0;
    }
    CHECK(full_precision > bf16.parameters().size() / 2);
}

TEST_CASE("CUDA bf16 follows float32 for every activation, loss and optimizer", "[cuda]") {
    REQUIRE_GPU();
    const brain::test::OutputHead heads[] = {{Activation::Linear, Loss::MeanSquaredError, 2},
                                             {Activation::Sigmoid, Loss::BinaryCrossEntropy, 3},
                                             {Activation::Softmax, Loss::CategoricalCrossEntropy, 5}};
    const Optimizer optimizers[] = {Optimizer::sgd(0.05f, 0.9f), Optimizer::adam(0.005f),
                                    Optimizer::adamw(0.005f, 0.05f)};
    for (const Activation hidden : brain::test::k_hidden_activations)
        for (const brain::test::OutputHead& head : heads)
            for (const Optimizer& optimizer : optimizers) {
                INFO("hidden " << brain::to_string(hidden) << ", output " << brain::to_string(head.output)
                               << ", optimizer " << brain::to_string(optimizer.kind));
                // 1000 rows in batches of 96: the last batch is short (40 rows).
                const auto data = make_data(1000, 24, head.width, head.loss, 7);
                const auto base = make_network({24, 64, 40, head.width}, hidden, head.output, head.loss, optimizer);
                const brain::TrainConfig config{3, 96, true, 2};
                auto fp32 = base, bf16 = base;
                const auto fp32_report = fp32.fit_with_backend(data, config, gpu());
                const auto bf16_report = bf16.fit_with_backend(data, config, gpu(Precision::Bf16));
                CHECK(bf16_report.stats.precision == Precision::Bf16);
                CHECK(bf16.optimizer_step() == fp32.optimizer_step());
                // bf16 rounds every operand to 8 bits of mantissa: the weights follow float32's, not bit for bit
                // (Adam's normalised steps amplify sign changes of gradients near zero).
                CHECK(brain::test::relative_error(bf16.parameters(), fp32.parameters()) < 0.1);
                CHECK(brain::test::close(bf16_report.epoch_losses.back(), fp32_report.epoch_losses.back(), 0.1,
                                         2e-3));
            }
}

TEST_CASE("CUDA bf16 resident, staged and unshuffled epochs, graphs and direct launches agree", "[cuda]") {
    REQUIRE_GPU();
    const auto data = make_data(20000, 32, 2, Loss::MeanSquaredError, 23);
    const auto base = make_network({32, 48, 40, 2}, Activation::Gelu, Activation::Linear, Loss::MeanSquaredError,
                                   Optimizer::adam(0.005f));
    for (const bool shuffle : {true, false}) {
        INFO("shuffle " << shuffle);
        const brain::TrainConfig config{2, 500, shuffle, 4};
        auto resident = base, staged = base, direct = base;
        const auto resident_report = resident.fit_with_backend(data, config, gpu(Precision::Bf16, 256));
        // 2 MiB holds the tensors but not the 2.7 MB data set: batches are staged, converted to bf16 by the host.
        const auto staged_report = staged.fit_with_backend(data, config, gpu(Precision::Bf16, 2));
        {
            ScopedEnv no_graphs("BRAIN_CUDA_GRAPHS", std::string("0"));
            direct.fit_with_backend(data, config, gpu(Precision::Bf16, 256));
        }
        CHECK(resident_report.stats.dataset_resident);
        CHECK(!staged_report.stats.dataset_resident);
        CHECK(staged_report.stats.peak_allocated_bytes <= 2ull << 20);
        CHECK(brain::test::relative_error(staged.parameters(), resident.parameters()) < 1e-6);
        CHECK(brain::test::relative_error(direct.parameters(), resident.parameters()) < 1e-6);
    }
}

TEST_CASE("CUDA bf16 checkpoints carry on in a new session as in one session", "[cuda]") {
    REQUIRE_GPU();
    // Layers whose sizes are not multiples of the padded layout's 128 values.
    const auto data = make_data(900, 13, 3, Loss::MeanSquaredError, 5);
    const auto base = make_network({13, 37, 29, 3}, Activation::LeakyRelu, Activation::Tanh, Loss::MeanSquaredError,
                                   Optimizer::adamw(0.01f, 0.01f));
    auto once = base, twice = base;
    once.fit_with_backend(data, brain::TrainConfig{4, 64, true, 9}, gpu(Precision::Bf16));
    twice.fit_with_backend(data, brain::TrainConfig{2, 64, true, 9}, gpu(Precision::Bf16));
    twice.fit_with_backend(data, brain::TrainConfig{2, 64, true, 9}, gpu(Precision::Bf16));
    CHECK(twice.optimizer_step() == once.optimizer_step());
    CHECK(brain::test::relative_error(twice.parameters(), once.parameters()) < 1e-6);
    CHECK(brain::test::relative_error(twice.optimizer_state(), once.optimizer_state()) < 1e-6);
}

TEST_CASE("CUDA bf16 memory stays within its estimate and its budget", "[cuda]") {
    REQUIRE_GPU();
    struct Shape {
        std::vector<std::size_t> widths;
        Activation hidden;
        std::uint32_t batch;
    };
    const Shape shapes[] = {{{16, 256, 256, 1}, Activation::Relu, 256},
                            {{1, 1, 1}, Activation::Linear, 1},
                            {{300, 64, 128, 10}, Activation::Gelu, 1000},
                            {{33, 7, 3}, Activation::LeakyRelu, 17}};
    for (const Shape& shape : shapes) {
        INFO("inputs " << shape.widths.front() << " batch " << shape.batch);
        const auto net = make_network(shape.widths, shape.hidden, Activation::Linear, Loss::MeanSquaredError,
                                      Optimizer::adam(0.001f));
        const auto data =
            make_data(shape.batch * 3 + 1, shape.widths.front(), shape.widths.back(), Loss::MeanSquaredError, 2);
        brain::TrainingSession session(net, data, brain::TrainConfig{1, shape.batch, true, 1},
                                       gpu(Precision::Bf16));
        session.train_epoch();
        const auto stats = session.stats();
        CHECK(stats.peak_allocated_bytes > 0);
        CHECK(stats.peak_allocated_bytes <= brain::estimate_tensor_memory_bytes(net, shape.batch, Precision::Bf16));
    }
    // A budget the tensors do not fit: the message names the largest batch that does, and that batch trains.
    const auto net = make_network({64, 1024, 1024, 1}, Activation::Relu, Activation::Linear, Loss::MeanSquaredError,
                                  Optimizer::adam(0.001f));
    const auto data = make_data(4096, 64, 1, Loss::MeanSquaredError, 5);
    const std::string message = brain::test::expect_error(ErrorCode::BudgetExceeded, [&] {
        brain::TrainingSession(net, data, brain::TrainConfig{1, 4096, true, 1}, gpu(Precision::Bf16, 24));
    });
    const std::size_t largest = brain::test::largest_batch_named(message);
    CHECK(largest > 0);
    CHECK(largest < 4096);
    brain::TrainingSession session(net, data, brain::TrainConfig{1, static_cast<std::uint32_t>(largest), true, 1},
                                   gpu(Precision::Bf16, 24));
    CHECK(std::isfinite(session.train_epoch()));
    const auto stats = session.stats();
    CHECK(stats.peak_allocated_bytes + stats.dataset_bytes + stats.workspace_bytes <= 24ull << 20);
}

TEST_CASE("CUDA bf16 on a network the fused kernel would take runs the cuBLASLt path", "[cuda]") {
    REQUIRE_GPU();
    const auto data = make_data(2048, 16, 1, Loss::MeanSquaredError, 4);
    const auto base = make_network({16, 64, 64, 1}, Activation::Relu, Activation::Linear, Loss::MeanSquaredError,
                                   Optimizer::adam(0.002f));
    auto fp32 = base, bf16 = base;
    const auto fp32_report = fp32.fit_with_backend(data, brain::TrainConfig{2, 128, true, 1}, gpu());
    ScopedEnv forced("BRAIN_CUDA_FUSED", std::string("1"));
    const auto bf16_report = bf16.fit_with_backend(data, brain::TrainConfig{2, 128, true, 1}, gpu(Precision::Bf16));
    INFO("float32: " << fp32_report.stats.arithmetic);
    CHECK(fp32_report.stats.arithmetic.rfind("float32 (", 0) == 0);
    CHECK(fp32_report.stats.arithmetic.find("epoch kernel)") != std::string::npos);
    CHECK(bf16_report.stats.arithmetic == "bf16 mixed, float32 master weights (cuBLASLt)");
}

TEST_CASE("CUDA prediction agrees with the host predict within 1e-5 in float32", "[cuda]") {
    REQUIRE_GPU();
    struct Case {
        Activation hidden, head;
        Loss loss;
        std::size_t outputs;
    };
    const Case cases[] = {{Activation::Relu, Activation::Linear, Loss::MeanSquaredError, 3},
                          {Activation::Gelu, Activation::Softmax, Loss::CategoricalCrossEntropy, 6},
                          {Activation::Tanh, Activation::Sigmoid, Loss::BinaryCrossEntropy, 2},
                          {Activation::LeakyRelu, Activation::Linear, Loss::MeanSquaredError, 1},
                          {Activation::Sigmoid, Activation::Tanh, Loss::MeanSquaredError, 2},
                          {Activation::Linear, Activation::Linear, Loss::MeanSquaredError, 1}};
    for (const Case& c : cases) {
        INFO("hidden " << brain::to_string(c.hidden) << ", head " << brain::to_string(c.head));
        auto net = make_network({40, 130, 70, c.outputs}, c.hidden, c.head, c.loss, Optimizer::adam(0.005f));
        auto data = make_data(3000, 40, c.outputs, c.loss, 8);
        data.standardize();
        net.fit_with_backend(data, brain::TrainConfig{2, 100, true, 3}, gpu());
        const brain::Matrix inputs = make_data(5000, 40, 1, Loss::MeanSquaredError, 12).features();
        const brain::Matrix host = net.predict(inputs);
        CHECK(brain::test::relative_error(net.predict_with_backend(inputs, gpu()).data(), host.data()) < 1e-5);
        // Calls of 1500 rows in parts of 1024 and 476 (both input slots, a graph for the full part, direct launches
        // for the short one), the last call of 500 rows; and the same without graphs.
        brain::Predictor predictor(net, gpu(), 1500);
        CHECK(predictor.batch_rows() == 1500);
        const brain::Matrix streamed = predictor.predict(inputs);
        CHECK(brain::test::relative_error(streamed.data(), host.data()) < 1e-5);
        CHECK(predictor.predict(inputs).data() == streamed.data());
        {
            ScopedEnv no_graphs("BRAIN_CUDA_GRAPHS", std::string("0"));
            brain::Predictor direct(net, gpu(), 1500);
            CHECK(direct.predict(inputs).data() == streamed.data());
        }
        // tf32 and bf16 predictions stay close to float32's.
        for (const Precision p : {Precision::Tf32, Precision::Bf16}) {
            INFO("precision " << brain::to_string(p));
            CHECK(brain::test::relative_error(net.predict_with_backend(inputs, gpu(p)).data(), host.data()) < 5e-2);
        }
    }
}

TEST_CASE("CUDA predictor under a budget halves its batch, and names the budget when nothing fits", "[cuda]") {
    REQUIRE_GPU();
    // 256 -> 2048 -> 2048 -> 4: 17 MB of float32 weights; a row in flight takes 2 x 256 + 2 x 2048 + 4 floats.
    const auto net = make_network({256, 2048, 2048, 4}, Activation::Relu, Activation::Linear,
                                  Loss::MeanSquaredError, Optimizer::adam(0.001f));
    const brain::Matrix inputs = make_data(3000, 256, 1, Loss::MeanSquaredError, 2).features();
    brain::Predictor predictor(net, gpu(Precision::Float32, 24), 16384);
    CHECK(predictor.batch_rows() < 16384);
    CHECK(brain::test::relative_error(predictor.predict(inputs).data(), net.predict(inputs).data()) < 1e-5);
    BRAIN_REQUIRE_ERROR(ErrorCode::BudgetExceeded, brain::Predictor(net, gpu(Precision::Float32, 8), 64),
                        "the CUDA predictor needs", "memory budget", "not even one row fits");
    // bf16 weights take half the memory: the same budget holds more rows.
    brain::Predictor half(net, gpu(Precision::Bf16, 24), 16384);
    CHECK(half.batch_rows() >= predictor.batch_rows());
}
