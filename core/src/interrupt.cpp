#include "interrupt_check.hpp"

#include <atomic>

namespace brain {

namespace {
std::atomic<InterruptCheck> g_check{nullptr};
} // namespace

InterruptCheck set_interrupt_check(InterruptCheck check) noexcept {
    return g_check.exchange(check);
}

namespace detail {

bool interrupt_requested() noexcept {
    const InterruptCheck check = g_check.load();
    return check != nullptr && check();
}

} // namespace detail

} // namespace brain
