// bf16 on the host: the conversion the kernels make (kernels/dense_math.cuh's brain_to_bf16), bit for bit, for data
// the host converts before it crosses the bus (staged mixed-precision batches).
#pragma once

#include <cstdint>
#include <cstring>

namespace brain::cuda {

// `value` rounded to the nearest bf16 (ties to even); a NaN stays a NaN.
inline std::uint16_t to_bf16(float value) noexcept {
    std::uint32_t bits = 0;
    std::memcpy(&bits, &value, sizeof bits);
    if ((bits & 0x7fffffffu) > 0x7f800000u) return static_cast<std::uint16_t>((bits >> 16) | 0x40u);
    bits += 0x7fffu + ((bits >> 16) & 1u);
    return static_cast<std::uint16_t>(bits >> 16);
}

// The float32 value of a bf16.
inline float from_bf16(std::uint16_t value) noexcept {
    const std::uint32_t bits = static_cast<std::uint32_t>(value) << 16;
    float out = 0.0f;
    std::memcpy(&out, &bits, sizeof out);
    return out;
}

} // namespace brain::cuda
