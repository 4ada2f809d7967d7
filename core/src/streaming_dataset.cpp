// StreamingDataset: the headers of two .npy files read at once, their rows read chunk by chunk when asked.
#include "host_memory.hpp"
#include "stream_files.hpp"

#include <algorithm>
#include <brain/error.hpp>
#include <cerrno>
#include <cmath>
#include <cstring>
#include <limits>
#include <unistd.h>

namespace brain {

namespace {

StreamArray open_array(const std::filesystem::path& path, const InputLimits& limits) {
    // The file's size does not bound memory here (only a window of rows is ever held), so only the columns and the
    // header are limited.
    detail::InputFile file(path, "NumPy file", std::numeric_limits<std::uint64_t>::max(), ErrorCode::InvalidData,
                           detail::InputFile::Fifo::NoWait);
    const std::string origin = path.string();
    BRAIN_CHECK(
        file.sized(), ErrorCode::IoError, "cannot stream '", origin,
        "': it is a pipe or reports no size; streaming reads rows at their offsets, so give a regular file");
    std::string head(12, '\0');
    const auto read_at = [&](char* dst, std::size_t n, std::uint64_t offset) {
        std::size_t done = 0;
        while (done < n) {
            const ssize_t got = ::pread(file.descriptor(), dst + done, n - done, static_cast<off_t>(offset + done));
            if (got < 0 && errno == EINTR) continue;
            BRAIN_CHECK(got > 0, ErrorCode::InvalidData, origin,
                        ": the file ends inside its header; not an .npy file");
            done += static_cast<std::size_t>(got);
        }
    };
    BRAIN_CHECK(file.size() >= 12, ErrorCode::InvalidData, origin, ": too short to be an .npy file");
    read_at(head.data(), 12, 0);
    const std::size_t size = detail::npy::header_size(head, origin);
    BRAIN_CHECK(size != 0 && size <= file.size(), ErrorCode::InvalidData, origin,
                ": not an .npy file (save arrays with numpy.save, or convert a CSV file with brain convert)");
    head.resize(size);
    read_at(head.data() + 12, size - 12, 12);
    detail::npy::Header header = detail::npy::parse_header(head, origin, limits);
    BRAIN_CHECK(header.kind != 'U', ErrorCode::InvalidData, origin, ": holds text (dtype ",
                quote_excerpt(header.descr), ") where numbers were expected");
    BRAIN_CHECK(header.data_offset + header.data_bytes <= file.size(), ErrorCode::InvalidData, origin,
                ": its shape and dtype (", header.dtype_name(), ") need ", header.data_bytes,
                " bytes of data but the file holds ", file.size() - header.data_offset,
                "; the file is truncated or damaged");
    return StreamArray{std::move(file), std::move(header), origin};
}

std::vector<std::string> names(const char* prefix, std::size_t n) {
    std::vector<std::string> out;
    for (std::size_t i = 0; i < n; ++i) out.push_back(prefix + std::to_string(i));
    return out;
}

} // namespace

void StreamArray::read(std::uint64_t first, std::uint64_t count, float* dst, std::string& raw) const {
    const std::uint64_t values = count * header.columns;
    const std::uint64_t bytes = values * header.itemsize;
    raw.resize(static_cast<std::size_t>(bytes));
    const std::uint64_t offset = header.data_offset + first * header.columns * header.itemsize;
    std::size_t done = 0;
    while (done < bytes) {
        const ssize_t got = ::pread(file.descriptor(), raw.data() + done, static_cast<std::size_t>(bytes - done),
                                    static_cast<off_t>(offset + done));
        if (got < 0 && errno == EINTR) continue;
        if (got < 0)
            BRAIN_THROW(ErrorCode::IoError, "reading rows ", first, " to ", first + count - 1, " of '", origin,
                        "' failed: ", std::strerror(errno), "; check the disk and the file");
        BRAIN_CHECK(got > 0, ErrorCode::InvalidData, "'", origin, "' ended before row ", first + count - 1,
                    "; it was shortened while it was read");
        done += static_cast<std::size_t>(got);
    }
    const std::size_t bad = detail::npy::to_float(header, raw.data(), static_cast<std::size_t>(values), dst);
    if (bad != values) {
        const std::uint64_t index = first * header.columns + bad;
        BRAIN_THROW(ErrorCode::InvalidData, origin, ": row ", index / header.columns, ", column ",
                    index % header.columns, " is ",
                    detail::npy::value_text(header, raw.data() + bad * header.itemsize),
                    ", which is not a finite float32 value; NaN, infinity and values beyond +-3.4e38 are not "
                    "allowed, remove or impute them");
    }
}

StreamingDataset StreamingDataset::from_npy(const std::filesystem::path& features,
                                            const std::filesystem::path& targets, const StreamOptions& options) {
    BRAIN_CHECK_ARG(options.chunk_rows > 0 && options.window_chunks > 0,
                    "StreamOptions: chunk_rows and window_chunks must be at least 1, found ", options.chunk_rows,
                    " and ", options.window_chunks);
    auto files = std::make_shared<Files>(
        Files{open_array(features, options.limits), open_array(targets, options.limits), 0, {}, {}, options});
    const auto& x = files->features.header;
    const auto& y = files->targets.header;
    BRAIN_CHECK(x.rows == y.rows, ErrorCode::InvalidData, "the features '", files->features.origin, "' have ",
                x.rows, " rows but the targets '", files->targets.origin, "' have ", y.rows,
                "; give one target row per feature row");
    BRAIN_CHECK(x.rows > 0 && x.columns > 0 && y.columns > 0, ErrorCode::InvalidData, "'", files->features.origin,
                "' or '", files->targets.origin, "' is empty; a data set needs at least one row and column");
    files->rows = x.rows;
    files->feature_names = names("x", x.columns);
    files->target_names = names("y", y.columns);
    StreamingDataset data;
    data.m_files = std::move(files);
    return data;
}

std::uint64_t StreamingDataset::size() const noexcept {
    return m_files->rows;
}
std::size_t StreamingDataset::input_width() const noexcept {
    return static_cast<std::size_t>(m_files->features.header.columns);
}
std::size_t StreamingDataset::target_width() const noexcept {
    return static_cast<std::size_t>(m_files->targets.header.columns);
}
const std::vector<std::string>& StreamingDataset::feature_names() const noexcept {
    return m_files->feature_names;
}
const std::vector<std::string>& StreamingDataset::target_names() const noexcept {
    return m_files->target_names;
}
const StreamOptions& StreamingDataset::options() const noexcept {
    return m_files->options;
}

std::uint64_t StreamingDataset::buffer_bytes() const noexcept {
    const std::uint64_t window =
        std::min<std::uint64_t>(size(), detail::saturating_mul(options().chunk_rows, options().window_chunks));
    return 3 * detail::saturating_mul(window, (input_width() + target_width()) * sizeof(float));
}

Dataset StreamingDataset::read_rows(std::uint64_t begin, std::uint64_t end) const {
    BRAIN_CHECK_ARG(begin < end && end <= size(), "StreamingDataset::read_rows(", begin, ", ", end,
                    "): expected 0 <= begin < end <= ", size());
    const auto rows = static_cast<std::size_t>(end - begin);
    detail::require_host_memory(detail::saturating_mul(rows, (input_width() + target_width()) * sizeof(float)),
                                "rows " + std::to_string(begin) + " to " + std::to_string(end - 1) + " of " +
                                    m_files->features.origin,
                                "read fewer rows at once");
    Matrix x(rows, input_width()), y(rows, target_width());
    std::string raw;
    m_files->features.read(begin, rows, x.data().data(), raw);
    m_files->targets.read(begin, rows, y.data().data(), raw);
    Dataset data(std::move(x), std::move(y));
    data.set_names(feature_names(), target_names());
    data.set_standardization(m_standardization);
    return data;
}

StreamingDataset& StreamingDataset::standardize() {
    const std::size_t f = input_width();
    std::vector<double> sum(f, 0.0), sum_sq(f, 0.0);
    // Shifted sums (by the first row) keep the variance accurate when the mean is large against the spread.
    std::vector<double> shift(f, 0.0);
    const std::uint64_t chunk = std::max<std::uint64_t>(options().chunk_rows, 1);
    std::vector<float> x;
    std::string raw;
    for (std::uint64_t begin = 0; begin < size(); begin += chunk) {
        const std::uint64_t n = std::min(chunk, size() - begin);
        x.resize(static_cast<std::size_t>(n * f));
        m_files->features.read(begin, n, x.data(), raw);
        if (begin == 0)
            for (std::size_t c = 0; c < f; ++c) shift[c] = x[c];
        for (std::uint64_t r = 0; r < n; ++r)
            for (std::size_t c = 0; c < f; ++c) {
                const double d = x[r * f + c] - shift[c];
                sum[c] += d;
                sum_sq[c] += d * d;
            }
    }
    const auto n = static_cast<double>(size());
    Standardization s;
    for (std::size_t c = 0; c < f; ++c) {
        const double mean = sum[c] / n;
        const double variance = std::max(0.0, sum_sq[c] / n - mean * mean);
        const double stddev = std::sqrt(variance);
        s.mean.push_back(static_cast<float>(shift[c] + mean));
        // As Dataset::standardize: a deviation that is zero, subnormal or infinite gets unit scale.
        const auto sd = static_cast<float>(stddev);
        s.stddev.push_back(std::isnormal(sd) ? sd : 1.0f);
    }
    m_standardization = std::move(s);
    return *this;
}

} // namespace brain
