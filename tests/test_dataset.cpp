// Dataset, CSV loading, standardisation, splitting and Matrix: happy paths and every rejected input.
#include "support/catch.hpp"
#include "support/error_match.hpp"
#include "support/numeric.hpp"

#include <algorithm>
#include <brain/dataset.hpp>
#include <brain/error.hpp>
#include <brain/matrix.hpp>
#include <cmath>
#include <limits>
#include <set>
#include <string>

using brain::Dataset;
using brain::ErrorCode;
using brain::Matrix;

using brain::test::require_error;

namespace {

std::filesystem::path data_file(const std::string& name) {
    return std::filesystem::path(BRAIN_TEST_DATA_DIR) / name;
}

Dataset load(const std::string& name, std::vector<std::string> targets, char delimiter = ',') {
    brain::CsvOptions options;
    options.target_columns = std::move(targets);
    options.delimiter = delimiter;
    return Dataset::from_csv(data_file(name), options);
}

std::vector<float> column(const Matrix& m, std::size_t c) {
    std::vector<float> out;
    for (std::size_t r = 0; r < m.rows(); ++r) out.push_back(m(r, c));
    return out;
}

} // namespace

TEST_CASE("Matrix constructors check their sizes", "[core]") {
    const Matrix m{{1, 2, 3}, {4, 5, 6}};
    CHECK(m.rows() == 2);
    CHECK(m.cols() == 3);
    CHECK(m(1, 0) == 4.0f);
    CHECK(m.row(1)[2] == 6.0f);
    const Matrix filled(3, 2, 7.0f);
    CHECK(filled.data() == std::vector<float>(6, 7.0f));
    CHECK(Matrix(2, 2, std::vector<float>{1, 2, 3, 4})(1, 1) == 4.0f);

    require_error([] { Matrix(2, 3, std::vector<float>(5)); }, ErrorCode::InvalidArgument, {"2 x 3", "6", "5"});
    require_error([] { Matrix({{1, 2}, {3}}); }, ErrorCode::InvalidArgument, {"row 1", "1"});
    require_error([] { Matrix(std::numeric_limits<std::size_t>::max(), 4); }, ErrorCode::InvalidArgument,
                  {"overflow"});
}

TEST_CASE("Dataset validates in-memory rows", "[core]") {
    const Dataset d(Matrix{{1, 2}, {3, 4}, {5, 6}}, Matrix{{0}, {1}, {0}});
    CHECK(d.size() == 3);
    CHECK(d.input_width() == 2);
    CHECK(d.target_width() == 1);
    CHECK(d.feature_names() == std::vector<std::string>{"x0", "x1"});
    CHECK(d.target_names() == std::vector<std::string>{"y0"});
    CHECK(d.class_labels().empty());
    CHECK_FALSE(d.standardization().has_value());

    require_error(
        [] {
            Dataset(Matrix{{1, 2}, {3, 4}}, Matrix{{0}});
        },
        ErrorCode::InvalidArgument, {"2 rows", "1"});
    require_error([] { Dataset(Matrix(0, 2), Matrix(0, 1)); }, ErrorCode::InvalidArgument, {"at least one row"});
    const float nan = std::numeric_limits<float>::quiet_NaN();
    require_error(
        [nan] {
            Dataset(Matrix{{1, 2}, {nan, 4}}, Matrix{{0}, {1}});
        },
        ErrorCode::InvalidData, {"features row 1, column 0", "finite"});
    const float inf = std::numeric_limits<float>::infinity();
    require_error(
        [inf] {
            Dataset(Matrix{{1, 2}, {3, 4}}, Matrix{{0}, {inf}});
        },
        ErrorCode::InvalidData, {"targets row 1, column 0"});

    Dataset named = d;
    named.set_names({"a", "b"}, {"t"});
    CHECK(named.feature_names() == std::vector<std::string>{"a", "b"});
    require_error([&] { named.set_names({"a"}, {"t"}); }, ErrorCode::InvalidArgument, {"expected 2 feature names"});
    named.set_class_labels({"no", "yes"}); // a single 0/1 target may carry two labels
    CHECK(named.class_labels().size() == 2);
    require_error([&] { named.set_class_labels({"a", "b", "c"}); }, ErrorCode::InvalidArgument, {"found 3"});
}

TEST_CASE("CSV: class-label target column is one-hot encoded with sorted labels", "[core]") {
    const Dataset d = load("iris_small.csv", {"species"});
    REQUIRE(d.size() == 6);
    CHECK(d.input_width() == 4);
    CHECK(d.target_width() == 3);
    CHECK(d.feature_names() ==
          std::vector<std::string>{"sepal_length", "sepal_width", "petal_length", "petal_width"});
    CHECK(d.class_labels() == std::vector<std::string>{"setosa", "versicolor", "virginica"});
    CHECK(d.target_names() ==
          std::vector<std::string>{"species=setosa", "species=versicolor", "species=virginica"});
    CHECK(d.features()(1, 2) == 4.7f);
    CHECK(d.features()(5, 3) == 1.9f);
    const std::vector<std::vector<float>> expected{{1, 0, 0}, {0, 1, 0}, {0, 0, 1},
                                                   {1, 0, 0}, {0, 1, 0}, {0, 0, 1}};
    for (std::size_t r = 0; r < 6; ++r) {
        const auto row = d.targets().row(r);
        CHECK(std::vector<float>(row.begin(), row.end()) == expected[r]);
    }
}

TEST_CASE("CSV: numeric targets, signs, exponents, CRLF and a trailing blank line", "[core]") {
    const Dataset d = load("regression.csv", {"y"});
    REQUIRE(d.size() == 3);
    CHECK(d.feature_names() == std::vector<std::string>{"x1", "x2"});
    CHECK(d.target_names() == std::vector<std::string>{"y"});
    CHECK(d.class_labels().empty());
    CHECK(column(d.features(), 0) == std::vector<float>{1.0f, -2.5f, 0.0f});
    CHECK(column(d.features(), 1) == std::vector<float>{2.0f, 4.0f, 0.125f});
    CHECK(column(d.targets(), 0) == std::vector<float>{3.5f, 1e-3f, -7.0f});

    // Targets may also be chosen from the middle of the header; the features keep header order.
    const Dataset middle = load("regression.csv", {"x2"});
    CHECK(middle.feature_names() == std::vector<std::string>{"x1", "y"});
    CHECK(column(middle.targets(), 0) == std::vector<float>{2.0f, 4.0f, 0.125f});

    const Dataset crlf = load("crlf.csv", {"target"});
    CHECK(crlf.size() == 2);
    CHECK(crlf.feature_names() == std::vector<std::string>{"a", "b"});
    CHECK(column(crlf.targets(), 0) == std::vector<float>{0.0f, 1.0f});

    const Dataset blank = load("trailing_blank.csv", {"y"});
    CHECK(blank.size() == 2);
    CHECK(column(blank.targets(), 0) == std::vector<float>{2.0f, 4.0f});
}

TEST_CASE("CSV: quoted fields with delimiters and doubled quotes; other delimiters", "[core]") {
    const Dataset d = load("quoted.csv", {"label"});
    REQUIRE(d.size() == 3);
    CHECK(d.feature_names() == std::vector<std::string>{"width, cm", "say \"hi\""});
    CHECK(d.class_labels() == std::vector<std::string>{"a,b", "say \"hi\""});
    CHECK(column(d.features(), 0) == std::vector<float>{1.5f, 3.0f, 5.0f});
    CHECK(column(d.features(), 1) == std::vector<float>{2.0f, 4.0f, 6.0f});
    CHECK(column(d.targets(), 0) == std::vector<float>{1.0f, 0.0f, 1.0f});
    CHECK(column(d.targets(), 1) == std::vector<float>{0.0f, 1.0f, 0.0f});

    const Dataset semi = load("semicolon.csv", {"z"}, ';');
    CHECK(semi.size() == 2);
    CHECK(semi.features()(0, 0) == 1.5f);
    CHECK(column(semi.targets(), 0) == std::vector<float>{3.0f, 6.0f});
}

TEST_CASE("CSV: bad inputs name the file, line and column", "[core]") {
    require_error([] { load("bad_non_numeric.csv", {"y"}); }, ErrorCode::InvalidData,
                  {"bad_non_numeric.csv:3", "column 2 'x2'", "expected a number", "'abc'"});
    require_error([] { load("bad_nan.csv", {"y"}); }, ErrorCode::InvalidData,
                  {"bad_nan.csv:4", "column 1 'x1'", "NaN", "finite"});
    require_error([] { load("bad_inf.csv", {"y"}); }, ErrorCode::InvalidData,
                  {"bad_inf.csv:2", "column 2 'x2'", "finite"});
    require_error([] { load("bad_overflow.csv", {"y"}); }, ErrorCode::InvalidData,
                  {"bad_overflow.csv:3", "column 1 'x1'", "1e39"});
    require_error([] { load("bad_empty_cell.csv", {"y"}); }, ErrorCode::InvalidData,
                  {"bad_empty_cell.csv:3", "column 2 'x2'", "empty"});
    require_error([] { load("bad_target_empty.csv", {"y"}); }, ErrorCode::InvalidData,
                  {"bad_target_empty.csv:3", "column 3 'y'", "empty"});
    require_error([] { load("bad_ragged.csv", {"y"}); }, ErrorCode::InvalidData,
                  {"bad_ragged.csv:4", "expected 3 fields", "found 2"});
    require_error([] { load("bad_header_only.csv", {"y"}); }, ErrorCode::InvalidData,
                  {"bad_header_only.csv:1", "no data rows"});
    require_error([] { load("bad_empty.csv", {"y"}); }, ErrorCode::InvalidData, {"bad_empty.csv:1", "empty"});
    require_error([] { load("bad_unterminated_quote.csv", {"y"}); }, ErrorCode::InvalidData,
                  {"bad_unterminated_quote.csv:3", "unterminated"});
}

TEST_CASE("CSV: option errors name the column, the file and the available columns", "[core]") {
    require_error([] { load("regression.csv", {"price"}); }, ErrorCode::InvalidArgument,
                  {"'price'", "regression.csv", "'x1', 'x2', 'y'"});
    // Read with the wrong delimiter, the whole header is one column.
    require_error([] { load("semicolon.csv", {"z"}); }, ErrorCode::InvalidArgument, {"'z'", "'x;y;z'"});
    // A name cut in two at its comma (a comma-separated list) is named whole.
    require_error(
        [] {
            load("quoted.csv", {"label", "width", " cm"});
        },
        ErrorCode::InvalidArgument,
        {"target column 'width' is not in the header",
         "joined by commas, the names 'width' to ' cm' make the column 'width, cm'"});
    require_error([] { load("regression.csv", {}); }, ErrorCode::InvalidArgument, {"no target columns"});
    require_error([] { load("regression.csv", {"y", "y"}); }, ErrorCode::InvalidArgument, {"'y'", "twice"});
    require_error([] { load("crlf.csv", {"a", "b", "target"}); }, ErrorCode::InvalidArgument, {"no feature"});
    require_error([] { load("does_not_exist.csv", {"y"}); }, ErrorCode::IoError, {"does_not_exist.csv"});
}

TEST_CASE("Dataset::standardize computes population mean and deviation; constant columns get 1", "[core]") {
    Dataset d(Matrix{{1, 5, 10}, {2, 5, 20}, {3, 5, 30}, {4, 5, 40}}, Matrix{{0}, {0}, {1}, {1}});
    d.standardize();
    REQUIRE(d.standardization().has_value());
    const auto& s = *d.standardization();
    CHECK(brain::test::close(s.mean[0], 2.5, 1e-6, 0));
    CHECK(brain::test::close(s.stddev[0], std::sqrt(1.25), 1e-6, 0));
    CHECK(s.mean[1] == 5.0f);
    CHECK(s.stddev[1] == 1.0f);
    CHECK(brain::test::close(s.mean[2], 25.0, 1e-6, 0));
    CHECK(brain::test::close(s.stddev[2], std::sqrt(125.0), 1e-6, 0));
    // The rows stay in raw units.
    CHECK(d.features()(0, 0) == 1.0f);

    Matrix x = d.features();
    s.apply(x);
    for (std::size_t c = 0; c < 3; ++c) {
        double mean = 0, sq = 0;
        for (std::size_t r = 0; r < 4; ++r) mean += x(r, c) / 4.0;
        for (std::size_t r = 0; r < 4; ++r) sq += (x(r, c) - mean) * (x(r, c) - mean) / 4.0;
        CHECK(std::fabs(mean) < 1e-6);
        CHECK(std::fabs(std::sqrt(sq) - (c == 1 ? 0.0 : 1.0)) < 1e-5);
    }
    Matrix wrong(2, 2);
    require_error([&] { s.apply(wrong); }, ErrorCode::InvalidArgument, {"expected 3", "found 2"});
}

TEST_CASE("Dataset::split is a seeded permutation carrying the metadata", "[core]") {
    std::vector<float> f, t;
    for (int i = 0; i < 20; ++i) {
        f.push_back(static_cast<float>(i));
        f.push_back(static_cast<float>(i * 10));
        t.push_back(static_cast<float>(i % 2));
    }
    Dataset d(Matrix(20, 2, f), Matrix(20, 1, t));
    d.set_names({"a", "b"}, {"label"});
    d.standardize();

    const auto [train, val] = d.split(0.25, 7);
    CHECK(train.size() == 15);
    CHECK(val.size() == 5);
    CHECK(train.feature_names() == d.feature_names());
    CHECK(val.target_names() == d.target_names());
    CHECK(val.standardization().has_value());
    std::multiset<float> seen;
    for (const Dataset* part : {&train, &val})
        for (std::size_t r = 0; r < part->size(); ++r) {
            const float id = part->features()(r, 0);
            seen.insert(id);
            // Rows move whole: features and targets stay together.
            CHECK(part->features()(r, 1) == id * 10);
            CHECK(part->targets()(r, 0) == static_cast<float>(static_cast<int>(id) % 2));
        }
    CHECK(seen.size() == 20);
    CHECK(std::set<float>(seen.begin(), seen.end()).size() == 20);

    const auto again = d.split(0.25, 7);
    CHECK(again.first.features().data() == train.features().data());
    const auto other = d.split(0.25, 8);
    CHECK(other.first.features().data() != train.features().data());
    // A shuffle, not a prefix split.
    CHECK(column(train.features(), 0) != std::vector<float>{0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14});

    const auto [all, none] = d.split(0.0, 1);
    CHECK(all.size() == 20);
    CHECK(none.size() == 0);
    CHECK(none.input_width() == 2);
    CHECK(d.split(0.29, 1).second.size() == 5); // floor(0.29 * 20)

    require_error([&] { (void)d.split(1.0, 1); }, ErrorCode::InvalidArgument, {"validation_fraction", "[0, 1)"});
    require_error([&] { (void)d.split(-0.1, 1); }, ErrorCode::InvalidArgument, {"-0.1"});
    require_error([&] { (void)d.split(std::nan(""), 1); }, ErrorCode::InvalidArgument, {"validation_fraction"});
}

TEST_CASE("Dataset::slice takes rows [begin, end)", "[core]") {
    Dataset d(Matrix{{1, 2}, {3, 4}, {5, 6}, {7, 8}}, Matrix{{0}, {1}, {2}, {3}});
    d.set_class_labels({"no", "yes"});
    const Dataset s = d.slice(1, 3);
    CHECK(s.size() == 2);
    CHECK(s.features().data() == std::vector<float>{3, 4, 5, 6});
    CHECK(s.targets().data() == std::vector<float>{1, 2});
    CHECK(s.class_labels() == d.class_labels());
    CHECK(d.slice(2, 2).size() == 0);
    require_error([&] { (void)d.slice(3, 5); }, ErrorCode::InvalidArgument, {"[3, 5)", "4 rows"});
    require_error([&] { (void)d.slice(3, 2); }, ErrorCode::InvalidArgument, {"[3, 2)"});
}
