// Metrics against values computed by hand on fixed tables: accuracy, per-class precision/recall/F1, macro and
// weighted averages, the confusion matrix, RMSE/MAE/R^2; the same through Network::evaluate; class columns of
// numbers.
#include "support/catch.hpp"
#include "support/error_match.hpp"
#include "support/numeric.hpp"
#include "support/tempdir.hpp"

#include <brain/brain.hpp>
#include <cmath>
#include <fstream>

using brain::Activation;
using brain::ErrorCode;

namespace {

// truth 0 0 1 1 2 2 2 1 against predicted 0 1 1 1 2 0 2 2, worked out by hand:
//   confusion [true][predicted] = [1 1 0; 0 2 1; 1 0 2]; accuracy 5/8
//   class 0: precision 1/2, recall 1/2; classes 1 and 2: precision 2/3, recall 2/3
const std::vector<std::size_t> k_truth = {0, 0, 1, 1, 2, 2, 2, 1};
const std::vector<std::size_t> k_predicted = {0, 1, 1, 1, 2, 0, 2, 2};

} // namespace

TEST_CASE("classification metrics match a table worked out by hand", "[core]") {
    const auto m = brain::classification_metrics(k_truth, k_predicted, {"a", "b", "c"});
    CHECK(m.rows == 8);
    CHECK(m.accuracy == 0.625);
    CHECK(m.confusion == std::vector<std::vector<std::uint64_t>>{{1, 1, 0}, {0, 2, 1}, {1, 0, 2}});
    CHECK(m.per_class[0].precision == 0.5);
    CHECK(m.per_class[0].recall == 0.5);
    CHECK(m.per_class[0].f1 == 0.5);
    CHECK(m.per_class[0].support == 2);
    for (std::size_t c : {1, 2}) {
        CHECK(brain::test::close(m.per_class[c].precision, 2.0 / 3.0, 1e-15, 0.0));
        CHECK(brain::test::close(m.per_class[c].recall, 2.0 / 3.0, 1e-15, 0.0));
        CHECK(brain::test::close(m.per_class[c].f1, 2.0 / 3.0, 1e-15, 0.0));
        CHECK(m.per_class[c].support == 3);
    }
    CHECK(brain::test::close(m.macro.precision, (0.5 + 4.0 / 3.0) / 3.0, 1e-15, 0.0));
    CHECK(brain::test::close(m.macro.f1, (0.5 + 4.0 / 3.0) / 3.0, 1e-15, 0.0));
    CHECK(brain::test::close(m.weighted.precision, 0.625, 1e-15, 0.0)); // (2 x 1/2 + 3 x 2/3 + 3 x 2/3) / 8
    CHECK(brain::test::close(m.weighted.recall, 0.625, 1e-15, 0.0));
    CHECK(m.macro.support == 8);

    // A class never predicted nor present: its ratios are 0 (scikit-learn's zero_division=0), and it counts in
    // the macro average but not in the weighted one.
    const auto four = brain::classification_metrics(k_truth, k_predicted, {"a", "b", "c", "d"});
    CHECK(four.per_class[3].precision == 0.0);
    CHECK(four.per_class[3].f1 == 0.0);
    CHECK(four.per_class[3].support == 0);
    CHECK(brain::test::close(four.macro.f1, (0.5 + 4.0 / 3.0) / 4.0, 1e-15, 0.0));
    CHECK(brain::test::close(four.weighted.f1, 0.625, 1e-15, 0.0));

    BRAIN_REQUIRE_ERROR(ErrorCode::InvalidArgument, brain::classification_metrics({0, 3}, {0, 1}, {"a", "b"}),
                        "row 1 has true class 3");
    BRAIN_REQUIRE_ERROR(ErrorCode::InvalidArgument, brain::classification_metrics({0}, {0, 1}, {"a", "b"}),
                        "1 true classes but 2 predictions");
}

TEST_CASE("regression metrics match a table worked out by hand", "[core]") {
    // Output 0: truth 1 2 3 4, predicted 1.5 2 2 5: errors .5 0 -1 1, squares sum 2.25, mean of the truth 2.5,
    // total sum of squares 5. Output 1: a constant truth predicted exactly, then off by one everywhere.
    const brain::Matrix truth(4, 3, {1, 3, 3, 2, 3, 3, 3, 3, 3, 4, 3, 3});
    const brain::Matrix predicted(4, 3, {1.5f, 3, 4, 2, 3, 4, 2, 3, 4, 5, 3, 4});
    const auto m = brain::regression_metrics(truth, predicted, {"y", "flat", "off"});
    CHECK(m.rmse[0] == 0.75);
    CHECK(m.mae[0] == 0.625);
    CHECK(brain::test::close(m.r2[0], 1.0 - 2.25 / 5.0, 1e-15, 0.0));
    CHECK(m.rmse[1] == 0.0);
    CHECK(m.r2[1] == 1.0);
    CHECK(m.r2[2] == 0.0);
    CHECK(m.mae[2] == 1.0);
    CHECK(m.names == std::vector<std::string>{"y", "flat", "off"});
    CHECK(brain::regression_metrics(truth, predicted).names == std::vector<std::string>{"y0", "y1", "y2"});
}

TEST_CASE("Network::evaluate reports the metrics of its own predictions", "[core]") {
    SECTION("a softmax classifier whose class is the largest input") {
        auto net = brain::Network::builder().input_size(3).dense(3, Activation::Softmax).seed(1).build();
        std::vector<float> identity(12, 0.0f);
        for (std::size_t i = 0; i < 3; ++i) identity[i * 3 + i] = 10.0f;
        net.set_parameters(identity);
        brain::Matrix x(8, 3), y(8, 3);
        for (std::size_t r = 0; r < 8; ++r) {
            x(r, k_predicted[r]) = 1.0f;
            y(r, k_truth[r]) = 1.0f;
        }
        const auto e = net.evaluate(brain::Dataset(x, y));
        REQUIRE(e.classification.has_value());
        CHECK(e.accuracy == 0.625f);
        CHECK(e.classification->confusion ==
              brain::classification_metrics(k_truth, k_predicted, {"0", "1", "2"}).confusion);
        CHECK(e.classification->labels == std::vector<std::string>{"0", "1", "2"});
        CHECK(brain::test::close(*e.value("macro_f1"), (0.5 + 4.0 / 3.0) / 3.0, 1e-12, 0.0));
        CHECK_FALSE(e.regression.has_value());
        CHECK_FALSE(e.value("r2").has_value());
    }
    SECTION("a linear regressor that copies its inputs") {
        auto net = brain::Network::builder().input_size(2).dense(2, Activation::Linear).seed(1).build();
        net.set_parameters({1, 0, 0, 1, 0, 0});
        const brain::Matrix x(4, 2, {1.5f, 0, 2, 0, 2, 0, 5, 0});
        const brain::Matrix y(4, 2, {1, 0, 2, 0, 3, 0, 4, 0});
        const auto e = net.evaluate(brain::Dataset(x, y));
        REQUIRE(e.regression.has_value());
        CHECK(brain::test::close(e.regression->rmse[0], 0.75, 1e-7, 0.0));
        CHECK(brain::test::close(e.regression->mae[0], 0.625, 1e-7, 0.0));
        CHECK(brain::test::close(e.regression->r2[0], 0.55, 1e-6, 0.0));
        CHECK(brain::test::close(e.loss, 2.25 / 8.0, 1e-6, 0.0)); // MSE over 4 rows and 2 outputs
        CHECK_FALSE(e.accuracy.has_value());
    }
    SECTION("a single sigmoid unit: classes 0 and 1") {
        auto net = brain::Network::builder().input_size(1).dense(1, Activation::Sigmoid).seed(1).build();
        net.set_parameters({10.0f, 0.0f});
        const brain::Matrix x(4, 1, {1, -1, 1, -1});
        const brain::Matrix y(4, 1, {1, 0, 0, 0});
        const auto e = net.evaluate(brain::Dataset(x, y));
        REQUIRE(e.classification.has_value());
        CHECK(e.classification->confusion == std::vector<std::vector<std::uint64_t>>{{2, 1}, {0, 1}});
        CHECK(e.classification->per_class[1].precision == 0.5);
        CHECK(e.classification->per_class[1].recall == 1.0);
    }
}

TEST_CASE("a class column of numbers becomes classes ordered by value, labels kept as written", "[core]") {
    brain::test::TempDir dir;
    {
        std::ofstream out(dir / "d.csv");
        out << "x,digit\n0.1,10\n0.2,2\n0.3,1.0\n0.4,1\n0.5,2\n0.6,10\n";
    }
    brain::CsvOptions options;
    options.target_columns = {"digit"};
    // Without class_columns the column is one numeric target.
    CHECK(brain::Dataset::from_csv(dir / "d.csv", options).target_width() == 1);
    options.class_columns = {"digit"};
    const auto data = brain::Dataset::from_csv(dir / "d.csv", options);
    CHECK(data.class_labels() == std::vector<std::string>{"1.0", "2", "10"});
    CHECK(data.target_names() == std::vector<std::string>{"digit=1.0", "digit=2", "digit=10"});
    const std::vector<std::size_t> classes = {2, 1, 0, 0, 1, 2}; // "1" and "1.0" are one class
    for (std::size_t r = 0; r < classes.size(); ++r) {
        INFO("row " << r);
        for (std::size_t k = 0; k < 3; ++k) CHECK(data.targets()(r, k) == (k == classes[r] ? 1.0f : 0.0f));
    }
    options.class_columns = {"x2"};
    BRAIN_REQUIRE_ERROR(ErrorCode::InvalidArgument, brain::Dataset::from_csv(dir / "d.csv", options),
                        "class column 'x2' is not one of the target columns");
    // A softmax layer on one numeric column names the way to read it as classes.
    BRAIN_REQUIRE_ERROR(ErrorCode::InvalidArgument,
                        brain::Network::builder().input_size(1).dense(1, Activation::Softmax).build(),
                        "a softmax output layer needs >= 2 units", "class_columns", "--classes");
}
