// brain::load_npy and brain::save_npy: one matrix as a NumPy .npy file (numpy.save / numpy.load), memory-mapped on
// reading; float32 written little-endian in C order, so a matrix saved and loaded again is the same bit for bit.
#pragma once

#include <brain/export.hpp>
#include <brain/limits.hpp>
#include <brain/matrix.hpp>
#include <filesystem>
#include <string>
#include <vector>

namespace brain {

// A 2-D array as rows x columns, a 1-D one as one column. Any plain numeric dtype (float16/32/64, int8-64,
// uint8-64, bool, either byte order) is converted to float32; every value must be finite in float32. Errors
// (InvalidData, IoError) name the file and, for a value, its row and column; the file is bounded by
// limits.max_file_bytes and its columns by limits.max_columns.
BRAIN_API Matrix load_npy(const std::filesystem::path& path, const InputLimits& limits = {});

// Writes `matrix` as a '<f4' C-order .npy file through OutputFile (whole or not at all; never over a symbolic
// link, directory, device or one of `inputs`).
BRAIN_API void save_npy(const std::filesystem::path& path, MatrixView matrix,
                        const std::vector<std::filesystem::path>& inputs = {});

// The feature rows of a NumPy .npz archive (its array "features") and their names (its "feature_names", empty when
// it has none), for prediction: no targets needed. load_npy's rules for the values; `limits` as Dataset::from_npz.
struct NpzFeatures {
    Matrix features;
    std::vector<std::string> names;
};
BRAIN_API NpzFeatures load_npz_features(const std::filesystem::path& path, const InputLimits& limits = {});
// Writes an .npz archive of one float32 array "features" and its "feature_names" (names.size() == columns), with
// no targets: Dataset::from_npz reads it with NpyOptions::target_columns naming the targets. Whole or not at all.
BRAIN_API void save_npz_features(const std::filesystem::path& path, const Matrix& features,
                                 const std::vector<std::string>& names,
                                 const std::vector<std::filesystem::path>& inputs = {});

// True when this build reads and writes .npz archives (built with libzip and zlib); without them every .npz call
// throws Unsupported saying so, and .npy files still work.
BRAIN_API bool npz_supported() noexcept;

} // namespace brain
