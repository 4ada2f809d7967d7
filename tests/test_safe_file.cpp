// brain::OutputFile, write_file_safely and check_output_path: the output-file rules of docs/reliability.md, on
// the library API (the brain command's use of them is in test_hostile_input.cpp).
#include "support/catch.hpp"
#include "support/error_match.hpp"

#include <atomic>
#include <brain/brain.hpp>
#include <csignal>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

namespace fs = std::filesystem;
using brain::ErrorCode;
using brain::test::require_error;

namespace {

class TempDir {
public:
    TempDir() {
        static std::atomic<int> counter{0};
        path = fs::temp_directory_path() /
               ("brain_safe_file_" + std::to_string(::getpid()) + "_" + std::to_string(counter++));
        fs::remove_all(path);
        fs::create_directories(path);
    }
    ~TempDir() {
        std::error_code ec;
        fs::remove_all(path, ec);
    }
    TempDir(const TempDir&) = delete;
    TempDir& operator=(const TempDir&) = delete;
    // Every entry, hidden temporaries included.
    std::size_t entries() const {
        return static_cast<std::size_t>(std::distance(fs::directory_iterator(path), fs::directory_iterator()));
    }
    fs::path path;
};

std::string read_text(const fs::path& path) {
    std::ifstream in(path, std::ios::binary);
    std::ostringstream out;
    out << in.rdbuf();
    return out.str();
}

unsigned mode_of(const fs::path& path) {
    struct stat st {};
    ::lstat(path.c_str(), &st);
    return st.st_mode & 0777;
}

// Sets the umask for the scope.
class ScopedUmask {
public:
    explicit ScopedUmask(mode_t mask) : m_old(::umask(mask)) {}
    ~ScopedUmask() { ::umask(m_old); }
    ScopedUmask(const ScopedUmask&) = delete;
    ScopedUmask& operator=(const ScopedUmask&) = delete;

private:
    mode_t m_old;
};

} // namespace

TEST_CASE("write_file_safely: a new file gets 0666 less the umask, a replaced one keeps its permissions",
          "[core]") {
    TempDir dir;
    const ScopedUmask mask(027);
    brain::write_file_safely(dir.path / "new.txt", "hello\n");
    CHECK(read_text(dir.path / "new.txt") == "hello\n");
    CHECK(mode_of(dir.path / "new.txt") == 0640);

    fs::permissions(dir.path / "new.txt", fs::perms(0600));
    brain::write_file_safely(dir.path / "new.txt", "again\n");
    CHECK(read_text(dir.path / "new.txt") == "again\n");
    CHECK(mode_of(dir.path / "new.txt") == 0600);
    CHECK(dir.entries() == 1);
}

TEST_CASE("OutputFile: nothing appears until commit, and an abandoned one leaves nothing", "[core]") {
    TempDir dir;
    const fs::path target = dir.path / "out.csv";
    {
        brain::OutputFile file(target);
        file.write("a,b\n");
        file.write("1,2\n");
        CHECK(file.size() == 8);
        CHECK_FALSE(fs::exists(target));
        CHECK(dir.entries() == 1); // the hidden temporary
    }
    CHECK_FALSE(fs::exists(target));
    CHECK(dir.entries() == 0);

    brain::OutputFile file(target);
    file.write("x\n");
    file.commit();
    CHECK(read_text(target) == "x\n");
    BRAIN_REQUIRE_ERROR(ErrorCode::InvalidState, file.write("more"), "closed");
    CHECK(dir.entries() == 1);
}

TEST_CASE("check_output_path refuses links, non-regular files, inputs and missing directories", "[core]") {
    TempDir dir;
    const fs::path data = dir.path / "data.csv";
    std::ofstream(data) << "x,y\n1,2\n";

    fs::create_symlink(data, dir.path / "link.csv");
    require_error([&] { brain::check_output_path(dir.path / "link.csv"); }, ErrorCode::IoError,
                  {"link.csv", "symbolic link"});
    fs::create_directory(dir.path / "sub");
    require_error([&] { brain::check_output_path(dir.path / "sub"); }, ErrorCode::IoError, {"a directory"});
    REQUIRE(::mkfifo((dir.path / "fifo").c_str(), 0600) == 0);
    require_error([&] { brain::check_output_path(dir.path / "fifo"); }, ErrorCode::IoError, {"a FIFO"});
    require_error([&] { brain::check_output_path(data, {data}); }, ErrorCode::IoError, {"same file as the input"});
    fs::create_hard_link(data, dir.path / "hard.csv");
    require_error([&] { brain::check_output_path(dir.path / "hard.csv", {data}); }, ErrorCode::IoError,
                  {"same file as the input"});
    require_error([&] { brain::check_output_path(dir.path / "missing" / "m.json"); }, ErrorCode::IoError,
                  {"does not exist"});
    require_error([&] { brain::check_output_path(data / "m.json"); }, ErrorCode::IoError, {"not a directory"});
    require_error([&] { brain::check_output_path(""); }, ErrorCode::InvalidArgument, {"empty"});
    // An input that is another file, or that does not exist yet, is no conflict.
    brain::check_output_path(dir.path / "fresh.json", {data});
    brain::check_output_path(dir.path / "hard.csv", {dir.path / "other.csv"});

    // Nothing was changed or created by any of these.
    CHECK(fs::is_symlink(dir.path / "link.csv"));
    CHECK(read_text(data) == "x,y\n1,2\n");
    CHECK_FALSE(fs::exists(dir.path / "fresh.json"));
}

TEST_CASE("remove_temporary_output_files removes what a signal would leave behind", "[core]") {
    TempDir dir;
    brain::OutputFile file(dir.path / "big.csv");
    file.write("partial");
    CHECK(dir.entries() == 1);
    brain::remove_temporary_output_files();
    CHECK(dir.entries() == 0);
    // The file can no longer be put in place.
    CHECK_THROWS_AS(file.commit(), brain::Error);
    CHECK_FALSE(fs::exists(dir.path / "big.csv"));
}

TEST_CASE("a write past the file-size limit is IoError, not SIGXFSZ, and leaves the old file", "[core]") {
    TempDir dir;
    const fs::path target = dir.path / "model.txt";
    std::ofstream(target) << "previous";
    const pid_t child = ::fork();
    REQUIRE(child >= 0);
    if (child == 0) {
        // In the child: SIGXFSZ at its default (it kills), a 4 KiB limit, a 64 KiB write.
        std::signal(SIGXFSZ, SIG_DFL);
        const rlimit cap{4096, 4096};
        ::setrlimit(RLIMIT_FSIZE, &cap);
        try {
            brain::write_file_safely(target, std::string(65536, 'x'));
        } catch (const brain::Error& e) {
            const std::string what = e.what();
            ::_exit(e.code() == ErrorCode::IoError && what.find("file-size limit") != std::string::npos ? 0 : 3);
        }
        ::_exit(4);
    }
    int status = 0;
    ::waitpid(child, &status, 0);
    INFO("child status " << status);
    CHECK(WIFEXITED(status));
    CHECK(WEXITSTATUS(status) == 0);
    CHECK(read_text(target) == "previous");
    CHECK(dir.entries() == 1);
}

TEST_CASE("OutputGroup: files written together replace their targets together or not at all", "[core]") {
    TempDir dir;
    const fs::path a = dir.path / "features.npy", b = dir.path / "targets.npy";
    std::ofstream(a) << "old a";
    std::ofstream(b) << "old b";
    {
        // The second file fails: the first, though committed to the group, is not put in place.
        brain::OutputGroup group;
        brain::write_file_safely(a, "new a");
        CHECK(read_text(a) == "old a");
        fs::remove(b);
        fs::create_directory(b); // a directory where the second output goes
        BRAIN_REQUIRE_ERROR(ErrorCode::IoError, brain::write_file_safely(b, "new b"), "directory");
    }
    CHECK(read_text(a) == "old a");
    CHECK(dir.entries() == 2); // no temporary left
    fs::remove(b);
    {
        brain::OutputGroup group;
        brain::write_file_safely(a, "new a");
        brain::write_file_safely(b, "new b");
        CHECK(read_text(a) == "old a");
        CHECK_FALSE(fs::exists(b));
        group.commit();
    }
    CHECK(read_text(a) == "new a");
    CHECK(read_text(b) == "new b");
    CHECK(dir.entries() == 2);
    // Outside a group, files are put in place at once again.
    brain::write_file_safely(a, "alone");
    CHECK(read_text(a) == "alone");
}

TEST_CASE("two outputs of one command may not be one file, by any path", "[core]") {
    TempDir dir;
    fs::create_directory(dir.path / "d");
    fs::create_directory_symlink(dir.path / "d", dir.path / "link");
    fs::create_directory(dir.path / "sub");
    const fs::path target = dir.path / "d" / "m.onnx";
    BRAIN_REQUIRE_ERROR(ErrorCode::IoError, brain::check_output_paths({target, dir.path / "link" / "m.onnx"}),
                        "the same file as", "give each output its own path");
    BRAIN_REQUIRE_ERROR(ErrorCode::IoError,
                        brain::check_output_paths({target, dir.path / "sub" / ".." / "d" / "m.onnx"}),
                        "the same file as");
    std::ofstream(target) << "x";
    fs::create_hard_link(target, dir.path / "hard.onnx");
    BRAIN_REQUIRE_ERROR(ErrorCode::IoError, brain::check_output_paths({target, dir.path / "hard.onnx"}),
                        "the same file as");
    brain::check_output_paths({target, dir.path / "d" / "m.safetensors"});
    {
        brain::OutputGroup group;
        brain::write_file_safely(target, "one");
        BRAIN_REQUIRE_ERROR(ErrorCode::IoError, brain::write_file_safely(dir.path / "link" / "m.onnx", "two"),
                            "the same file as");
    }
    CHECK(read_text(target) == "x");
    BRAIN_REQUIRE_ERROR(
        ErrorCode::InvalidState,
        [] {
            brain::OutputGroup outer;
            brain::OutputGroup inner;
        }(),
        "already open");
}
