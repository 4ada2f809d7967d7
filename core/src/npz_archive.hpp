// Internal: NumPy's .npz archives (a zip of .npy arrays, as numpy.savez and numpy.savez_compressed write them).
// Read through libzip (stored and deflated members, zip64, checksums checked); written stored, through OutputFile
// (whole or not at all), readable by numpy.load and by NpzReader.
#pragma once

#include "npy_format.hpp"

#include <brain/limits.hpp>
#include <brain/safe_file.hpp>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

struct zip;
struct zip_file;
struct zip_stat;

namespace brain::detail::npz {

// One array of an archive, open for reading in order (and, when stored uncompressed, at any row).
class Member {
public:
    Member(Member&&) noexcept;
    Member& operator=(Member&&) = delete;
    Member(const Member&) = delete;
    ~Member();

    const npy::Header& header() const noexcept { return m_header; }
    // "data.npz:features.npy", for messages.
    const std::string& origin() const noexcept { return m_origin; }
    // Reads `bytes` bytes of the array's data at the current position.
    void read(char* destination, std::size_t bytes);
    // Moves to byte `offset` of the array's data. Only for stored members (seekable()).
    void seek(std::uint64_t offset);
    bool seekable() const noexcept { return m_stored; }

private:
    friend class Reader;
    Member(zip_file* file, std::string origin, bool stored) : m_file(file), m_origin(std::move(origin)), m_stored(stored) {}
    zip_file* m_file;
    std::string m_origin;
    bool m_stored;
    npy::Header m_header;
};

class Reader {
public:
    // Opens and checks the archive (a regular file within limits.max_file_bytes). InvalidData when it is not a
    // zip archive or is damaged, naming the file.
    Reader(const std::filesystem::path& path, const InputLimits& limits);
    ~Reader();
    Reader(const Reader&) = delete;
    Reader& operator=(const Reader&) = delete;

    // The arrays it holds, by name without ".npy" (as numpy.load lists them).
    const std::vector<std::string>& arrays() const noexcept { return m_arrays; }
    bool has(const std::string& array) const;
    // Opens array `name` and reads its header (checked against the member's size: a member whose data is not
    // exactly its shape's size is refused). A member larger than limits.max_file_bytes is refused unread.
    Member open(const std::string& array);
    const std::string& origin() const noexcept { return m_origin; }

private:
    // InvalidData, before anything is allocated for it, when a member's sizes cannot be true of this archive.
    void check_claimed_size(const zip_stat& st, const std::string& origin) const;

    zip* m_archive = nullptr;
    std::uint64_t m_file_bytes = 0; // the archive's size
    std::string m_origin;
    InputLimits m_limits;
    std::vector<std::string> m_arrays;
};

// Writes an archive member by member; nothing appears at the target until commit().
class Writer {
public:
    Writer(const std::filesystem::path& target, std::vector<std::filesystem::path> inputs);
    // Starts member `name` ("features.npy") of exactly `size` bytes.
    void begin(const std::string& name, std::uint64_t size);
    void write(std::string_view bytes);
    void end();
    // The central directory, then the file is put in place (OutputFile::commit).
    void commit();

private:
    struct Entry {
        std::string name;
        std::uint64_t size = 0;
        std::uint64_t offset = 0;
        std::uint32_t crc = 0;
    };
    OutputFile m_file;
    std::vector<Entry> m_entries;
    std::uint64_t m_written = 0; // bytes of the open member
    bool m_open = false;
};

} // namespace brain::detail::npz
