// Internal: the rows of a StreamingDataset in an epoch's batch order (streaming_dataset.hpp states the order),
// served to a plugin through brain_batch_source. One window of rows is held, standardised, and the next one is
// read ahead on a thread of its own while the plugin trains on the current one.
#pragma once

#include <brain/plugin_abi.h>
#include <brain/streaming_dataset.hpp>
#include <brain/types.hpp>
#include <cstdint>
#include <future>
#include <string>
#include <vector>

namespace brain::detail {

class StreamReader {
public:
    StreamReader(StreamingDataset data, std::uint64_t seed, bool shuffle);
    ~StreamReader();
    StreamReader(const StreamReader&) = delete;
    StreamReader& operator=(const StreamReader&) = delete;

    // Check every target row as it is read, as `loss` needs it (detail::check_targets).
    void require_targets_of(Loss loss) noexcept { m_target_loss = loss; }
    // Rows at positions [first, first + count) of epoch `epoch`'s order into features and targets.
    void fetch(std::uint64_t epoch, std::uint64_t first, std::uint32_t count, float* features, float* targets);
    // The ABI's view of this reader (context = this), valid while it lives.
    const brain_batch_source* source() const noexcept { return &m_source; }

private:
    struct Window {
        std::uint64_t epoch = UINT64_MAX;
        std::uint64_t index = UINT64_MAX;
        std::uint64_t rows = 0;
        std::vector<float> x;
        std::vector<float> t;
    };
    // The file chunk at slot `slot` of epoch `epoch`'s chunk order.
    std::uint64_t chunk_at(std::uint64_t epoch, std::uint64_t slot) const noexcept;
    std::uint64_t chunk_rows(std::uint64_t chunk) const noexcept;
    // Rows of window `w` (its chunks' rows; only the file's last chunk is short).
    std::uint64_t window_rows(std::uint64_t epoch, std::uint64_t w) const noexcept;
    // The first position of window `w` in epoch `epoch`.
    std::uint64_t window_start(std::uint64_t epoch, std::uint64_t w) const noexcept;
    void load(Window& window, std::uint64_t epoch, std::uint64_t w) const;
    Window& window_for(std::uint64_t epoch, std::uint64_t w);
    void start_read_ahead(std::uint64_t epoch, std::uint64_t w);

    StreamingDataset m_data;
    std::uint64_t m_seed;
    bool m_shuffle;
    Loss m_target_loss = Loss::MeanSquaredError; // whose target check applies (none for MSE)
    std::uint64_t m_chunk_rows;
    std::uint64_t m_window_chunks;
    std::uint64_t m_chunks;
    std::uint64_t m_windows;
    Window m_current;
    Window m_next;
    std::future<void> m_read_ahead; // fills m_next
    std::uint64_t m_ahead_epoch = UINT64_MAX, m_ahead_index = UINT64_MAX;
    brain_batch_source m_source{};
};

} // namespace brain::detail
