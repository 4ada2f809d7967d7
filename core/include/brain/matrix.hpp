// brain::Matrix: a dense row-major float32 matrix, the unit of data exchanged with the library, and
// brain::MatrixView, a read-only view of such values held elsewhere.
#pragma once

#include <brain/export.hpp>
#include <cstddef>
#include <initializer_list>
#include <span>
#include <utility>
#include <vector>

namespace brain {

// Dense row-major float32 matrix. Owns its storage; copyable and movable.
class BRAIN_API Matrix {
public:
    Matrix() = default;
    // rows x cols, filled with value.
    Matrix(std::size_t rows, std::size_t cols, float value = 0.0f);
    // rows x cols from row-major data (data.size() must equal rows * cols).
    Matrix(std::size_t rows, std::size_t cols, std::vector<float> data);
    // From nested rows, e.g. {{0, 1}, {1, 0}}; every row must have the same width.
    Matrix(std::initializer_list<std::initializer_list<float>> rows);
    Matrix(const Matrix&) = default;
    Matrix& operator=(const Matrix&) = default;
    // A move leaves the source an empty 0 x 0 matrix.
    Matrix(Matrix&& other) noexcept
        : m_rows(std::exchange(other.m_rows, 0)), m_cols(std::exchange(other.m_cols, 0)),
          m_data(std::move(other.m_data)) {
        other.m_data.clear();
    }
    Matrix& operator=(Matrix&& other) noexcept {
        m_rows = std::exchange(other.m_rows, 0);
        m_cols = std::exchange(other.m_cols, 0);
        m_data = std::move(other.m_data);
        other.m_data.clear();
        return *this;
    }

    std::size_t rows() const noexcept { return m_rows; }
    std::size_t cols() const noexcept { return m_cols; }
    bool empty() const noexcept { return m_rows == 0; }
    // Element (r, c), unchecked.
    float& operator()(std::size_t r, std::size_t c) noexcept { return m_data[r * m_cols + c]; }
    float operator()(std::size_t r, std::size_t c) const noexcept { return m_data[r * m_cols + c]; }
    // Row r as a view into this matrix's storage.
    std::span<const float> row(std::size_t r) const noexcept { return {m_data.data() + r * m_cols, m_cols}; }
    std::span<float> row(std::size_t r) noexcept { return {m_data.data() + r * m_cols, m_cols}; }
    // The row-major storage (keep its size rows() * cols(): every call that reads the matrix checks it).
    const std::vector<float>& data() const noexcept { return m_data; }
    std::vector<float>& data() noexcept { return m_data; }

private:
    std::size_t m_rows = 0;
    std::size_t m_cols = 0;
    std::vector<float> m_data;
};

// A read-only view of rows x cols row-major float32 values held elsewhere: a Matrix, a NumPy array, a memory map.
// It never copies or owns them; the owner must keep them alive and unchanged while a call reads the view.
class MatrixView {
public:
    MatrixView() = default;
    // rows x cols values from `data` (rows * cols floats, row-major).
    MatrixView(const float* data, std::size_t rows, std::size_t cols) noexcept
        : m_data(data), m_rows(rows), m_cols(cols) {}
    // The whole of a Matrix (implicit: every call that takes a view takes a Matrix). Throws InvalidArgument when
    // the matrix's storage no longer holds rows * cols values (its data() was resized).
    BRAIN_API MatrixView(const Matrix& matrix); // NOLINT(google-explicit-constructor)

    std::size_t rows() const noexcept { return m_rows; }
    std::size_t cols() const noexcept { return m_cols; }
    bool empty() const noexcept { return m_rows == 0; }
    // rows() * cols(): the number of values.
    std::size_t size() const noexcept { return m_rows * m_cols; }
    // Element (r, c), unchecked.
    float operator()(std::size_t r, std::size_t c) const noexcept { return m_data[r * m_cols + c]; }
    // Row r.
    std::span<const float> row(std::size_t r) const noexcept { return {m_data + r * m_cols, m_cols}; }
    // The first value's address (the viewed storage).
    const float* data() const noexcept { return m_data; }

private:
    const float* m_data = nullptr;
    std::size_t m_rows = 0;
    std::size_t m_cols = 0;
};

} // namespace brain
