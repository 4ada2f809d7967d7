// brain::set_interrupt_check: a signal that interrupts a wait on a pipe ends it when the host's check says so, and
// the wait resumes otherwise (docs/reliability.md).
#include "support/catch.hpp"
#include "support/error_match.hpp"

#include <atomic>
#include <brain/brain.hpp>
#include <chrono>
#include <csignal>
#include <filesystem>
#include <fstream>
#include <pthread.h>
#include <sys/stat.h>
#include <thread>
#include <unistd.h>

namespace fs = std::filesystem;
using brain::ErrorCode;

namespace {

std::atomic<int> g_checks{0};
std::atomic<bool> g_end_wait{false};

bool count_and_answer() noexcept {
    ++g_checks;
    return g_end_wait.load();
}

void ignore_signal(int) {}

// SIGUSR1 with a handler that does nothing and no SA_RESTART, as Python installs its SIGINT handler; the previous
// action and check come back at the end.
class SignalAndCheck {
public:
    SignalAndCheck() {
        struct sigaction action {};
        action.sa_handler = ignore_signal;
        sigemptyset(&action.sa_mask);
        ::sigaction(SIGUSR1, &action, &m_previous);
        m_check = brain::set_interrupt_check(count_and_answer);
        g_checks = 0;
    }
    ~SignalAndCheck() {
        brain::set_interrupt_check(m_check);
        ::sigaction(SIGUSR1, &m_previous, nullptr);
    }
    SignalAndCheck(const SignalAndCheck&) = delete;
    SignalAndCheck& operator=(const SignalAndCheck&) = delete;

private:
    struct sigaction m_previous {};
    brain::InterruptCheck m_check = nullptr;
};

} // namespace

TEST_CASE("set_interrupt_check ends or resumes a wait for a pipe's writer", "[core][interrupt]") {
    const fs::path dir = fs::temp_directory_path() / ("brain_interrupt_" + std::to_string(::getpid()));
    fs::remove_all(dir);
    fs::create_directories(dir);
    const fs::path fifo = dir / "data.csv";
    REQUIRE(::mkfifo(fifo.c_str(), 0600) == 0);
    SignalAndCheck installed;
    const pthread_t reader = ::pthread_self();
    brain::CsvOptions options;
    options.target_columns = {"y"};

    SECTION("the check says stop: IoError naming the file") {
        g_end_wait = true;
        std::thread signaller([reader] {
            std::this_thread::sleep_for(std::chrono::milliseconds(200));
            ::pthread_kill(reader, SIGUSR1);
        });
        brain::test::require_error([&] { (void)brain::Dataset::from_csv(fifo, options); }, ErrorCode::IoError,
                                   {fifo.string(), "interrupted"});
        signaller.join();
        CHECK(g_checks == 1);
    }
    SECTION("the check says go on: the wait resumes and the writer's data is read") {
        g_end_wait = false;
        std::thread writer([reader, fifo] {
            std::this_thread::sleep_for(std::chrono::milliseconds(200));
            ::pthread_kill(reader, SIGUSR1);
            std::this_thread::sleep_for(std::chrono::milliseconds(200));
            std::ofstream(fifo) << "x,y\n1,2\n3,4\n";
        });
        const brain::Dataset data = brain::Dataset::from_csv(fifo, options);
        writer.join();
        CHECK(data.size() == 2);
        CHECK(g_checks >= 1);
    }
    fs::remove_all(dir);
}
