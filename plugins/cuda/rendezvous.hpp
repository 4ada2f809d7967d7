// The rendezvous of a data-parallel session across processes: every rank hands in a small record (rank 0's carries
// NCCL's unique id) and receives everyone's, through a file path every process can see or a TCP port rank 0
// listens on. No CUDA and no NCCL here, so the handshake is tested between local processes on any machine.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

namespace brain::cuda {

// "file:<path>" or "tcp:<host>:<port>" (brain_session_desc.rendezvous).
struct RendezvousAddress {
    enum class Kind { File, Tcp };
    Kind kind = Kind::File;
    std::string
        path; // File: the path; the files <path>.rank<r>, <path>.done and <path>.ack<r> are created beside it
    std::string host; // Tcp: rank 0 listens on host:port, the others connect to it
    std::uint16_t port = 0;
};

// Parse an address; INVALID_ARGUMENT naming the text and the expected forms.
RendezvousAddress parse_rendezvous(const std::string& text);

// The longest a record may be (bytes).
inline constexpr std::size_t max_rendezvous_record = 4096;

// Every rank calls this with its rank in [0, world_size) and its record; each receives the world_size records
// indexed by rank. IO naming the address and the ranks that did not arrive when `timeout` passes first;
// INVALID_ARGUMENT when ranks disagree on the world size or two claim one rank. With File, a path left behind by an
// earlier run is recognised by a fresh token of rank 0 and ignored; the files are removed once every rank has read.
std::vector<std::string> rendezvous_all_gather(const RendezvousAddress& address, int rank, int world_size,
                                               const std::string& record, std::chrono::milliseconds timeout);

// The timeout: BRAIN_RENDEZVOUS_TIMEOUT seconds when set (INVALID_ARGUMENT if not a positive number), else 300 s.
std::chrono::milliseconds rendezvous_timeout();

} // namespace brain::cuda
