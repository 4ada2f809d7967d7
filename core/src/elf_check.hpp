// Internal: sanity checks of a shared object's ELF headers before dlopen. glibc maps a truncated file and
// then dies of SIGBUS touching the missing pages; reading the headers first turns that into a clear error.
#pragma once

#include <filesystem>
#include <optional>
#include <string>

namespace brain::detail {

// Why `path` cannot be a loadable shared object for this process, or nullopt if its headers look sound.
std::optional<std::string> check_shared_object(const std::filesystem::path& path);

} // namespace brain::detail
