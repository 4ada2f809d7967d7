#include "input_file.hpp"

#include "host_memory.hpp"
#include "interrupt_check.hpp"

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fcntl.h>
#include <new>
#include <poll.h>
#include <sys/stat.h>
#include <unistd.h>
#include <utility>
#include <vector>

namespace brain::detail {

namespace {

// Closes a descriptor on scope exit.
struct Descriptor {
    int fd = -1;
    ~Descriptor() {
        if (fd >= 0) ::close(fd);
    }
};

// `size` completes "the CSV file 'x' ...": "is 5.0 GiB, more than" or "goes on past"; `limit` is the limit's
// text.
[[noreturn]] void too_large_error(const std::filesystem::path& path, std::string_view kind,
                                  const std::string& limit, ErrorCode code, const std::string& size) {
    BRAIN_THROW(code, "the ", kind, " '", path.string(), "' ", size, " the limit of ", limit,
                " for input files; if the file is what you meant, raise the limit (the brain command's "
                "--max-input-mib, InputLimits::max_file_bytes in the library)");
}

// A size and a limit in words that differ: in exact bytes where the rounded forms are the same ("1.0 MiB, more
// than the limit of 1.0 MiB" says nothing).
std::pair<std::string, std::string> size_and_limit(std::uint64_t size, std::uint64_t limit) {
    std::string a = format_bytes(size), b = format_bytes(limit);
    if (a == b) {
        a = std::to_string(size) + " bytes";
        b = std::to_string(limit) + " bytes";
    }
    return {a, b};
}

// "a " or "an " before a kind of file ("an ONNX file", "a CSV file").
const char* article(std::string_view kind) {
    return !kind.empty() && std::string_view("AEIOaeio").find(kind.front()) != std::string_view::npos ? "an "
                                                                                                      : "a ";
}

} // namespace

std::string describe_file_type(unsigned mode) {
    switch (mode & S_IFMT) {
    case S_IFREG:
        return "a regular file";
    case S_IFDIR:
        return "a directory";
    case S_IFCHR:
        return "a character device";
    case S_IFBLK:
        return "a block device";
    case S_IFIFO:
        return "a FIFO (named pipe)";
    case S_IFSOCK:
        return "a socket";
    case S_IFLNK:
        return "a symbolic link";
    default:
        return "not a regular file";
    }
}

InputFile::InputFile(const std::filesystem::path& path, std::string_view kind, std::uint64_t max_bytes,
                     ErrorCode limit_code, Fifo fifo, FormatLimit format)
    : m_path(path), m_kind(kind), m_max_bytes(std::min(max_bytes, format.bytes)), m_limit_code(limit_code),
      m_format(std::move(format)) {
    const std::string name = path.string();
    BRAIN_CHECK_ARG(!name.empty(), "no ", kind, " given (an empty path); name the file to read");
    // O_NONBLOCK: opening a FIFO must not hang before its type is known; O_NOCTTY: a terminal never becomes ours.
    Descriptor file{::open(name.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY)};
    if (file.fd < 0) {
        const int err = errno;
        if (err == ENXIO) // a socket (or a FIFO's peer missing) cannot be opened for reading
            BRAIN_THROW(ErrorCode::IoError, "cannot read the ", kind, " '", name,
                        "': it is a socket, not a file; give the path of ", article(kind), kind);
        BRAIN_THROW(ErrorCode::IoError, "cannot open the ", kind, " '", name, "': ", std::strerror(err),
                    err == ENOENT ? "; check the path" : "; check the path and its permissions");
    }
    struct stat st {};
    if (::fstat(file.fd, &st) != 0)
        BRAIN_THROW(ErrorCode::IoError, "cannot read the ", kind, " '", name, "': ", std::strerror(errno));
    m_regular = S_ISREG(st.st_mode);
    if (!m_regular && !S_ISFIFO(st.st_mode))
        BRAIN_THROW(ErrorCode::IoError, "cannot read the ", kind, " '", name, "': it is ",
                    describe_file_type(st.st_mode), ", not a file; give the path of ", article(kind), kind);
    m_size = m_regular ? static_cast<std::uint64_t>(st.st_size) : 0;
    if (m_regular && m_size > m_max_bytes) too_large_with(m_size);
    // A pipe is read as any program reads one: waiting for its writer.
    if (!m_regular) ::fcntl(file.fd, F_SETFL, ::fcntl(file.fd, F_GETFL) & ~O_NONBLOCK);
    // A FIFO opened with O_NONBLOCK before its writer reads as empty (clearing the flag does not change that), so
    // wait as `cat fifo` would: poll returns once a writer has written or come and gone. An anonymous pipe
    // (/dev/stdin, <(command)) returns at once when its writer has already finished.
    if (!m_regular && fifo == Fifo::Wait) {
        pollfd ready{file.fd, POLLIN, 0};
        while (::poll(&ready, 1, -1) < 0) {
            const int err = errno;
            if (err == EINTR && interrupt_requested())
                BRAIN_THROW(ErrorCode::IoError, "reading the ", kind, " '", name,
                            "' (a pipe) was interrupted while it waited for the pipe's writer");
            if (err != EINTR)
                BRAIN_THROW(ErrorCode::IoError, "cannot read the ", kind, " '", name,
                            "' (a pipe): waiting for its writer failed: ", std::strerror(err));
        }
    }
    m_fd = std::exchange(file.fd, -1);
}

InputFile::~InputFile() {
    if (m_fd >= 0) ::close(m_fd);
}

InputFile::InputFile(InputFile&& other) noexcept
    : m_path(std::move(other.m_path)), m_kind(std::move(other.m_kind)), m_max_bytes(other.m_max_bytes),
      m_limit_code(other.m_limit_code), m_format(std::move(other.m_format)), m_fd(std::exchange(other.m_fd, -1)),
      m_regular(other.m_regular), m_size(other.m_size), m_read(other.m_read) {}

void InputFile::too_large() const {
    too_large_with(std::nullopt);
}

void InputFile::too_large_with(std::optional<std::uint64_t> size) const {
    auto [size_text, limit_text] = size_and_limit(size.value_or(m_max_bytes), m_max_bytes);
    if (!size) limit_text = format_bytes(m_max_bytes); // nothing to tell apart from
    const std::string where = size ? "is " + size_text + ", more than" : std::string("goes on past");
    if (m_format.bytes == m_max_bytes)
        BRAIN_THROW(m_limit_code, "the ", m_kind, " '", m_path.string(), "' ", where, " ", limit_text, ": ",
                    m_format.why);
    too_large_error(m_path, m_kind, limit_text, m_limit_code, where);
}

std::size_t InputFile::read_some(char* buffer, std::size_t capacity) {
    while (true) {
        const ssize_t n = ::read(m_fd, buffer, capacity);
        if (n < 0) {
            const int err = errno;
            if (err == EINTR && !interrupt_requested()) continue;
            if (err == EINTR)
                BRAIN_THROW(ErrorCode::IoError, "reading the ", m_kind, " '", m_path.string(),
                            "' was interrupted after ", m_read, " bytes");
            BRAIN_THROW(ErrorCode::IoError, "cannot read the ", m_kind, " '", m_path.string(), "': ",
                        std::strerror(err));
        }
        m_read += static_cast<std::uint64_t>(n);
        if (m_read > m_max_bytes) too_large();
        return static_cast<std::size_t>(n);
    }
}

std::string read_input_file(const std::filesystem::path& path, std::string_view kind, std::uint64_t max_bytes,
                            ErrorCode limit_code, const FormatLimit& format) {
    InputFile file(path, kind, max_bytes, limit_code, InputFile::Fifo::Wait, format);
    // Read in pieces joined once at the end, each freed as it is copied: memory peaks at the bytes read plus one
    // piece. One growing buffer would peak at twice the limit (its doubling, then the copy into the larger one).
    // A regular file is one piece of its size and the byte that finds its end (files in /proc say 0 and are read
    // as a pipe is); a pipe's pieces grow from 64 KiB to 64 MiB.
    constexpr std::size_t first_piece = std::size_t{64} << 10, last_piece = std::size_t{64} << 20;
    std::vector<std::string> pieces;
    std::size_t filled = 0; // of pieces.back()
    std::uint64_t used = 0;
    try {
        while (true) {
            if (pieces.empty() || filled == pieces.back().size()) {
                const std::size_t size =
                    pieces.empty() ? (file.sized() ? static_cast<std::size_t>(file.size()) + 1 : first_piece)
                                   : std::min(pieces.back().size() * 2, last_piece);
                pieces.emplace_back(size, '\0');
                filled = 0;
            }
            const std::size_t n = file.read_some(pieces.back().data() + filled, pieces.back().size() - filled);
            if (n == 0) break;
            filled += n;
            used += n;
        }
        if (pieces.size() == 1) {
            pieces.front().resize(filled);
            return std::move(pieces.front());
        }
        std::string text;
        text.reserve(static_cast<std::size_t>(used));
        for (std::size_t k = 0; k < pieces.size(); ++k) {
            text.append(pieces[k].data(), k + 1 == pieces.size() ? filled : pieces[k].size());
            std::string().swap(pieces[k]);
        }
        return text;
    } catch (const std::bad_alloc&) {
        BRAIN_THROW(ErrorCode::AllocationFailed, "not enough host memory to read the ", kind, " '", path.string(),
                    "' (", format_bytes(used),
                    " read so far); free memory, raise the process's memory limit or use a smaller file");
    }
}

} // namespace brain::detail
