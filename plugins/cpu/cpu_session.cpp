#include "cpu_session.hpp"

#include "blas_library.hpp"
#include "cpu_kernels.hpp"

#include <algorithm>
#include <brain/dense_math.hpp>
#include <brain/plugin_sdk.hpp>
#include <brain/session_plan.hpp>
#include <cmath>
#include <cstring>
#include <limits>

namespace brain::cpu {
namespace {

using sdk::fail;
using Phase = sdk::SessionCounters::Phase;

// Below ~100k multiply-adds per batch (or 32k parameters for the optimizer) handing work to other threads costs
// more than it saves.
constexpr std::size_t k_split_macs = std::size_t{1} << 17;
constexpr std::size_t k_split_params = std::size_t{1} << 15;

void check_finite_array(const float* values, std::size_t n, const char* what) {
    if (all_finite(values, n)) return;
    for (std::size_t i = 0; i < n; ++i)
        if (!std::isfinite(values[i]))
            fail(BRAIN_ERR_INVALID_ARGUMENT, "the initial ", what, " must be finite; value ", i, " is ", values[i],
                 ": restore a valid checkpoint or rebuild the network");
}

} // namespace

std::uint64_t SessionPlan::tensor_bytes_for(std::size_t rows_per_batch) const noexcept {
    std::uint64_t total = tensor_bytes(parameter_count) * 2 + tensor_bytes(state_count);
    if (config.shuffle || batch_source)
        total += tensor_bytes(rows_per_batch * input_width) + tensor_bytes(rows_per_batch * target_width);
    for (const LayerPlan& layer : layers) {
        const std::uint64_t one = tensor_bytes(rows_per_batch * layer.outputs);
        total += layer.activation == BRAIN_ACT_LINEAR ? 2 * one : 3 * one;
    }
    return total;
}

void require_float32(int32_t precision, const char* job) {
    // Unknown values are the SDK's plan's INVALID_ARGUMENT; the two real modes this backend lacks are UNSUPPORTED.
    const char* mode = precision == BRAIN_PRECISION_TF32   ? "tf32 (TF32 tensor-core products)"
                       : precision == BRAIN_PRECISION_BF16 ? "bf16 (bf16 mixed precision)"
                                                           : nullptr;
    if (mode)
        fail(BRAIN_ERR_UNSUPPORTED, "the CPU backend computes in float32 only and does not run precision ", mode,
             " for ", job,
             ": use Precision::Float32 (--precision float32) with the CPU backend, or a GPU backend "
             "for tf32 and bf16");
}

SessionPlan make_session_plan(const brain_session_desc& desc) {
    if (desc.device != 0) fail(BRAIN_ERR_DEVICE_NOT_FOUND, "the CPU backend has one device, 0; got ", desc.device);
    require_float32(desc.precision, "training");
    SessionPlan plan{sdk::plan_session(desc)};
    // CBLAS takes int dimensions.
    constexpr std::size_t int_max = static_cast<std::size_t>(std::numeric_limits<int>::max());
    for (std::size_t l = 0; l < plan.layers.size(); ++l)
        if (plan.layers[l].inputs > int_max || plan.layers[l].outputs > int_max)
            fail(BRAIN_ERR_INVALID_ARGUMENT, "layer ", l, " (", plan.layers[l].inputs, " -> ",
                 plan.layers[l].outputs, ") is wider than the CPU backend's limit of ", int_max, " units");
    if (plan.batch_rows > int_max)
        fail(BRAIN_ERR_INVALID_ARGUMENT, "batch_size ", plan.batch_rows, " exceeds the CPU backend's limit of ",
             int_max, " rows per batch");
    return plan;
}

CpuSession::CpuSession(const brain_session_desc& desc) {
    const auto timer = m_counters.time(Phase::Setup);
    m_plan = make_session_plan(desc);
    const SessionPlan& plan = m_plan;

    // The budget is checked on the exact sum of what follows, before the first allocation.
    const std::uint64_t needed = plan.tensor_bytes_for(plan.batch_rows);
    if (plan.budget_bytes != 0 && needed > plan.budget_bytes) {
        const std::size_t lo = sdk::largest_batch_within(
            plan.budget_bytes, plan.batch_rows, [&](std::size_t rows) { return plan.tensor_bytes_for(rows); });
        const std::uint64_t fixed = plan.tensor_bytes_for(0);
        if (lo == 0)
            fail(BRAIN_ERR_BUDGET_EXCEEDED, "the CPU session needs ", needed, " bytes of tensors for batch size ",
                 plan.batch_rows, " but the memory budget is ", plan.budget_bytes,
                 " bytes; no batch size fits: the parameters, gradients and optimizer state alone need ", fixed,
                 " bytes. Raise the budget or use a smaller network");
        fail(BRAIN_ERR_BUDGET_EXCEEDED, "the CPU session needs ", needed, " bytes of tensors for batch size ",
             plan.batch_rows, " (", fixed,
             " for parameters, gradients and optimizer state) but the memory budget is ", plan.budget_bytes,
             " bytes; the largest batch size that fits is ", lo, ". Lower batch_size to at most ", lo,
             " or raise the budget");
    }

    m_gemm = std::make_unique<const Gemm>();
    // Streamed rows are fetched batch by batch into the batch buffers; otherwise the session keeps a copy.
    if (!plan.batch_source) {
        const brain_dataset_view data = sdk::read_struct(desc.dataset);
        m_features.assign(data.features, data.features + plan.rows * plan.input_width);
        m_targets.assign(data.targets, data.targets + plan.rows * plan.target_width);
    }

    m_params = allocate(plan.parameter_count);
    m_grads = allocate(plan.parameter_count);
    m_state = allocate(plan.state_count);
    std::memcpy(m_params.data(), desc.parameters, plan.parameter_count * sizeof(float));
    std::memcpy(m_state.data(), desc.optimizer_state, plan.state_count * sizeof(float));
    check_finite_array(m_params.data(), plan.parameter_count, "parameters");
    check_finite_array(m_state.data(), plan.state_count, "optimizer state");
    if (plan.config.shuffle || plan.batch_source) {
        m_batch_x = allocate(plan.batch_rows * plan.input_width);
        m_batch_t = allocate(plan.batch_rows * plan.target_width);
    }
    for (const LayerPlan& layer : plan.layers) {
        const std::size_t n = plan.batch_rows * layer.outputs;
        m_z.push_back(allocate(n));
        m_a.push_back(layer.activation == BRAIN_ACT_LINEAR ? HostBuffer() : allocate(n));
        m_delta.push_back(allocate(n));
    }
    for (const LayerPlan& layer : plan.layers) m_macs_per_row += layer.inputs * layer.outputs;
    // Small sessions (XOR, tests) never split their work, so they start no threads at all.
    const bool splits = plan.batch_rows * m_macs_per_row >= k_split_macs || plan.parameter_count >= k_split_params;
    m_pool = std::make_unique<WorkerPool>(
        splits ? static_cast<unsigned>(std::min<std::size_t>(configured_thread_count(), plan.batch_rows)) : 1u);
    m_partial_loss.assign(m_pool->size(), 0.0);
    m_step = desc.optimizer_step;
    m_first_epoch = desc.first_epoch;
}

HostBuffer CpuSession::allocate(std::size_t count) {
    HostBuffer buffer(count);
    m_counters.allocated(buffer.bytes());
    return buffer;
}

void CpuSession::require_usable(const char* operation) const {
    if (!m_failure.empty())
        fail(BRAIN_ERR_INVALID_STATE, "the CPU session cannot ", operation, ": it failed earlier (", m_failure,
             "); open a new session from the last checkpoint");
}

float* CpuSession::activations(std::size_t l) noexcept {
    return m_plan.layers[l].activation == BRAIN_ACT_LINEAR ? m_z[l].data() : m_a[l].data();
}

unsigned CpuSession::threads_for(std::size_t rows) const noexcept {
    if (rows * m_macs_per_row < k_split_macs) return 1;
    return static_cast<unsigned>(std::min<std::size_t>(m_pool->size(), rows));
}

template <class Fn>
void CpuSession::parallel(unsigned count, Fn&& fn) {
    if (count <= 1)
        fn(0u, 1u);
    else
        m_pool->run(count, fn);
    m_gemm->check(); // the steps' products cannot throw on the pool's threads
}

double CpuSession::forward_and_loss(std::uint64_t epoch, std::size_t begin, std::size_t rows) {
    const SessionPlan& plan = m_plan;
    const std::size_t in0 = plan.input_width, k = plan.target_width;
    const brain_batch_source* source = plan.batch_source;
    const bool gather = plan.config.shuffle != 0 && !source;
    const bool buffered = gather || source;
    const float* x = buffered ? m_batch_x.data() : m_features.data() + begin * in0;
    const float* t = buffered ? m_batch_t.data() : m_targets.data() + begin * k;
    if (source) {
        // The core's rows for these positions, in its batch order, already standardised.
        char message[512] = "";
        const int32_t status = source->fetch(source->context, epoch, begin, static_cast<uint32_t>(rows),
                                             m_batch_x.data(), m_batch_t.data(), message, sizeof message);
        if (status != BRAIN_OK)
            fail(static_cast<brain_status>(status), "epoch ", epoch, ": reading rows ", begin, " to ",
                 begin + rows - 1, " from the streamed data set failed: ", static_cast<const char*>(message));
    }
    m_x = x;
    const float* params = m_params.data();
    const unsigned count = threads_for(rows);
    // Rows are independent in the forward pass: each thread takes its rows through every layer and the loss.
    parallel(count, [&](unsigned index, unsigned parts) {
        const Range r = split_range(rows, index, parts);
        m_partial_loss[index] = 0.0;
        if (r.empty()) return;
        if (gather) {
            float* bx = m_batch_x.data();
            float* bt = m_batch_t.data();
            for (std::size_t row = r.begin; row < r.end; ++row) {
                const std::uint64_t src = brain_shuffle_index(plan.config.seed, epoch, plan.rows, begin + row);
                std::memcpy(bx + row * in0, m_features.data() + src * in0, in0 * sizeof(float));
                std::memcpy(bt + row * k, m_targets.data() + src * k, k * sizeof(float));
            }
        }
        const float* input = x;
        for (std::size_t l = 0; l < plan.layers.size(); ++l) {
            const LayerPlan& layer = plan.layers[l];
            const std::size_t in = layer.inputs, out = layer.outputs;
            float* z = m_z[l].data() + r.begin * out;
            float* a = activations(l) + r.begin * out;
            // z = input W^T; the bias is added in the same pass as the activation.
            (*m_gemm)(false, true, static_cast<int>(r.size()), static_cast<int>(out), static_cast<int>(in),
                      input + r.begin * in, static_cast<int>(in), params + layer.weight_offset,
                      static_cast<int>(in), z, static_cast<int>(out));
            bias_activation(layer.activation, layer.param, params + layer.bias_offset, z, a, r.size(), out);
            input = activations(l);
        }
        const std::size_t last = plan.layers.size() - 1;
        const LayerPlan& out = plan.layers[last];
        const float* z = m_z[last].data();
        const float* a = activations(last);
        float* delta = m_delta[last].data();
        double total = 0.0;
        for (std::size_t row = r.begin; row < r.end; ++row)
            total += math::loss_row(plan.loss, out.activation, out.param, z + row * k, a + row * k, t + row * k,
                                    delta + row * k, k, rows);
        m_partial_loss[index] = total;
    });
    double total = 0.0;
    for (unsigned i = 0; i < count; ++i) total += m_partial_loss[i];
    return total;
}

void CpuSession::update_parameters(std::size_t begin, std::size_t end, const AdamStep& adam) noexcept {
    if (begin >= end) return;
    const brain_optimizer_desc& opt = m_plan.optimizer;
    float* params = m_params.data() + begin;
    const float* grads = m_grads.data() + begin;
    float* state = m_state.data() + begin;
    if (opt.kind == BRAIN_OPT_SGD)
        sgd_step(params, grads, state, end - begin, opt.learning_rate, opt.momentum);
    else
        adam_step(params, grads, state, state + m_plan.parameter_count, end - begin, adam);
}

void CpuSession::backward_and_step(std::size_t rows) {
    const SessionPlan& plan = m_plan;
    const float* params = m_params.data();
    float* grads = m_grads.data();
    const std::size_t layers = plan.layers.size();
    // The products split over `count` parts; the optimizer, memory-bound, over `parts` (every thread once there
    // are enough parameters, even when the products are too small to split). Parts past `count` only update.
    const unsigned count = threads_for(rows);
    const unsigned parts = std::max(count, plan.parameter_count < k_split_params ? 1u : m_pool->size());
    const int n = static_cast<int>(rows);
    ++m_step;
    const brain_optimizer_desc& opt = plan.optimizer;
    const AdamStep adam = make_adam_step(opt.learning_rate, opt.beta1, opt.beta2, opt.epsilon, opt.weight_decay,
                                         opt.kind == BRAIN_OPT_ADAMW, m_step);
    // The optimizer step is folded into the backward pass, element for element the same update: layer l + 1 is
    // updated during layer l's step (its gradients are complete and nothing in that step reads its weights),
    // and layer 0, whose step reads no weights, updates each slice of dW right after computing it, while the
    // slice is still in cache. This saves the separate pass's barrier and its reread of the gradients.
    for (std::size_t l = layers; l-- > 0;) {
        const LayerPlan& layer = plan.layers[l];
        const std::size_t in = layer.inputs, out = layer.outputs;
        const float* delta = m_delta[l].data();
        const float* input = l == 0 ? m_x : activations(l - 1);
        float* dw = grads + layer.weight_offset;
        float* db = grads + layer.bias_offset;
        const bool first = l == 0;
        // dW = delta^T input and db = column sums of delta, split along the longer side of dW; and, reading the
        // same delta, delta_prev = (delta W) * activation'(z_prev), split by rows. Neither writes what the
        // other reads, so both run in one parallel step.
        parallel(parts, [&](unsigned index, unsigned) {
            if (out >= in) {
                const Range o = split_range(out, index, count);
                if (!o.empty()) {
                    (*m_gemm)(true, false, static_cast<int>(o.size()), static_cast<int>(in), n, delta + o.begin,
                              static_cast<int>(out), input, static_cast<int>(in), dw + o.begin * in,
                              static_cast<int>(in));
                    column_sums(delta, db, rows, out, o.begin, o.end);
                    if (first) {
                        update_parameters(layer.weight_offset + o.begin * in, layer.weight_offset + o.end * in,
                                          adam);
                        update_parameters(layer.bias_offset + o.begin, layer.bias_offset + o.end, adam);
                    }
                }
            } else {
                const Range c = split_range(in, index, count, 16);
                if (!c.empty()) {
                    (*m_gemm)(true, false, static_cast<int>(out), static_cast<int>(c.size()), n, delta,
                              static_cast<int>(out), input + c.begin, static_cast<int>(in), dw + c.begin,
                              static_cast<int>(in));
                    if (first)
                        for (std::size_t o = 0; o < out; ++o)
                            update_parameters(layer.weight_offset + o * in + c.begin,
                                              layer.weight_offset + o * in + c.end, adam);
                }
                // db is split too (whole cache lines of it), so that no thread waits on another's column sums.
                const Range o = split_range(out, index, count, 16);
                if (!o.empty()) {
                    column_sums(delta, db, rows, out, o.begin, o.end);
                    if (first) update_parameters(layer.bias_offset + o.begin, layer.bias_offset + o.end, adam);
                }
            }
            if (!first) {
                const LayerPlan& prev = plan.layers[l - 1];
                const Range r = split_range(rows, index, count);
                if (!r.empty()) {
                    float* delta_prev = m_delta[l - 1].data() + r.begin * in;
                    (*m_gemm)(false, false, static_cast<int>(r.size()), static_cast<int>(in), static_cast<int>(out),
                              delta + r.begin * out, static_cast<int>(out), params + layer.weight_offset,
                              static_cast<int>(in), delta_prev, static_cast<int>(in));
                    backprop_activation(prev.activation, prev.param, m_z[l - 1].data() + r.begin * in,
                                        activations(l - 1) + r.begin * in, delta_prev, r.size(), in);
                }
            }
            if (l + 1 < layers) {
                const LayerPlan& next = plan.layers[l + 1];
                const std::size_t begin = next.weight_offset, end = next.bias_offset + next.outputs;
                const Range u = split_range(end - begin, index, parts, 16);
                update_parameters(begin + u.begin, begin + u.end, adam);
            }
        });
    }
}

float CpuSession::train_epoch() {
    require_usable("train an epoch");
    const auto timer = m_counters.time(Phase::Training);
    const SessionPlan& plan = m_plan;
    const std::uint64_t epoch = m_first_epoch + m_counters.epochs();
    const std::size_t rows = plan.rows;
    const std::size_t batch_size = plan.config.batch_size;
    try {
        double weighted = 0.0;
        std::uint64_t batch = 0;
        for (std::size_t begin = 0; begin < rows; begin += batch_size, ++batch) {
            const std::size_t n = std::min(batch_size, rows - begin);
            if (!m_step_rates.empty()) m_plan.optimizer.learning_rate = m_step_rates[batch];
            const double loss = forward_and_loss(epoch, begin, n);
            if (!std::isfinite(loss))
                fail(BRAIN_ERR_NUMERICAL, "epoch ", epoch, ", batch ", batch, ": the training loss became ", loss,
                     "; the weights diverged. Lower the learning rate (", plan.optimizer.learning_rate,
                     ") or standardise the data");
            backward_and_step(n);
            weighted += loss * static_cast<double>(n);
            m_counters.count_batches();
        }
        if (!all_finite(m_params.data(), plan.parameter_count)) {
            std::size_t bad = 0;
            while (bad < plan.parameter_count && std::isfinite(m_params.data()[bad])) ++bad;
            fail(BRAIN_ERR_NUMERICAL, "epoch ", epoch, ", batch ", batch - 1, ": parameter ", bad,
                 " became non-finite after the optimizer step; lower the learning rate (",
                 plan.optimizer.learning_rate, ") or standardise the data");
        }
        m_counters.count_epoch();
        m_step_rates.clear(); // the last rate stays in the plan
        return static_cast<float>(weighted / static_cast<double>(rows));
    } catch (const std::exception& e) {
        // Half an epoch has been applied: the weights are no longer a state anyone asked for.
        m_failure = e.what();
        throw;
    }
}

void CpuSession::checkpoint(float* parameters, std::uint64_t parameter_count, float* optimizer_state,
                            std::uint64_t optimizer_state_count, std::uint64_t* out_step) {
    require_usable("take a checkpoint");
    const auto timer = m_counters.time(Phase::Checkpoint);
    if (parameter_count != m_plan.parameter_count || optimizer_state_count != m_plan.state_count)
        fail(BRAIN_ERR_INVALID_ARGUMENT, "checkpoint buffers must hold exactly ", m_plan.parameter_count,
             " parameters and ", m_plan.state_count, " optimizer-state floats; got ", parameter_count, " and ",
             optimizer_state_count);
    if ((parameter_count != 0 && !parameters) || (optimizer_state_count != 0 && !optimizer_state))
        fail(BRAIN_ERR_INVALID_ARGUMENT, "a checkpoint buffer pointer was null");
    std::memcpy(parameters, m_params.data(), m_plan.parameter_count * sizeof(float));
    std::memcpy(optimizer_state, m_state.data(), m_plan.state_count * sizeof(float));
    if (out_step) *out_step = m_step;
}

brain_session_stats CpuSession::stats() const noexcept {
    sdk::SessionFacts facts;
    facts.dataset_bytes = (m_features.size() + m_targets.size()) * sizeof(float);
    facts.dataset_resident = m_plan.batch_source == nullptr; // streamed rows stay with the core
    facts.budget_bytes = m_plan.budget_bytes;
    facts.arithmetic = m_gemm->arithmetic();
    return m_counters.stats(facts);
}

void CpuSession::set_learning_rate(float learning_rate) {
    if (!std::isfinite(learning_rate) || !(learning_rate > 0.0f))
        fail(BRAIN_ERR_INVALID_ARGUMENT, "the learning rate must be finite and > 0; got ", learning_rate);
    m_plan.optimizer.learning_rate = learning_rate;
    m_step_rates.clear();
}

void CpuSession::set_step_learning_rates(const float* rates, std::uint64_t count) {
    require_usable("take learning rates");
    const std::uint64_t batches = (m_plan.rows + m_plan.config.batch_size - 1) / m_plan.config.batch_size;
    if (count != batches)
        fail(BRAIN_ERR_INVALID_ARGUMENT, "session_set_step_learning_rates: expected ", batches,
             " rates (one per batch of the next epoch), got ", count);
    for (std::uint64_t i = 0; i < count; ++i)
        if (!std::isfinite(rates[i]) || !(rates[i] > 0.0f))
            fail(BRAIN_ERR_INVALID_ARGUMENT, "session_set_step_learning_rates: rate ", i,
                 " must be finite and > 0; got ", rates[i]);
    m_step_rates.assign(rates, rates + count);
}

} // namespace brain::cpu
