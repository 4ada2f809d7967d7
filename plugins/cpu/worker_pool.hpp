// brain::cpu::WorkerPool: a fixed set of threads that run one short parallel step at a time, with a hand-off
// cheap enough (spin first, then sleep) to split every matrix product and element-wise pass of a batch.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <mutex>
#include <thread>
#include <type_traits>
#include <vector>

namespace brain::cpu {

// The half-open range [begin, end) of part `index` of `count` parts of `total` items, in chunks that are
// multiples of `align` (except the last), so that parts start on cache-line boundaries.
struct Range {
    std::size_t begin = 0;
    std::size_t end = 0;
    bool empty() const noexcept { return begin >= end; }
    std::size_t size() const noexcept { return end > begin ? end - begin : 0; }
};
Range split_range(std::size_t total, unsigned index, unsigned count, std::size_t align = 1) noexcept;

// Threads the CPU backend trains with: BRAIN_CPU_THREADS, else OPENBLAS_NUM_THREADS, else OMP_NUM_THREADS,
// else the CPUs this process may run on (its affinity mask, so taskset and cgroup pinning are honoured).
unsigned configured_thread_count() noexcept;

// Runs fn(part, parts) for every part in [0, parts) and returns when all finished. Parts are claimed, not
// assigned: the caller works too, and a worker the OS has descheduled never holds up a part it has not taken.
// fn must not throw. One run at a time: a pool belongs to one session, which one thread uses at a time.
class WorkerPool {
public:
    explicit WorkerPool(unsigned threads);
    ~WorkerPool();
    WorkerPool(const WorkerPool&) = delete;
    WorkerPool& operator=(const WorkerPool&) = delete;

    // Threads that may work on a run, the caller included.
    unsigned size() const noexcept { return static_cast<unsigned>(m_threads.size()) + 1; }

    template <class Fn>
    void run(unsigned parts, Fn&& fn) noexcept {
        if (parts <= 1 || m_threads.empty()) {
            for (unsigned part = 0; part < parts; ++part) fn(part, parts);
            return;
        }
        using F = std::remove_reference_t<Fn>;
        dispatch(
            parts, [](void* ctx, unsigned part, unsigned count) { (*static_cast<F*>(ctx))(part, count); },
            const_cast<void*>(static_cast<const void*>(&fn)));
    }

private:
    using Call = void (*)(void*, unsigned, unsigned);
    void dispatch(unsigned parts, Call call, void* context) noexcept;
    // Claim and run parts of generation `generation` until none is left.
    void work_on(std::uint32_t generation) noexcept;
    void worker() noexcept;
    void publish(std::uint32_t generation) noexcept;

    std::vector<std::thread> m_threads;
    Call m_call = nullptr; // written before a generation is published; read only by holders of a part
    void* m_context = nullptr;
    std::atomic<unsigned> m_parts{0};
    std::uint32_t m_generation = 0; // owned by the dispatching thread
    // (generation << 32) | next unclaimed part: one word, so a claim can never leak into a later run.
    alignas(64) std::atomic<std::uint64_t> m_work{0};
    alignas(64) std::atomic<unsigned> m_done{0};
    std::atomic<unsigned> m_sleepers{0};
    std::atomic<bool> m_stop{false};
    std::mutex m_mutex;
    std::condition_variable m_wake;
};

} // namespace brain::cpu
