#include "worker_pool.hpp"

#include "onednn_library.hpp"

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <sched.h>

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#endif

namespace brain::cpu {
namespace {

inline void cpu_relax() noexcept {
#if defined(__x86_64__) || defined(__i386__)
    _mm_pause();
#else
    std::this_thread::yield();
#endif
}

// Spin this long before sleeping: long enough to bridge the gap between two steps of one batch (microseconds),
// short enough that an idle session does not hold a core.
constexpr auto k_spin_time = std::chrono::microseconds(200);

unsigned positive_env(const char* name) noexcept {
    const char* text = std::getenv(name);
    if (!text || !*text) return 0;
    char* end = nullptr;
    const long value = std::strtol(text, &end, 10);
    return (*end == '\0' && value > 0 && value <= 4096) ? static_cast<unsigned>(value) : 0;
}

inline std::uint32_t generation_of(std::uint64_t work) noexcept {
    return static_cast<std::uint32_t>(work >> 32);
}

} // namespace

Range split_range(std::size_t total, unsigned index, unsigned count, std::size_t align) noexcept {
    std::size_t chunk = (total + count - 1) / count;
    if (align > 1) chunk = (chunk + align - 1) / align * align;
    Range r;
    r.begin = std::min(total, chunk * index);
    r.end = std::min(total, r.begin + chunk);
    return r;
}

unsigned configured_thread_count() noexcept {
    for (const char* name : {"BRAIN_CPU_THREADS", "OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS"})
        if (const unsigned n = positive_env(name)) return n;
    cpu_set_t set;
    CPU_ZERO(&set);
    if (sched_getaffinity(0, sizeof(set), &set) == 0) return static_cast<unsigned>(std::max(1, CPU_COUNT(&set)));
    return std::max(1u, std::thread::hardware_concurrency());
}

WorkerPool::WorkerPool(unsigned threads) {
    const unsigned workers = std::max(1u, threads) - 1;
    m_threads.reserve(workers);
    for (unsigned i = 0; i < workers; ++i) m_threads.emplace_back([this] { worker(); });
}

WorkerPool::~WorkerPool() {
    m_stop.store(true, std::memory_order_seq_cst);
    m_parts.store(0, std::memory_order_relaxed);
    publish(++m_generation);
    for (auto& t : m_threads) t.join();
}

void WorkerPool::publish(std::uint32_t generation) noexcept {
    m_work.store(static_cast<std::uint64_t>(generation) << 32, std::memory_order_seq_cst);
    if (m_sleepers.load(std::memory_order_seq_cst) != 0) {
        { std::lock_guard lock(m_mutex); }
        m_wake.notify_all();
    }
}

void WorkerPool::dispatch(unsigned parts, Call call, void* context) noexcept {
    m_call = call;
    m_context = context;
    m_parts.store(parts, std::memory_order_relaxed);
    m_done.store(0, std::memory_order_relaxed);
    const std::uint32_t generation = ++m_generation;
    publish(generation);
    work_on(generation);
    // A part still running is usually on another core; if it is not (more threads than free cores), yielding
    // lets it finish instead of spinning against it.
    for (unsigned spin = 0; m_done.load(std::memory_order_acquire) != parts; ++spin) {
        if (spin < 256)
            cpu_relax();
        else
            std::this_thread::yield();
    }
}

void WorkerPool::work_on(std::uint32_t generation) noexcept {
    std::uint64_t work = m_work.load(std::memory_order_acquire);
    while (generation_of(work) == generation) {
        if (!m_work.compare_exchange_weak(work, work + 1, std::memory_order_acq_rel, std::memory_order_acquire))
            continue;
        const unsigned part = static_cast<unsigned>(work & 0xffffffffu);
        const unsigned parts = m_parts.load(std::memory_order_relaxed);
        if (part >= parts) return;
        m_call(m_context, part, parts);
        m_done.fetch_add(1, std::memory_order_acq_rel);
        work = m_work.load(std::memory_order_acquire);
    }
}

void WorkerPool::worker() noexcept {
    defer_signals_on_this_thread();
    // The generation this thread has finished with. Not a load of m_work: a thread that starts late must still
    // take part in the runs published before it ran (it only finds them fully claimed, which is harmless).
    std::uint32_t seen = 0;
    for (;;) {
        std::uint32_t now = generation_of(m_work.load(std::memory_order_acquire));
        if (now == seen) {
            const auto deadline = std::chrono::steady_clock::now() + k_spin_time;
            for (unsigned spin = 1; now == seen; ++spin) {
                if (spin < 256)
                    cpu_relax();
                else
                    std::this_thread::yield();
                now = generation_of(m_work.load(std::memory_order_acquire));
                if (spin % 64 == 0 && std::chrono::steady_clock::now() > deadline) break;
            }
        }
        if (now == seen) {
            // Announce the sleep before the last look, so a publish either sees a sleeper (and notifies under
            // the mutex) or this thread sees the new generation.
            std::unique_lock lock(m_mutex);
            m_sleepers.fetch_add(1, std::memory_order_seq_cst);
            while ((now = generation_of(m_work.load(std::memory_order_seq_cst))) == seen) m_wake.wait(lock);
            m_sleepers.fetch_sub(1, std::memory_order_seq_cst);
        }
        seen = now;
        if (m_stop.load(std::memory_order_acquire)) return;
        work_on(now);
    }
}

} // namespace brain::cpu
