// The striped table of object locks (object_lock.hpp).
#include "object_lock.hpp"

#include <array>
#include <cstddef>
#include <cstdint>
#include <functional>

namespace brain::python {

std::shared_mutex& object_mutex(const void* object) noexcept {
    // A power of two well above the number of threads a program runs, so unrelated objects rarely share a lock.
    static std::array<std::shared_mutex, 256> table;
    // Objects are at least 16-byte aligned: the low bits carry no information.
    const auto address = reinterpret_cast<std::uintptr_t>(object);
    return table[std::hash<std::uintptr_t>{}(address >> 4) % table.size()];
}

} // namespace brain::python
