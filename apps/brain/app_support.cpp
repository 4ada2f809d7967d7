#include "app_support.hpp"

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fcntl.h>
#include <sstream>
#include <sys/stat.h>
#include <unistd.h>

namespace brain::app {

std::string error_name(const Error& error) {
    std::string name(to_string(error.code()));
    // FeatureDisabled and MetalFeatureDisabled share one value; users of the Metal backend know the
    // chapter's name, so print that one when the message is about Metal.
    if (error.code() == ErrorCode::FeatureDisabled && name.find("Metal") == std::string::npos) {
        const std::string what = error.what();
        if (what.find("Metal") != std::string::npos || what.find("metal") != std::string::npos)
            name = "MetalFeatureDisabled";
    }
    return name;
}

std::string error_text(const Error& error) {
    const std::string name = error_name(error);
    const std::string what = error.what();
    // Some plugin messages already open with the code's name; do not print it twice.
    if (what.rfind(name + ":", 0) == 0) return what;
    return str(name, ": ", what);
}

std::string error_line(const Error& error) {
    return str("error: ", error_text(error));
}

bool is_backend_unavailable(ErrorCode code) noexcept {
    switch (code) {
    case ErrorCode::PluginNotFound:
    case ErrorCode::PluginLoadFailed:
    case ErrorCode::FeatureDisabled:
    case ErrorCode::DriverUnavailable:
    case ErrorCode::DeviceNotFound:
        return true;
    default:
        return false;
    }
}

namespace {

// Closes a file descriptor on scope exit.
class FileDescriptor {
public:
    explicit FileDescriptor(int fd) : m_fd(fd) {}
    ~FileDescriptor() {
        if (m_fd >= 0) ::close(m_fd);
    }
    FileDescriptor(const FileDescriptor&) = delete;
    FileDescriptor& operator=(const FileDescriptor&) = delete;
    int get() const noexcept { return m_fd; }
    // Close now, reporting failure (a failed close can mean lost data on some file systems).
    bool close_checked() noexcept {
        const int fd = m_fd;
        m_fd = -1;
        return ::close(fd) == 0;
    }

private:
    int m_fd;
};

} // namespace

void write_file_atomically(const std::filesystem::path& path, const std::string& content) {
    const std::filesystem::path target = path.empty() ? path : std::filesystem::absolute(path);
    BRAIN_CHECK_ARG(!path.empty(), "an output file name is required, found an empty one");
    const std::filesystem::path dir = target.parent_path();
    BRAIN_CHECK(std::filesystem::is_directory(dir), ErrorCode::IoError, "cannot write '", path.string(),
                "': the directory '", dir.string(), "' does not exist; create it or choose another --out");
    std::string tmpl = (dir / str(".", target.filename().string(), ".tmp.XXXXXX")).string();
    FileDescriptor fd(::mkstemp(tmpl.data()));
    BRAIN_CHECK(fd.get() >= 0, ErrorCode::IoError, "cannot create a temporary file in '", dir.string(),
                "' to write '", path.string(), "': ", std::strerror(errno));
    const std::string tmp = tmpl;
    auto fail = [&](const char* what) {
        const std::string reason = std::strerror(errno);
        std::remove(tmp.c_str());
        BRAIN_THROW(ErrorCode::IoError, "cannot write '", path.string(), "': ", what, " failed: ", reason,
                    "; the previous file, if any, is unchanged");
    };
    const char* data = content.data();
    std::size_t left = content.size();
    while (left > 0) {
        const ssize_t n = ::write(fd.get(), data, left);
        if (n < 0) {
            if (errno == EINTR) continue;
            fail("write");
        }
        data += n;
        left -= static_cast<std::size_t>(n);
    }
    if (::fchmod(fd.get(), 0644) != 0) fail("chmod");
    if (::fsync(fd.get()) != 0) fail("fsync");
    if (!fd.close_checked()) fail("close");
    if (std::rename(tmp.c_str(), target.c_str()) != 0) fail("rename");
}

std::string format_duration(std::chrono::nanoseconds d) {
    const double s = std::chrono::duration<double>(d).count();
    char buf[64];
    if (s < 1.0)
        std::snprintf(buf, sizeof buf, "%.0fms", s * 1e3);
    else if (s < 60.0)
        std::snprintf(buf, sizeof buf, "%.2fs", s);
    else
        std::snprintf(buf, sizeof buf, "%dm%02ds", static_cast<int>(s / 60), static_cast<int>(s) % 60);
    return buf;
}

double seconds_since(std::chrono::steady_clock::time_point start) {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

} // namespace brain::app
