// Data parallelism's CUDA-free half: the split of a batch among devices, the gradient buckets, the per-session
// decision, NCCL opened at run time, and the rendezvous between two local processes (file and TCP).
#include "data_parallel_plan.hpp"
#include "nccl_library.hpp"
#include "rendezvous.hpp"
#include "support/catch.hpp"
#include "support/env.hpp"

#include <arpa/inet.h>
#include <brain/plugin_sdk.hpp>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <netinet/in.h>
#include <numeric>
#include <string>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>
#include <vector>

namespace fs = std::filesystem;
using namespace brain::cuda;
using brain::sdk::Failure;

namespace {

// The failure `fn` throws (its code and message), or a failed check when it throws none.
template <class Fn>
Failure failure_of(Fn&& fn) {
    try {
        fn();
    } catch (const Failure& f) {
        return f;
    }
    FAIL("expected a failure, got none");
    return Failure(BRAIN_OK, "");
}

bool contains(const std::string& text, const std::string& part) {
    return text.find(part) != std::string::npos;
}

// A fresh path prefix in a fresh directory, removed at scope exit.
struct TempPrefix {
    fs::path dir;
    TempPrefix() {
        dir = fs::temp_directory_path() /
              ("brain_rdv_" + std::to_string(::getpid()) + "_" +
               std::to_string(std::chrono::steady_clock::now().time_since_epoch().count()));
        fs::create_directories(dir);
    }
    ~TempPrefix() { fs::remove_all(dir); }
    std::string prefix() const { return (dir / "meet").string(); }
};

// Runs rendezvous_all_gather as `rank` in a child process; the child writes what it received, joined by '|', to
// `out` and exits 0, or writes the failure and exits 1.
pid_t spawn_rank(const RendezvousAddress& address, int rank, int world, const std::string& record,
                 const std::string& out) {
    const pid_t child = ::fork();
    if (child != 0) return child;
    int status = 0;
    std::string text;
    try {
        for (const auto& r : rendezvous_all_gather(address, rank, world, record, std::chrono::seconds(20)))
            text += r + "|";
    } catch (const Failure& f) {
        text = f.what();
        status = 1;
    }
    std::ofstream(out) << text;
    ::_exit(status);
}

int wait_status(pid_t child) {
    int raw = 0;
    ::waitpid(child, &raw, 0);
    return WIFEXITED(raw) ? WEXITSTATUS(raw) : -1;
}

std::string read_text(const std::string& path) {
    std::ifstream in(path);
    return std::string(std::istreambuf_iterator<char>(in), {});
}

// A port that was free a moment ago (bound to 0, then released).
std::uint16_t free_port() {
    const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    REQUIRE(::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0);
    socklen_t size = sizeof a;
    REQUIRE(::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &size) == 0);
    ::close(fd);
    return ntohs(a.sin_port);
}

} // namespace

TEST_CASE("a batch splits among devices in order, shares differing by at most one row", "[core]") {
    for (std::uint64_t rows : {0ull, 1ull, 2ull, 3ull, 7ull, 8ull, 4095ull, 4096ull, 4097ull}) {
        for (std::uint32_t parts : {1u, 2u, 3u, 4u, 8u}) {
            const auto shares = split_rows(rows, parts);
            REQUIRE(shares.size() == parts);
            std::uint64_t next = 0, smallest = rows, largest = 0;
            for (const auto& s : shares) {
                CHECK(s.first == next); // contiguous, in the batch's seeded order
                next += s.rows;
                smallest = std::min(smallest, s.rows);
                largest = std::max(largest, s.rows);
            }
            CHECK(next == rows);
            CHECK(largest - smallest <= 1);
            CHECK(shares.front().rows >= shares.back().rows); // the larger shares come first
        }
    }
    // A short last batch of 3 rows over 4 devices leaves one device without a row.
    const auto last = split_rows(3, 4);
    CHECK(last[3].rows == 0);
    CHECK(last[0].rows == 1);
    CHECK(failure_of([] { split_rows(10, 0); }).code() == BRAIN_ERR_INVALID_ARGUMENT);
}

TEST_CASE("gradient buckets cover every parameter once, in backward order, within the cap", "[core]") {
    // Four layers: 100, 50, 400, 30 floats.
    const std::vector<ParameterRange> layers = {{0, 100}, {100, 50}, {150, 400}, {550, 30}};
    SECTION("consecutive small layers share a bucket; a layer over the cap is its own") {
        const auto buckets = plan_buckets(layers, 160);
        REQUIRE(buckets.size() == 3);
        CHECK(buckets[0].first_layer == 3);
        CHECK(buckets[0].last_layer == 3);
        CHECK(buckets[0].offset == 550);
        CHECK(buckets[0].count == 30);
        CHECK(buckets[1].first_layer == 2); // 400 > 160: alone
        CHECK(buckets[1].count == 400);
        CHECK(buckets[2].first_layer == 0);
        CHECK(buckets[2].last_layer == 1);
        CHECK(buckets[2].offset == 0);
        CHECK(buckets[2].count == 150);
    }
    SECTION("every cap covers [0, total) exactly once") {
        for (std::uint64_t cap : {0ull, 1ull, 30ull, 100ull, 150ull, 450ull, 580ull, 10000ull}) {
            const auto buckets = plan_buckets(layers, cap);
            std::vector<int> covered(580, 0);
            std::uint32_t previous_first = 4;
            for (const auto& b : buckets) {
                CHECK(b.first_layer <= b.last_layer);
                CHECK(b.last_layer < previous_first); // strictly backward
                previous_first = b.first_layer;
                for (std::uint64_t i = b.offset; i < b.offset + b.count; ++i) ++covered[i];
                if (cap != 0 && b.first_layer != b.last_layer) CHECK(b.count <= cap);
            }
            CHECK(std::count(covered.begin(), covered.end(), 1) == 580);
            if (cap == 0 || cap >= 580) CHECK(buckets.size() == 1);
        }
    }
    SECTION("layers that are not contiguous are refused") {
        const auto f = failure_of([] { plan_buckets({{0, 10}, {12, 5}}, 0); });
        CHECK(f.code() == BRAIN_ERR_INVALID_ARGUMENT);
        CHECK(contains(f.what(), "layer 0"));
    }
}

TEST_CASE("data parallelism is used where it pays, forced or refused by BRAIN_CUDA_DATA_PARALLEL", "[core]") {
    CHECK(parse_data_parallel_policy(nullptr) == DataParallelPolicy::Auto);
    CHECK(parse_data_parallel_policy("always") == DataParallelPolicy::Always);
    CHECK(parse_data_parallel_policy("never") == DataParallelPolicy::Never);
    const auto bad = failure_of([] { parse_data_parallel_policy("sometimes"); });
    CHECK(contains(bad.what(), "sometimes"));
    CHECK(decide_data_parallel(DataParallelPolicy::Auto, 2, 1, false).parallel);
    const auto narrow = decide_data_parallel(DataParallelPolicy::Auto, 2, 1, true);
    CHECK_FALSE(narrow.parallel);
    CHECK(contains(narrow.reason, "fused epoch kernel"));
    CHECK(decide_data_parallel(DataParallelPolicy::Always, 2, 1, true).parallel);
    CHECK(decide_data_parallel(DataParallelPolicy::Always, 1, 1, true).parallel); // a one-rank communicator
    CHECK_FALSE(decide_data_parallel(DataParallelPolicy::Never, 2, 1, false).parallel);
    CHECK_FALSE(decide_data_parallel(DataParallelPolicy::Auto, 1, 1, false).parallel);
    // Several processes always train together: one rank cannot leave the others waiting.
    CHECK(decide_data_parallel(DataParallelPolicy::Never, 1, 2, true).parallel);
}

TEST_CASE("without libnccl.so.2 a multi-device session is FeatureDisabled naming the library and its install",
          "[core]") {
#if BRAIN_TEST_HOOKS
    brain::test::ScopedEnv absent("BRAIN_CUDA_TEST_NCCL_LIBRARY", std::string("libnccl-absent-for-a-test.so.2"));
    const auto f = failure_of([] { load_nccl("training on 2 device(s) (0,1)"); });
    CHECK(f.code() == BRAIN_ERR_FEATURE_DISABLED);
    CHECK(contains(f.what(), "libnccl.so.2"));
    CHECK(contains(f.what(), "training on 2 device(s) (0,1)"));
    CHECK(contains(f.what(), "apt install libnccl2"));
#else
    BRAIN_SKIP("needs the test hooks (BRAIN_TEST_HOOKS=ON) to hide libnccl.so.2");
#endif
}

TEST_CASE("rendezvous addresses parse, and malformed ones are named", "[core]") {
    const auto file = parse_rendezvous("file:/shared/run1");
    CHECK(file.kind == RendezvousAddress::Kind::File);
    CHECK(file.path == "/shared/run1");
    const auto tcp = parse_rendezvous("tcp:node7.cluster:29500");
    CHECK(tcp.kind == RendezvousAddress::Kind::Tcp);
    CHECK(tcp.host == "node7.cluster");
    CHECK(tcp.port == 29500);
    CHECK(parse_rendezvous("tcp:[::1]:29500").host == "::1");
    for (const char* bad : {"", "file:", "tcp:host", "tcp:host:0", "tcp:host:65536", "tcp:host:x1", "udp:h:1"}) {
        const auto f = failure_of([&] { parse_rendezvous(bad); });
        CHECK(f.code() == BRAIN_ERR_INVALID_ARGUMENT);
        CHECK(contains(f.what(), "file:<path>"));
    }
}

TEST_CASE("two local processes meet through a rendezvous file, past files left by an earlier run", "[core]") {
    TempPrefix temp;
    const std::string prefix = temp.prefix();
    // An earlier run's leftovers: a table and rank files under another token must not be taken for this run's.
    std::ofstream(prefix + ".done") << "brain-rendezvous-1\nold-token\n2\n6f6c64\n6f6c64\nend\n";
    std::ofstream(prefix + ".rank1") << "brain-rendezvous-1\nold-token\n2\n1\n6f6c64\nend\n";
    const auto address = parse_rendezvous("file:" + prefix);
    const std::string out0 = (temp.dir / "out0").string(), out1 = (temp.dir / "out1").string();
    // Rank 1 first: it waits for rank 0's file.
    const pid_t one = spawn_rank(address, 1, 2, std::string("second\n\x01\x02", 9), out1);
    const pid_t zero = spawn_rank(address, 0, 2, "first", out0);
    REQUIRE(wait_status(zero) == 0);
    REQUIRE(wait_status(one) == 0);
    const std::string expected = "first|" + std::string("second\n\x01\x02", 9) + "|";
    CHECK(read_text(out0) == expected);
    CHECK(read_text(out1) == expected);
    // Nothing of the rendezvous is left behind.
    for (const auto& entry : fs::directory_iterator(temp.dir))
        CHECK_FALSE(contains(entry.path().filename().string(), "meet"));
}

TEST_CASE("a rendezvous file names the ranks that never came and a world-size mismatch", "[core]") {
    TempPrefix temp;
    const auto address = parse_rendezvous("file:" + temp.prefix());
    const auto late =
        failure_of([&] { rendezvous_all_gather(address, 0, 3, "x", std::chrono::milliseconds(200)); });
    CHECK(late.code() == BRAIN_ERR_IO);
    CHECK(contains(late.what(), "rank(s) 1, 2"));
    CHECK(contains(late.what(), "--world-size"));
    const std::string out1 = (temp.dir / "out1").string();
    const pid_t one = spawn_rank(address, 1, 3, "y", out1); // believes in a world of 3
    const auto mismatch = failure_of([&] { rendezvous_all_gather(address, 0, 2, "x", std::chrono::seconds(20)); });
    CHECK(mismatch.code() == BRAIN_ERR_INVALID_ARGUMENT);
    CHECK(contains(mismatch.what(), "world size 3"));
    ::kill(one, SIGKILL);
    wait_status(one);
    CHECK(failure_of([&] { rendezvous_all_gather(address, 2, 2, "x", std::chrono::seconds(1)); }).code() ==
          BRAIN_ERR_INVALID_ARGUMENT);
}

TEST_CASE("two local processes meet through a TCP rendezvous", "[core]") {
    TempPrefix temp;
    const auto address = parse_rendezvous("tcp:127.0.0.1:" + std::to_string(free_port()));
    const std::string out0 = (temp.dir / "out0").string(), out1 = (temp.dir / "out1").string(),
                      out2 = (temp.dir / "out2").string();
    // The other ranks start before rank 0 listens: they retry until it does.
    const pid_t two = spawn_rank(address, 2, 3, "c", out2);
    const pid_t one = spawn_rank(address, 1, 3, std::string(1000, 'b'), out1);
    ::usleep(100000);
    const pid_t zero = spawn_rank(address, 0, 3, "a", out0);
    REQUIRE(wait_status(zero) == 0);
    REQUIRE(wait_status(one) == 0);
    REQUIRE(wait_status(two) == 0);
    const std::string expected = "a|" + std::string(1000, 'b') + "|c|";
    CHECK(read_text(out0) == expected);
    CHECK(read_text(out1) == expected);
    CHECK(read_text(out2) == expected);
}

TEST_CASE("a TCP rendezvous with no rank 0 times out naming it", "[core]") {
    const auto address = parse_rendezvous("tcp:127.0.0.1:" + std::to_string(free_port()));
    const auto f = failure_of([&] { rendezvous_all_gather(address, 1, 2, "x", std::chrono::milliseconds(300)); });
    CHECK(f.code() == BRAIN_ERR_IO);
    CHECK(contains(f.what(), "rank(s) 0"));
}
