#include "csv_input.hpp"

#include "host_memory.hpp"

#include <algorithm>
#include <new>
#include <sys/mman.h>
#include <unistd.h>

namespace brain::detail {

CsvInput::CsvInput(const std::filesystem::path& path, const InputLimits& limits, std::string_view kind)
    : m_file(path, kind, limits.max_file_bytes, ErrorCode::InvalidData) {
    if (m_file.sized()) {
        m_size = m_file.size();
        // Read-only and private: nothing is ever written through it. Where the address space is too small (a
        // tight ulimit -v) the file is read as a pipe is.
        void* mapping = ::mmap(nullptr, m_size, PROT_READ, MAP_PRIVATE | MAP_NORESERVE, m_file.descriptor(), 0);
        if (mapping != MAP_FAILED) {
            m_mapping = mapping;
            ::madvise(m_mapping, m_size, MADV_SEQUENTIAL);
            m_data = static_cast<const char*>(m_mapping);
            m_end = m_size;
            m_at_end = true;
            return;
        }
    }
    m_data = m_buffer.data();
}

CsvInput::~CsvInput() {
    if (m_mapping) ::munmap(m_mapping, m_size);
}

void CsvInput::read_more(std::uint64_t keep, std::size_t want) {
    if (m_mapping || m_at_end) return;
    // Drop what is no longer needed, then grow the buffer to hold `want` bytes past what is kept.
    const std::size_t drop = static_cast<std::size_t>(std::min<std::uint64_t>(keep - std::min(keep, m_offset),
                                                                                m_end - m_begin));
    try {
        if (drop > 0) {
            m_buffer.erase(0, m_begin + drop);
            m_offset += drop;
            m_end -= m_begin + drop;
            m_begin = 0;
        }
        const std::size_t target = m_end + want;
        while (m_end < target) {
            if (m_buffer.size() < target) m_buffer.resize(std::max(target, m_buffer.size() + (m_buffer.size() >> 1)));
            const std::size_t n = m_file.read_some(m_buffer.data() + m_end, m_buffer.size() - m_end);
            if (n == 0) {
                m_at_end = true;
                break;
            }
            m_end += n;
        }
    } catch (const std::bad_alloc&) {
        BRAIN_THROW(ErrorCode::AllocationFailed, "not enough host memory to buffer ", format_bytes(m_end + want),
                    " of the input; free memory or raise the process's memory limit");
    }
    m_data = m_buffer.data();
}

void CsvInput::read_all() {
    while (!m_at_end) read_more(m_offset, std::max<std::size_t>(m_end - m_begin, std::size_t{1} << 20));
}

void CsvInput::release(std::uint64_t begin, std::uint64_t end) const noexcept {
    if (!m_mapping || end <= begin) return;
    static const std::uint64_t page = static_cast<std::uint64_t>(::sysconf(_SC_PAGESIZE));
    const std::uint64_t first = (begin + page - 1) / page * page;
    const std::uint64_t last = std::min(end, m_size) / page * page;
    if (last > first)
        ::madvise(static_cast<char*>(m_mapping) + first, static_cast<std::size_t>(last - first), MADV_DONTNEED);
}

} // namespace brain::detail
