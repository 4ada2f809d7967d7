// Misuse of the C++ API: moved-from objects, a matrix whose storage was resized, out-of-range enumerations, null
// callbacks, callbacks outside the epochs, targets evaluate cannot score, and values a checkpoint or schedule
// cannot hold. Each is an error with its code and a message naming the value, never a crash or a silent wrong
// result.
#include "support/catch.hpp"
#include "support/error_match.hpp"

#include <brain/brain.hpp>
#include <cmath>
#include <filesystem>
#include <limits>
#include <memory>
#include <unistd.h>

using brain::Activation;
using brain::ErrorCode;
using brain::Matrix;
using brain::TrainConfig;
using brain::test::expect_error;

namespace {

brain::Network small_net() {
    return brain::Network::builder()
        .input_size(2)
        .dense(4, Activation::Tanh)
        .dense(1, Activation::Linear)
        .seed(3)
        .build();
}

brain::Dataset small_data(std::size_t rows = 8) {
    Matrix x(rows, 2), y(rows, 1);
    for (std::size_t r = 0; r < rows; ++r) {
        x(r, 0) = static_cast<float>(r) * 0.25f;
        x(r, 1) = 1.0f - static_cast<float>(r) * 0.125f;
        y(r, 0) = static_cast<float>(r % 3);
    }
    return brain::Dataset(std::move(x), std::move(y));
}

bool has(const std::string& message, const std::string& fragment) {
    INFO("message: " << message << "; expected fragment: " << fragment);
    return message.find(fragment) != std::string::npos;
}

// A callback that runs `begin` and `end` in on_train_begin and on_train_end.
struct Hooks : brain::Callback {
    std::function<void(brain::FitContext&)> begin, end;
    void on_train_begin(brain::FitContext& c) override {
        if (begin) begin(c);
    }
    void on_train_end(brain::FitContext& c) override {
        if (end) end(c);
    }
};

std::filesystem::path temp_path(const std::string& name) {
    return std::filesystem::temp_directory_path() / ("brain_misuse_" + std::to_string(::getpid()) + "_" + name);
}

} // namespace

TEST_CASE("a moved-from network, matrix, session or predictor is refused, never dereferenced", "[core]") {
    brain::Network a = small_net();
    const brain::Network b = std::move(a);
    CHECK(b.input_size() == 2);
    CHECK(a.input_size() == 0); // NOLINT(bugprone-use-after-move): what is tested
    CHECK(a.output_size() == 0);
    const auto data = small_data();
    const TrainConfig config{1, 2, true, 1};
    for (const auto& call : std::vector<std::function<void()>>{
             [&] { a.fit(data, config); },
             [&] { a.fit_with_backend(data, config, brain::TrainingBackend::cpu()); },
             [&] { brain::TrainingSession(a, data, config, brain::TrainingBackend::cpu()); },
             [&] { brain::Predictor(a, brain::TrainingBackend::cpu()); },
             [&] { (void)a.predict_with_backend(data.features(), brain::TrainingBackend::cpu()); },
             [&] { a.adopt_dataset_metadata(data); },
             [&] { a.set_parameters({}); },
             [&] { a.restore_checkpoint(brain::Checkpoint{}); },
             [&] { (void)a.predict(data.features()); },
         })
        CHECK(has(expect_error(ErrorCode::InvalidState, call), "moved from"));

    Matrix x(3, 2, 1.0f);
    const Matrix y = std::move(x);
    CHECK(y.rows() == 3);
    CHECK((x.rows() == 0 && x.cols() == 0 && x.data().empty())); // NOLINT(bugprone-use-after-move)
    CHECK(has(expect_error(ErrorCode::InvalidArgument, [&] { (void)b.predict(x); }), "expected 2 input columns"));

    brain::TrainingSession session(b, data, config, brain::TrainingBackend::cpu());
    brain::TrainingSession moved_session(std::move(session));
    CHECK(has(expect_error(ErrorCode::InvalidState, [&] { (void)session.backend(); }), "moved from"));
    CHECK(moved_session.backend().is_cpu());
    brain::Predictor predictor(b, brain::TrainingBackend::cpu());
    brain::Predictor moved_predictor(std::move(predictor));
    CHECK(has(expect_error(ErrorCode::InvalidState, [&] { (void)predictor.backend(); }), "moved from"));
}

TEST_CASE("a matrix whose storage no longer matches its shape, and unreadable views, are refused", "[core]") {
    const brain::Network net = small_net();
    Matrix m(1000, 2, 1.0f);
    m.data().resize(2);
    m.data().shrink_to_fit();
    const brain::Standardization s{{0, 0}, {2, 2}};
    for (const auto& call : std::vector<std::function<void()>>{
             [&] { (void)net.predict(m); },
             [&] { s.apply(m); },
             [&] { brain::Dataset(m, Matrix(1000, 1)); },
             [&] { brain::Predictor(net, brain::TrainingBackend::cpu()).predict(m); },
         })
        CHECK(has(expect_error(ErrorCode::InvalidArgument, call), "1000 x 2 matrix needs 2000 values"));
    const brain::MatrixView null_rows(nullptr, 4, 2);
    CHECK(has(expect_error(ErrorCode::InvalidArgument, [&] { (void)net.predict(null_rows); }), "null pointer"));
    const float two[2] = {1, 2};
    const brain::MatrixView overflowing(two, std::numeric_limits<std::size_t>::max() / 2 + 1, 2);
    CHECK(has(expect_error(ErrorCode::InvalidArgument, [&] { (void)net.predict(overflowing); }), "overflows"));
}

TEST_CASE("enumeration values out of range are InvalidArgument naming the value", "[core]") {
    CHECK(has(expect_error(ErrorCode::InvalidArgument,
                           [] { (void)brain::TrainingBackend::cpu().with_precision(brain::Precision(9)); }),
              "unknown precision value 9"));
    CHECK(has(expect_error(ErrorCode::InvalidArgument,
                           [] { (void)brain::estimate_tensor_memory_bytes(small_net(), 4, brain::Precision(9)); }),
              "unknown precision value 9"));
    CHECK(has(expect_error(ErrorCode::InvalidArgument,
                           [] {
                               (void)brain::estimate_tensor_memory({{2, 4, Activation(99)}}, 1);
                           }),
              "unknown activation value 99"));
    brain::EarlyStoppingOptions early;
    early.mode = brain::MonitorMode(7);
    CHECK(has(expect_error(ErrorCode::InvalidArgument, [&] { brain::EarlyStopping{early}; }),
              "unknown mode value 7"));
}

TEST_CASE("callbacks: null ones refused; outside the epochs they act at once or not at all", "[core]") {
    brain::Network net = small_net();
    const auto data = small_data();
    const TrainConfig config{2, 4, true, 1};
    brain::FitOptions with_null;
    with_null.callbacks.push_back(nullptr);
    CHECK(has(expect_error(ErrorCode::InvalidArgument, [&] { net.fit(data, config, with_null); }),
              "callbacks[0] is null"));

    // save_checkpoint in on_train_begin writes the run before its first epoch; in on_train_end, as it ended.
    const auto begin_path = temp_path("begin.json"), end_path = temp_path("end.json");
    auto hooks = std::make_shared<Hooks>();
    std::optional<double> loss_at_begin = 1.0;
    hooks->begin = [&](brain::FitContext& c) {
        loss_at_begin = c.monitored("loss");
        c.save_checkpoint(begin_path);
    };
    hooks->end = [&](brain::FitContext& c) {
        c.save_checkpoint(end_path);
        c.stop_training("too late"); // every epoch has run: nothing to stop
        const brain::Checkpoint weights{c.network().parameters(), c.network().optimizer_state(), 0, 0};
        CHECK(has(expect_error(ErrorCode::InvalidArgument, [&] { c.restore_weights(weights, 99); }),
                  "epoch 99 has not been trained"));
    };
    brain::FitOptions options;
    options.callbacks = {hooks};
    const auto report = net.fit(data, config, options);
    CHECK(!loss_at_begin.has_value());
    CHECK(report.stop_reason.empty());
    REQUIRE(std::filesystem::exists(begin_path));
    REQUIRE(std::filesystem::exists(end_path));
    CHECK(brain::TrainingCheckpoint::load(begin_path).network.epochs_trained() == 0);
    const auto ended = brain::TrainingCheckpoint::load(end_path);
    CHECK(ended.network.epochs_trained() == 2);
    CHECK(ended.network.parameters() == net.parameters());
    std::filesystem::remove(begin_path);
    std::filesystem::remove(end_path);
}

TEST_CASE("evaluate and validation sets refuse targets training refuses; many classes stay bounded", "[core]") {
    auto classifier = brain::Network::builder().input_size(2).dense(3, Activation::Softmax).seed(1).build();
    const brain::Dataset zero_rows(Matrix{{0.5f, 0.5f}, {1.0f, 0.0f}}, Matrix{{0, 0, 0}, {0, 1, 0}});
    CHECK(has(expect_error(ErrorCode::InvalidData, [&] { (void)classifier.evaluate(zero_rows); }),
              "Network::evaluate: target row 0"));
    const brain::Dataset good(Matrix{{0.5f, 0.5f}, {1.0f, 0.0f}}, Matrix{{1, 0, 0}, {0, 1, 0}});
    CHECK(has(expect_error(ErrorCode::InvalidData,
                           [&] {
                               classifier.fit(good, TrainConfig{1, 2, true, 1}, &zero_rows);
                           }),
              "the validation set: target row 0"));

    // 5,000 classes: the scores without a 5,000 x 5,000 matrix of counts.
    const std::size_t k = brain::max_confusion_classes + 1;
    std::vector<std::size_t> truth{0, 1, 2, 2}, predicted{0, 2, 2, 1};
    std::vector<std::string> labels;
    for (std::size_t c = 0; c < k; ++c) labels.push_back(std::to_string(c));
    const auto m = brain::classification_metrics(truth, predicted, labels);
    CHECK(m.confusion.empty());
    CHECK(m.accuracy == 0.5);
    CHECK(m.per_class[2].precision == 0.5);
    CHECK(m.per_class[2].recall == 0.5);
    CHECK(m.per_class[0].f1 == 1.0);
    labels.resize(3);
    const auto small = brain::classification_metrics(truth, predicted, labels);
    REQUIRE(small.confusion.size() == 3);
    CHECK(small.confusion[2][1] == 1);
    CHECK(small.per_class[2].precision == m.per_class[2].precision);
}

TEST_CASE("checkpoints, standardisations and schedules holding impossible values are refused when set", "[core]") {
    brain::Network net = brain::Network::builder()
                             .input_size(2)
                             .dense(1, Activation::Linear)
                             .optimizer(brain::Optimizer::adam(0.01f))
                             .build();
    std::vector<float> state(net.optimizer_state().size(), 0.0f);
    state[0] = std::numeric_limits<float>::quiet_NaN();
    CHECK(has(expect_error(ErrorCode::InvalidArgument,
                           [&] {
                               net.restore_checkpoint({net.parameters(), state, 1, 1});
                           }),
              "first moment of layer 0 weight"));
    state[0] = 0.0f;
    state.back() = -1.0f;
    CHECK(has(expect_error(ErrorCode::InvalidArgument,
                           [&] {
                               net.restore_checkpoint({net.parameters(), state, 1, 1});
                           }),
              "second moment"));

    auto data = small_data();
    CHECK(has(expect_error(ErrorCode::InvalidArgument,
                           [&] {
                               data.set_standardization(brain::Standardization{{0, 0}, {0, 1}});
                           }),
              "standard deviation of column 0 is 0"));
    CHECK(has(expect_error(ErrorCode::InvalidArgument,
                           [&] {
                               data.set_standardization(
                                   brain::Standardization{{std::numeric_limits<float>::quiet_NaN(), 0}, {1, 1}});
                           }),
              "the mean of column 0 is nan"));
    CHECK(has(expect_error(ErrorCode::InvalidArgument,
                           [&] {
                               data.set_standardization(brain::Standardization{{0}, {1}});
                           }),
              "expected 2 means"));

    const auto empty_npz = temp_path("empty.npz");
    CHECK(has(expect_error(ErrorCode::InvalidState, [&] { brain::Dataset().save_npz(empty_npz); }),
              "the data set is empty"));
    CHECK(!std::filesystem::exists(empty_npz));

    auto cosine = brain::LearningRateSchedule::cosine(5.0f, 0.0f, 2);
    CHECK(has(expect_error(ErrorCode::InvalidArgument, [&] { cosine.start(1.0f, 4, 3); }),
              "longer than its horizon of 2 epochs"));
    CHECK(!cosine.started());
    auto constant = brain::LearningRateSchedule::constant();
    CHECK(has(expect_error(ErrorCode::InvalidArgument,
                           [&] { constant.start(0.1f, std::numeric_limits<std::uint64_t>::max(), 3); }),
              "steps per epoch"));
}

TEST_CASE("backend specifications echo hostile text bounded and escaped", "[core]") {
    const std::string huge(1 << 20, 'a');
    const std::string message =
        expect_error(ErrorCode::InvalidArgument, [&] { (void)brain::TrainingBackend::parse("cuda:" + huge, 1); });
    CHECK(message.size() < 1000);
    const std::string escaped = expect_error(ErrorCode::InvalidArgument,
                                             [] { (void)brain::TrainingBackend::parse("cuda:\x1b[31mred", 1); });
    CHECK(escaped.find('\x1b') == std::string::npos);
    const std::string with_nul = expect_error(
        ErrorCode::InvalidArgument, [] { (void)brain::TrainingBackend::plugin(std::string("c\0pu", 4), 0, 1); });
    CHECK(has(with_nul, "cannot name a backend: it has the character"));
}
