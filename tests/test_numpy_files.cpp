// NumPy files: .npy round trips bit for bit, .npz archives written and read (with names and class labels), the
// dtypes NumPy writes read as NumPy reads them, and every damaged or unsupported file refused with its reason.
#include "support/catch.hpp"
#include "support/error_match.hpp"
#include "support/npy_bytes.hpp"
#include "support/npz.hpp"
#include "support/process.hpp"

#include <bit>
#include <brain/brain.hpp>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <string>
#include <unistd.h>

namespace fs = std::filesystem;
using brain::Dataset;
using brain::ErrorCode;
using brain::Matrix;
using brain::test::require_error;

namespace {

struct TempDir {
    fs::path path = fs::temp_directory_path() / ("brain_npy_" + std::to_string(::getpid()));
    TempDir() {
        fs::remove_all(path);
        fs::create_directories(path);
    }
    ~TempDir() { fs::remove_all(path); }
    fs::path operator/(const std::string& name) const { return path / name; }
};

void write_bytes(const fs::path& path, const std::string& bytes) {
    std::ofstream(path, std::ios::binary).write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
}

std::string read_bytes(const fs::path& path) {
    std::ifstream in(path, std::ios::binary);
    return std::string(std::istreambuf_iterator<char>(in), {});
}

// An .npy file with the given header dict and raw data, padded as NumPy pads it.
std::string npy(const std::string& dict, const std::string& data) {
    return brain::test::npy_file_bytes(dict, data);
}

template <class T>
std::string raw(std::initializer_list<T> values) {
    std::string out;
    for (T v : values) out.append(reinterpret_cast<const char*>(&v), sizeof v);
    return out;
}

bool same_bits(const Matrix& a, const Matrix& b) {
    return a.rows() == b.rows() && a.cols() == b.cols() &&
           std::memcmp(a.data().data(), b.data().data(), a.data().size() * sizeof(float)) == 0;
}

bool have_numpy() {
    return brain::test::run_process("/usr/bin/python3 -c 'import numpy'", "").status == 0;
}

} // namespace

TEST_CASE("save_npy and load_npy round-trip a matrix bit for bit", "[core]") {
    TempDir dir;
    Matrix m(5, 3);
    const float values[] = {0.0f, -0.0f, 1.0f / 3.0f, std::numeric_limits<float>::denorm_min(),
                            std::numeric_limits<float>::max(), -std::numeric_limits<float>::max(),
                            std::numeric_limits<float>::min(), 1e-30f, 123456.789f, -2.5f, 7.0f, 1e30f,
                            std::nextafter(1.0f, 2.0f), 0.1f, -0.1f};
    std::copy(std::begin(values), std::end(values), m.data().begin());
    brain::save_npy(dir / "m.npy", m);
    const Matrix back = brain::load_npy(dir / "m.npy");
    CHECK(same_bits(m, back));
    CHECK(std::signbit(back(0, 1)));
    // NumPy's layout: 64-byte aligned header, then the floats.
    const std::string bytes = read_bytes(dir / "m.npy");
    REQUIRE(bytes.size() > sizeof values);
    const std::size_t header = bytes.size() - sizeof values;
    CHECK(header % 64 == 0);
    CHECK(bytes[header - 1] == '\n');
    CHECK(bytes.find("{'descr': '<f4', 'fortran_order': False, 'shape': (5, 3), }") == 10);
    CHECK(bytes.substr(header) == std::string(reinterpret_cast<const char*>(values), sizeof values));
}

TEST_CASE("Dataset::save_npz and from_npz round-trip values, names and class labels", "[core]") {
    REQUIRE_NPZ();
    TempDir dir;
    Dataset d(Matrix{{1.5f, -2.0f}, {0.25f, 1e-7f}, {3.0f, 4.0f}}, Matrix{{1, 0, 0}, {0, 1, 0}, {0, 0, 1}});
    d.set_names({"width, cm", "caf\xc3\xa9"}, {"y=a", "y=b", "y=\xe2\x82\xac"});
    d.set_class_labels({"a", "b", "\xe2\x82\xac"});
    d.save_npz(dir / "d.npz");
    const Dataset back = Dataset::from_npz(dir / "d.npz");
    CHECK(same_bits(back.features(), d.features()));
    CHECK(same_bits(back.targets(), d.targets()));
    CHECK(back.feature_names() == d.feature_names());
    CHECK(back.target_names() == d.target_names());
    CHECK(back.class_labels() == d.class_labels());

    // The same rows from a CSV file, converted, and back.
    write_bytes(dir / "c.csv", "x1,x2,label\n1.5,2,yes\n-3,4e-3,no\n0.1,7,yes\n");
    brain::CsvOptions csv;
    csv.target_columns = {"label"};
    const Dataset from_csv = Dataset::from_csv(dir / "c.csv", csv);
    from_csv.save_npz(dir / "c.npz");
    const Dataset from_npz = Dataset::from_npz(dir / "c.npz");
    CHECK(same_bits(from_npz.features(), from_csv.features()));
    CHECK(same_bits(from_npz.targets(), from_csv.targets()));
    CHECK(from_npz.class_labels() == std::vector<std::string>{"no", "yes"});
    CHECK(from_npz.feature_names() == std::vector<std::string>{"x1", "x2"});
}

TEST_CASE("a build without .npz support refuses every archive call saying what to install, and keeps .npy",
          "[core]") {
    if (brain::npz_supported()) BRAIN_SKIP("this build reads and writes .npz archives (built with libzip)");
    TempDir dir;
    const Dataset d(Matrix{{1, 2}, {3, 4}}, Matrix{{0}, {1}});
    require_error([&] { d.save_npz(dir / "d.npz"); }, ErrorCode::Unsupported, {"d.npz", "install libzip-dev"});
    CHECK_FALSE(fs::exists(dir / "d.npz"));
    require_error(
        [&] {
            brain::save_npz_features(dir / "f.npz", d.features(), {"a", "b"});
        },
        ErrorCode::Unsupported, {"f.npz", "use .npy files instead"});
    write_bytes(dir / "some.npz", "PK\x03\x04");
    require_error([&] { (void)Dataset::from_npz(dir / "some.npz"); }, ErrorCode::Unsupported,
                  {"install libzip-dev"});
    require_error([&] { (void)brain::load_npz_features(dir / "some.npz"); }, ErrorCode::Unsupported,
                  {"install libzip-dev"});
    brain::save_npy(dir / "x.npy", d.features());
    CHECK(same_bits(brain::load_npy(dir / "x.npy"), d.features()));
}

TEST_CASE("from_npy reads every plain numeric dtype NumPy writes, 1-D arrays as one column", "[core]") {
    TempDir dir;
    write_bytes(dir / "f8.npy", npy("{'descr': '<f8', 'fortran_order': False, 'shape': (2, 2), }",
                                    raw<double>({0.5, -1.25, 1e-3, 3.0})));
    write_bytes(dir / "i8.npy", npy("{'descr': '<i8', 'fortran_order': False, 'shape': (2,), }",
                                    raw<std::int64_t>({-3, 7})));
    const Dataset d = Dataset::from_npy(dir / "f8.npy", dir / "i8.npy");
    CHECK(d.features()(0, 1) == -1.25f);
    CHECK(d.features()(1, 0) == 1e-3f);
    REQUIRE(d.targets().cols() == 1);
    CHECK(d.targets()(0, 0) == -3.0f);
    CHECK(d.targets()(1, 0) == 7.0f);
    CHECK(d.feature_names() == std::vector<std::string>{"x0", "x1"});

    // Big-endian floats, bytes, booleans and half floats.
    std::string be;
    for (float v : {1.5f, -2.0f}) {
        auto bits = std::bit_cast<std::uint32_t>(v);
        for (int b = 3; b >= 0; --b) be += static_cast<char>((bits >> (8 * b)) & 0xff);
    }
    write_bytes(dir / "be.npy", npy("{'descr': '>f4', 'fortran_order': False, 'shape': (2, 1), }", be));
    CHECK(brain::load_npy(dir / "be.npy")(1, 0) == -2.0f);
    write_bytes(dir / "u1.npy", npy("{'descr': '|u1', 'fortran_order': False, 'shape': (3,), }", std::string("\x00\x07\xff", 3)));
    CHECK(brain::load_npy(dir / "u1.npy")(2, 0) == 255.0f);
    write_bytes(dir / "b1.npy", npy("{'descr': '|b1', 'fortran_order': False, 'shape': (2,), }", std::string("\x01\x00", 2)));
    CHECK(brain::load_npy(dir / "b1.npy")(0, 0) == 1.0f);
    write_bytes(dir / "f2.npy", npy("{'descr': '<f2', 'fortran_order': False, 'shape': (2,), }", raw<std::uint16_t>({0x3c00, 0xc100})));
    const Matrix half = brain::load_npy(dir / "f2.npy");
    CHECK(half(0, 0) == 1.0f);
    CHECK(half(1, 0) == -2.5f);
}

TEST_CASE("damaged or unsupported NumPy files are refused naming the file and the reason", "[core]") {
    TempDir dir;
    const auto refused = [&](const std::string& name, const std::string& bytes,
                             std::initializer_list<std::string> fragments) {
        write_bytes(dir / name, bytes);
        require_error([&] { (void)brain::load_npy(dir / name); }, ErrorCode::InvalidData, fragments);
    };
    refused("text.npy", "x,y\n1,2\n", {"text.npy", "not a NumPy .npy array"});
    refused("nan.npy", npy("{'descr': '<f4', 'fortran_order': False, 'shape': (2, 2), }", raw<float>({1, 2, 3, NAN})),
            {"nan.npy: row 1, column 1 is nan", "finite"});
    refused("big.npy", npy("{'descr': '<f8', 'fortran_order': False, 'shape': (1,), }", raw<double>({1e300})),
            {"row 0, column 0 is 1e+300", "finite"});
    refused("short.npy", npy("{'descr': '<f4', 'fortran_order': False, 'shape': (3, 2), }", raw<float>({1, 2})),
            {"short.npy", "truncated"});
    refused("fortran.npy", npy("{'descr': '<f4', 'fortran_order': True, 'shape': (2, 2), }", raw<float>({1, 2, 3, 4})),
            {"Fortran", "ascontiguousarray"});
    refused("cube.npy", npy("{'descr': '<f4', 'fortran_order': False, 'shape': (1, 1, 1), }", raw<float>({1})),
            {"3-dimensional"});
    refused("complex.npy", npy("{'descr': '<c8', 'fortran_order': False, 'shape': (1,), }", raw<float>({1, 2})),
            {"'<c8'", "complex"});
    refused("object.npy", npy("{'descr': '|O', 'fortran_order': False, 'shape': (1,), }", "12345678"),
            {"'|O'"});
    refused("struct.npy", npy("{'descr': [('a', '<f4')], 'fortran_order': False, 'shape': (1,), }", "1234"),
            {"struct.npy", "structured array", "structured_to_unstructured"});
    refused("bytes.npy", npy("{'descr': '|S3', 'fortran_order': False, 'shape': (1,), }", "abc"),
            {"bytes.npy", "byte strings (dtype '|S3')", "astype(str)"});
    refused("version.npy", std::string("\x93NUMPY\x09\x00\x10\x00", 10) + std::string(64, ' '), {"version 9.0"});
    std::string huge = std::string("\x93NUMPY\x02\x00", 8) + std::string("\xff\xff\xff\x7f", 4);
    refused("huge_header.npy", huge, {"header is", "more than"});
    refused("overflow.npy",
            npy("{'descr': '<f8', 'fortran_order': False, 'shape': (4611686018427387904, 8), }", ""), {"overflow"});
    brain::InputLimits narrow;
    narrow.max_columns = 2;
    write_bytes(dir / "wide.npy", npy("{'descr': '<f4', 'fortran_order': False, 'shape': (1, 3), }", raw<float>({1, 2, 3})));
    require_error([&] { (void)brain::load_npy(dir / "wide.npy", narrow); }, ErrorCode::InvalidData,
                  {"3 columns", "--max-columns"});
    require_error([&] { (void)brain::load_npy(dir / "none.npy"); }, ErrorCode::IoError, {"none.npy"});
    require_error([&] { (void)brain::load_npy(dir.path); }, ErrorCode::IoError, {"a directory"});

    write_bytes(dir / "rows3.npy", npy("{'descr': '<f4', 'fortran_order': False, 'shape': (3,), }", raw<float>({1, 2, 3})));
    write_bytes(dir / "rows2.npy", npy("{'descr': '<f4', 'fortran_order': False, 'shape': (2,), }", raw<float>({1, 2})));
    require_error([&] { (void)Dataset::from_npy(dir / "rows3.npy", dir / "rows2.npy"); }, ErrorCode::InvalidData,
                  {"3 rows", "have 2"});
}

TEST_CASE("from_npz: targets chosen by name, missing arrays named, bombs bounded", "[core]") {
    REQUIRE_NPZ();
    TempDir dir;
    // An archive without targets: columns of the features become the targets by name.
    Dataset all(Matrix{{1, 2, 3}, {4, 5, 6}}, Matrix{{0}, {1}});
    all.set_names({"a", "b", "c"}, {"t"});
    all.save_npz(dir / "all.npz");
    const Dataset with_targets = Dataset::from_npz(dir / "all.npz");
    CHECK(with_targets.target_names() == std::vector<std::string>{"t"});
    brain::NpyOptions pick;
    pick.target_columns = {"b"};
    require_error([&] { (void)Dataset::from_npz(dir / "all.npz", pick); }, ErrorCode::InvalidArgument,
                  {"has a 'targets' array"});

    write_bytes(dir / "x.npy", npy("{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }",
                                   raw<float>({1, 2, 3, 4, 5, 6})));
    require_error([&] { (void)Dataset::from_npz(dir / "x.npy"); }, ErrorCode::InvalidData,
                  {"x.npy", "not a readable .npz archive"});
    require_error([&] { (void)Dataset::from_npz(dir / "missing.npz"); }, ErrorCode::IoError, {"missing.npz"});

    // The archive is bounded by the file limit before it is read (each array unpacked too: the NumPy case below).
    Dataset big(Matrix(64, 4, 1.0f), Matrix(64, 1, 0.0f));
    big.save_npz(dir / "big.npz");
    brain::NpyOptions bounded;
    bounded.limits.max_file_bytes = 1000;
    require_error([&] { (void)Dataset::from_npz(dir / "big.npz", bounded); }, ErrorCode::InvalidData,
                  {"big.npz", "more than the limit of 1000 bytes"});
}

TEST_CASE("NumPy reads what brain writes and brain reads what NumPy writes", "[core]") {
    REQUIRE_NPZ();
    if (!have_numpy()) {
        BRAIN_SKIP("Debian's python3-numpy is not installed (scripts/install-deps installs it)");
    }
    TempDir dir;
    Dataset d(Matrix{{1.5f, -2.0f}, {0.1f, 3e-39f}}, Matrix{{1, 0}, {0, 1}});
    d.set_names({"x", "y"}, {"c=no", "c=yes"});
    d.set_class_labels({"no", "yes"});
    d.save_npz(dir / "brain.npz");
    const std::string script = R"(
import numpy as np, sys
a = np.load('brain.npz')
assert a['features'].dtype == np.float32 and a['features'].shape == (2, 2)
assert a['features'].tobytes() == np.array([[1.5, -2.0], [0.1, 3e-39]], dtype=np.float32).tobytes()
assert list(a['feature_names']) == ['x', 'y'] and list(a['class_labels']) == ['no', 'yes']
x = np.arange(12, dtype=np.float64).reshape(4, 3) / 7
np.savez_compressed('numpy.npz', features=x, targets=np.array([0, 1, 1, 0]), feature_names=np.array(['a', 'b', 'c']))
np.save('numpy.npy', x.astype(np.float32))
np.savez('notargets.npz', features=x, feature_names=np.array(['a', 'b', 'c']))
np.savez_compressed('bomb.npz', features=np.zeros((1000, 100), np.float32), targets=np.zeros(1000))
np.savez('labels.npz', features=x, targets=np.zeros((4, 1)), class_labels=np.array(['a', 'b', 'c']))
print('ok')
)";
    write_bytes(dir / "check.py", script);
    const auto result = brain::test::run_process("/usr/bin/python3 check.py", dir.path.string());
    INFO(result.output);
    REQUIRE(result.status == 0);
    const Dataset n = Dataset::from_npz(dir / "numpy.npz");
    REQUIRE(n.size() == 4);
    CHECK(n.features()(3, 2) == static_cast<float>(11.0 / 7));
    CHECK(n.targets()(2, 0) == 1.0f);
    CHECK(n.feature_names() == std::vector<std::string>{"a", "b", "c"});
    CHECK(brain::load_npy(dir / "numpy.npy")(1, 1) == static_cast<float>(4.0 / 7));
    // An archive without targets: columns of its features chosen by name.
    require_error([&] { (void)Dataset::from_npz(dir / "notargets.npz"); }, ErrorCode::InvalidArgument,
                  {"has no 'targets' array", "'features', 'feature_names'", "--target"});
    brain::NpyOptions pick;
    pick.target_columns = {"b"};
    const Dataset picked = Dataset::from_npz(dir / "notargets.npz", pick);
    CHECK(picked.feature_names() == std::vector<std::string>{"a", "c"});
    CHECK(picked.target_names() == std::vector<std::string>{"b"});
    CHECK(picked.targets()(1, 0) == static_cast<float>(4.0 / 7));
    CHECK(picked.features()(1, 1) == static_cast<float>(5.0 / 7));
    // Class labels that do not fit the targets name both counts.
    require_error([&] { (void)Dataset::from_npz(dir / "labels.npz"); }, ErrorCode::InvalidData,
                  {"labels.npz", "'class_labels' holds 3 labels for the 1 column of the targets"});
    // A deflated array is bounded unpacked, before it is read: 400,128 bytes against a limit of 64 KiB.
    brain::NpyOptions bounded;
    bounded.limits.max_file_bytes = 64 * 1024;
    require_error([&] { (void)Dataset::from_npz(dir / "bomb.npz", bounded); }, ErrorCode::InvalidData,
                  {"bomb.npz:features.npy", "unpacked, more than the limit"});
}
