// Running a command the way a user does, measured: exit status, output, wall time and peak memory, optionally
// under an address-space limit (ulimit -v) and always under a time limit.
#pragma once

#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstdint>
#include <cstdlib>
#include <poll.h>
#include <string>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

namespace brain::test {

// True in an AddressSanitizer build, where an address-space limit cannot apply (ASan reserves terabytes).
#if defined(__SANITIZE_ADDRESS__)
inline constexpr bool k_asan = true;
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
inline constexpr bool k_asan = true;
#else
inline constexpr bool k_asan = false;
#endif
#else
inline constexpr bool k_asan = false;
#endif

struct ProcessResult {
    int status = -1;               // exit status; -1 when the process did not exit normally
    int signal = 0;                // the signal that ended it, if one did
    bool timed_out = false;        // killed after the time limit
    std::string output;            // stdout and stderr, interleaved
    double seconds = 0.0;          // wall time
    std::uint64_t max_rss_kib = 0; // peak resident memory of the command and the children it waited for
};

struct ProcessLimits {
    std::uint64_t address_space_bytes = 0; // RLIMIT_AS for the command; 0: none
    int timeout_seconds = 60;              // then the whole process group is killed
};

// Runs `command` with /bin/sh -c in `directory`.
inline ProcessResult run_process(const std::string& command, const std::string& directory,
                                 const ProcessLimits& limits = {}) {
    ProcessResult result;
    int pipe_fds[2];
    if (::pipe(pipe_fds) != 0) return result;
    const auto start = std::chrono::steady_clock::now();
    const pid_t child = ::fork();
    if (child < 0) return result;
    if (child == 0) {
        ::setpgid(0, 0);
        ::dup2(pipe_fds[1], STDOUT_FILENO);
        ::dup2(pipe_fds[1], STDERR_FILENO);
        ::close(pipe_fds[0]);
        ::close(pipe_fds[1]);
        if (!directory.empty() && ::chdir(directory.c_str()) != 0) ::_exit(127);
        if (limits.address_space_bytes) {
            const rlimit cap{limits.address_space_bytes, limits.address_space_bytes};
            if (::setrlimit(RLIMIT_AS, &cap) != 0) ::_exit(126);
        }
        ::execl("/bin/sh", "sh", "-c", command.c_str(), static_cast<char*>(nullptr));
        ::_exit(127);
    }
    ::close(pipe_fds[1]);
    const auto deadline = start + std::chrono::seconds(limits.timeout_seconds);
    char buffer[4096];
    while (true) {
        const auto left =
            std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
        if (left.count() <= 0) {
            result.timed_out = true;
            ::kill(-child, SIGKILL);
            break;
        }
        pollfd p{pipe_fds[0], POLLIN, 0};
        const int ready = ::poll(&p, 1, static_cast<int>(left.count()));
        if (ready < 0 && errno == EINTR) continue;
        if (ready <= 0) continue;
        const ssize_t n = ::read(pipe_fds[0], buffer, sizeof buffer);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) break;
        result.output.append(buffer, static_cast<std::size_t>(n));
    }
    ::close(pipe_fds[0]);
    int raw = 0;
    rusage usage{};
    while (true) {
        const pid_t done = ::wait4(child, &raw, WNOHANG, &usage);
        if (done == child || (done < 0 && errno != EINTR)) break;
        if (std::chrono::steady_clock::now() > deadline && !result.timed_out) {
            result.timed_out = true;
            ::kill(-child, SIGKILL);
        }
        ::usleep(2000);
    }
    result.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    result.max_rss_kib = static_cast<std::uint64_t>(usage.ru_maxrss);
    if (WIFEXITED(raw)) result.status = WEXITSTATUS(raw);
    if (WIFSIGNALED(raw)) result.signal = WTERMSIG(raw);
    return result;
}

// Single-quoted for /bin/sh.
inline std::string shell_quote(const std::string& s) {
    std::string out = "'";
    for (char c : s) {
        if (c == '\'')
            out += "'\\''";
        else
            out += c;
    }
    return out + "'";
}

} // namespace brain::test
