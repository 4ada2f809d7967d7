// brain::Matrix constructors: every size is checked so that a Matrix always owns exactly rows * cols floats.
#include "host_memory.hpp"

#include <brain/error.hpp>
#include <brain/matrix.hpp>
#include <limits>
#include <new>
#include <stdexcept>

namespace brain {

namespace {
std::size_t checked_size(std::size_t rows, std::size_t cols) {
    // A silent overflow here would hand out a buffer smaller than the shape promises.
    BRAIN_CHECK_ARG(cols == 0 || rows <= std::numeric_limits<std::size_t>::max() / cols, "Matrix: ", rows, " x ",
                    cols, " elements overflow size_t; use a smaller shape");
    return rows * cols;
}

// rows x cols copies of `value`: AllocationFailed, in the shape's terms, where the host cannot hold them (a
// std::vector would throw its own bad_alloc or length_error).
std::vector<float> filled(std::size_t rows, std::size_t cols, float value) {
    const std::size_t count = checked_size(rows, cols);
    try {
        return std::vector<float>(count, value);
    } catch (const std::bad_alloc&) {
    } catch (const std::length_error&) {
    }
    BRAIN_THROW(ErrorCode::AllocationFailed, "Matrix: not enough host memory for ", rows, " x ", cols, " floats (",
                detail::format_bytes(detail::saturating_mul(count, sizeof(float))),
                "); use a smaller shape or free memory");
}
} // namespace

Matrix::Matrix(std::size_t rows, std::size_t cols, float value)
    : m_rows(rows), m_cols(cols), m_data(filled(rows, cols, value)) {}

Matrix::Matrix(std::size_t rows, std::size_t cols, std::vector<float> data)
    : m_rows(rows), m_cols(cols), m_data(std::move(data)) {
    const std::size_t expected = checked_size(rows, cols);
    BRAIN_CHECK_ARG(m_data.size() == expected, "Matrix: a ", rows, " x ", cols, " matrix needs ", expected,
                    " values (rows * cols), but ", m_data.size(), " were given");
}

Matrix::Matrix(std::initializer_list<std::initializer_list<float>> rows) {
    if (rows.size() == 0) return;
    m_rows = rows.size();
    m_cols = rows.begin()->size();
    m_data.reserve(checked_size(m_rows, m_cols));
    std::size_t index = 0;
    for (const auto& row : rows) {
        BRAIN_CHECK_ARG(row.size() == m_cols, "Matrix: every row must have the same width: row 0 has ", m_cols,
                        " values but row ", index, " has ", row.size());
        m_data.insert(m_data.end(), row.begin(), row.end());
        ++index;
    }
}

MatrixView::MatrixView(const Matrix& matrix)
    : m_data(matrix.data().data()), m_rows(matrix.rows()), m_cols(matrix.cols()) {
    // data() hands out the vector itself, so its size is checked wherever a matrix is read.
    BRAIN_CHECK_ARG(matrix.data().size() == checked_size(m_rows, m_cols), "Matrix: a ", m_rows, " x ", m_cols,
                    " matrix needs ", m_rows * m_cols, " values, but its storage holds ", matrix.data().size(),
                    "; keep data().size() equal to rows() * cols() (build a new Matrix to change its shape)");
}

} // namespace brain
