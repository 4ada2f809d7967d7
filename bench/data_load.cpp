#include "data_load.hpp"

#include <brain/brain.hpp>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <sys/resource.h>

namespace bench {

int run_data_load(const std::string& path, const std::vector<std::string>& targets, unsigned reps) {
    brain::CsvOptions options;
    options.target_columns = targets;
    double best = 1e300;
    std::size_t rows = 0, matrix_bytes = 0;
    for (unsigned r = 0; r < std::max(reps, 1u); ++r) {
        const auto start = std::chrono::steady_clock::now();
        const brain::Dataset data = brain::Dataset::from_csv(path, options);
        const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
        best = std::min(best, seconds);
        rows = data.size();
        matrix_bytes = (data.features().data().size() + data.targets().data().size()) * sizeof(float);
    }
    rusage usage{};
    ::getrusage(RUSAGE_SELF, &usage);
    const auto bytes = std::filesystem::file_size(path);
    char line[512];
    std::snprintf(line, sizeof line,
                  "{\"loader\": \"brain\", \"file\": \"%s\", \"bytes\": %llu, \"rows\": %zu, \"seconds\": %.4f, "
                  "\"mb_per_s\": %.1f, \"rows_per_s\": %.0f, \"matrix_bytes\": %zu, \"peak_rss_bytes\": %lld}",
                  path.c_str(), static_cast<unsigned long long>(bytes), rows, best, bytes / best / 1e6, rows / best,
                  matrix_bytes, static_cast<long long>(usage.ru_maxrss) * 1024);
    std::cout << line << std::endl;
    return 0;
}

} // namespace bench
