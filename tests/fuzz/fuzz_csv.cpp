// libFuzzer target: the CSV loader. The input is served as a file through memfd (no disk traffic). Any input must
// either load a finite data set or throw brain::Error with a data or argument code.
#include <brain/dataset.hpp>
#include <brain/error.hpp>

#include <sys/mman.h>
#include <unistd.h>

#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <string>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    const int fd = memfd_create("fuzz.csv", 0);
    if (fd < 0) return 0;
    if (size && write(fd, data, size) != static_cast<ssize_t>(size)) {
        close(fd);
        return 0;
    }
    const std::string path = "/proc/self/fd/" + std::to_string(fd);
    try {
        brain::CsvOptions options;
        options.target_columns = {"y"};
        const auto set = brain::Dataset::from_csv(path, options);
        for (float v : set.features().data())
            if (!std::isfinite(v)) std::abort();
        if (set.features().rows() != set.targets().rows()) std::abort();
    } catch (const brain::Error& e) {
        const auto c = e.code();
        if (c != brain::ErrorCode::InvalidData && c != brain::ErrorCode::InvalidArgument &&
            c != brain::ErrorCode::IoError)
            std::abort();
    }
    close(fd);
    return 0;
}
