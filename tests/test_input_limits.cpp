// The library's bounds on untrusted input and the checks made from shapes before allocating: CsvTable's one set
// of rules, parse_csv_number, quote_excerpt, the class limits, model-file checks, saturating estimates, host
// memory checks and predictions that are never NaN.
#include "support/catch.hpp"
#include "support/error_match.hpp"
#include "support/process.hpp"

#include <brain/brain.hpp>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <limits>
#include <nlohmann/json.hpp>
#include <string>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

using brain::CsvCellKind;
using brain::CsvTable;
using brain::ErrorCode;
using brain::test::require_error;

TEST_CASE("quote_excerpt bounds and escapes what a message echoes", "[core]") {
    CHECK(brain::quote_excerpt("abc") == "'abc'");
    const std::string long_text(100'000'000, 'a');
    const std::string quoted = brain::quote_excerpt(long_text);
    CHECK(quoted.size() < 120);
    CHECK(quoted.find("... (100000000 bytes)") != std::string::npos);
    CHECK(brain::quote_excerpt("a\x1b[2Jb\n") == "'a\\x1B[2Jb\\x0A'");
    CHECK(brain::quote_excerpt("caf\xe9") == "'caf\\xE9'");
    // A character is never cut in two: "é" is two bytes and does not fit after 3 bytes of a 4-byte budget.
    CHECK(brain::quote_excerpt("abc\xc3\xa9", 4) == "'abc'... (5 bytes)");
    CHECK(brain::quote_excerpt("ab\xc3\xa9", 4) == "'ab\xc3\xa9'");
}

TEST_CASE("parse_csv_number: one number syntax for features, targets and predict", "[core]") {
    const auto kind = [](const char* text) { return brain::parse_csv_number(text).kind; };
    CHECK(brain::parse_csv_number(" 2.5 ").value == 2.5f);
    CHECK(brain::parse_csv_number("+3").value == 3.0f);
    CHECK(brain::parse_csv_number("-1e3").value == -1000.0f);
    CHECK(brain::parse_csv_number("1e-50").value == 0.0f);
    CHECK(kind("1e-50") == CsvCellKind::Number);
    CHECK(kind("") == CsvCellKind::Empty);
    CHECK(kind("  ") == CsvCellKind::Empty);
    CHECK(kind("1e39") == CsvCellKind::NotFinite);
    CHECK(kind("nan") == CsvCellKind::NotFinite);
    CHECK(kind("-inf") == CsvCellKind::NotFinite);
    CHECK(kind("0x1p3") == CsvCellKind::NotNumeric);
    CHECK(kind("1,5") == CsvCellKind::NotNumeric);
    CHECK(kind("++1") == CsvCellKind::NotNumeric);
    CHECK(kind("abc") == CsvCellKind::NotNumeric);
}

TEST_CASE("CsvTable: the rules every CSV reader of brain shares", "[core]") {
    const auto table = CsvTable::parse("\xEF\xBB\xBF"
                                       "a, b ,\"c,d\"\n\n1, 2 ,\" x \"\r\n",
                                       "t.csv");
    CHECK(table.header() == std::vector<std::string>{"a", "b", "c,d"});
    REQUIRE(table.rows() == 1);
    CHECK(table.cell(0, 1) == "2");
    CHECK(table.cell(0, 2) == " x ");
    CHECK(table.line_of(0) == 3);
    CHECK(table.column_index("c,d") == 2u);
    CHECK(table.column_label(1) == "column 2 'b'");

    require_error([] { CsvTable::parse("a,b\n1,caf\xe9\n", "t.csv"); }, ErrorCode::InvalidData,
                  {"t.csv:2: column 2 'b'", "not valid UTF-8", "0xE9"});
    require_error([] { CsvTable::parse("a,\xed\xa0\x80\n1,2\n", "t.csv"); }, ErrorCode::InvalidData,
                  {"t.csv:1: column 2", "not valid UTF-8"}); // a UTF-16 surrogate
    require_error([] { CsvTable::parse(std::string("a,b\n1,\0\n", 8), "t.csv"); }, ErrorCode::InvalidData,
                  {"t.csv:2: column 2 'b'", "NUL byte"});
    require_error([] { CsvTable::parse("a,b,a\n1,2,3\n", "t.csv"); }, ErrorCode::InvalidData,
                  {"t.csv:1: the column name 'a' appears twice (columns 1 and 3)"});
    require_error([] { CsvTable::parse("a,,b\n1,2,3\n", "t.csv"); }, ErrorCode::InvalidData,
                  {"header column 2 has no name"});
    require_error([] { CsvTable::parse("a,b\n", "t.csv"); }, ErrorCode::InvalidData, {"t.csv:1", "no data rows"});
    require_error([] { CsvTable::parse("\n \n", "t.csv"); }, ErrorCode::InvalidData, {"t.csv:1", "empty"});
    require_error([] { CsvTable::parse("a,b\n1,2,3,4\n", "t.csv"); }, ErrorCode::InvalidData,
                  {"t.csv:2", "expected 2 fields", "found 4"});
}

TEST_CASE("CsvTable: the limits stop the scan as soon as they are passed", "[core]") {
    brain::InputLimits limits;
    limits.max_columns = 3;
    require_error([&] { CsvTable::parse("a,b,c,d\n1,2,3,4\n", "t.csv", ',', limits); }, ErrorCode::InvalidData,
                  {"more than 3 columns", "--max-columns"});
    limits = {};
    limits.max_cell_bytes = 10;
    require_error([&] { CsvTable::parse("a,b\n1,\"" + std::string(1000, 'z') + "\"\n", "t.csv", ',', limits); },
                  ErrorCode::InvalidData, {"t.csv:2: column 2 'b'", "longer than the limit of 10 bytes"});
}

TEST_CASE("Dataset::from_csv: class labels are bounded and need two classes", "[core]") {
    const auto dir = std::filesystem::temp_directory_path() / ("brain_limits_" + std::to_string(::getpid()));
    std::filesystem::create_directories(dir);
    const auto write = [&](const char* name, const std::string& text) {
        std::ofstream(dir / name) << text;
        return dir / name;
    };
    brain::CsvOptions options;
    options.target_columns = {"y"};
    const auto one = write("one.csv", "x,y\n1,a\n2,a\n");
    require_error([&] { brain::Dataset::from_csv(one, options); }, ErrorCode::InvalidData,
                  {"one.csv: target column 2 'y' holds only one class, 'a', in its 2 rows"});
    std::string text = "x,y\n";
    for (int i = 0; i < 50; ++i) text += "1,c" + std::to_string(i) + "\n";
    const auto many = write("many.csv", text);
    options.limits.max_classes = 10;
    require_error([&] { brain::Dataset::from_csv(many, options); }, ErrorCode::InvalidData,
                  {"many.csv:12: target column 2 'y' holds more than 10 distinct class labels"});
    options.limits.max_classes = 50;
    CHECK(brain::Dataset::from_csv(many, options).target_width() == 50);
    options.limits.max_file_bytes = 16;
    require_error([&] { brain::Dataset::from_csv(many, options); }, ErrorCode::InvalidData,
                  {"more than the limit of 16 bytes"});
    // Sizes that round to the same text are given in bytes: "1.0 MiB, more than the limit of 1.0 MiB" says nothing.
    const auto mib = write("mib.csv", "x,y\n" + std::string(1048576 - 4, '1') + ",a\n");
    options.limits.max_file_bytes = 1048576;
    require_error([&] { brain::Dataset::from_csv(mib, options); }, ErrorCode::InvalidData,
                  {"is 1048579 bytes, more than the limit of 1048576 bytes"});
    std::filesystem::remove_all(dir);
}

TEST_CASE("model files: a damaged standardisation or unusable names are refused; saving refuses bad names",
          "[core]") {
    brain::Network net = brain::Network::builder().input_size(2).dense(2, brain::Activation::Softmax).build();
    brain::Dataset data(brain::Matrix{{1, 2}, {3, 5}}, brain::Matrix{{1, 0}, {0, 1}});
    data.standardize();
    net.adopt_dataset_metadata(data);
    auto doc = nlohmann::json::parse(net.to_json_string());
    for (const double bad : {1e-45, 0.0, -1.0}) {
        auto broken = doc;
        broken["standardization"]["stddev"][1] = bad;
        require_error([&] { brain::Network::from_json_string(broken.dump(), "m.json"); },
                      ErrorCode::InvalidModelFile, {"m.json: /standardization/stddev/1", "normal float32"});
    }
    auto twice = doc;
    twice["feature_names"] = {"x", "x"};
    require_error([&] { brain::Network::from_json_string(twice.dump(), "m.json"); }, ErrorCode::InvalidModelFile,
                  {"m.json: /feature_names/1", "repeats entry 0"});

    data.set_names({"a", "caf\xe9"}, {"y0", "y1"});
    net.adopt_dataset_metadata(data);
    require_error([&] { (void)net.to_json_string(); }, ErrorCode::InvalidArgument,
                  {"feature_names entry 1", "not valid UTF-8"});
}

TEST_CASE("Dataset::standardize never yields a deviation that divides into infinity", "[core]") {
    brain::Dataset d(brain::Matrix{{0.0f}, {std::numeric_limits<float>::denorm_min()}}, brain::Matrix{{0}, {1}});
    d.standardize();
    CHECK(std::isnormal(d.standardization()->stddev[0]));
}

TEST_CASE("predict names the row whose output is not finite", "[core]") {
    brain::Network net = brain::Network::builder().input_size(2).dense(1, brain::Activation::Linear).build();
    net.set_parameters({3e38f, 3e38f, 0.0f});
    CHECK(std::isfinite(net.predict(brain::Matrix{{0.1f, 0.1f}})(0, 0)));
    BRAIN_REQUIRE_ERROR(ErrorCode::NumericalError, net.predict(brain::Matrix{{0.1f, 0.1f}, {1.0f, 1.0f}}),
                        "input row 1", "non-finite output");
}

TEST_CASE("estimate_tensor_memory works from the shape alone and saturates instead of overflowing", "[core]") {
    using brain::Activation;
    const std::vector<brain::LayerSpec> small{
        {16, 256, Activation::Relu}, {256, 256, Activation::Relu}, {256, 1, Activation::Linear}};
    const auto net = brain::Network::builder()
                         .input_size(16)
                         .dense(256, Activation::Relu)
                         .dense(256, Activation::Relu)
                         .dense(1, Activation::Linear)
                         .build();
    CHECK(brain::estimate_tensor_memory(small, 512).bytes == brain::estimate_tensor_memory_bytes(net, 512));
    CHECK(brain::estimate_tensor_memory(small, 512).parameter_count == net.parameter_count());
    CHECK(brain::largest_batch_within(small, 64ull << 20) == brain::largest_batch_within(net, 64ull << 20));

    // 100,000 x 100,000: ten billion parameters, computed without allocating one.
    const std::vector<brain::LayerSpec> wide{{100000, 100000, Activation::Relu}, {100000, 1, Activation::Linear}};
    const auto e = brain::estimate_tensor_memory(wide, 256);
    CHECK_FALSE(e.saturated);
    CHECK(e.parameter_count == 100000ull * 100000 + 100000 + 100000 + 1);

    const auto huge = brain::estimate_tensor_memory(small, UINT64_MAX);
    CHECK(huge.saturated);
    CHECK(huge.bytes == UINT64_MAX);
    CHECK(brain::largest_batch_within(small, UINT64_MAX) > 0);
    BRAIN_REQUIRE_ERROR(ErrorCode::InvalidArgument, brain::estimate_tensor_memory(small, 0), "batch_size is 0");
    BRAIN_REQUIRE_ERROR(ErrorCode::InvalidArgument,
                        brain::estimate_tensor_memory({{3, 4, Activation::Relu}, {5, 1, Activation::Linear}}, 1),
                        "layer 1 takes 5 inputs but layer 0 has 4 outputs");
}

TEST_CASE("NetworkBuilder refuses, before allocating, a network the address-space limit cannot hold", "[core]") {
    if (brain::test::k_asan)
        BRAIN_SKIP("AddressSanitizer's shadow memory cannot live under an address-space limit");
    // In a child: the limit is the process's for good.
    const pid_t child = ::fork();
    REQUIRE(child >= 0);
    if (child == 0) {
        const rlimit cap{std::uint64_t{1} << 30, std::uint64_t{1} << 30};
        if (::setrlimit(RLIMIT_AS, &cap) != 0) ::_exit(5);
        try {
            // 400 million parameters with Adam's state: 4.8 GB.
            (void)brain::Network::builder().input_size(20000).dense(20000, brain::Activation::Relu).build();
        } catch (const brain::Error& e) {
            const std::string what = e.what();
            ::_exit(e.code() == ErrorCode::AllocationFailed && what.find("ulimit -v") != std::string::npos ? 0 : 3);
        } catch (...) {
            ::_exit(4);
        }
        ::_exit(6);
    }
    int status = 0;
    ::waitpid(child, &status, 0);
    if (WIFEXITED(status) && WEXITSTATUS(status) == 5) BRAIN_SKIP("setrlimit(RLIMIT_AS) is not permitted here");
    CHECK(WIFEXITED(status));
    CHECK(WEXITSTATUS(status) == 0);
}
