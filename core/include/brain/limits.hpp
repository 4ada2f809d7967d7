// brain::InputLimits: the declared bounds on untrusted input (CSV and model files). Each refusal names the limit
// it hit and how to raise it; docs/reliability.md ("Limits") lists them.
#pragma once

#include <cstddef>
#include <cstdint>

namespace brain {

// Bounds checked while a CSV or model file is read, before the memory they guard is allocated.
struct InputLimits {
    // Largest file read, in bytes (the brain command's --max-input-mib). A CSV file of numbers takes about 3.5
    // times its size in memory while it is read (85 MB: a peak of 292 MiB); a model file about 6 times.
    std::uint64_t max_file_bytes = std::uint64_t{1} << 30;
    // Most columns in a CSV header (--max-columns).
    std::size_t max_columns = 100'000;
    // Most distinct labels in a class-label column (--max-classes): one output unit per class.
    std::size_t max_classes = 1'000;
    // Longest CSV cell, in bytes (--max-cell-bytes).
    std::size_t max_cell_bytes = 64 * 1024;
};

} // namespace brain
