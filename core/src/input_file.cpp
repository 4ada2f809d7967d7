#include "input_file.hpp"

#include "host_memory.hpp"

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fcntl.h>
#include <new>
#include <sys/stat.h>
#include <unistd.h>

namespace brain::detail {

namespace {

// Closes a descriptor on scope exit.
struct Descriptor {
    int fd = -1;
    ~Descriptor() {
        if (fd >= 0) ::close(fd);
    }
};

// `size` completes "the CSV file 'x' ...": "is 5.0 GiB, more than" or "goes on past".
[[noreturn]] void too_large(const std::filesystem::path& path, std::string_view kind, std::uint64_t max_bytes,
                            ErrorCode code, const std::string& size) {
    BRAIN_THROW(code, "the ", kind, " '", path.string(), "' ", size, " the limit of ", format_bytes(max_bytes),
                " for input files; if the file is what you meant, raise the limit (the brain command's "
                "--max-input-mib, InputLimits::max_file_bytes in the library)");
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

std::string read_input_file(const std::filesystem::path& path, std::string_view kind, std::uint64_t max_bytes,
                            ErrorCode limit_code) {
    const std::string name = path.string();
    BRAIN_CHECK_ARG(!name.empty(), "no ", kind, " given (an empty path); name the file to read");
    // O_NONBLOCK: opening a FIFO must not hang before its type is known; O_NOCTTY: a terminal never becomes ours.
    Descriptor file{::open(name.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY)};
    if (file.fd < 0) {
        const int err = errno;
        if (err == ENXIO) // a socket (or a FIFO's peer missing) cannot be opened for reading
            BRAIN_THROW(ErrorCode::IoError, "cannot read the ", kind, " '", name,
                        "': it is a socket, not a file; give the path of a ", kind);
        BRAIN_THROW(ErrorCode::IoError, "cannot open the ", kind, " '", name, "': ", std::strerror(err),
                    err == ENOENT ? "; check the path" : "; check the path and its permissions");
    }
    struct stat st {};
    if (::fstat(file.fd, &st) != 0)
        BRAIN_THROW(ErrorCode::IoError, "cannot read the ", kind, " '", name, "': ", std::strerror(errno));
    const bool regular = S_ISREG(st.st_mode);
    if (!regular && !S_ISFIFO(st.st_mode))
        BRAIN_THROW(ErrorCode::IoError, "cannot read the ", kind, " '", name, "': it is ",
                    describe_file_type(st.st_mode), ", not a file; give the path of a ", kind);
    if (regular && static_cast<std::uint64_t>(st.st_size) > max_bytes)
        too_large(path, kind, max_bytes, limit_code,
                  "is " + format_bytes(static_cast<std::uint64_t>(st.st_size)) + ", more than");
    // A pipe is read as any program reads one: waiting for its writer.
    if (!regular) ::fcntl(file.fd, F_SETFL, ::fcntl(file.fd, F_GETFL) & ~O_NONBLOCK);

    std::string text;
    std::size_t used = 0;
    try {
        constexpr std::size_t chunk = 64 * 1024;
        // Room for the whole of a regular file and the read that finds its end (files in /proc say 0 and are not).
        if (regular) text.reserve(static_cast<std::size_t>(st.st_size) + chunk);
        while (true) {
            if (text.size() - used < chunk)
                text.resize(text.capacity() - used >= chunk ? text.capacity()
                                                            : std::max(text.size() * 2, used + chunk));
            const ssize_t n = ::read(file.fd, text.data() + used, text.size() - used);
            if (n < 0) {
                const int err = errno;
                if (err == EINTR) continue;
                BRAIN_THROW(ErrorCode::IoError, "cannot read the ", kind, " '", name, "': ", std::strerror(err));
            }
            if (n == 0) break;
            used += static_cast<std::size_t>(n);
            if (used > max_bytes) too_large(path, kind, max_bytes, limit_code, "goes on past");
        }
    } catch (const std::bad_alloc&) {
        BRAIN_THROW(ErrorCode::AllocationFailed, "not enough host memory to read the ", kind, " '", name, "' (",
                    format_bytes(used),
                    " read so far); free memory, raise the process's memory limit or use a "
                    "smaller file");
    }
    text.resize(used);
    return text;
}

} // namespace brain::detail
