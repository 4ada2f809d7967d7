// brain::StreamingDataset: a data set read from disk in chunks while it trains, for data larger than memory.
#pragma once

#include <brain/dataset.hpp>
#include <brain/export.hpp>
#include <brain/limits.hpp>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace brain {

// How a StreamingDataset reads and shuffles. Host memory held while training is
// window_chunks x chunk_rows x (inputs + outputs) x 4 bytes three times: the window trained on, and the next one
// read ahead on a thread of its own (its rows in file order, then shuffled).
struct StreamOptions {
    std::uint64_t chunk_rows = 8192;  // rows read from the files at once, contiguous on disk
    std::uint32_t window_chunks = 16; // chunks whose rows are shuffled together (the shuffle buffer)
    InputLimits limits;               // each file's size and columns (as load_npy)
};

// Feature and target rows that stay on disk: only the rows of the current shuffle window are in memory. With
// shuffling, epoch e visits the chunks in a seeded random order (brain_shuffle_index over the chunk count), in
// windows of window_chunks chunks, and shuffles the rows within each window (brain_shuffle_index over the window's
// rows). Every row is visited once per epoch. How close this comes to a full shuffle: a row's position in the
// epoch is uniform at chunk granularity, its batch-mates are drawn from the window_chunks x chunk_rows rows of its
// window rather than from all rows, and two rows of one chunk always train in the same window; when the whole data
// set fits one window (rows <= chunk_rows x window_chunks) it is a full shuffle. Without shuffling, the rows come
// in file order. Copyable (copies share the open files).
class BRAIN_API StreamingDataset {
public:
    // Rows from two NumPy .npy files (features: rows x inputs, targets: rows x outputs) of the same row count, any
    // plain numeric dtype (converted to float32; a value not finite in float32 is InvalidData naming the file, row
    // and column when its chunk is read). Only the headers are read here.
    static StreamingDataset from_npy(const std::filesystem::path& features, const std::filesystem::path& targets,
                                     const StreamOptions& options = {});

    std::uint64_t size() const noexcept;
    std::size_t input_width() const noexcept;
    std::size_t target_width() const noexcept;
    const std::vector<std::string>& feature_names() const noexcept;
    const std::vector<std::string>& target_names() const noexcept;
    const StreamOptions& options() const noexcept;

    // Computes per-feature mean and standard deviation in one pass over the files (in double precision, chunk by
    // chunk) and attaches them; the rows stay raw on disk and are standardised as they are read for training.
    StreamingDataset& standardize();
    const std::optional<Standardization>& standardization() const noexcept { return m_standardization; }
    void set_standardization(std::optional<Standardization> s) { m_standardization = std::move(s); }

    // Rows [begin, end) in file order, raw, as an in-memory data set (names and standardisation carried along).
    Dataset read_rows(std::uint64_t begin, std::uint64_t end) const;
    // Host bytes a training session's reader holds (three windows' worth; see StreamOptions).
    std::uint64_t buffer_bytes() const noexcept;

    struct Files; // internal: the open files
    const Files& files() const noexcept { return *m_files; }

private:
    std::shared_ptr<const Files> m_files;
    std::optional<Standardization> m_standardization;
};

} // namespace brain
