#include "stream_reader.hpp"

#include "stream_files.hpp"
#include "training_input.hpp"

#include <algorithm>
#include <brain/error.hpp>
#include <cstring>
#include <new>

namespace brain::detail {

namespace {

int32_t fetch_rows(void* context, uint64_t epoch, uint64_t first_position, uint32_t count, float* features,
                   float* targets, char* message, size_t message_size) {
    const auto report = [&](int32_t status, const std::string& text) {
        if (message && message_size > 0) {
            const std::size_t n = std::min(text.size(), message_size - 1);
            std::memcpy(message, text.data(), n);
            message[n] = '\0';
        }
        return status;
    };
    // Nothing thrown crosses the ABI: an error goes back as its code and message.
    try {
        static_cast<StreamReader*>(context)->fetch(epoch, first_position, count, features, targets);
        return BRAIN_OK;
    } catch (const Error& e) {
        return report(static_cast<int32_t>(e.code()), e.what()); // ErrorCode numbers are brain_status numbers
    } catch (const std::bad_alloc&) {
        return report(BRAIN_ERR_ALLOCATION_FAILED, "not enough host memory for the streamed data set's window");
    } catch (...) {
        return report(BRAIN_ERR_INVALID_STATE, "reading the streamed data set failed unexpectedly");
    }
}

} // namespace

StreamReader::StreamReader(StreamingDataset data, std::uint64_t seed, bool shuffle)
    : m_data(std::move(data)), m_seed(seed), m_shuffle(shuffle), m_chunk_rows(m_data.options().chunk_rows),
      m_window_chunks(m_data.options().window_chunks) {
    m_chunks = (m_data.size() + m_chunk_rows - 1) / m_chunk_rows;
    m_windows = (m_chunks + m_window_chunks - 1) / m_window_chunks;
    m_source.struct_size = sizeof(m_source);
    m_source.context = this;
    m_source.rows = m_data.size();
    m_source.input_width = static_cast<uint32_t>(m_data.input_width());
    m_source.target_width = static_cast<uint32_t>(m_data.target_width());
    m_source.fetch = fetch_rows;
}

StreamReader::~StreamReader() {
    if (m_read_ahead.valid()) m_read_ahead.wait();
}

std::uint64_t StreamReader::chunk_at(std::uint64_t epoch, std::uint64_t slot) const noexcept {
    return m_shuffle ? brain_shuffle_index(m_seed, epoch, m_chunks, slot) : slot;
}

std::uint64_t StreamReader::chunk_rows(std::uint64_t chunk) const noexcept {
    return std::min(m_chunk_rows, m_data.size() - chunk * m_chunk_rows);
}

std::uint64_t StreamReader::window_rows(std::uint64_t epoch, std::uint64_t w) const noexcept {
    std::uint64_t rows = 0;
    const std::uint64_t end = std::min(m_chunks, (w + 1) * m_window_chunks);
    for (std::uint64_t slot = w * m_window_chunks; slot < end; ++slot) rows += chunk_rows(chunk_at(epoch, slot));
    return rows;
}

std::uint64_t StreamReader::window_start(std::uint64_t epoch, std::uint64_t w) const noexcept {
    // Every chunk but the file's last holds chunk_rows rows: the windows before w hold w full windows' rows, less
    // the short chunk's shortfall when it falls among them.
    const std::uint64_t last = m_chunks - 1;
    const std::uint64_t shortfall = m_chunk_rows - chunk_rows(last);
    std::uint64_t start = w * m_window_chunks * m_chunk_rows;
    if (shortfall > 0) {
        const std::uint64_t slots = w * m_window_chunks;
        // Where the short chunk sits in this epoch's order (a permutation: find its slot).
        bool before = false;
        if (!m_shuffle) {
            before = last < slots;
        } else {
            for (std::uint64_t slot = 0; slot < slots; ++slot)
                if (chunk_at(epoch, slot) == last) {
                    before = true;
                    break;
                }
        }
        if (before) start -= shortfall;
    }
    return start;
}

void StreamReader::load(Window& window, std::uint64_t epoch, std::uint64_t w) const {
    const std::size_t f = m_data.input_width(), k = m_data.target_width();
    const std::uint64_t rows = window_rows(epoch, w);
    // The window's chunks, one after another in slot order, then its rows shuffled into `window`.
    std::vector<float> x(static_cast<std::size_t>(rows * f)), t(static_cast<std::size_t>(rows * k));
    std::string raw;
    std::uint64_t at = 0;
    const std::uint64_t end = std::min(m_chunks, (w + 1) * m_window_chunks);
    for (std::uint64_t slot = w * m_window_chunks; slot < end; ++slot) {
        const std::uint64_t chunk = chunk_at(epoch, slot);
        const std::uint64_t n = chunk_rows(chunk);
        m_data.files().features.read(chunk * m_chunk_rows, n, x.data() + at * f, raw);
        m_data.files().targets.read(chunk * m_chunk_rows, n, t.data() + at * k, raw);
        detail::check_targets(m_target_loss, t.data() + at * k, static_cast<std::size_t>(n), k,
                              chunk * m_chunk_rows, m_data.files().targets.origin);
        at += n;
    }
    if (const auto& s = m_data.standardization())
        for (std::uint64_t r = 0; r < rows; ++r)
            for (std::size_t c = 0; c < f; ++c) x[r * f + c] = (x[r * f + c] - s->mean[c]) / s->stddev[c];
    window.x.resize(x.size());
    window.t.resize(t.size());
    // A per-window key keeps the windows' row orders independent of one another.
    const std::uint64_t key = m_seed ^ (0x9e3779b97f4a7c15ULL * (w + 1));
    for (std::uint64_t p = 0; p < rows; ++p) {
        const std::uint64_t src = m_shuffle ? brain_shuffle_index(key, epoch, rows, p) : p;
        std::memcpy(window.x.data() + p * f, x.data() + src * f, f * sizeof(float));
        std::memcpy(window.t.data() + p * k, t.data() + src * k, k * sizeof(float));
    }
    window.rows = rows;
    window.epoch = epoch;
    window.index = w;
}

void StreamReader::start_read_ahead(std::uint64_t epoch, std::uint64_t w) {
    if (w >= m_windows) {
        ++epoch;
        w = 0;
    }
    if (m_read_ahead.valid()) m_read_ahead.wait();
    m_ahead_epoch = epoch;
    m_ahead_index = w;
    m_next.epoch = UINT64_MAX;
    m_read_ahead = std::async(std::launch::async, [this, epoch, w] { load(m_next, epoch, w); });
}

StreamReader::Window& StreamReader::window_for(std::uint64_t epoch, std::uint64_t w) {
    if (m_current.epoch == epoch && m_current.index == w) return m_current;
    if (m_read_ahead.valid() && m_ahead_epoch == epoch && m_ahead_index == w) {
        m_read_ahead.get(); // rethrows a failed read here, on the fetching thread
        std::swap(m_current, m_next);
    } else {
        if (m_read_ahead.valid()) m_read_ahead.wait(); // m_next is about to be reused
        m_read_ahead = {};
        load(m_current, epoch, w);
    }
    start_read_ahead(epoch, w + 1);
    return m_current;
}

void StreamReader::fetch(std::uint64_t epoch, std::uint64_t first, std::uint32_t count, float* features,
                         float* targets) {
    BRAIN_CHECK_ARG(first + count <= m_data.size(), "the batch source was asked for positions ", first, " to ",
                    first + count, " of an epoch of ", m_data.size(), " rows");
    const std::size_t f = m_data.input_width(), k = m_data.target_width();
    std::uint64_t p = first;
    const std::uint64_t end = first + count;
    // The window of position p: windows are nearly equal in rows, so start from the estimate and step.
    std::uint64_t w = std::min(m_windows - 1, p / (m_window_chunks * m_chunk_rows));
    while (w > 0 && window_start(epoch, w) > p) --w;
    while (w + 1 < m_windows && window_start(epoch, w + 1) <= p) ++w;
    while (p < end) {
        const std::uint64_t start = window_start(epoch, w);
        Window& window = window_for(epoch, w);
        const std::uint64_t n = std::min(end, start + window.rows) - p;
        const std::uint64_t local = p - start;
        std::memcpy(features + (p - first) * f, window.x.data() + local * f, n * f * sizeof(float));
        std::memcpy(targets + (p - first) * k, window.t.data() + local * k, n * k * sizeof(float));
        p += n;
        ++w;
    }
}

} // namespace brain::detail
