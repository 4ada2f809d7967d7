// The data, networks and session fixture the kit trains with: small enough to run in seconds on any backend,
// deep enough (three layers, tanh and ReLU) to expose a wrong gradient or batch order.
#include "kit_fixtures.hpp"

#include "check_table.hpp"

#include <brain/random.hpp>
#include <cmath>
#include <cstdlib>

namespace brain::conformance {

KitContext::KitContext(const ConformanceOptions& options, std::function<PluginRecord()> load,
                       std::filesystem::path file)
    : m_options(options), m_load(std::move(load)), m_file(std::move(file)) {}

const PluginUnderTest& KitContext::plugin() {
    if (!m_plugin) {
        PluginUnderTest plugin;
        plugin.record = m_load();
        plugin.api = &plugin_api(plugin.record);
        m_plugin = std::move(plugin);
    }
    return *m_plugin;
}

const SessionFixture& KitContext::fixture() {
    if (!m_fixture) {
        const PluginUnderTest& p = plugin();
        m_fixture = std::make_unique<SessionFixture>(
            SessionFixture{p, m_options, m_options.budget_mib * 1024ull * 1024ull,
                           TrainingBackend::plugin(p.record.name, m_options.device, m_options.budget_mib),
                           regression_data(150, 8, 3, 5), TrainConfig{3, 32, true, 99}});
    }
    return *m_fixture;
}

void KitContext::prepare_check_process() const {
    if (m_file.empty()) return;
    std::error_code ec;
    const std::string dir = std::filesystem::absolute(m_file, ec).parent_path().string();
    const char* old = std::getenv("BRAIN_PLUGIN_PATH");
    const std::string current = old ? old : "";
    if (current == dir || current.rfind(dir + ":", 0) == 0) return;
    const std::string value = current.empty() ? dir : dir + ":" + current;
    ::setenv("BRAIN_PLUGIN_PATH", value.c_str(), 1); // this process is the check's own and single-threaded
}

namespace {

Matrix seeded_features(std::size_t rows, std::size_t inputs, Random& rng) {
    Matrix x(rows, inputs);
    for (std::size_t r = 0; r < rows; ++r)
        for (std::size_t c = 0; c < inputs; ++c) x(r, c) = static_cast<float>(rng.uniform(-1.0, 1.0));
    return x;
}

// A fixed linear combination of a row's features, different for each output o.
float mix(const Matrix& x, std::size_t r, std::size_t o) {
    float s = 0.0f;
    for (std::size_t c = 0; c < x.cols(); ++c) s += x(r, c) * ((c + o) % 3 == 0 ? 1.0f : -0.5f);
    return s + 0.3f * static_cast<float>(o);
}

} // namespace

Dataset regression_data(std::size_t rows, std::size_t inputs, std::size_t outputs, std::uint64_t seed) {
    Matrix x(rows, inputs), y(rows, outputs);
    Random rng(seed);
    for (std::size_t r = 0; r < rows; ++r) {
        float s = 0.0f;
        for (std::size_t c = 0; c < inputs; ++c) {
            x(r, c) = static_cast<float>(rng.uniform(-1.0, 1.0));
            s += x(r, c) * (c % 3 == 0 ? 1.0f : -0.5f);
        }
        for (std::size_t o = 0; o < outputs; ++o) y(r, o) = std::tanh(s + 0.3f * static_cast<float>(o));
    }
    return Dataset(std::move(x), std::move(y));
}

Dataset binary_data(std::size_t rows, std::size_t inputs, std::size_t outputs, std::uint64_t seed) {
    Random rng(seed);
    Matrix x = seeded_features(rows, inputs, rng);
    Matrix y(rows, outputs);
    for (std::size_t r = 0; r < rows; ++r)
        for (std::size_t o = 0; o < outputs; ++o) y(r, o) = mix(x, r, o) > 0.15f ? 1.0f : 0.0f;
    return Dataset(std::move(x), std::move(y));
}

Dataset class_data(std::size_t rows, std::size_t inputs, std::size_t classes, std::uint64_t seed) {
    Random rng(seed);
    Matrix x = seeded_features(rows, inputs, rng);
    Matrix y(rows, classes, 0.0f);
    for (std::size_t r = 0; r < rows; ++r) {
        std::size_t best = 0;
        for (std::size_t o = 1; o < classes; ++o)
            if (mix(x, r, o) > mix(x, r, best)) best = o;
        y(r, best) = 1.0f;
    }
    return Dataset(std::move(x), std::move(y));
}

Network kit_network(const Optimizer& optimizer) {
    return Network::builder()
        .input_size(8)
        .dense(16, Activation::Tanh)
        .dense(12, Activation::Relu)
        .dense(3, Activation::Linear)
        .optimizer(optimizer)
        .seed(11)
        .build();
}

Agreement compare_runs(const Network& trained, const FitReport& fit, const Network& reference,
                       const FitReport& reference_fit) {
    Agreement out;
    out.parameter_error = relative_error(trained.parameters(), reference.parameters());
    if (!(out.parameter_error < k_parameter_tolerance)) {
        out.detail = "the parameters differ from the CPU reference's by " + sci(out.parameter_error) +
                     " (relative, limit " + sci(k_parameter_tolerance) + ")";
        return out;
    }
    if (fit.epoch_losses.size() != reference_fit.epoch_losses.size()) {
        out.detail = std::to_string(fit.epoch_losses.size()) + " epoch losses, the reference has " +
                     std::to_string(reference_fit.epoch_losses.size());
        return out;
    }
    for (std::size_t e = 0; e < fit.epoch_losses.size(); ++e) {
        const double a = fit.epoch_losses[e], b = reference_fit.epoch_losses[e];
        if (!(std::fabs(a - b) <= 1e-6 + 1e-4 * std::fabs(b))) {
            out.detail = "epoch " + std::to_string(e) + " loss is " + std::to_string(a) + ", the CPU reference's " +
                         std::to_string(b) + "; report the sample-weighted mean of the batch losses";
            return out;
        }
    }
    out.agrees = true;
    return out;
}

} // namespace brain::conformance
