// Page-locking the caller's host memory (ABI 1.3 host_memory_pin / host_memory_unpin), and asking whether a range
// is page-locked, so that a predictor copies pinned rows to the device directly.
#pragma once

#include <cstddef>
#include <cstdint>

namespace brain::cuda {

// Page-lock [memory, memory + bytes) for every device (counted: each pin needs one unpin). Memory that something
// else already page-locked is accepted as it is and left to its owner.
void pin_host_memory(void* memory, std::uint64_t bytes);
// Undo one pin_host_memory(memory); an address that was never pinned here is ignored.
void unpin_host_memory(void* memory) noexcept;
// True when the whole of [memory, memory + bytes) is page-locked host memory the device can read directly.
bool is_page_locked(const void* memory, std::size_t bytes) noexcept;

} // namespace brain::cuda
