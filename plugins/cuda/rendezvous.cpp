// The file and TCP rendezvous (rendezvous.hpp). Records travel hex-encoded in files and length-prefixed over TCP.
#include "rendezvous.hpp"

#include <arpa/inet.h>
#include <brain/plugin_sdk.hpp>
#include <cerrno>
#include <charconv>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <random>
#include <sstream>
#include <sys/socket.h>
#include <thread>
#include <unistd.h>
#include <utility>

namespace brain::cuda {

namespace {

using Clock = std::chrono::steady_clock;
constexpr const char* magic = "brain-rendezvous-1";

std::string hex(const std::string& bytes) {
    static const char digits[] = "0123456789abcdef";
    std::string out;
    for (unsigned char c : bytes) {
        out += digits[c >> 4];
        out += digits[c & 15];
    }
    return out;
}

bool unhex(const std::string& text, std::string& out) {
    if (text.size() % 2 || text.size() / 2 > max_rendezvous_record) return false;
    out.clear();
    for (std::size_t i = 0; i < text.size(); i += 2) {
        auto nibble = [](char c) {
            return c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
        };
        const int hi = nibble(text[i]), lo = nibble(text[i + 1]);
        if (hi < 0 || lo < 0) return false;
        out += static_cast<char>(hi * 16 + lo);
    }
    return true;
}

std::string fresh_token() {
    std::random_device device;
    std::ostringstream out;
    out << std::hex << device() << device() << '-' << ::getpid() << '-' << Clock::now().time_since_epoch().count();
    return out.str();
}

std::string missing_ranks(const std::vector<bool>& arrived) {
    std::string out;
    for (std::size_t r = 0; r < arrived.size(); ++r)
        if (!arrived[r]) out += (out.empty() ? "" : ", ") + std::to_string(r);
    return out;
}

[[noreturn]] void timed_out(const std::string& where, const std::string& missing,
                            std::chrono::milliseconds timeout) {
    sdk::fail(BRAIN_ERR_IO, "the rendezvous at ", where, " timed out after ", timeout.count() / 1000.0,
              " s waiting for rank(s) ", missing,
              "; start every rank with the same --rendezvous and --world-size (BRAIN_RENDEZVOUS_TIMEOUT sets the "
              "wait in seconds)");
}

// ---- File ----------------------------------------------------------------------------------------------------

// The file's lines, or empty when it does not exist (yet) or is incomplete.
std::vector<std::string> read_lines(const std::string& path) {
    std::ifstream in(path);
    std::vector<std::string> lines;
    if (!in) return lines;
    std::string line;
    while (lines.size() < 70000 && std::getline(in, line)) lines.push_back(line);
    if (lines.empty() || lines.back() != "end") return {};
    return lines;
}

// Written whole under a temporary name, then renamed: a reader sees the old file, no file, or the new one.
void write_file(const std::string& path, const std::string& text) {
    const std::string temporary = path + ".tmp" + std::to_string(::getpid());
    {
        std::ofstream out(temporary, std::ios::trunc);
        out << text << "end\n";
        out.flush();
        if (!out)
            sdk::fail(BRAIN_ERR_IO, "cannot write the rendezvous file ", temporary, " (", std::strerror(errno),
                      "); give --rendezvous file:<path> in a directory every rank can write");
    }
    if (std::rename(temporary.c_str(), path.c_str()) != 0)
        sdk::fail(BRAIN_ERR_IO, "cannot rename ", temporary, " to ", path, " (", std::strerror(errno), ")");
}

void pause() {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
}

std::vector<std::string> file_all_gather(const std::string& base, int rank, int world, const std::string& record,
                                         std::chrono::milliseconds timeout) {
    const auto deadline = Clock::now() + timeout;
    const std::string where = "file:" + base;
    auto rank_file = [&](int r) { return base + ".rank" + std::to_string(r); };
    const std::string done_file = base + ".done";
    std::vector<std::string> records(static_cast<std::size_t>(world));
    if (rank == 0) {
        const std::string token = fresh_token();
        std::remove(done_file.c_str());
        write_file(rank_file(0),
                   std::string(magic) + "\n" + token + "\n" + std::to_string(world) + "\n0\n" + hex(record) + "\n");
        records[0] = record;
        std::vector<bool> arrived(records.size(), false);
        arrived[0] = true;
        for (int pending = world - 1; pending > 0;) {
            for (int r = 1; r < world; ++r) {
                if (arrived[r]) continue;
                const auto lines = read_lines(rank_file(r));
                if (lines.size() != 6 || lines[0] != magic || lines[1] != token) continue; // absent or stale
                if (lines[2] != std::to_string(world))
                    sdk::fail(BRAIN_ERR_INVALID_ARGUMENT, "rank ", r, " joined the rendezvous at ", where,
                              " with world size ", lines[2], " but rank 0 has ", world,
                              "; give every rank the same --world-size");
                if (lines[3] != std::to_string(r) || !unhex(lines[4], records[r]))
                    sdk::fail(BRAIN_ERR_INVALID_DATA, "the rendezvous file ", rank_file(r), " is malformed");
                arrived[r] = true;
                --pending;
            }
            if (pending == 0) break;
            if (Clock::now() > deadline) timed_out(where, missing_ranks(arrived), timeout);
            pause();
        }
        std::string done = std::string(magic) + "\n" + token + "\n" + std::to_string(world) + "\n";
        for (const auto& r : records) done += hex(r) + "\n";
        write_file(done_file, done);
        // Every rank acknowledges having read the table; then nothing of this rendezvous is left on disk.
        std::vector<bool> acked(records.size(), false);
        acked[0] = true;
        for (int pending = world - 1; pending > 0 && Clock::now() < deadline;) {
            for (int r = 1; r < world; ++r) {
                if (acked[r]) continue;
                const auto lines = read_lines(base + ".ack" + std::to_string(r));
                if (lines.size() == 3 && lines[0] == magic && lines[1] == token) acked[r] = true, --pending;
            }
            if (pending) pause();
        }
        for (int r = 0; r < world; ++r) {
            std::remove(rank_file(r).c_str());
            std::remove((base + ".ack" + std::to_string(r)).c_str());
        }
        std::remove(done_file.c_str());
        return records;
    }
    std::string joined_token;
    for (;;) {
        // Rank 0's file names this run's token; a new one (rank 0 restarted, or a stale file was read) means
        // joining again under it.
        const auto head = read_lines(rank_file(0));
        if (head.size() == 6 && head[0] == magic) {
            if (head[1] != joined_token) {
                joined_token = head[1];
                write_file(rank_file(rank), std::string(magic) + "\n" + joined_token + "\n" +
                                                std::to_string(world) + "\n" + std::to_string(rank) + "\n" +
                                                hex(record) + "\n");
            }
            // After joining, so that rank 0 reports the mismatch too.
            if (head[2] != std::to_string(world))
                sdk::fail(BRAIN_ERR_INVALID_ARGUMENT, "rank ", rank, " has world size ", world,
                          " but rank 0 of the "
                          "rendezvous at ",
                          where, " has ", head[2], "; give every rank the same --world-size");
        }
        if (!joined_token.empty()) {
            const auto done = read_lines(done_file);
            if (done.size() == static_cast<std::size_t>(world) + 4 && done[0] == magic && done[1] == joined_token) {
                for (int r = 0; r < world; ++r)
                    if (!unhex(done[3 + r], records[r]))
                        sdk::fail(BRAIN_ERR_INVALID_DATA, "the rendezvous file ", done_file, " is malformed");
                write_file(base + ".ack" + std::to_string(rank), std::string(magic) + "\n" + joined_token + "\n");
                return records;
            }
        }
        if (Clock::now() > deadline) timed_out(where, joined_token.empty() ? "0" : "0 (its table)", timeout);
        pause();
    }
}

// ---- TCP -----------------------------------------------------------------------------------------------------

class Socket {
public:
    explicit Socket(int fd = -1) : m_fd(fd) {}
    ~Socket() {
        if (m_fd >= 0) ::close(m_fd);
    }
    Socket(Socket&& other) noexcept : m_fd(std::exchange(other.m_fd, -1)) {}
    Socket& operator=(Socket&& other) noexcept {
        std::swap(m_fd, other.m_fd);
        return *this;
    }
    int get() const noexcept { return m_fd; }

private:
    int m_fd;
};

int remaining_ms(Clock::time_point deadline) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count();
    return left <= 0 ? 0 : static_cast<int>(std::min<long long>(left, 1000000));
}

// Wait until fd is readable (or writable); false on timeout.
bool wait_for(int fd, short events, Clock::time_point deadline) {
    pollfd p{fd, events, 0};
    for (;;) {
        const int n = ::poll(&p, 1, remaining_ms(deadline));
        if (n > 0) return true;
        if (n == 0) return false;
        if (errno != EINTR) return false;
    }
}

bool send_all(int fd, const void* data, std::size_t size, Clock::time_point deadline) {
    const char* p = static_cast<const char*>(data);
    while (size) {
        if (!wait_for(fd, POLLOUT, deadline)) return false;
        const ssize_t n = ::send(fd, p, size, MSG_NOSIGNAL);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) return false;
        p += n;
        size -= static_cast<std::size_t>(n);
    }
    return true;
}

bool receive_all(int fd, void* data, std::size_t size, Clock::time_point deadline) {
    char* p = static_cast<char*>(data);
    while (size) {
        if (!wait_for(fd, POLLIN, deadline)) return false;
        const ssize_t n = ::recv(fd, p, size, 0);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) return false;
        p += n;
        size -= static_cast<std::size_t>(n);
    }
    return true;
}

bool send_u32(int fd, std::uint32_t v, Clock::time_point deadline) {
    const std::uint32_t n = htonl(v);
    return send_all(fd, &n, 4, deadline);
}

bool receive_u32(int fd, std::uint32_t& v, Clock::time_point deadline) {
    std::uint32_t n = 0;
    if (!receive_all(fd, &n, 4, deadline)) return false;
    v = ntohl(n);
    return true;
}

bool send_record(int fd, const std::string& record, Clock::time_point deadline) {
    return send_u32(fd, static_cast<std::uint32_t>(record.size()), deadline) &&
           send_all(fd, record.data(), record.size(), deadline);
}

bool receive_record(int fd, std::string& record, Clock::time_point deadline) {
    std::uint32_t size = 0;
    if (!receive_u32(fd, size, deadline) || size > max_rendezvous_record) return false;
    record.resize(size);
    return receive_all(fd, record.data(), size, deadline);
}

struct Resolved {
    addrinfo* list = nullptr;
    ~Resolved() {
        if (list) freeaddrinfo(list);
    }
};

void resolve(const RendezvousAddress& a, bool passive, Resolved& out) {
    addrinfo hints{};
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    hints.ai_flags = passive ? AI_PASSIVE : 0;
    const std::string port = std::to_string(a.port);
    const int status = getaddrinfo(a.host.c_str(), port.c_str(), &hints, &out.list);
    if (status != 0)
        sdk::fail(BRAIN_ERR_IO, "the rendezvous host \"", a.host, "\" cannot be resolved (", gai_strerror(status),
                  "); give --rendezvous tcp:<host>:<port> with rank 0's host name or address");
}

constexpr std::uint32_t wire_magic = 0x62726476; // "brdv"

std::vector<std::string> tcp_all_gather(const RendezvousAddress& a, int rank, int world, const std::string& record,
                                        std::chrono::milliseconds timeout) {
    const auto deadline = Clock::now() + timeout;
    const std::string where = "tcp:" + a.host + ":" + std::to_string(a.port);
    std::vector<std::string> records(static_cast<std::size_t>(world));
    Resolved addresses;
    resolve(a, rank == 0, addresses);
    if (rank == 0) {
        Socket listener;
        std::string why = "no address";
        for (addrinfo* ai = addresses.list; ai && listener.get() < 0; ai = ai->ai_next) {
            Socket s(::socket(ai->ai_family, ai->ai_socktype | SOCK_CLOEXEC, ai->ai_protocol));
            if (s.get() < 0) continue;
            const int on = 1;
            (void)::setsockopt(s.get(), SOL_SOCKET, SO_REUSEADDR, &on, sizeof on);
            if (::bind(s.get(), ai->ai_addr, ai->ai_addrlen) == 0 && ::listen(s.get(), world) == 0)
                listener = std::move(s);
            else
                why = std::strerror(errno);
        }
        if (listener.get() < 0)
            sdk::fail(BRAIN_ERR_IO, "rank 0 cannot listen on ", where, " (", why,
                      "); choose a free port on rank 0's host");
        records[0] = record;
        std::vector<bool> arrived(records.size(), false);
        arrived[0] = true;
        std::vector<Socket> peers;
        for (int pending = world - 1; pending > 0;) {
            if (!wait_for(listener.get(), POLLIN, deadline)) timed_out(where, missing_ranks(arrived), timeout);
            Socket peer(::accept4(listener.get(), nullptr, nullptr, SOCK_CLOEXEC));
            if (peer.get() < 0) continue;
            std::uint32_t m = 0, r = 0, w = 0;
            std::string rec;
            // A connection that is not a rank of this rendezvous (a port scanner, a stray client) is dropped.
            if (!receive_u32(peer.get(), m, deadline) || m != wire_magic || !receive_u32(peer.get(), r, deadline) ||
                !receive_u32(peer.get(), w, deadline) || !receive_record(peer.get(), rec, deadline))
                continue;
            if (w != static_cast<std::uint32_t>(world))
                sdk::fail(BRAIN_ERR_INVALID_ARGUMENT, "rank ", r, " joined the rendezvous at ", where,
                          " with world size ", w, " but rank 0 has ", world,
                          "; give every rank the same --world-size");
            if (r == 0 || r >= static_cast<std::uint32_t>(world) || arrived[r])
                sdk::fail(BRAIN_ERR_INVALID_ARGUMENT, "a process joined the rendezvous at ", where, " as rank ", r,
                          ", which is ", r >= static_cast<std::uint32_t>(world) ? "outside the world" : "taken",
                          "; give every process its own rank in [0, ", world, ")");
            records[r] = std::move(rec);
            arrived[r] = true;
            --pending;
            peers.push_back(std::move(peer));
        }
        for (const Socket& peer : peers) {
            bool ok = send_u32(peer.get(), wire_magic, deadline);
            for (const auto& r : records) ok = ok && send_record(peer.get(), r, deadline);
            if (!ok) sdk::fail(BRAIN_ERR_IO, "rank 0 could not send the rendezvous table at ", where);
        }
        return records;
    }
    for (;;) {
        // Rank 0 may not listen yet: retry until the deadline.
        for (addrinfo* ai = addresses.list; ai; ai = ai->ai_next) {
            Socket s(::socket(ai->ai_family, ai->ai_socktype | SOCK_CLOEXEC, ai->ai_protocol));
            if (s.get() < 0 || ::connect(s.get(), ai->ai_addr, ai->ai_addrlen) != 0) continue;
            if (!send_u32(s.get(), wire_magic, deadline) ||
                !send_u32(s.get(), static_cast<std::uint32_t>(rank), deadline) ||
                !send_u32(s.get(), static_cast<std::uint32_t>(world), deadline) ||
                !send_record(s.get(), record, deadline))
                continue;
            std::uint32_t m = 0;
            bool ok = receive_u32(s.get(), m, deadline) && m == wire_magic;
            for (int r = 0; ok && r < world; ++r) ok = receive_record(s.get(), records[r], deadline);
            if (ok) return records;
            sdk::fail(BRAIN_ERR_IO, "rank ", rank, " lost the connection to rank 0 at ", where,
                      " before receiving the rendezvous table; see rank 0's error");
        }
        if (Clock::now() > deadline) timed_out(where, "0", timeout);
        std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
}

} // namespace

RendezvousAddress parse_rendezvous(const std::string& text) {
    RendezvousAddress out;
    const std::string expected = "; expected file:<path> (a path every process can reach) or tcp:<host>:<port>";
    if (text.rfind("file:", 0) == 0) {
        out.kind = RendezvousAddress::Kind::File;
        out.path = text.substr(5);
        if (out.path.empty())
            sdk::fail(BRAIN_ERR_INVALID_ARGUMENT, "rendezvous \"", text, "\" has no path", expected);
        return out;
    }
    if (text.rfind("tcp:", 0) == 0) {
        out.kind = RendezvousAddress::Kind::Tcp;
        const std::string rest = text.substr(4);
        const auto colon = rest.rfind(':');
        if (colon == std::string::npos || colon == 0)
            sdk::fail(BRAIN_ERR_INVALID_ARGUMENT, "rendezvous \"", text, "\" has no host:port", expected);
        out.host = rest.substr(0, colon);
        if (out.host.size() > 2 && out.host.front() == '[' && out.host.back() == ']')
            out.host = out.host.substr(1, out.host.size() - 2); // [::1]
        const std::string port = rest.substr(colon + 1);
        unsigned value = 0;
        const auto [end, ec] = std::from_chars(port.data(), port.data() + port.size(), value);
        if (ec != std::errc() || end != port.data() + port.size() || port.empty() || value == 0 || value > 65535)
            sdk::fail(BRAIN_ERR_INVALID_ARGUMENT, "rendezvous \"", text, "\": the port \"", port,
                      "\" is not a number in 1..65535", expected);
        out.port = static_cast<std::uint16_t>(value);
        return out;
    }
    sdk::fail(BRAIN_ERR_INVALID_ARGUMENT, "rendezvous \"", text, "\" is neither a file: nor a tcp: address",
              expected);
}

std::vector<std::string> rendezvous_all_gather(const RendezvousAddress& address, int rank, int world_size,
                                               const std::string& record, std::chrono::milliseconds timeout) {
    if (world_size < 1 || rank < 0 || rank >= world_size)
        sdk::fail(BRAIN_ERR_INVALID_ARGUMENT, "rank ", rank, " is outside the world of ", world_size,
                  " process(es); expected 0 <= rank < world size");
    if (record.size() > max_rendezvous_record)
        sdk::fail(BRAIN_ERR_INVALID_ARGUMENT, "a rendezvous record of ", record.size(), " bytes exceeds ",
                  max_rendezvous_record);
    if (world_size == 1) return {record};
    return address.kind == RendezvousAddress::Kind::File
               ? file_all_gather(address.path, rank, world_size, record, timeout)
               : tcp_all_gather(address, rank, world_size, record, timeout);
}

std::chrono::milliseconds rendezvous_timeout() {
    const char* text = std::getenv("BRAIN_RENDEZVOUS_TIMEOUT");
    if (!text || !*text) return std::chrono::seconds(300);
    char* end = nullptr;
    const double seconds = std::strtod(text, &end);
    if (end == text || *end || !(seconds > 0) || seconds > 86400)
        sdk::fail(BRAIN_ERR_INVALID_ARGUMENT, "BRAIN_RENDEZVOUS_TIMEOUT is \"", text,
                  "\"; expected a number of seconds above 0 (at most 86400)");
    return std::chrono::milliseconds(static_cast<long long>(seconds * 1000));
}

} // namespace brain::cuda
