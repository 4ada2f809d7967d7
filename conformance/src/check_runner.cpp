// Crash isolation: each check in a child process of its own, its outcome passed back through a pipe. A plugin that
// crashes, exits or hangs fails that one check, named with the signal, the status or the time limit, and the kit
// goes on with the next check.
#include "check_table.hpp"
#include "kit_fixtures.hpp"

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <poll.h>
#include <string>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

namespace brain::conformance {

namespace {

constexpr char k_magic[4] = {'B', 'R', 'C', 'K'};

void put_u32(std::string& out, std::uint32_t value) {
    out.append(reinterpret_cast<const char*>(&value), sizeof value);
}

void put_text(std::string& out, const std::string& text) {
    put_u32(out, static_cast<std::uint32_t>(text.size()));
    out += text;
}

std::string encode(const CheckOutcome& outcome) {
    std::string out(k_magic, sizeof k_magic);
    out += outcome.passed ? '1' : '0';
    put_text(out, outcome.detail);
    put_u32(out, static_cast<std::uint32_t>(outcome.facts.size()));
    for (const auto& [key, value] : outcome.facts) {
        put_text(out, key);
        put_text(out, value);
    }
    return out;
}

// Reads what encode wrote; false when the bytes are cut short (the child died while writing).
class Decoder {
public:
    explicit Decoder(const std::string& bytes) : m_bytes(bytes) {}
    bool decode(CheckOutcome& out) {
        if (m_bytes.size() < sizeof k_magic + 1 || std::memcmp(m_bytes.data(), k_magic, sizeof k_magic) != 0)
            return false;
        m_at = sizeof k_magic;
        out.passed = m_bytes[m_at++] == '1';
        std::uint32_t count = 0;
        if (!text(out.detail) || !u32(count)) return false;
        for (std::uint32_t i = 0; i < count; ++i) {
            Fact fact;
            if (!text(fact.first) || !text(fact.second)) return false;
            out.facts.push_back(std::move(fact));
        }
        return m_at == m_bytes.size();
    }

private:
    bool u32(std::uint32_t& value) {
        if (m_bytes.size() - m_at < sizeof value) return false;
        std::memcpy(&value, m_bytes.data() + m_at, sizeof value);
        m_at += sizeof value;
        return true;
    }
    bool text(std::string& value) {
        std::uint32_t size = 0;
        if (!u32(size) || m_bytes.size() - m_at < size) return false;
        value.assign(m_bytes, m_at, size);
        m_at += size;
        return true;
    }
    const std::string& m_bytes;
    std::size_t m_at = 0;
};

void write_all(int fd, const std::string& bytes) noexcept {
    std::size_t done = 0;
    while (done < bytes.size()) {
        const ssize_t n = ::write(fd, bytes.data() + done, bytes.size() - done);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) return;
        done += static_cast<std::size_t>(n);
    }
}

// "SIGSEGV (segmentation fault, signal 11)".
std::string signal_text(int sig) {
    static const std::pair<int, const char*> known[] = {
        {SIGSEGV, "SIGSEGV"}, {SIGBUS, "SIGBUS"},   {SIGILL, "SIGILL"},   {SIGFPE, "SIGFPE"},
        {SIGABRT, "SIGABRT"}, {SIGKILL, "SIGKILL"}, {SIGTERM, "SIGTERM"}, {SIGTRAP, "SIGTRAP"},
    };
    std::string name = "signal " + std::to_string(sig);
    for (const auto& [value, text] : known)
        if (value == sig) name = text;
    const char* description = ::strsignal(sig);
    std::string lower = description ? description : "";
    for (char& c : lower) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    return name + " (" + (lower.empty() ? "" : lower + ", ") + "signal " + std::to_string(sig) + ")";
}

// In the check's process: the caller's handlers for fatal signals (a test framework's, a crash reporter's) must not
// run for a fault inside the plugin, so the signal ends the process and the kit names it.
void default_fatal_signals() noexcept {
    for (int sig : {SIGSEGV, SIGBUS, SIGILL, SIGFPE, SIGABRT, SIGTRAP}) {
        struct sigaction action {};
        action.sa_handler = SIG_DFL;
        sigemptyset(&action.sa_mask);
        ::sigaction(sig, &action, nullptr);
    }
    sigset_t fatal;
    sigemptyset(&fatal);
    for (int sig : {SIGSEGV, SIGBUS, SIGILL, SIGFPE, SIGABRT, SIGTRAP}) sigaddset(&fatal, sig);
    ::sigprocmask(SIG_UNBLOCK, &fatal, nullptr);
}

CheckOutcome failed(std::string detail) {
    CheckOutcome out;
    out.detail = std::move(detail);
    return out;
}

} // namespace

CheckOutcome run_isolated(const Check& check, KitContext& context, unsigned timeout_s) {
    int fds[2];
    if (::pipe(fds) != 0)
        return failed(std::string("not run: the kit could not create a pipe for the check's process (") +
                      std::strerror(errno) + ")");
    // Buffered output would otherwise be written twice, once by each process.
    std::fflush(nullptr);
    const pid_t pid = ::fork();
    if (pid < 0) {
        const int error = errno;
        ::close(fds[0]);
        ::close(fds[1]);
        return failed(std::string("not run: the kit could not start the check's process (fork: ") +
                      std::strerror(error) + ")");
    }
    if (pid == 0) {
        ::close(fds[0]);
        default_fatal_signals();
        context.prepare_check_process();
        const CheckOutcome outcome = run_here(check, context);
        write_all(fds[1], encode(outcome));
        ::close(fds[1]);
        // No exit handlers or static destructors: they belong to the parent (and a plugin's may hang or crash).
        ::_exit(0);
    }
    ::close(fds[1]);
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(timeout_s);
    std::string bytes;
    bool timed_out = false;
    for (;;) {
        const auto left =
            std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
        if (left.count() <= 0) {
            timed_out = true;
            break;
        }
        pollfd p{fds[0], POLLIN, 0};
        const int ready = ::poll(&p, 1, static_cast<int>(std::min<long long>(left.count(), 1000)));
        if (ready < 0 && errno == EINTR) continue;
        if (ready <= 0) continue;
        char buffer[4096];
        const ssize_t n = ::read(fds[0], buffer, sizeof buffer);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) break; // end of file: the child closed the pipe or died
        bytes.append(buffer, static_cast<std::size_t>(n));
    }
    ::close(fds[0]);
    if (timed_out) ::kill(pid, SIGKILL);
    int status = 0;
    while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
    }
    if (timed_out)
        return failed("the check did not finish within " + std::to_string(timeout_s) +
                      " s and was killed: a plugin call hangs (or the device is far slower than the kit expects; "
                      "raise the limit with --timeout)");
    CheckOutcome outcome;
    if (Decoder(bytes).decode(outcome)) return outcome;
    if (WIFSIGNALED(status))
        return failed("the plugin crashed during this check: " + signal_text(WTERMSIG(status)) +
                      "; nothing else of this check ran. Run brain-conformance --in-process under a debugger "
                      "(gdb --args brain-conformance --in-process <plugin>) to see where");
    return failed("the check's process ended with exit status " +
                  std::to_string(WIFEXITED(status) ? WEXITSTATUS(status) : -1) +
                  " before reporting: something in the plugin exited the process (a plugin must report errors, "
                  "never exit or abort)");
}

} // namespace brain::conformance
