// Optional header-only helper for plugin authors: what every session measures for session_stats (time spent
// opening, training and checkpointing; epochs and batches; bytes moved each way; the peak of tensor bytes) and the
// one function that turns it into a brain_session_stats. A session owns one SessionCounters; not thread-safe (the
// ABI serialises calls on a session).
#pragma once

#include <algorithm>
#include <brain/plugin_abi.h>
#include <brain/plugin_sdk.hpp>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <string>

namespace brain::sdk {

// What only the session knows for its stats; SessionCounters supplies the rest.
struct SessionFacts {
    bool dataset_resident = true;                     // the whole data set lives where training runs
    std::int32_t precision = BRAIN_PRECISION_FLOAT32; // brain_precision in effect
    std::uint64_t dataset_bytes = 0;                  // memory holding the data set or its staging buffers
    std::uint64_t workspace_bytes = 0;                // library workspaces charged to the budget
    std::uint64_t budget_bytes = 0;                   // the budget the session enforces; 0 if none
    std::string arithmetic;                           // what ran, e.g. "float32" (ABI 1.2's stats.arithmetic)
};

// The measured figures of one session.
class SessionCounters {
public:
    // The phases whose time session_stats reports.
    enum class Phase { Setup, Training, Checkpoint };

    // Adds the time from its creation to its destruction to one phase, also when an exception ends the scope.
    class Timer {
    public:
        Timer(SessionCounters& counters, Phase phase) noexcept
            : m_counters(counters), m_phase(phase), m_start(std::chrono::steady_clock::now()) {}
        ~Timer() { m_counters.add_time(m_phase, std::chrono::steady_clock::now() - m_start); }
        Timer(const Timer&) = delete;
        Timer& operator=(const Timer&) = delete;

    private:
        SessionCounters& m_counters;
        Phase m_phase;
        std::chrono::steady_clock::time_point m_start;
    };

    // Times the enclosing scope as `phase`: `const auto timer = counters.time(Phase::Training);`.
    [[nodiscard]] Timer time(Phase phase) noexcept { return Timer(*this, phase); }
    // Adds `elapsed` to a phase (for times measured elsewhere).
    void add_time(Phase phase, std::chrono::nanoseconds elapsed) noexcept { m_time[index(phase)] += elapsed; }
    // Counts one finished epoch.
    void count_epoch() noexcept { ++m_epochs; }
    // Counts `n` trained batches.
    void count_batches(std::uint64_t n = 1) noexcept { m_batches += n; }
    // Counts bytes copied from the host to the device.
    void moved_to_device(std::uint64_t bytes) noexcept { m_to_device += bytes; }
    // Counts bytes copied from the device to the host.
    void moved_to_host(std::uint64_t bytes) noexcept { m_to_host += bytes; }
    // Counts tensor bytes allocated; the peak follows.
    void allocated(std::uint64_t bytes) noexcept {
        m_allocated += bytes;
        m_peak = std::max(m_peak, m_allocated);
    }
    // Counts tensor bytes released.
    void released(std::uint64_t bytes) noexcept { m_allocated -= std::min(bytes, m_allocated); }
    // Raises the peak to `bytes`, for a session whose own allocator measures it.
    void observe_peak(std::uint64_t bytes) noexcept { m_peak = std::max(m_peak, bytes); }

    // Epochs finished so far.
    std::uint64_t epochs() const noexcept { return m_epochs; }
    // Batches trained so far.
    std::uint64_t batches() const noexcept { return m_batches; }
    // The peak of allocated tensor bytes.
    std::uint64_t peak_bytes() const noexcept { return m_peak; }

    // Every field of brain_session_stats: the counters' own figures and the session's facts.
    brain_session_stats stats(const SessionFacts& facts) const noexcept {
        brain_session_stats s{};
        s.struct_size = sizeof(s);
        s.peak_allocated_bytes = m_peak;
        s.setup_time_ns = nanoseconds(Phase::Setup);
        s.training_time_ns = nanoseconds(Phase::Training);
        s.checkpoint_time_ns = nanoseconds(Phase::Checkpoint);
        s.epochs = m_epochs;
        s.batches = m_batches;
        s.host_to_device_bytes = m_to_device;
        s.device_to_host_bytes = m_to_host;
        s.dataset_resident = facts.dataset_resident ? 1 : 0;
        s.precision = facts.precision;
        s.dataset_bytes = facts.dataset_bytes;
        s.workspace_bytes = facts.workspace_bytes;
        s.budget_bytes = facts.budget_bytes;
#if BRAIN_ABI_VERSION_MINOR >= 2 // stats.arithmetic arrived in ABI 1.2
        copy_string(s.arithmetic, facts.arithmetic);
#endif
        return s;
    }

private:
    static constexpr std::size_t index(Phase phase) noexcept { return static_cast<std::size_t>(phase); }
    std::uint64_t nanoseconds(Phase phase) const noexcept {
        return static_cast<std::uint64_t>(std::max<std::int64_t>(m_time[index(phase)].count(), 0));
    }

    std::chrono::nanoseconds m_time[3]{};
    std::uint64_t m_epochs = 0;
    std::uint64_t m_batches = 0;
    std::uint64_t m_to_device = 0;
    std::uint64_t m_to_host = 0;
    std::uint64_t m_allocated = 0;
    std::uint64_t m_peak = 0;
};

} // namespace brain::sdk
