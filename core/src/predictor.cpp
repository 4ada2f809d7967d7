// brain::Predictor and Network::predict_with_backend: prediction through a plugin's predictor (ABI 1.2).
#include "network_rules.hpp"
#include "plugin_registry.hpp"

#include <algorithm>
#include <brain/error.hpp>
#include <brain/network.hpp>
#include <brain/predictor.hpp>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <future>
#include <optional>
#include <string>
#include <system_error>
#include <vector>

namespace brain {

namespace {

// The column count of raw inputs, checked before anything reaches a backend.
void check_columns(const char* who, const Matrix& inputs, std::size_t input_size,
                   const std::vector<std::string>& feature_names) {
    if (inputs.cols() == input_size) return;
    std::string names;
    for (std::size_t i = 0; i < feature_names.size() && i < 8; ++i) names += (i ? ", " : " (") + feature_names[i];
    if (!names.empty()) names += feature_names.size() > 8 ? ", ...)" : ")";
    BRAIN_THROW(ErrorCode::InvalidArgument, who, ": expected ", input_size, " input columns", names, ", found ",
                inputs.cols(), "; pass one column per feature the network was built for");
}

// The index of the first NaN or infinity in values[0, n), or n. It tests exponent bits, a loop the compiler
// vectorises, so that the scan keeps pace with a device: it runs while the backend works on the previous batch.
std::size_t first_non_finite(const float* values, std::size_t n) noexcept {
    constexpr std::size_t block = 4096;
    for (std::size_t begin = 0; begin < n; begin += block) {
        const std::size_t end = std::min(n, begin + block);
        std::uint32_t any = 0;
        for (std::size_t i = begin; i < end; ++i) {
            std::uint32_t bits = 0;
            std::memcpy(&bits, values + i, sizeof bits);
            any |= static_cast<std::uint32_t>((bits & 0x7f800000u) == 0x7f800000u);
        }
        if (any)
            for (std::size_t i = begin; i < end; ++i)
                if (!std::isfinite(values[i])) return i;
    }
    return n;
}

} // namespace

struct Predictor::Impl {
    std::shared_ptr<detail::Plugin> plugin;
    brain_predictor* handle = nullptr;
    TrainingBackend backend;
    std::size_t batch_rows = 0;
    std::size_t input_size = 0;
    std::size_t output_size = 0;
    std::optional<Standardization> standardization;
    std::vector<std::string> feature_names;
    std::string closed_reason = "the predictor was closed";

    explicit Impl(const TrainingBackend& b) : backend(b) {}
    ~Impl() { close(); }

    void close() noexcept {
        if (handle) plugin->api().predictor_close(handle);
        handle = nullptr;
    }

    void require_open() const {
        BRAIN_CHECK(handle, ErrorCode::InvalidState, "predictor on ", backend.describe(),
                    " is not usable: ", closed_reason, "; open a new Predictor");
    }
};

Predictor::Predictor(const Network& network, const TrainingBackend& backend, std::size_t max_batch_rows)
    : m_impl(std::make_unique<Impl>(backend)) {
    Impl& p = *m_impl;
    p.plugin = detail::PluginRegistry::instance().get(backend.plugin_name());
    const brain_plugin_api& api = p.plugin->api();
    const PluginRecord& record = p.plugin->record();
    // The core's loader refuses a table with only some of the three entries, so one check covers all of them.
    BRAIN_CHECK(api.predictor_open, ErrorCode::Unsupported, "backend \"", backend.plugin_name(),
                "\" cannot predict: its plugin was built against ABI ", record.abi_major, ".", record.abi_minor,
                " (the predictor arrived in ABI 1.2) or does not offer one; use Network::predict on the host, or "
                "rebuild the plugin against this SDK");
    p.input_size = network.input_size();
    p.output_size = network.output_size();
    p.standardization = network.standardization();
    p.feature_names = network.feature_names();

    std::vector<brain_layer_desc> layers;
    for (const LayerSpec& layer : network.layers())
        layers.push_back(brain_layer_desc{static_cast<uint32_t>(layer.inputs), static_cast<uint32_t>(layer.outputs),
                                          static_cast<int32_t>(layer.activation), detail::kLeakyReluSlope});
    const brain_model_desc model{sizeof(brain_model_desc), static_cast<uint32_t>(layers.size()), layers.data(),
                                 static_cast<int32_t>(network.loss())};
    brain_predictor_desc desc{};
    desc.struct_size = sizeof(desc);
    desc.device = backend.device();
    desc.memory_budget_bytes = backend.memory_budget_mib() * 1024ull * 1024ull;
    desc.model = &model;
    desc.parameters = network.parameters().data();
    desc.parameter_count = network.parameters().size();
    desc.precision = static_cast<int32_t>(backend.precision());

    // The plugin checks its budget before it allocates anything, so a refused size costs nothing: halve the batch
    // until it fits.
    std::size_t rows = max_batch_rows ? max_batch_rows : default_batch_rows;
    for (;;) {
        desc.max_batch_rows = rows;
        brain_predictor* handle = nullptr;
        try {
            p.plugin->check(api.predictor_open(&desc, &handle));
        } catch (const Error& e) {
            if (e.code() != ErrorCode::BudgetExceeded || rows <= 1) throw;
            rows = (rows + 1) / 2;
            continue;
        }
        BRAIN_CHECK(handle, ErrorCode::PluginFailure, "plugin \"", backend.plugin_name(),
                    "\" reported success from predictor_open but returned no predictor");
        p.handle = handle;
        p.batch_rows = rows;
        return;
    }
}

Predictor::~Predictor() = default;
Predictor::Predictor(Predictor&&) noexcept = default;
Predictor& Predictor::operator=(Predictor&&) noexcept = default;

Matrix Predictor::predict(const Matrix& inputs) {
    BRAIN_CHECK(m_impl, ErrorCode::InvalidState, "predictor was moved from; use the moved-to predictor");
    Impl& p = *m_impl;
    p.require_open();
    check_columns("Predictor::predict", inputs, p.input_size, p.feature_names);
    const std::size_t rows = inputs.rows(), in = p.input_size, out_width = p.output_size;
    Matrix out(rows, out_width);
    // Batch k + 1 is checked (and standardised) here while the backend works on batch k on a helper thread, so
    // the host's pass over the rows costs no time beside a device; calls into the plugin never overlap.
    Matrix standardised[2];
    std::future<void> running;
    std::size_t running_begin = 0, running_rows = 0;
    const auto run = [&p](const float* source, std::size_t n, float* target) {
        p.plugin->check(p.plugin->api().predictor_run(p.handle, source, n, target));
    };
    // Waits for the batch in flight; checks its outputs. A failed call leaves the backend's state unknown.
    const auto finish = [&] {
        if (!running.valid()) return;
        try {
            running.get();
        } catch (const Error& e) {
            p.closed_reason = "predictor_run failed (" + std::string(to_string(e.code())) + ")";
            p.close();
            throw;
        }
        // A NaN or infinite prediction is never handed back as if it were an answer.
        const float* target = out.data().data() + running_begin * out_width;
        const std::size_t bad = first_non_finite(target, running_rows * out_width);
        BRAIN_CHECK(bad == running_rows * out_width, ErrorCode::NumericalError, "prediction on ",
                    p.backend.describe(), ": input row ", running_begin + bad / out_width,
                    " gives a non-finite output (output ", bad % out_width, " is ", target[bad],
                    "): its values overflow this model's arithmetic (float32, or the precision asked for), or lie "
                    "far outside the data the model was trained on; check that row");
    };
    for (std::size_t begin = 0, index = 0; begin < rows; begin += p.batch_rows, ++index) {
        const std::size_t n = std::min(p.batch_rows, rows - begin);
        const float* source = inputs.data().data() + begin * in;
        const std::size_t bad = first_non_finite(source, n * in);
        if (bad < n * in) {
            finish();
            BRAIN_THROW(ErrorCode::InvalidData, "prediction on ", p.backend.describe(), ": input row ",
                        begin + bad / in, ", column ", bad % in, " is ", source[bad],
                        "; every input must be finite");
        }
        if (p.standardization) {
            const auto first = inputs.data().begin() + static_cast<std::ptrdiff_t>(begin * in);
            Matrix& chunk = standardised[index % 2];
            chunk = Matrix(n, in, std::vector<float>(first, first + static_cast<std::ptrdiff_t>(n * in)));
            p.standardization->apply(chunk);
            source = chunk.data().data();
        }
        finish();
        float* target = out.data().data() + begin * out_width;
        running_begin = begin;
        running_rows = n;
        if (begin + n < rows) {
            try {
                running = std::async(std::launch::async, run, source, n, target);
                continue;
            } catch (const std::system_error&) {
                // No thread to be had: this batch runs here, without the overlap.
            }
        }
        std::promise<void> done;
        try {
            run(source, n, target);
            done.set_value();
        } catch (...) {
            done.set_exception(std::current_exception());
        }
        running = done.get_future();
    }
    finish();
    return out;
}

std::size_t Predictor::batch_rows() const noexcept {
    return m_impl ? m_impl->batch_rows : 0;
}

const TrainingBackend& Predictor::backend() const noexcept {
    return m_impl->backend;
}

void Predictor::close() noexcept {
    if (m_impl) m_impl->close();
}

bool Predictor::is_open() const noexcept {
    return m_impl && m_impl->handle;
}

Matrix Network::predict_with_backend(const Matrix& inputs, const TrainingBackend& backend) const {
    // The columns before the backend opens; the values stream with the rows (Predictor::predict).
    check_columns("Network::predict_with_backend", inputs, input_size(), feature_names());
    // The batch never needs to be larger than the input.
    Predictor predictor(*this, backend, std::clamp<std::size_t>(inputs.rows(), 1, Predictor::default_batch_rows));
    return predictor.predict(inputs);
}

} // namespace brain
