// brain::Predictor and Network::predict_with_backend: prediction through a plugin's predictor (ABI 1.2).
#include "network_rules.hpp"
#include "parallel.hpp"
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
void check_columns(const char* who, MatrixView inputs, std::size_t input_size,
                   const std::vector<std::string>& feature_names) {
    detail::require_readable(inputs, who);
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

// The most bytes of one staging slot: two slots of page-locked rows per predictor.
constexpr std::size_t stage_bytes_max = std::size_t{64} << 20;
// Rows per job of the host's pass over a batch: about 1 MiB, so that a job's check and copy share the cache.
std::size_t rows_per_job(std::size_t width) noexcept {
    return std::max<std::size_t>(1, (std::size_t{1} << 20) / (sizeof(float) * std::max<std::size_t>(1, width)));
}

} // namespace

struct PinnedRows::State {
    std::shared_ptr<detail::Plugin> plugin;
    void* memory = nullptr;
    std::size_t bytes = 0;

    ~State() { release(); }
    void release() noexcept {
        if (memory) plugin->release("host_memory_unpin", plugin->api().host_memory_unpin, memory);
        memory = nullptr;
    }
    bool covers(const void* begin, std::size_t n) const noexcept {
        const auto* first = static_cast<const char*>(memory);
        const auto* p = static_cast<const char*>(begin);
        return memory && p >= first && n <= bytes && static_cast<std::size_t>(p - first) <= bytes - n;
    }
};

PinnedRows::PinnedRows() noexcept = default;
PinnedRows::~PinnedRows() = default;
PinnedRows::PinnedRows(PinnedRows&&) noexcept = default;
PinnedRows& PinnedRows::operator=(PinnedRows&&) noexcept = default;

bool PinnedRows::pinned() const noexcept {
    return m_state && m_state->memory;
}

void PinnedRows::release() noexcept {
    if (m_state) m_state->release();
}

namespace {

// Page-locks `bytes` at `memory` through the plugin; null when the plugin offers no pinning.
std::shared_ptr<PinnedRows::State> pin_through(const std::shared_ptr<detail::Plugin>& plugin, void* memory,
                                               std::size_t bytes) {
    if (!plugin->api().host_memory_pin || bytes == 0) return nullptr;
    plugin->call("host_memory_pin", plugin->api().host_memory_pin, memory, static_cast<std::uint64_t>(bytes));
    auto state = std::make_shared<PinnedRows::State>();
    state->plugin = plugin;
    state->memory = memory;
    state->bytes = bytes;
    return state;
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
    // The user's pinned ranges (Predictor::pin), so that predict() hands rows inside one to the plugin as they are.
    std::vector<std::weak_ptr<PinnedRows::State>> user_pins;
    // Two page-locked slots the host's pass writes batches into while the backend reads the other (device
    // backends only: those that offer pinning). Storage before its pin, so the pin is released first.
    struct Stage {
        std::unique_ptr<float[]> storage;
        PinnedRows pin;
    };
    Stage stages[2];
    std::size_t stage_rows = 0; // rows per staged batch; 0 until the slots exist
    bool staging_failed = false;

    // True when [data, data + floats) lies inside memory the user pinned through this predictor.
    bool user_pinned(const float* data, std::size_t floats) {
        std::erase_if(user_pins, [](const std::weak_ptr<PinnedRows::State>& pin) { return pin.expired(); });
        for (const auto& weak : user_pins)
            if (const auto pin = weak.lock(); pin && pin->covers(data, floats * sizeof(float))) return true;
        return false;
    }

    // The staging slots, made and pinned on first use; false when the plugin offers no pinning or it failed (the
    // rows then go to the plugin as they are, and it stages them itself).
    bool ensure_stages() {
        if (stage_rows) return true;
        if (staging_failed || !plugin->api().host_memory_pin) return false;
        const std::size_t rows =
            std::clamp<std::size_t>(stage_bytes_max / (sizeof(float) * input_size), 1, batch_rows);
        try {
            for (Stage& stage : stages) {
                stage.storage = std::make_unique_for_overwrite<float[]>(rows * input_size);
                stage.pin.m_state = pin_through(plugin, stage.storage.get(), rows * input_size * sizeof(float));
            }
        } catch (const std::exception&) {
            // Not a failure of prediction: without page-locked slots the plugin copies the rows itself.
            for (Stage& stage : stages) stage = Stage{};
            staging_failed = true;
            return false;
        }
        stage_rows = rows;
        return true;
    }

    explicit Impl(const TrainingBackend& b) : backend(b) {}
    ~Impl() { close(); }

    void close() noexcept {
        if (handle) plugin->release("predictor_close", plugin->api().predictor_close, handle);
        handle = nullptr;
    }

    void require_open() const {
        BRAIN_CHECK(handle, ErrorCode::InvalidState, "predictor on ", backend.describe(),
                    " is not usable: ", closed_reason, "; open a new Predictor");
    }
};

Predictor::Predictor(const Network& network, const TrainingBackend& backend, std::size_t max_batch_rows)
    : m_impl(std::make_unique<Impl>(backend)) {
    detail::require_layers(network);
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
            p.plugin->call("predictor_open", api.predictor_open, &desc, &handle);
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

Matrix Predictor::predict(MatrixView inputs) {
    BRAIN_CHECK(m_impl, ErrorCode::InvalidState, "predictor was moved from; use the moved-to predictor");
    Impl& p = *m_impl;
    p.require_open();
    check_columns("Predictor::predict", inputs, p.input_size, p.feature_names);
    const std::size_t rows = inputs.rows(), in = p.input_size, out_width = p.output_size;
    Matrix out(rows, out_width);
    if (rows == 0) return out;
    // A device backend (one that pins host memory) gets rows it can read directly: the user's own pinned rows, or
    // each batch checked, standardised and written into a page-locked slot by the host's threads. Batch k + 1 is
    // prepared here while the backend works on batch k on a helper thread, so the host's pass costs no time beside
    // a device; calls into the plugin never overlap. A host backend gets the rows as they are, checked by one
    // thread, so that the pass does not take the CPUs the backend computes on.
    const bool device = p.plugin->api().host_memory_pin != nullptr;
    // A plugin that checks its inputs (BRAIN_FEATURE_PREDICT_CHECKS_INPUTS) spares the host its pass over them; the
    // host scans a batch only when the plugin reports a non-finite input, to name its row and column.
    const bool plugin_checks = p.plugin->record().capabilities.offers(BRAIN_FEATURE_PREDICT_CHECKS_INPUTS);
    const bool direct = !p.standardization && p.user_pinned(inputs.data(), rows * in);
    const bool staged = device && !direct && p.ensure_stages();
    const std::size_t step = staged ? p.stage_rows : p.batch_rows;
    const unsigned threads = device ? std::min(8u, detail::load_threads()) : 1u;
    const bool host_work = !plugin_checks || staged || p.standardization.has_value();
    std::vector<float> standardised[2]; // a host backend's standardised batches (the staged slots otherwise)
    std::future<void> running;
    std::size_t running_begin = 0, running_rows = 0;
    const auto run = [&p](const float* source, std::size_t n, float* target) {
        p.plugin->call("predictor_run", p.plugin->api().predictor_run, p.handle, source,
                       static_cast<std::uint64_t>(n), target);
    };
    // Throws InvalidData naming the input at index `bad` of the rows from `begin` on.
    const auto refuse_non_finite = [&](std::size_t begin, std::size_t bad) {
        const float* source = inputs.data() + begin * in;
        BRAIN_THROW(ErrorCode::InvalidData, "prediction on ", p.backend.describe(), ": input row ",
                    begin + bad / in, ", column ", bad % in, " is ", source[bad], "; every input must be finite");
    };
    // Waits for the batch in flight; checks its outputs. A failed call leaves the backend's state unknown, except
    // a plugin's refusal of a non-finite input, which it reports before computing anything.
    const auto finish = [&] {
        if (!running.valid()) return;
        try {
            running.get();
        } catch (const Error& e) {
            if (plugin_checks && e.code() == ErrorCode::InvalidData) {
                const float* source = inputs.data() + running_begin * in;
                const std::size_t bad = first_non_finite(source, running_rows * in);
                if (bad < running_rows * in) refuse_non_finite(running_begin, bad);
                // Finite rows the standardisation took out of float32's range: the plugin computed nothing.
                if (p.standardization)
                    BRAIN_THROW(
                        ErrorCode::NumericalError, "prediction on ", p.backend.describe(), ": rows ", running_begin,
                        " to ", running_begin + running_rows - 1,
                        " are finite but their standardised values are not (the model's standard deviations "
                        "are too small for them); check those rows against the training data");
            }
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
    // Checks rows [begin, begin + n) and, given a target, writes them there standardised (or as they are); the
    // index (within the batch) of the first non-finite input, or n * in.
    const auto prepare = [&](std::size_t begin, std::size_t n, float* target) {
        const float* source = inputs.data() + begin * in;
        if (plugin_checks && !target) return n * in; // nothing to do on the host
        const std::size_t per_job = rows_per_job(in), jobs = (n + per_job - 1) / per_job;
        std::vector<std::size_t> first_bad(jobs, n * in);
        detail::parallel_jobs(
            jobs, threads,
            [&](std::size_t job) {
                const std::size_t r0 = job * per_job, r1 = std::min(n, r0 + per_job);
                if (!plugin_checks) {
                    const std::size_t bad = first_non_finite(source + r0 * in, (r1 - r0) * in);
                    if (bad < (r1 - r0) * in) {
                        first_bad[job] = r0 * in + bad;
                        return;
                    }
                }
                if (!target) return;
                if (!p.standardization) {
                    std::memcpy(target + r0 * in, source + r0 * in, (r1 - r0) * in * sizeof(float));
                    return;
                }
                // The expression of Standardization::apply, so that the host's predict sees the same values.
                const std::vector<float>& mean = p.standardization->mean;
                const std::vector<float>& stddev = p.standardization->stddev;
                for (std::size_t r = r0; r < r1; ++r)
                    for (std::size_t c = 0; c < in; ++c)
                        target[r * in + c] = (source[r * in + c] - mean[c]) / stddev[c];
            },
            [] {});
        return *std::min_element(first_bad.begin(), first_bad.end());
    };
    for (std::size_t begin = 0, index = 0; begin < rows; begin += step, ++index) {
        const std::size_t n = std::min(step, rows - begin);
        // Where the rows go before the backend reads them: a page-locked slot, a standardised copy, or nowhere.
        // The buffer batch k - 1 read is free: finish() waited for it before batch k started.
        float* copy = nullptr;
        if (staged) {
            copy = p.stages[index % 2].storage.get();
        } else if (p.standardization) {
            standardised[index % 2].resize(n * in);
            copy = standardised[index % 2].data();
        }
        const std::size_t bad = prepare(begin, n, copy);
        if (bad < n * in) {
            finish();
            refuse_non_finite(begin, bad);
        }
        const float* source = copy ? copy : inputs.data() + begin * in;
        finish();
        float* target = out.data().data() + begin * out_width;
        running_begin = begin;
        running_rows = n;
        // With nothing for the host to do on the next batch (the plugin checks it, no copy), a helper thread
        // would only add its start to every call.
        if (begin + n < rows && host_work) {
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

PinnedRows Predictor::pin(MatrixView rows) {
    BRAIN_CHECK(m_impl, ErrorCode::InvalidState, "predictor was moved from; use the moved-to predictor");
    Impl& p = *m_impl;
    p.require_open();
    PinnedRows guard;
    // The ABI takes a mutable address; the plugin only page-locks it and never writes through it.
    auto* memory = const_cast<float*>(rows.data());
    guard.m_state = pin_through(p.plugin, memory, rows.size() * sizeof(float));
    if (guard.m_state) p.user_pins.push_back(guard.m_state);
    return guard;
}

std::size_t Predictor::batch_rows() const noexcept {
    return m_impl ? m_impl->batch_rows : 0;
}

const TrainingBackend& Predictor::backend() const {
    BRAIN_CHECK(m_impl, ErrorCode::InvalidState, "predictor was moved from; use the moved-to predictor");
    return m_impl->backend;
}

void Predictor::close() noexcept {
    if (m_impl) m_impl->close();
}

bool Predictor::is_open() const noexcept {
    return m_impl && m_impl->handle;
}

Matrix Network::predict_with_backend(MatrixView inputs, const TrainingBackend& backend) const {
    detail::require_layers(*this);
    // The columns before the backend opens; the values stream with the rows (Predictor::predict).
    check_columns("Network::predict_with_backend", inputs, input_size(), feature_names());
    // The batch never needs to be larger than the input.
    Predictor predictor(*this, backend, std::clamp<std::size_t>(inputs.rows(), 1, Predictor::default_batch_rows));
    return predictor.predict(inputs);
}

} // namespace brain
