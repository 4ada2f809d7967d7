// The output-file rules (safe_file.hpp). POSIX calls rather than std::filesystem: the checks need lstat's view
// of the target (a symbolic link is not followed), device and inode numbers, mkstemp's O_EXCL and
// renameat2(RENAME_NOREPLACE), and every failure must carry errno in the user's terms.
#include "input_file.hpp"

#include <atomic>
#include <iterator>
#include <brain/error.hpp>
#include <brain/safe_file.hpp>
#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fcntl.h>
#include <fstream>
#include <string>
#include <sys/stat.h>
#include <unistd.h>

namespace brain {

namespace {

struct Target {
    bool exists = false;
    struct stat st {};
};

// Built with concat: "'" + string + "'" trips GCC 12's false -Wrestrict (GCC bug 105329).
std::string quoted(const std::filesystem::path& path) {
    return detail::concat('\'', path.string(), '\'');
}

std::filesystem::path directory_of(const std::filesystem::path& target) {
    const auto dir = target.parent_path();
    return dir.empty() ? std::filesystem::path(".") : dir;
}

[[noreturn]] void refuse(const std::filesystem::path& target, const std::string& why) {
    BRAIN_THROW(ErrorCode::IoError, "cannot write ", quoted(target), ": ", why);
}

// The target and its directory under the rules; what is at the target now.
Target inspect(const std::filesystem::path& target, const std::vector<std::filesystem::path>& inputs) {
    BRAIN_CHECK_ARG(!target.empty(), "an output file name is required, found an empty one");
    if (!target.has_filename() || target.filename() == "." || target.filename() == "..")
        refuse(target, "it names a directory, not a file; add a file name");
    Target t;
    if (::lstat(target.c_str(), &t.st) == 0) {
        t.exists = true;
        if (S_ISLNK(t.st.st_mode))
            refuse(target, "it is a symbolic link, and brain does not write through symbolic links (the file it "
                           "points to could be anything, a device or one of the inputs; both are left unchanged); "
                           "name the file itself, or remove the link first");
        if (!S_ISREG(t.st.st_mode))
            refuse(target,
                   "it is " + detail::describe_file_type(t.st.st_mode) +
                       ", and brain replaces only regular files (it is left unchanged); choose a file name");
        for (const auto& input : inputs) {
            struct stat in {};
            if (!input.empty() && ::stat(input.c_str(), &in) == 0 && in.st_dev == t.st.st_dev &&
                in.st_ino == t.st.st_ino)
                refuse(target, "it is the same file as the input " + quoted(input) +
                                   ", which writing it would destroy (it is left unchanged); choose another output "
                                   "file");
        }
        if (::faccessat(AT_FDCWD, target.c_str(), W_OK, AT_EACCESS) != 0)
            refuse(target, std::string("it is not writable (") + std::strerror(errno) +
                               "); change its permissions or choose another output file");
    } else if (errno != ENOENT) {
        const int err = errno;
        refuse(target, std::string(std::strerror(err)) +
                           (err == ENOTDIR ? " (a part of the path before the file name is not a directory)" : "") +
                           "; check the path");
    }
    const auto dir = directory_of(target);
    struct stat dir_st {};
    if (::stat(dir.c_str(), &dir_st) != 0) {
        const int err = errno;
        refuse(target, err == ENOENT ? "the directory " + quoted(dir) + " does not exist; create it first"
                                     : "the directory " + quoted(dir) + " cannot be used: " + std::strerror(err));
    }
    if (!S_ISDIR(dir_st.st_mode)) refuse(target, quoted(dir) + " is not a directory");
    if (::faccessat(AT_FDCWD, dir.c_str(), W_OK | X_OK, AT_EACCESS) != 0)
        refuse(target, "the directory " + quoted(dir) + " is not writable (" + std::strerror(errno) +
                           "); choose another directory");
    return t;
}

// The process's umask, read without changing it where the kernel reports it.
mode_t current_umask() {
    std::ifstream status("/proc/self/status");
    std::string key;
    while (status >> key) {
        if (key == "Umask:") {
            unsigned mask = 0;
            if (status >> std::oct >> mask) return static_cast<mode_t>(mask & 0777);
            break;
        }
        status.ignore(4096, '\n');
    }
    const mode_t mask = ::umask(022); // older kernels: the classic read-and-restore
    ::umask(mask);
    return mask;
}

// A process killed by SIGXFSZ leaves a half-written temporary and no message; ignored, the write fails with EFBIG.
// Checked on every OutputFile (one system call), so a program that restores the default is covered again.
void ignore_file_size_signal() {
    struct sigaction current {};
    if (::sigaction(SIGXFSZ, nullptr, &current) != 0) return;
    if ((current.sa_flags & SA_SIGINFO) || current.sa_handler != SIG_DFL) return; // the program chose a handler
    struct sigaction ignore {};
    ignore.sa_handler = SIG_IGN;
    sigemptyset(&ignore.sa_mask);
    ::sigaction(SIGXFSZ, &ignore, nullptr);
}

// Temporaries a signal handler may have to remove, in fixed slots: registering allocates nothing, and the handler
// reads plain characters behind an atomic state (0 free, 1 being filled or removed, 2 registered, 3 removed).
struct PendingSlot {
    std::atomic<int> state{0};
    char path[4096];
};
PendingSlot g_pending[32];

int register_pending(const std::string& path) noexcept {
    if (path.size() >= sizeof g_pending[0].path) return -1;
    for (int i = 0; i < static_cast<int>(std::size(g_pending)); ++i) {
        int expected = 0;
        if (!g_pending[i].state.compare_exchange_strong(expected, 1)) continue;
        std::memcpy(g_pending[i].path, path.c_str(), path.size() + 1);
        g_pending[i].state.store(2);
        return i;
    }
    return -1; // more than 32 files at once: those beyond are not removed on a signal
}

void unregister_pending(int slot) noexcept {
    if (slot >= 0) g_pending[slot].state.store(0);
}

// The group open on this thread, if any.
thread_local OutputGroup* t_group = nullptr;

// Whether two paths name one file: the same path once symbolic links and ".." are resolved, or, where both exist,
// the same device and inode (hard links).
bool same_file(const std::filesystem::path& a, const std::filesystem::path& b) {
    std::error_code ea, eb;
    const auto ca = std::filesystem::weakly_canonical(std::filesystem::absolute(a, ea), ea);
    const auto cb = std::filesystem::weakly_canonical(std::filesystem::absolute(b, eb), eb);
    if (!ea && !eb && ca == cb) return true;
    struct stat sa {
    }, sb{};
    return ::stat(a.c_str(), &sa) == 0 && ::stat(b.c_str(), &sb) == 0 && sa.st_dev == sb.st_dev &&
           sa.st_ino == sb.st_ino;
}

void sync_directory_of(const std::filesystem::path& target) noexcept {
    // Makes a rename durable; a directory that cannot be synced does not undo a completed write.
    const int dir = ::open(directory_of(target).c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (dir >= 0) {
        (void)::fsync(dir);
        ::close(dir);
    }
}

std::string write_failure(int err, std::uint64_t written) {
    switch (err) {
    case EFBIG:
        return "the file-size limit (ulimit -f) stopped it after " + std::to_string(written) +
               " bytes; raise the limit";
    case ENOSPC:
        return "the file system is full (" + std::string(std::strerror(err)) + "); free space";
    case EDQUOT:
        return "the disk quota is exhausted (" + std::string(std::strerror(err)) + ")";
    default:
        return std::strerror(err);
    }
}

// Hands `bytes` to write_some (one write or pwrite of what is left) until all are written, resuming after a
// signal; returns 0, or the errno of the call that failed.
template <class WriteSome>
int write_fully(std::string_view bytes, WriteSome write_some) {
    while (!bytes.empty()) {
        const ssize_t n = write_some(bytes);
        if (n < 0) {
            const int err = errno;
            if (err == EINTR) continue;
            return err;
        }
        bytes.remove_prefix(static_cast<std::size_t>(n));
    }
    return 0;
}

} // namespace

void check_output_path(const std::filesystem::path& target, const std::vector<std::filesystem::path>& inputs) {
    inspect(target, inputs);
}

void check_output_paths(const std::vector<std::filesystem::path>& targets,
                        const std::vector<std::filesystem::path>& inputs) {
    for (std::size_t i = 0; i < targets.size(); ++i) {
        inspect(targets[i], inputs);
        for (std::size_t j = 0; j < i; ++j)
            if (same_file(targets[j], targets[i]))
                BRAIN_THROW(ErrorCode::IoError, "cannot write ", quoted(targets[i]), ": it is the same file as ",
                            quoted(targets[j]), ", which this command also writes; give each output its own path");
    }
}

OutputFile::OutputFile(std::filesystem::path target, std::vector<std::filesystem::path> inputs)
    : m_target(std::move(target)), m_inputs(std::move(inputs)) {
    inspect(m_target, m_inputs);
    ignore_file_size_signal();
    // ".<name>.tmp-XXXXXX": hidden, beside the target (rename stays within one file system), the name shortened
    // so that the whole stays within NAME_MAX.
    std::string base = m_target.filename().string();
    if (base.size() > 200) base.resize(200);
    std::string pattern = (directory_of(m_target) / ("." + base + ".tmp-XXXXXX")).string();
    m_fd = ::mkostemp(pattern.data(), O_CLOEXEC);
    if (m_fd < 0)
        BRAIN_THROW(ErrorCode::IoError, "cannot write ", quoted(m_target), ": creating a temporary file in ",
                    quoted(directory_of(m_target)), " failed: ", std::strerror(errno),
                    "; check that the directory is writable and has space");
    m_temp = pattern;
    m_slot = register_pending(pattern);
}

OutputFile::~OutputFile() {
    abandon();
}

void OutputFile::abandon() noexcept {
    if (m_fd >= 0) ::close(m_fd);
    m_fd = -1;
    if (!m_done && !m_temp.empty()) ::unlink(m_temp.c_str());
    m_temp.clear();
    unregister_pending(m_slot);
    m_slot = -1;
}

void OutputFile::fail_write(int err) {
    abandon();
    BRAIN_THROW(ErrorCode::IoError, "cannot write ", quoted(m_target), ": ", write_failure(err, m_written),
                "; nothing was written and the previous file, if any, is unchanged");
}

void OutputFile::write(std::string_view bytes) {
    BRAIN_CHECK(m_fd >= 0 && !m_done, ErrorCode::InvalidState, "OutputFile for ", quoted(m_target),
                " is closed (committed or failed); open a new one");
    const int err = write_fully(bytes, [this](std::string_view rest) {
        const ssize_t n = ::write(m_fd, rest.data(), rest.size());
        if (n > 0) m_written += static_cast<std::uint64_t>(n);
        return n;
    });
    if (err != 0) fail_write(err);
}

void OutputFile::write_at(std::uint64_t offset, std::string_view bytes) {
    BRAIN_CHECK(m_fd >= 0 && !m_done, ErrorCode::InvalidState, "OutputFile for ", quoted(m_target),
                " is closed (committed or failed); open a new one");
    BRAIN_CHECK_ARG(offset <= m_written && bytes.size() <= m_written - offset, "OutputFile::write_at: bytes [",
                    offset, ", ", offset + bytes.size(), ") are not within the ", m_written, " bytes written");
    const int err = write_fully(bytes, [this, &offset](std::string_view rest) {
        const ssize_t n = ::pwrite(m_fd, rest.data(), rest.size(), static_cast<off_t>(offset));
        if (n > 0) offset += static_cast<std::uint64_t>(n);
        return n;
    });
    if (err != 0) fail_write(err);
}

void OutputFile::commit() {
    BRAIN_CHECK(m_fd >= 0 && !m_done, ErrorCode::InvalidState, "OutputFile for ", quoted(m_target),
                " is closed (committed or failed); open a new one");
    const auto fail = [this](const char* step, int err) {
        abandon();
        BRAIN_THROW(ErrorCode::IoError, "cannot write ", quoted(m_target), ": ", step,
                    " failed: ", write_failure(err, m_written), "; the previous file, if any, is unchanged");
    };
    // The target may have changed while the content was produced (a long training run): check it again.
    Target now;
    try {
        now = inspect(m_target, m_inputs);
    } catch (...) {
        abandon();
        throw;
    }
    const mode_t mode = now.exists ? (now.st.st_mode & 0777) : (0666 & ~current_umask());
    if (::fchmod(m_fd, mode) != 0) fail("setting the file's permissions", errno);
    if (::fsync(m_fd) != 0) fail("fsync", errno);
    const int fd = m_fd;
    m_fd = -1;
    if (::close(fd) != 0) fail("closing the file", errno);
    if (t_group) {
        try {
            t_group->stage({m_temp, m_target, m_inputs, m_slot});
        } catch (...) {
            abandon();
            throw;
        }
        m_done = true; // the group owns the temporary now
        m_temp.clear();
        m_slot = -1;
        return;
    }
    int renamed = -1;
    if (!now.exists) {
        // Nothing may appear at the target between the check and the rename; if something did, check it.
        renamed = ::renameat2(AT_FDCWD, m_temp.c_str(), AT_FDCWD, m_target.c_str(), RENAME_NOREPLACE);
        if (renamed != 0 && errno == EEXIST) {
            try {
                inspect(m_target, m_inputs);
            } catch (...) {
                abandon();
                throw;
            }
        }
    }
    if (renamed != 0 && ::rename(m_temp.c_str(), m_target.c_str()) != 0) fail("renaming it into place", errno);
    m_done = true;
    m_temp.clear();
    unregister_pending(m_slot);
    m_slot = -1;
    sync_directory_of(m_target);
}

OutputGroup::OutputGroup() {
    BRAIN_CHECK(t_group == nullptr, ErrorCode::InvalidState,
                "an OutputGroup is already open on this thread; commit or destroy it before opening another");
    t_group = this;
}

OutputGroup::~OutputGroup() {
    discard();
}

void OutputGroup::discard() noexcept {
    for (const Staged& s : m_staged) {
        ::unlink(s.temp.c_str());
        unregister_pending(s.slot);
    }
    m_staged.clear();
    if (m_open && t_group == this) t_group = nullptr;
    m_open = false;
}

void OutputGroup::stage(Staged staged) {
    for (const Staged& s : m_staged)
        if (same_file(s.target, staged.target)) {
            ::unlink(staged.temp.c_str());
            unregister_pending(staged.slot);
            BRAIN_THROW(ErrorCode::IoError, "cannot write ", quoted(staged.target), ": it is the same file as ",
                        quoted(s.target), ", which this command also writes; give each output its own path");
        }
    m_staged.push_back(std::move(staged));
}

void OutputGroup::commit() {
    BRAIN_CHECK(m_open, ErrorCode::InvalidState, "this OutputGroup is closed (committed or discarded)");
    t_group = nullptr;
    m_open = false;
    // Every target is checked before any is replaced; a failure leaves all of them as they were.
    try {
        for (const Staged& s : m_staged) inspect(s.target, s.inputs);
    } catch (...) {
        discard();
        throw;
    }
    for (std::size_t i = 0; i < m_staged.size(); ++i) {
        const Staged& s = m_staged[i];
        if (::rename(s.temp.c_str(), s.target.c_str()) != 0) {
            const int err = errno;
            std::string done;
            for (std::size_t j = 0; j < i; ++j) done += (j ? ", " : "") + quoted(m_staged[j].target);
            const std::string target = quoted(s.target);
            m_staged.erase(m_staged.begin(), m_staged.begin() + static_cast<std::ptrdiff_t>(i));
            discard();
            BRAIN_THROW(ErrorCode::IoError, "cannot write ", target,
                        ": renaming it into place failed: ", std::strerror(err),
                        done.empty() ? "; no file was replaced" : "; already replaced: " + done);
        }
        unregister_pending(s.slot);
        sync_directory_of(s.target);
    }
    m_staged.clear();
}

void remove_temporary_output_files() noexcept {
    for (auto& slot : g_pending) {
        int expected = 2;
        if (!slot.state.compare_exchange_strong(expected, 1)) continue;
        ::unlink(slot.path);
        slot.state.store(3); // still owned by its OutputFile, which frees the slot
    }
}

void write_file_safely(const std::filesystem::path& target, std::string_view content,
                       const std::vector<std::filesystem::path>& inputs) {
    OutputFile file(target, inputs);
    file.write(content);
    file.commit();
}

} // namespace brain
