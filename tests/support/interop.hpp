// What the interop tests share: a scratch directory, file bytes, the fixtures' reference data and the relative
// error the tolerances are stated in.
#pragma once

#include <algorithm>
#include <brain/matrix.hpp>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <unistd.h>
#include <vector>

namespace brain::test {

// A fresh, empty directory removed at the end of the test.
struct ScratchDir {
    std::filesystem::path path;
    explicit ScratchDir(const std::string& tag) {
        static int count = 0; // the process id and a count name it uniquely among concurrent test processes
        path = std::filesystem::temp_directory_path() /
               ("brain_" + tag + "_" + std::to_string(::getpid()) + "_" + std::to_string(++count));
        std::filesystem::remove_all(path);
        std::filesystem::create_directories(path);
    }
    ~ScratchDir() {
        std::error_code ec;
        std::filesystem::remove_all(path, ec);
    }
    std::filesystem::path operator/(const std::string& name) const { return path / name; }
    std::size_t entries() const {
        return static_cast<std::size_t>(std::distance(std::filesystem::directory_iterator(path), {}));
    }
};

inline std::string read_bytes(const std::filesystem::path& p) {
    std::ifstream in(p, std::ios::binary);
    std::ostringstream s;
    s << in.rdbuf();
    return s.str();
}

inline void write_bytes(const std::filesystem::path& p, const std::string& bytes) {
    std::ofstream out(p, std::ios::binary | std::ios::trunc);
    out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
}

// Rows of numbers from a JSON array of arrays.
inline Matrix matrix_from_json(const nlohmann::json& rows) {
    const std::size_t r = rows.size(), c = r ? rows[0].size() : 0;
    std::vector<float> data;
    for (const auto& row : rows)
        for (const auto& v : row) data.push_back(v.get<float>());
    return Matrix(r, c, std::move(data));
}

// The largest relative error of `got` against `want`, column by column: max |got - want| over the column divided
// by the column's largest |want| (1 when that is 0). Infinite when the shapes differ.
inline double relative_error(const Matrix& got, const Matrix& want) {
    if (got.rows() != want.rows() || got.cols() != want.cols()) return INFINITY;
    double worst = 0.0;
    for (std::size_t c = 0; c < want.cols(); ++c) {
        double scale = 0.0, diff = 0.0;
        for (std::size_t r = 0; r < want.rows(); ++r) {
            scale = std::max(scale, std::fabs(static_cast<double>(want(r, c))));
            diff = std::max(diff, std::fabs(static_cast<double>(got(r, c)) - want(r, c)));
        }
        worst = std::max(worst, diff / (scale > 0.0 ? scale : 1.0));
    }
    return worst;
}

// True when every float of a and b has the same bits.
inline bool same_bits(const Matrix& a, const Matrix& b) {
    return a.rows() == b.rows() && a.cols() == b.cols() &&
           std::equal(a.data().begin(), a.data().end(), b.data().begin(), [](float x, float y) {
               return std::memcmp(&x, &y, sizeof x) == 0;
           });
}

// The interop fixtures (tests/data/interop).
inline std::filesystem::path interop_data(const std::string& relative) {
    return std::filesystem::path(BRAIN_TEST_DATA_DIR) / "interop" / relative;
}

} // namespace brain::test
