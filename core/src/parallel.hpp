// Internal: the threads a data load may use, and a parallel loop over numbered jobs that the calling thread joins.
#pragma once

#include <algorithm>
#include <atomic>
#include <cstddef>
#include <exception>
#include <sched.h>
#include <thread>
#include <vector>

namespace brain::detail {

// The CPUs this process may run on (its affinity mask, so `taskset -c 0,1` means 2), at least 1, at most 64.
inline unsigned load_threads() noexcept {
    cpu_set_t set;
    CPU_ZERO(&set);
    int count = 0;
    if (::sched_getaffinity(0, sizeof set, &set) == 0) count = CPU_COUNT(&set);
    if (count <= 0) count = static_cast<int>(std::thread::hardware_concurrency());
    return static_cast<unsigned>(std::clamp(count, 1, 64));
}

// Runs job(i) for i in [0, count) on up to `threads` threads, the caller's included, jobs taken in order. `idle`
// runs on the calling thread between its jobs (progress reports). The first exception a job throws is rethrown
// once every thread has stopped; the jobs not yet started are then skipped.
template <class Job, class Idle>
void parallel_jobs(std::size_t count, unsigned threads, Job&& job, Idle&& idle) {
    std::atomic<std::size_t> next{0};
    std::atomic<bool> failed{false};
    std::exception_ptr error;
    std::atomic_flag error_taken = ATOMIC_FLAG_INIT;
    const auto work = [&] {
        while (!failed.load(std::memory_order_relaxed)) {
            const std::size_t i = next.fetch_add(1, std::memory_order_relaxed);
            if (i >= count) return;
            try {
                job(i);
            } catch (...) {
                if (!error_taken.test_and_set()) error = std::current_exception();
                failed.store(true);
                return;
            }
        }
    };
    const std::size_t helpers = std::min<std::size_t>(threads, count) > 0 ? std::min<std::size_t>(threads, count) - 1 : 0;
    std::vector<std::thread> pool;
    pool.reserve(helpers);
    try {
        for (std::size_t t = 0; t < helpers; ++t) pool.emplace_back(work);
    } catch (...) {
        // No thread to spare: the caller does the work alone.
    }
    while (!failed.load(std::memory_order_relaxed)) {
        const std::size_t i = next.fetch_add(1, std::memory_order_relaxed);
        if (i >= count) break;
        try {
            job(i);
        } catch (...) {
            if (!error_taken.test_and_set()) error = std::current_exception();
            failed.store(true);
            break;
        }
        idle();
    }
    for (auto& thread : pool) thread.join();
    if (error) std::rethrow_exception(error);
}

} // namespace brain::detail
