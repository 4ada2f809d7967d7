// The naive trainer: forward, backward and optimizer step as plain loops, following plugin_abi.h to the letter
// (batch order, loss normalisation, PyTorch's optimizer rules) so that it matches the CPU reference.
#include "naive_session.hpp"

#include <algorithm>
#include <brain/backend_capabilities.hpp>
#include <brain/dense_math.hpp>
#include <brain/plugin_sdk.hpp>
#include <cmath>

namespace naive {

namespace {

using brain::sdk::fail;
using Phase = brain::sdk::SessionCounters::Phase;

bool all_finite(const std::vector<float>& values) {
    return std::all_of(values.begin(), values.end(), [](float v) { return std::isfinite(v); });
}

} // namespace

void dense_forward(const float* x, const float* w, const float* b, float* z, std::size_t rows, std::size_t inputs,
                   std::size_t outputs) noexcept {
    for (std::size_t r = 0; r < rows; ++r)
        for (std::size_t o = 0; o < outputs; ++o) {
            double s = b[o];
            for (std::size_t i = 0; i < inputs; ++i)
                s += static_cast<double>(x[r * inputs + i]) * w[o * inputs + i];
            z[r * outputs + o] = static_cast<float>(s);
        }
}

#if BRAIN_ABI_VERSION_MINOR >= 2
brain_capabilities capabilities() {
    brain_capabilities caps = brain::sdk::abi_1_0_capabilities(); // float32 products only
    if constexpr (defect == Defect::LacksGelu) {
        caps.activations &= ~brain::sdk::capability_bit(BRAIN_ACT_GELU);
        brain::sdk::copy_string(caps.notes, "this build of the naive backend has no GELU");
    } else {
        brain::sdk::copy_string(caps.notes, "matrix products in float32 only");
    }
    return caps;
}
#endif

std::uint64_t Plan::tensor_bytes(std::size_t batch) const noexcept {
    std::uint64_t floats = 2ull * parameter_count + state_count + batch * (input_width + target_width);
    for (const auto& layer : layers) floats += 3ull * batch * layer.outputs;
    return floats * sizeof(float);
}

Plan make_plan(const brain_session_desc& desc) {
    if (desc.device != 0)
        fail(BRAIN_ERR_DEVICE_NOT_FOUND, "the naive backend has one device, 0; got device ", desc.device,
             ". Use device 0");
    if (desc.precision != BRAIN_PRECISION_FLOAT32)
        fail(BRAIN_ERR_UNSUPPORTED, "the naive backend computes in float32 only; got precision ", desc.precision,
             " (", brain::sdk::precision_name(desc.precision), "). Request Float32");
    // Everything else a descriptor can get wrong, with the same messages as brain's own backends.
    Plan plan{brain::sdk::plan_session(desc)};
#if BRAIN_ABI_VERSION_MINOR >= 2
    // A feature outside the capabilities: UNSUPPORTED naming it.
    brain::sdk::refuse_undeclared(capabilities(), plan, "the naive backend");
#endif
    for (const auto& layer : plan.layers) {
        if (defect == Defect::NoGelu && layer.activation == BRAIN_ACT_GELU)
            fail(BRAIN_ERR_UNSUPPORTED, "the naive backend does not run gelu");
        if (defect == Defect::NoSoftmax && layer.activation == BRAIN_ACT_SOFTMAX)
            fail(BRAIN_ERR_UNSUPPORTED, "the naive backend does not run softmax");
    }
    return plan;
}

Session::Session(const brain_session_desc& desc) {
    const auto timer = m_counters.time(Phase::Setup);
    m_plan = make_plan(desc);
    const std::uint64_t needed = m_plan.tensor_bytes(m_plan.batch_rows);
    if (m_plan.budget_bytes != 0 && needed > m_plan.budget_bytes) {
        const std::size_t fits = brain::sdk::largest_batch_within(
            m_plan.budget_bytes, m_plan.batch_rows, [this](std::size_t rows) { return m_plan.tensor_bytes(rows); });
        if (fits == 0)
            fail(BRAIN_ERR_BUDGET_EXCEEDED, "the naive backend needs ", m_plan.tensor_bytes(1),
                 " bytes even for a batch of 1, but the memory budget is ", m_plan.budget_bytes,
                 " bytes; raise the budget or use a smaller network");
        fail(BRAIN_ERR_BUDGET_EXCEEDED, "the naive backend needs ", needed, " bytes for batch size ",
             m_plan.batch_rows, " but the memory budget is ", m_plan.budget_bytes,
             " bytes; the largest batch size that fits is ", fits, ". Lower batch_size or raise the budget");
    }
    const auto data = brain::sdk::read_struct(desc.dataset);
    m_features.assign(data.features, data.features + m_plan.rows * m_plan.input_width);
    m_targets.assign(data.targets, data.targets + m_plan.rows * m_plan.target_width);
    m_params.assign(desc.parameters, desc.parameters + m_plan.parameter_count);
    m_state.assign(desc.optimizer_state, desc.optimizer_state + m_plan.state_count);
    m_grads.assign(m_plan.parameter_count, 0.0f);
    m_x.assign(m_plan.batch_rows * m_plan.input_width, 0.0f);
    m_t.assign(m_plan.batch_rows * m_plan.target_width, 0.0f);
    for (const auto& layer : m_plan.layers) {
        m_z.emplace_back(m_plan.batch_rows * layer.outputs);
        m_a.emplace_back(m_plan.batch_rows * layer.outputs);
        m_delta.emplace_back(m_plan.batch_rows * layer.outputs);
    }
    m_counters.allocated(needed);
    m_counters.moved_to_device((m_features.size() + m_targets.size() + m_params.size() + m_state.size()) *
                               sizeof(float));
    m_step = desc.optimizer_step;
    m_epoch = desc.first_epoch;
}

double Session::forward(std::size_t rows) {
    const float* input = m_x.data();
    for (std::size_t l = 0; l < m_plan.layers.size(); ++l) {
        const brain::sdk::LayerPlan& layer = m_plan.layers[l];
        dense_forward(input, &m_params[layer.weight_offset], &m_params[layer.bias_offset], m_z[l].data(), rows,
                      layer.inputs, layer.outputs);
        for (std::size_t r = 0; r < rows; ++r)
            brain::math::activate_row(layer.activation, &m_z[l][r * layer.outputs], &m_a[l][r * layer.outputs],
                                      layer.outputs, layer.param);
        input = m_a[l].data();
    }
    const brain::sdk::LayerPlan& out = m_plan.layers.back();
    const std::size_t last = m_plan.layers.size() - 1, k = out.outputs;
    double loss = 0.0;
    for (std::size_t r = 0; r < rows; ++r)
        loss += brain::math::loss_row(m_plan.loss, out.activation, out.param, &m_z[last][r * k], &m_a[last][r * k],
                                      &m_t[r * k], &m_delta[last][r * k], k, rows);
    return loss;
}

void Session::backward(std::size_t rows) {
    std::fill(m_grads.begin(), m_grads.end(), 0.0f);
    for (std::size_t l = m_plan.layers.size(); l-- > 0;) {
        const brain::sdk::LayerPlan& layer = m_plan.layers[l];
        const float* input = l == 0 ? m_x.data() : m_a[l - 1].data();
        const std::vector<float>& delta = m_delta[l];
        float* dw = &m_grads[layer.weight_offset];
        float* db = &m_grads[layer.bias_offset];
        for (std::size_t r = 0; r < rows; ++r)
            for (std::size_t o = 0; o < layer.outputs; ++o) {
                const float d = delta[r * layer.outputs + o];
                db[o] += d;
                for (std::size_t i = 0; i < layer.inputs; ++i)
                    dw[o * layer.inputs + i] += d * input[r * layer.inputs + i];
            }
        if (l == 0) continue;
        // dL/da of the layer below, then through its activation to dL/dz.
        const brain::sdk::LayerPlan& below = m_plan.layers[l - 1];
        const float* w = &m_params[layer.weight_offset];
        for (std::size_t r = 0; r < rows; ++r) {
            float* prev = &m_delta[l - 1][r * below.outputs];
            for (std::size_t i = 0; i < layer.inputs; ++i) {
                double s = 0.0;
                for (std::size_t o = 0; o < layer.outputs; ++o)
                    s += static_cast<double>(delta[r * layer.outputs + o]) * w[o * layer.inputs + i];
                prev[i] = static_cast<float>(s);
            }
            brain::math::backprop_activation_row(below.activation, &m_z[l - 1][r * below.outputs],
                                                 &m_a[l - 1][r * below.outputs], prev, below.outputs, below.param);
        }
    }
}

void Session::step() {
    const brain_optimizer_desc& opt = m_plan.optimizer;
    const std::size_t n = m_plan.parameter_count;
    ++m_step;
    if (opt.kind == BRAIN_OPT_SGD) {
        const float momentum = defect == Defect::SgdWithoutMomentum ? 0.0f : opt.momentum;
        for (std::size_t i = 0; i < n; ++i) {
            m_state[i] = momentum * m_state[i] + m_grads[i];
            m_params[i] -= opt.learning_rate * m_state[i];
        }
        return;
    }
    // PyTorch's Adam (and AdamW's decoupled decay), with the bias corrections computed in double.
    const double t = static_cast<double>(m_step);
    const float step_size =
        static_cast<float>(opt.learning_rate / (1.0 - std::pow(static_cast<double>(opt.beta1), t)));
    const float bc2_sqrt = static_cast<float>(std::sqrt(1.0 - std::pow(static_cast<double>(opt.beta2), t)));
    const bool decays = opt.kind == BRAIN_OPT_ADAMW && defect != Defect::AdamwWithoutDecay;
    const float decay = decays ? 1.0f - opt.learning_rate * opt.weight_decay : 1.0f;
    float* m = m_state.data();
    float* v = m_state.data() + n;
    for (std::size_t i = 0; i < n; ++i) {
        const float g = m_grads[i];
        m[i] = opt.beta1 * m[i] + (1.0f - opt.beta1) * g;
        v[i] = opt.beta2 * v[i] + (1.0f - opt.beta2) * g * g;
        m_params[i] = m_params[i] * decay - step_size * m[i] / (std::sqrt(v[i]) / bc2_sqrt + opt.epsilon);
    }
}

float Session::train_epoch() {
    if (m_failed)
        fail(BRAIN_ERR_INVALID_STATE, "this naive session failed earlier with non-finite values; open a new "
                                      "session from the last checkpoint");
    const auto timer = m_counters.time(Phase::Training);
    const std::size_t rows = m_plan.rows, batch = m_plan.config.batch_size;
    const std::size_t in = m_plan.input_width, out = m_plan.target_width;
    double total = 0.0;
    for (std::size_t first = 0; first < rows; first += batch) {
        const std::size_t n = std::min(batch, rows - first);
        if (defect == Defect::DropsShortBatch && n < batch) break;
        if (!m_step_rates.empty()) m_plan.optimizer.learning_rate = m_step_rates[first / batch];
        for (std::size_t r = 0; r < n; ++r) {
            const std::size_t p = first + r;
            const std::size_t row =
                m_plan.config.shuffle
                    ? static_cast<std::size_t>(brain_shuffle_index(m_plan.config.seed, m_epoch, rows, p))
                    : p;
            std::copy_n(&m_features[row * in], in, &m_x[r * in]);
            std::copy_n(&m_targets[row * out], out, &m_t[r * out]);
        }
        total += forward(n) * static_cast<double>(n);
        backward(n);
        step();
        m_counters.count_batches();
    }
    ++m_epoch;
    m_counters.count_epoch();
    m_step_rates.clear(); // the last rate stays in the plan
    const float loss = static_cast<float>(total / static_cast<double>(rows));
    if (!std::isfinite(loss) || !all_finite(m_params)) {
        m_failed = true;
        fail(BRAIN_ERR_NUMERICAL, "epoch ", m_epoch - 1, " produced non-finite values (loss ", loss,
             "); lower the learning rate or check the data for extreme values");
    }
    return loss;
}

void Session::checkpoint(float* parameters, std::uint64_t parameter_count, float* state, std::uint64_t state_count,
                         std::uint64_t* out_step) {
    const auto timer = m_counters.time(Phase::Checkpoint);
    if (parameter_count != m_plan.parameter_count || state_count != m_plan.state_count)
        fail(BRAIN_ERR_INVALID_ARGUMENT, "checkpoint buffers hold ", parameter_count, " parameters and ",
             state_count, " state floats; this session has ", m_plan.parameter_count, " and ", m_plan.state_count);
    if (!parameters || (state_count && !state) || !out_step)
        fail(BRAIN_ERR_INVALID_ARGUMENT, "checkpoint was given a null buffer");
    if (m_failed) fail(BRAIN_ERR_INVALID_STATE, "this naive session failed earlier; its weights are not finite");
    std::copy(m_params.begin(), m_params.end(), parameters);
    std::copy(m_state.begin(), m_state.end(), state);
    *out_step = m_step;
    m_counters.moved_to_host((m_params.size() + m_state.size()) * sizeof(float));
}

void Session::set_learning_rate(float learning_rate) {
    if (!(learning_rate > 0.0f) || !std::isfinite(learning_rate))
        fail(BRAIN_ERR_INVALID_ARGUMENT, "learning rate ", learning_rate, " must be finite and positive");
    m_plan.optimizer.learning_rate = learning_rate;
    m_step_rates.clear();
}

void Session::set_step_learning_rates(const float* rates, std::uint64_t count) {
    const std::uint64_t batches = (m_plan.rows + m_plan.config.batch_size - 1) / m_plan.config.batch_size;
    if (count != batches)
        fail(BRAIN_ERR_INVALID_ARGUMENT, "expected ", batches, " learning rates (one per batch), got ", count);
    for (std::uint64_t i = 0; i < count; ++i)
        if (!(rates[i] > 0.0f) || !std::isfinite(rates[i]))
            fail(BRAIN_ERR_INVALID_ARGUMENT, "learning rate ", i, " is ", rates[i], "; it must be finite and positive");
    m_step_rates.assign(rates, rates + count);
}

brain_session_stats Session::stats() const noexcept {
    brain::sdk::SessionFacts facts; // the whole data set is copied at open
    facts.dataset_bytes = (m_features.size() + m_targets.size()) * sizeof(float);
    facts.budget_bytes = m_plan.budget_bytes;
    return m_counters.stats(facts);
}

} // namespace naive
