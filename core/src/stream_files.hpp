// Internal: the open .npy files of a StreamingDataset, read a chunk of rows at a time with pread (no mapping, so a
// file far larger than the process's address-space limit streams), and the reader a training session pulls
// batches from (stream_reader.cpp).
#pragma once

#include "input_file.hpp"
#include "npy_format.hpp"

#include <brain/streaming_dataset.hpp>
#include <cstdint>
#include <string>
#include <vector>

namespace brain {

// One .npy array on disk.
struct StreamArray {
    detail::InputFile file;
    detail::npy::Header header;
    std::string origin;

    // Rows [first, first + count) converted to float32 at dst (count x header.columns); `raw` is scratch space.
    // InvalidData naming the file, row and column for a value not finite in float32; IoError for a failed read.
    void read(std::uint64_t first, std::uint64_t count, float* dst, std::string& raw) const;
};

struct StreamingDataset::Files {
    StreamArray features;
    StreamArray targets;
    std::uint64_t rows = 0;
    std::vector<std::string> feature_names;
    std::vector<std::string> target_names;
    StreamOptions options;
};

} // namespace brain
