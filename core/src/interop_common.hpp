// Internal: what the ONNX and safetensors readers and writers share: PyTorch's nn.Sequential numbering, the
// little-endian number codecs, float16/bfloat16/float64 conversion and the checks on names read from elsewhere.
#pragma once

#include "utf8.hpp"

#include <bit>
#include <brain/error.hpp>
#include <brain/network.hpp>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace brain::detail {

// The nn.Sequential index of each layer's Linear module: an activation other than linear takes the next index
// (nn.Sequential(Linear, ReLU, Linear, Sigmoid) numbers its Linear modules 0 and 2).
// "1 dimension", "3 dimensions": a count with its noun, for messages.
inline std::string count_of(std::uint64_t n, const std::string& noun) {
    return std::to_string(n) + " " + noun + (n == 1 ? "" : "s");
}

inline std::vector<std::size_t> sequential_indices(const std::vector<LayerSpec>& layers) {
    std::vector<std::size_t> indices;
    std::size_t next = 0;
    for (const LayerSpec& layer : layers) {
        indices.push_back(next);
        next += layer.activation == Activation::Linear ? 1 : 2;
    }
    return indices;
}

// Little-endian loads and stores, whatever the host's byte order.
template <class UInt>
inline UInt load_le(const unsigned char* p) noexcept {
    UInt v = 0;
    for (std::size_t i = 0; i < sizeof(UInt); ++i) v = static_cast<UInt>(v | (static_cast<UInt>(p[i]) << (8 * i)));
    return v;
}

template <class UInt>
inline void store_le(UInt v, std::string& out) {
    for (std::size_t i = 0; i < sizeof(UInt); ++i) out.push_back(static_cast<char>((v >> (8 * i)) & 0xFF));
}

// Floats as little-endian IEEE binary32 bytes (ONNX raw_data, safetensors F32).
inline std::string float_bytes(const float* values, std::size_t count) {
    std::string out;
    out.reserve(count * 4);
    for (std::size_t i = 0; i < count; ++i) store_le(std::bit_cast<std::uint32_t>(values[i]), out);
    return out;
}

// IEEE binary16 to float32: exact (every half is a float).
inline float half_to_float(std::uint16_t h) noexcept {
    const std::uint32_t sign = static_cast<std::uint32_t>(h & 0x8000u) << 16;
    const std::uint32_t exponent = (h >> 10) & 0x1Fu;
    std::uint32_t mantissa = h & 0x3FFu;
    if (exponent == 0x1F) return std::bit_cast<float>(sign | 0x7F800000u | (mantissa << 13)); // inf, NaN
    if (exponent != 0) return std::bit_cast<float>(sign | ((exponent + 112) << 23) | (mantissa << 13));
    if (mantissa == 0) return std::bit_cast<float>(sign); // signed zero
    // Subnormal half: normalise into float's range.
    std::uint32_t e = 113;
    while ((mantissa & 0x400u) == 0) {
        mantissa <<= 1;
        --e;
    }
    return std::bit_cast<float>(sign | (e << 23) | ((mantissa & 0x3FFu) << 13));
}

// bfloat16 to float32: exact (the upper half of a float).
inline float bfloat16_to_float(std::uint16_t b) noexcept {
    return std::bit_cast<float>(static_cast<std::uint32_t>(b) << 16);
}

// The element types both readers convert to float32, once, as they read.
enum class StoredFloat { Float32, Float16, BFloat16, Float64 };

inline std::size_t stored_size(StoredFloat type) noexcept {
    switch (type) {
    case StoredFloat::Float16:
    case StoredFloat::BFloat16:
        return 2;
    case StoredFloat::Float64:
        return 8;
    default:
        return 4;
    }
}

// Element i of little-endian `bytes` of `type` as float32, or nothing when it is not finite (or, from float64,
// outside float32's range).
inline std::optional<float> stored_float(const unsigned char* bytes, std::size_t i, StoredFloat type) noexcept {
    float v = 0.0f;
    switch (type) {
    case StoredFloat::Float32:
        v = std::bit_cast<float>(load_le<std::uint32_t>(bytes + 4 * i));
        break;
    case StoredFloat::Float16:
        v = half_to_float(load_le<std::uint16_t>(bytes + 2 * i));
        break;
    case StoredFloat::BFloat16:
        v = bfloat16_to_float(load_le<std::uint16_t>(bytes + 2 * i));
        break;
    case StoredFloat::Float64: {
        const double d = std::bit_cast<double>(load_le<std::uint64_t>(bytes + 8 * i));
        if (!(std::fabs(d) <= static_cast<double>(std::numeric_limits<float>::max()))) return std::nullopt;
        v = static_cast<float>(d);
        break;
    }
    }
    if (!std::isfinite(v)) return std::nullopt;
    return v;
}

// a * b, or nothing when it overflows.
inline std::optional<std::uint64_t> checked_mul(std::uint64_t a, std::uint64_t b) noexcept {
    if (a != 0 && b > std::numeric_limits<std::uint64_t>::max() / a) return std::nullopt;
    return a * b;
}

// What is wrong with names read from a file (feature names, class labels...), if anything: text that is not
// UTF-8, or, when `unique`, an empty or repeated entry. "entry 3: ..." for messages.
inline std::optional<std::string> names_problem(const std::vector<std::string>& names, bool unique) {
    std::unordered_map<std::string_view, std::size_t> seen;
    for (std::size_t i = 0; i < names.size(); ++i) {
        if (!is_valid_utf8(names[i]))
            return "entry " + std::to_string(i) + " (" + quote_excerpt(names[i]) + ") is not valid UTF-8";
        if (!unique) continue;
        if (names[i].empty()) return "entry " + std::to_string(i) + " is empty; every entry needs a name";
        if (const auto [at, fresh] = seen.emplace(names[i], i); !fresh)
            return "entry " + std::to_string(i) + " (" + quote_excerpt(names[i]) + ") repeats entry " +
                   std::to_string(at->second);
    }
    return std::nullopt;
}

// "4 -> 16 relu -> 3 softmax" for messages and documentation strings.
inline std::string describe_layers(const std::vector<LayerSpec>& layers) {
    if (layers.empty()) return "no layers";
    std::string s = std::to_string(layers.front().inputs);
    for (const LayerSpec& l : layers) s += " -> " + std::to_string(l.outputs) + " " + std::string(to_string(l.activation));
    return s;
}

} // namespace brain::detail
