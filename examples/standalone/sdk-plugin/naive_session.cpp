// The naive trainer: forward, backward and optimizer step as plain loops, following plugin_abi.h to the letter
// (batch order, loss normalisation, PyTorch's optimizer rules) so that it matches the CPU reference.
#include "naive_session.hpp"

#include <algorithm>
#include <brain/dense_math.hpp>
#include <brain/plugin_sdk.hpp>
#include <cmath>
#include <sstream>

namespace naive {

namespace {

using brain::sdk::Failure;

using Clock = std::chrono::steady_clock;

template <class... Parts>
[[noreturn]] void fail(brain_status code, const Parts&... parts) {
    std::ostringstream out;
    (out << ... << parts);
    throw Failure(code, out.str());
}

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
             ". Request Float32");
    const auto model = brain::sdk::read_struct(desc.model);
    const auto data = brain::sdk::read_struct(desc.dataset);
    Plan plan;
    plan.optimizer = brain::sdk::read_struct(desc.optimizer);
    plan.config = brain::sdk::read_struct(desc.config);
    plan.loss = model.loss;
    plan.rows = data.rows;
    plan.input_width = data.input_width;
    plan.target_width = data.target_width;
    plan.budget_bytes = desc.memory_budget_bytes;

    if (model.layer_count == 0 || !model.layers) fail(BRAIN_ERR_INVALID_ARGUMENT, "the model has no layers");
    if (plan.loss < BRAIN_LOSS_MEAN_SQUARED_ERROR || plan.loss > BRAIN_LOSS_CATEGORICAL_CROSS_ENTROPY)
        fail(BRAIN_ERR_INVALID_ARGUMENT, "loss ", plan.loss, " is unknown; expected 0 (MSE), 1 (BCE) or 2 (CCE)");
    std::size_t offset = 0, width = plan.input_width;
    for (uint32_t i = 0; i < model.layer_count; ++i) {
        const brain_layer_desc& in = model.layers[i];
        if (in.inputs != width)
            fail(BRAIN_ERR_INVALID_ARGUMENT, "layer ", i, " takes ", in.inputs, " inputs but receives ", width);
        if (in.outputs == 0) fail(BRAIN_ERR_INVALID_ARGUMENT, "layer ", i, " has 0 outputs");
        if (in.activation < BRAIN_ACT_LINEAR || in.activation > BRAIN_ACT_GELU)
            fail(BRAIN_ERR_INVALID_ARGUMENT, "layer ", i, " has unknown activation ", in.activation);
        if (in.activation == BRAIN_ACT_SOFTMAX && i + 1 != model.layer_count)
            fail(BRAIN_ERR_INVALID_ARGUMENT, "layer ", i, " uses softmax, which only the output layer may");
        Layer layer{in.inputs,           in.outputs, in.activation,
                    in.activation_param, offset,     offset + static_cast<std::size_t>(in.inputs) * in.outputs};
        offset = layer.bias_offset + in.outputs;
        width = in.outputs;
        plan.layers.push_back(layer);
    }
    if (width != plan.target_width)
        fail(BRAIN_ERR_INVALID_ARGUMENT, "the output layer has ", width, " units but the targets are ",
             plan.target_width, " wide");
    if (plan.optimizer.kind < BRAIN_OPT_SGD || plan.optimizer.kind > BRAIN_OPT_ADAMW)
        fail(BRAIN_ERR_INVALID_ARGUMENT, "optimizer kind ", plan.optimizer.kind, " is unknown; expected 0, 1 or 2");
    if (!(plan.optimizer.learning_rate > 0.0f) || !std::isfinite(plan.optimizer.learning_rate))
        fail(BRAIN_ERR_INVALID_ARGUMENT, "learning rate ", plan.optimizer.learning_rate,
             " must be finite and positive");
    plan.parameter_count = offset;
    plan.state_count = offset * (plan.optimizer.kind == BRAIN_OPT_SGD ? 1 : 2);
    if (desc.parameter_count != plan.parameter_count || !desc.parameters)
        fail(BRAIN_ERR_INVALID_ARGUMENT, "the model has ", plan.parameter_count,
             " parameters but the descriptor passes ", desc.parameter_count, desc.parameters ? "" : " (null)");
    if (desc.optimizer_state_count != plan.state_count || (plan.state_count && !desc.optimizer_state))
        fail(BRAIN_ERR_INVALID_ARGUMENT, "the optimizer needs ", plan.state_count,
             " state floats but the descriptor passes ", desc.optimizer_state_count);
    if (plan.rows == 0 || !data.features || !data.targets)
        fail(BRAIN_ERR_INVALID_DATA, "the data set is empty or its arrays are null");
    if (plan.config.batch_size == 0) fail(BRAIN_ERR_INVALID_ARGUMENT, "batch_size is 0; expected at least 1");
    plan.batch_rows = std::min<std::size_t>(plan.config.batch_size, plan.rows);
    return plan;
}

Session::Session(const brain_session_desc& desc) {
    const auto start = Clock::now();
    m_plan = make_plan(desc);
    const std::uint64_t needed = m_plan.tensor_bytes(m_plan.batch_rows);
    if (m_plan.budget_bytes != 0 && needed > m_plan.budget_bytes) {
        std::size_t fits = 0; // the largest batch within the budget, by bisection on [0, batch_rows)
        for (std::size_t lo = 0, hi = m_plan.batch_rows; lo < hi;) {
            const std::size_t mid = (lo + hi + 1) / 2;
            if (m_plan.tensor_bytes(mid) <= m_plan.budget_bytes)
                lo = fits = mid;
            else
                hi = mid - 1;
        }
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
    m_state.assign(m_plan.state_count, 0.0f);
    if (m_plan.state_count)
        std::copy(desc.optimizer_state, desc.optimizer_state + m_plan.state_count, m_state.begin());
    m_grads.assign(m_plan.parameter_count, 0.0f);
    m_x.assign(m_plan.batch_rows * m_plan.input_width, 0.0f);
    m_t.assign(m_plan.batch_rows * m_plan.target_width, 0.0f);
    for (const auto& layer : m_plan.layers) {
        m_z.emplace_back(m_plan.batch_rows * layer.outputs);
        m_a.emplace_back(m_plan.batch_rows * layer.outputs);
        m_delta.emplace_back(m_plan.batch_rows * layer.outputs);
    }
    m_peak = needed;
    m_step = desc.optimizer_step;
    m_epoch = desc.first_epoch;
    m_setup = Clock::now() - start;
}

double Session::forward(std::size_t rows) {
    const float* input = m_x.data();
    for (std::size_t l = 0; l < m_plan.layers.size(); ++l) {
        const Layer& layer = m_plan.layers[l];
        dense_forward(input, &m_params[layer.weight_offset], &m_params[layer.bias_offset], m_z[l].data(), rows,
                      layer.inputs, layer.outputs);
        for (std::size_t r = 0; r < rows; ++r)
            brain::math::activate_row(layer.activation, &m_z[l][r * layer.outputs], &m_a[l][r * layer.outputs],
                                      layer.outputs, layer.param);
        input = m_a[l].data();
    }
    const Layer& out = m_plan.layers.back();
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
        const Layer& layer = m_plan.layers[l];
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
        const Layer& below = m_plan.layers[l - 1];
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
        for (std::size_t i = 0; i < n; ++i) {
            m_state[i] = opt.momentum * m_state[i] + m_grads[i];
            m_params[i] -= opt.learning_rate * m_state[i];
        }
        return;
    }
    // PyTorch's Adam (and AdamW's decoupled decay), with the bias corrections computed in double.
    const double t = static_cast<double>(m_step);
    const float step_size =
        static_cast<float>(opt.learning_rate / (1.0 - std::pow(static_cast<double>(opt.beta1), t)));
    const float bc2_sqrt = static_cast<float>(std::sqrt(1.0 - std::pow(static_cast<double>(opt.beta2), t)));
    const float decay = opt.kind == BRAIN_OPT_ADAMW ? 1.0f - opt.learning_rate * opt.weight_decay : 1.0f;
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
    const auto start = Clock::now();
    const std::size_t rows = m_plan.rows, batch = m_plan.config.batch_size;
    const std::size_t in = m_plan.input_width, out = m_plan.target_width;
    double total = 0.0;
    for (std::size_t first = 0; first < rows; first += batch) {
        const std::size_t n = std::min(batch, rows - first);
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
        ++m_batches;
    }
    ++m_epoch;
    ++m_epochs;
    m_training += Clock::now() - start;
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
    const auto start = Clock::now();
    if (parameter_count != m_plan.parameter_count || state_count != m_plan.state_count)
        fail(BRAIN_ERR_INVALID_ARGUMENT, "checkpoint buffers hold ", parameter_count, " parameters and ",
             state_count, " state floats; this session has ", m_plan.parameter_count, " and ", m_plan.state_count);
    if (!parameters || (state_count && !state) || !out_step)
        fail(BRAIN_ERR_INVALID_ARGUMENT, "checkpoint was given a null buffer");
    if (m_failed) fail(BRAIN_ERR_INVALID_STATE, "this naive session failed earlier; its weights are not finite");
    std::copy(m_params.begin(), m_params.end(), parameters);
    std::copy(m_state.begin(), m_state.end(), state);
    *out_step = m_step;
    m_device_to_host += (m_params.size() + m_state.size()) * sizeof(float);
    m_checkpointing += Clock::now() - start;
}

brain_session_stats Session::stats() const noexcept {
    brain_session_stats s{};
    s.struct_size = sizeof(s);
    s.peak_allocated_bytes = m_peak;
    s.setup_time_ns = static_cast<std::uint64_t>(m_setup.count());
    s.training_time_ns = static_cast<std::uint64_t>(m_training.count());
    s.checkpoint_time_ns = static_cast<std::uint64_t>(m_checkpointing.count());
    s.epochs = m_epochs;
    s.batches = m_batches;
    s.dataset_resident = 1; // the whole data set is copied at open
    s.precision = BRAIN_PRECISION_FLOAT32;
    s.dataset_bytes = (m_features.size() + m_targets.size()) * sizeof(float);
    s.host_to_device_bytes = s.dataset_bytes + (m_params.size() + m_state.size()) * sizeof(float);
    s.device_to_host_bytes = m_device_to_host;
    s.workspace_bytes = 0;
    s.budget_bytes = m_plan.budget_bytes;
    return s;
}

} // namespace naive
