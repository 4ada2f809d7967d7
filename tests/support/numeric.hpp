// Shared numeric comparators for every test: norm-wise relative error and element-wise closeness.
#pragma once

#include <brain/dense_math.hpp>

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <span>
#include <sstream>
#include <string>
#include <vector>

namespace brain::test {

// ||a - b|| / max(||b||, tiny) (brain::math::relative_error); infinity when sizes differ or any value is not
// finite.
inline double relative_error(std::span<const float> a, std::span<const float> b) {
    return a.size() == b.size() ? brain::math::relative_error(a.data(), b.data(), a.size()) : INFINITY;
}

inline double relative_error(const std::vector<float>& a, const std::vector<float>& b) {
    return relative_error(std::span<const float>(a), std::span<const float>(b));
}

// True when |a - b| <= atol + rtol |b| for every element.
inline bool all_close(std::span<const float> a, std::span<const float> b, double rtol, double atol) {
    if (a.size() != b.size()) return false;
    for (std::size_t i = 0; i < a.size(); ++i) {
        if (!(std::fabs(static_cast<double>(a[i]) - b[i]) <= atol + rtol * std::fabs(static_cast<double>(b[i]))))
            return false;
    }
    return true;
}

// Scalar closeness with the same rule.
inline bool close(double a, double b, double rtol, double atol) { return std::fabs(a - b) <= atol + rtol * std::fabs(b); }

} // namespace brain::test
