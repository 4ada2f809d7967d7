#include "synthetic.hpp"

#include <algorithm>
#include <brain/error.hpp>
#include <brain/random.hpp>
#include <cmath>
#include <cstdio>
#include <numbers>
#include <string>

namespace brain::app {

SyntheticKind parse_synthetic_kind(std::string_view text) {
    if (text == "regression") return SyntheticKind::Regression;
    if (text == "churn") return SyntheticKind::Churn;
    if (text == "xor") return SyntheticKind::Xor;
    BRAIN_THROW(ErrorCode::InvalidArgument, "unknown data set kind '", text,
                "'; expected one of: regression, churn, xor");
}

namespace {

std::string fmt(double v, int decimals) {
    char buf[64];
    std::snprintf(buf, sizeof buf, "%.*f", decimals, v);
    return buf;
}

const char* header_of(SyntheticKind kind) {
    switch (kind) {
    case SyntheticKind::Regression:
        return "x0,x1,x2,x3,x4,x5,y\n";
    case SyntheticKind::Churn:
        return "tenure_months,monthly_charges,total_charges,support_calls,contract_months,paperless_billing,"
               "senior,num_services,churned\n";
    case SyntheticKind::Xor:
        return "x0,x1,y\n";
    }
    return "";
}

void regression_row(std::string& out, Random& rng) {
    double x[6];
    for (double& v : x) v = rng.uniform(-2.0, 2.0);
    // Smooth but clearly nonlinear: a linear model cannot fit the sine, product and square terms.
    const double y = std::sin(x[0]) + 0.5 * x[1] * x[2] + 0.3 * x[3] * x[3] - 0.2 * x[4] +
                     0.5 * std::tanh(2.0 * x[5]) + 0.05 * rng.normal();
    for (double v : x) out += fmt(v, 4) + ",";
    out += fmt(y, 5) + "\n";
}

void churn_row(std::string& out, Random& rng) {
    const double contract_pick = rng.uniform();
    const int contract = contract_pick < 0.5 ? 1 : (contract_pick < 0.8 ? 12 : 24);
    // Longer contracts go with longer tenure, as in real subscription data.
    const int tenure =
        std::clamp(static_cast<int>(rng.uniform(0.0, 36.0) + contract * 1.2 + 6 * rng.normal()), 0, 72);
    const int services = 1 + static_cast<int>(rng.uniform(0.0, 6.0));
    const double monthly = std::clamp(18.0 + 12.0 * services + 8.0 * rng.normal(), 18.0, 120.0);
    const double total = monthly * std::max(tenure, 1) * (1.0 + 0.03 * rng.normal());
    int calls = 0;
    while (calls < 9 && rng.uniform() < 0.6) ++calls; // geometric, mean about 1.5
    const int paperless = rng.uniform() < 0.6 ? 1 : 0;
    const int senior = rng.uniform() < 0.16 ? 1 : 0;
    const double z = -0.6 + (contract == 1 ? 1.3 : (contract == 12 ? 0.0 : -1.0)) - 0.045 * tenure +
                     0.025 * (monthly - 65.0) + 0.45 * calls + 0.35 * paperless + 0.4 * senior - 0.12 * services;
    const double p = 1.0 / (1.0 + std::exp(-z));
    const bool churned = rng.uniform() < p;
    out += std::to_string(tenure) + "," + fmt(monthly, 2) + "," + fmt(total, 2) + "," + std::to_string(calls) +
           "," + std::to_string(contract) + "," + std::to_string(paperless) + "," + std::to_string(senior) + "," +
           std::to_string(services) + "," + (churned ? "yes" : "no") + "\n";
}

void xor_row(std::string& out, Random& rng) {
    const double a = rng.uniform(-1.0, 1.0);
    const double b = rng.uniform(-1.0, 1.0);
    out += fmt(a, 4) + "," + fmt(b, 4) + "," + (((a > 0) != (b > 0)) ? "1" : "0") + "\n";
}

} // namespace

void generate_csv(SyntheticKind kind, std::size_t rows, std::uint64_t seed,
                  const std::function<void(std::string_view)>& sink) {
    BRAIN_CHECK_ARG(rows > 0, "a data set needs at least one row, found --rows 0");
    Random rng(seed);
    constexpr std::size_t chunk = 1 << 20;
    std::string out = header_of(kind);
    out.reserve(chunk + 4096);
    for (std::size_t r = 0; r < rows; ++r) {
        switch (kind) {
        case SyntheticKind::Regression:
            regression_row(out, rng);
            break;
        case SyntheticKind::Churn:
            churn_row(out, rng);
            break;
        case SyntheticKind::Xor:
            xor_row(out, rng);
            break;
        }
        if (out.size() >= chunk) {
            sink(out);
            out.clear();
        }
    }
    if (!out.empty()) sink(out);
}

std::string generate_csv(SyntheticKind kind, std::size_t rows, std::uint64_t seed) {
    std::string out;
    generate_csv(kind, rows, seed, [&out](std::string_view part) { out.append(part); });
    return out;
}

Dataset make_regression(std::size_t rows, std::size_t inputs, std::uint64_t seed) {
    BRAIN_CHECK_ARG(rows > 0 && inputs > 0, "make_regression needs rows > 0 and inputs > 0, found ", rows, " and ",
                    inputs);
    Random rng(seed);
    std::vector<double> weight(inputs);
    for (double& w : weight) w = rng.uniform(-1.0, 1.0);
    Matrix x(rows, inputs);
    Matrix y(rows, 1);
    for (std::size_t r = 0; r < rows; ++r) {
        double target = 0.0;
        for (std::size_t c = 0; c < inputs; ++c) {
            const double v = rng.normal();
            x(r, c) = static_cast<float>(v);
            // Alternate sine and square terms, and couple neighbours, so the target is nonlinear throughout.
            target += weight[c] * (c % 2 == 0 ? std::sin(v) : 0.5 * v * v);
            if (c + 1 < inputs) target += 0.1 * v * x(r, c == 0 ? 0 : c - 1);
        }
        y(r, 0) = static_cast<float>(target / std::sqrt(static_cast<double>(inputs)) + 0.05 * rng.normal());
    }
    return Dataset(std::move(x), std::move(y));
}

} // namespace brain::app
