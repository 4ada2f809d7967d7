#include "elf_check.hpp"

#include <cerrno>
#include <cstdint>
#include <cstring>
#include <elf.h>
#include <fstream>
#include <vector>

namespace brain::detail {

namespace {
#if defined(__x86_64__)
constexpr std::uint16_t k_host_machine = EM_X86_64;
#elif defined(__aarch64__)
constexpr std::uint16_t k_host_machine = EM_AARCH64;
#else
constexpr std::uint16_t k_host_machine = EM_NONE; // unknown host: skip the machine check
#endif
} // namespace

std::optional<std::string> check_shared_object(const std::filesystem::path& path) {
    std::error_code ec;
    const auto size = std::filesystem::file_size(path, ec);
    if (ec) return "its size cannot be read (" + ec.message() + ")";
    errno = 0;
    std::ifstream in(path, std::ios::binary);
    // The stream keeps no reason of its own; errno still holds the one open() gave.
    if (!in)
        return "it cannot be opened for reading (" + std::string(errno ? std::strerror(errno) : "reason unknown") +
               "); check that the file is readable by this user";
    Elf64_Ehdr header{};
    in.read(reinterpret_cast<char*>(&header), sizeof(header));
    if (size < EI_NIDENT || std::memcmp(header.e_ident, ELFMAG, SELFMAG) != 0)
        return "it is not an ELF shared object (no ELF magic number at its start)";
    if (header.e_ident[EI_CLASS] != ELFCLASS64) return "it is a 32-bit ELF file; this core is 64-bit";
    if (size < sizeof(header)) return "it is truncated: " + std::to_string(size) + " bytes, shorter than an ELF header";
    if (header.e_type != ET_DYN)
        return "it is an ELF file of type " + std::to_string(header.e_type) + ", not a shared object (ET_DYN)";
    if (k_host_machine != EM_NONE && header.e_machine != k_host_machine)
        return "it was built for another processor (ELF machine " + std::to_string(header.e_machine) +
               ", this process is " + std::to_string(k_host_machine) + ")";
    const std::uint64_t ph_end =
        header.e_phoff + static_cast<std::uint64_t>(header.e_phnum) * header.e_phentsize;
    if (header.e_phentsize != sizeof(Elf64_Phdr) || ph_end > size)
        return "it is truncated or corrupt: its program headers end at byte " + std::to_string(ph_end) +
               " but the file has " + std::to_string(size) + " bytes";
    std::vector<Elf64_Phdr> segments(header.e_phnum);
    in.seekg(static_cast<std::streamoff>(header.e_phoff));
    in.read(reinterpret_cast<char*>(segments.data()),
            static_cast<std::streamsize>(segments.size() * sizeof(Elf64_Phdr)));
    if (!in) return "its program headers cannot be read";
    for (const auto& segment : segments) {
        if (segment.p_type != PT_LOAD) continue;
        const std::uint64_t end = segment.p_offset + segment.p_filesz;
        if (end > size)
            return "it is truncated: a loadable segment ends at byte " + std::to_string(end) + " but the file has " +
                   std::to_string(size) + " bytes";
    }
    return std::nullopt;
}

} // namespace brain::detail
