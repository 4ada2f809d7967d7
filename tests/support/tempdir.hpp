// A fresh temporary directory for a test, removed at scope exit, and shell quoting for commands that name its
// files.
#pragma once

#include "support/process.hpp"

#include <atomic>
#include <filesystem>
#include <string>
#include <system_error>
#include <unistd.h>

namespace brain::test {

class TempDir {
public:
    TempDir() {
        static std::atomic<int> counter{0};
        m_path = std::filesystem::temp_directory_path() /
                 ("brain_test_" + std::to_string(::getpid()) + "_" + std::to_string(counter++));
        std::filesystem::remove_all(m_path);
        std::filesystem::create_directories(m_path);
    }
    ~TempDir() {
        std::error_code ec;
        std::filesystem::remove_all(m_path, ec);
    }
    TempDir(const TempDir&) = delete;
    TempDir& operator=(const TempDir&) = delete;
    const std::filesystem::path& path() const noexcept { return m_path; }
    std::filesystem::path operator/(const std::string& name) const { return m_path / name; }
    // The path of `name` in the directory, quoted for a shell command.
    std::string q(const std::string& name) const { return shell_quote((m_path / name).string()); }

private:
    std::filesystem::path m_path;
};

} // namespace brain::test
