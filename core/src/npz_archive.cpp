#include "npz_archive.hpp"

#include "host_memory.hpp"
#include "input_file.hpp"

#include <brain/error.hpp>
#include <brain/npy_file.hpp>
#include <cstring>
#include <unistd.h>
#include <utility>
#if BRAIN_HAVE_NPZ
#include <zip.h>
#include <zlib.h>
#endif

namespace brain::detail::npz {

#if BRAIN_HAVE_NPZ

namespace {

std::string zip_message(int code) {
    zip_error_t error;
    zip_error_init_with_code(&error, code);
    std::string text = zip_error_strerror(&error);
    zip_error_fini(&error);
    return text;
}

void put16(std::string& out, std::uint32_t v) {
    out += static_cast<char>(v & 0xff);
    out += static_cast<char>((v >> 8) & 0xff);
}
void put32(std::string& out, std::uint32_t v) {
    for (int b = 0; b < 4; ++b) out += static_cast<char>((v >> (8 * b)) & 0xff);
}
void put64(std::string& out, std::uint64_t v) {
    for (int b = 0; b < 8; ++b) out += static_cast<char>((v >> (8 * b)) & 0xff);
}

constexpr std::uint64_t zip32_max = 0xffffffffull;
constexpr std::uint32_t dos_date = (0u << 9) | (1u << 5) | 1u; // 1980-01-01: archives are reproducible

} // namespace

Member::Member(Member&& other) noexcept
    : m_file(std::exchange(other.m_file, nullptr)), m_origin(std::move(other.m_origin)), m_stored(other.m_stored),
      m_header(std::move(other.m_header)) {}

Member::~Member() {
    if (m_file) zip_fclose(m_file);
}

void Member::read(char* destination, std::size_t bytes) {
    while (bytes > 0) {
        const zip_int64_t n = zip_fread(m_file, destination, bytes);
        if (n < 0)
            BRAIN_THROW(ErrorCode::InvalidData, m_origin, ": reading the array failed (",
                        zip_error_strerror(zip_file_get_error(m_file)), "); the archive is damaged");
        if (n == 0)
            BRAIN_THROW(ErrorCode::InvalidData, m_origin, ": the array ends early; the archive is damaged");
        destination += n;
        bytes -= static_cast<std::size_t>(n);
    }
}

void Member::seek(std::uint64_t offset) {
    if (zip_fseek(m_file, static_cast<zip_int64_t>(m_header.data_offset + offset), SEEK_SET) != 0)
        BRAIN_THROW(ErrorCode::InvalidData, m_origin, ": cannot move to byte ", offset, " of the array (",
                    zip_error_strerror(zip_file_get_error(m_file)),
                    "); only arrays stored uncompressed (numpy.savez, brain convert) can be read in blocks");
}

Reader::Reader(const std::filesystem::path& path, const InputLimits& limits)
    : m_origin(path.string()), m_limits(limits) {
    InputFile file(path, "NumPy archive", limits.max_file_bytes, ErrorCode::InvalidData, InputFile::Fifo::NoWait);
    m_file_bytes = file.size();
    BRAIN_CHECK(file.sized(), ErrorCode::IoError, "cannot read the NumPy archive '", m_origin,
                "': it is not a regular file of known size (an .npz archive is read by its directory at the end; "
                "save it to a file first)");
    const int fd = ::dup(file.descriptor());
    BRAIN_CHECK(fd >= 0, ErrorCode::IoError, "cannot read the NumPy archive '", m_origin, "': ", std::strerror(errno));
    int code = 0;
    m_archive = zip_fdopen(fd, ZIP_RDONLY | ZIP_CHECKCONS, &code);
    if (!m_archive) {
        ::close(fd);
        BRAIN_THROW(ErrorCode::InvalidData, "'", m_origin, "' is not a readable .npz archive (", zip_message(code),
                    "); save arrays with numpy.savez, or convert a CSV file with `brain convert`");
    }
    const zip_int64_t count = zip_get_num_entries(m_archive, 0);
    for (zip_int64_t i = 0; i < count; ++i) {
        const char* name = zip_get_name(m_archive, static_cast<zip_uint64_t>(i), ZIP_FL_ENC_RAW);
        if (!name) continue;
        std::string array = name;
        if (array.size() > 4 && array.ends_with(".npy")) m_arrays.push_back(array.substr(0, array.size() - 4));
    }
}

Reader::~Reader() {
    if (m_archive) zip_discard(m_archive);
}

bool Reader::has(const std::string& array) const {
    return zip_name_locate(m_archive, (array + ".npy").c_str(), ZIP_FL_ENC_RAW) >= 0;
}

void Reader::check_claimed_size(const zip_stat_t& st, const std::string& origin) const {
    // The sizes in a zip header are claims. Packed data must lie inside the archive, and the unpacked size must be
    // one that data can unpack to (stored: the same; deflated: at most 1032 times as much, deflate's limit), so a
    // 400-byte archive cannot make brain set aside gigabytes for an array it does not hold.
    if (!(st.valid & ZIP_STAT_COMP_SIZE)) return;
    if (st.comp_size > m_file_bytes)
        BRAIN_THROW(ErrorCode::InvalidData, origin, ": its packed data is said to be ", st.comp_size,
                    " bytes, more than the whole archive (", m_file_bytes,
                    " bytes); the archive is truncated or damaged, write it again");
    if (!(st.valid & ZIP_STAT_COMP_METHOD)) return;
    const bool deflated = st.comp_method == ZIP_CM_DEFLATE;
    if (st.comp_method != ZIP_CM_STORE && !deflated) return; // read in steps, memory following the data
    const std::uint64_t most = deflated ? saturating_add(saturating_mul(st.comp_size, 1032), 64) : st.comp_size;
    if (st.size > most)
        BRAIN_THROW(ErrorCode::InvalidData, origin, ": the array is said to be ", st.size,
                    " bytes unpacked, but its ", st.comp_size, " ", deflated ? "deflated" : "stored",
                    " bytes can hold at most ", most, deflated ? " (deflate packs at most 1032:1)" : "",
                    "; the archive is damaged or forged, write it again (numpy.savez, brain convert)");
}

Member Reader::open(const std::string& array) {
    const std::string name = array + ".npy";
    const std::string origin = m_origin + ":" + name;
    const zip_int64_t index = zip_name_locate(m_archive, name.c_str(), ZIP_FL_ENC_RAW);
    if (index < 0) {
        std::string have;
        for (const auto& a : m_arrays) have += (have.empty() ? "'" : ", '") + a + "'";
        BRAIN_THROW(ErrorCode::InvalidData, "the archive '", m_origin, "' has no array '", array, "' (it has ",
                    have.empty() ? std::string("none") : have, ")");
    }
    zip_stat_t st;
    zip_stat_init(&st);
    if (zip_stat_index(m_archive, static_cast<zip_uint64_t>(index), 0, &st) != 0 || !(st.valid & ZIP_STAT_SIZE))
        BRAIN_THROW(ErrorCode::InvalidData, origin, ": its size cannot be read; the archive is damaged");
    if (st.size > m_limits.max_file_bytes)
        BRAIN_THROW(ErrorCode::InvalidData, origin, ": the array is ", format_bytes(st.size),
                    " unpacked, more than the limit of ", format_bytes(m_limits.max_file_bytes),
                    " for input files; if it is what you meant, raise the limit (the brain command's "
                    "--max-input-mib, InputLimits::max_file_bytes)");
    const bool stored = (st.valid & ZIP_STAT_COMP_METHOD) && st.comp_method == ZIP_CM_STORE;
    check_claimed_size(st, origin);
    zip_file* file = zip_fopen_index(m_archive, static_cast<zip_uint64_t>(index), 0);
    if (!file)
        BRAIN_THROW(ErrorCode::InvalidData, origin, ": cannot open it (",
                    zip_error_strerror(zip_get_error(m_archive)),
                    "); brain reads arrays stored or deflated, without encryption");
    Member member(file, origin, stored);
    // The header: its fixed start, then the rest of it.
    std::string head(12, '\0');
    if (st.size < 12) BRAIN_THROW(ErrorCode::InvalidData, origin, ": the array is too short to be an .npy array");
    member.read(head.data(), 12);
    const std::size_t size = npy::header_size(head, origin);
    if (size == 0 || size > st.size)
        BRAIN_THROW(ErrorCode::InvalidData, origin, ": not an .npy array (save arrays with numpy.savez)");
    head.resize(size);
    member.read(head.data() + 12, size - 12);
    member.m_header = npy::parse_header(head, origin, m_limits);
    if (member.m_header.data_offset + member.m_header.data_bytes != st.size)
        BRAIN_THROW(ErrorCode::InvalidData, origin, ": the array's data is ", st.size - member.m_header.data_offset,
                    " bytes, but its shape and dtype (", member.m_header.dtype_name(), ") need ",
                    member.m_header.data_bytes, "; the archive is damaged");
    return member;
}

Writer::Writer(const std::filesystem::path& target, std::vector<std::filesystem::path> inputs)
    : m_file(target, std::move(inputs)) {}

void Writer::begin(const std::string& name, std::uint64_t size) {
    BRAIN_CHECK(!m_open, ErrorCode::InvalidState, "npz::Writer: a member is open");
    Entry entry{name, size, m_file.size(), static_cast<std::uint32_t>(crc32_z(0, nullptr, 0))};
    const bool zip64 = size >= zip32_max;
    std::string header;
    put32(header, 0x04034b50);
    put16(header, zip64 ? 45 : 20);
    put16(header, 0);        // flags
    put16(header, 0);        // stored
    put16(header, 0);        // time
    put16(header, dos_date); // date
    put32(header, 0);        // the checksum, written by end()
    put32(header, zip64 ? 0xffffffffu : static_cast<std::uint32_t>(size));
    put32(header, zip64 ? 0xffffffffu : static_cast<std::uint32_t>(size));
    put16(header, static_cast<std::uint32_t>(name.size()));
    put16(header, zip64 ? 20 : 0);
    header += name;
    if (zip64) {
        put16(header, 0x0001);
        put16(header, 16);
        put64(header, size);
        put64(header, size);
    }
    m_file.write(header);
    m_entries.push_back(std::move(entry));
    m_written = 0;
    m_open = true;
}

void Writer::write(std::string_view bytes) {
    Entry& entry = m_entries.back();
    entry.crc = static_cast<std::uint32_t>(
        crc32_z(entry.crc, reinterpret_cast<const unsigned char*>(bytes.data()), bytes.size()));
    m_file.write(bytes);
    m_written += bytes.size();
}

void Writer::end() {
    const Entry& entry = m_entries.back();
    BRAIN_CHECK(m_open && m_written == entry.size, ErrorCode::InvalidState, "npz::Writer: member ", entry.name,
                " received ", m_written, " bytes, ", entry.size, " were announced");
    std::string crc;
    put32(crc, entry.crc);
    m_file.write_at(entry.offset + 14, crc);
    m_open = false;
}

void Writer::commit() {
    BRAIN_CHECK(!m_open, ErrorCode::InvalidState, "npz::Writer: a member is still open");
    const std::uint64_t directory_offset = m_file.size();
    std::string directory;
    for (const Entry& e : m_entries) {
        const bool big_size = e.size >= zip32_max, big_offset = e.offset >= zip32_max;
        std::string extra;
        if (big_size) {
            put64(extra, e.size);
            put64(extra, e.size);
        }
        if (big_offset) put64(extra, e.offset);
        put32(directory, 0x02014b50);
        put16(directory, (3u << 8) | 45u); // made by: Unix, 4.5
        put16(directory, big_size || big_offset ? 45 : 20);
        put16(directory, 0);
        put16(directory, 0);
        put16(directory, 0);
        put16(directory, dos_date);
        put32(directory, e.crc);
        put32(directory, big_size ? 0xffffffffu : static_cast<std::uint32_t>(e.size));
        put32(directory, big_size ? 0xffffffffu : static_cast<std::uint32_t>(e.size));
        put16(directory, static_cast<std::uint32_t>(e.name.size()));
        put16(directory, extra.empty() ? 0 : static_cast<std::uint32_t>(4 + extra.size()));
        put16(directory, 0);           // comment
        put16(directory, 0);           // disk
        put16(directory, 0);           // internal attributes
        put32(directory, 0644u << 16); // external attributes: a regular file, rw-r--r--
        put32(directory, big_offset ? 0xffffffffu : static_cast<std::uint32_t>(e.offset));
        directory += e.name;
        if (!extra.empty()) {
            put16(directory, 0x0001);
            put16(directory, static_cast<std::uint32_t>(extra.size()));
            directory += extra;
        }
    }
    const std::uint64_t directory_size = directory.size();
    const std::uint64_t count = m_entries.size();
    if (directory_offset >= zip32_max || directory_size >= zip32_max || count >= 0xffff) {
        const std::uint64_t record = directory_offset + directory_size;
        put32(directory, 0x06064b50);
        put64(directory, 44);
        put16(directory, 45);
        put16(directory, 45);
        put32(directory, 0);
        put32(directory, 0);
        put64(directory, count);
        put64(directory, count);
        put64(directory, directory_size);
        put64(directory, directory_offset);
        put32(directory, 0x07064b50);
        put32(directory, 0);
        put64(directory, record);
        put32(directory, 1);
    }
    put32(directory, 0x06054b50);
    put16(directory, 0);
    put16(directory, 0);
    put16(directory, count >= 0xffff ? 0xffffu : static_cast<std::uint32_t>(count));
    put16(directory, count >= 0xffff ? 0xffffu : static_cast<std::uint32_t>(count));
    put32(directory, directory_size >= zip32_max ? 0xffffffffu : static_cast<std::uint32_t>(directory_size));
    put32(directory, directory_offset >= zip32_max ? 0xffffffffu : static_cast<std::uint32_t>(directory_offset));
    put16(directory, 0);
    m_file.write(directory);
    m_file.commit();
}

#else // built without libzip: .npz archives are refused, saying why

namespace {
[[noreturn]] void unsupported(const std::string& what) {
    BRAIN_THROW(ErrorCode::Unsupported, "cannot ", what,
                ": this build of brain has no .npz support (it was built without libzip and zlib; install libzip-dev "
                "and rebuild); use .npy files instead");
}
} // namespace

Member::Member(Member&& other) noexcept
    : m_file(std::exchange(other.m_file, nullptr)), m_origin(std::move(other.m_origin)), m_stored(other.m_stored),
      m_header(std::move(other.m_header)) {}
Member::~Member() = default;
void Member::read(char*, std::size_t) {
    unsupported("read " + m_origin);
}
void Member::seek(std::uint64_t) {
    unsupported("read " + m_origin);
}
Reader::Reader(const std::filesystem::path& path, const InputLimits&) {
    unsupported("read the NumPy archive '" + path.string() + "'");
}
Reader::~Reader() = default;
bool Reader::has(const std::string&) const {
    return false;
}
Member Reader::open(const std::string& array) {
    unsupported("read " + array);
}
Writer::Writer(const std::filesystem::path& target, std::vector<std::filesystem::path> inputs)
    : m_file((unsupported("write the NumPy archive '" + target.string() + "'"), target), std::move(inputs)) {}
void Writer::begin(const std::string&, std::uint64_t) {}
void Writer::write(std::string_view) {}
void Writer::end() {}
void Writer::commit() {}

#endif

} // namespace brain::detail::npz

namespace brain {

bool npz_supported() noexcept {
    return BRAIN_HAVE_NPZ != 0;
}

} // namespace brain
