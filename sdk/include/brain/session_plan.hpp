// Optional header-only helper for plugin authors: validate everything session_open receives and lay out the flat
// parameter array, so that every backend refuses the same bad descriptors with the same messages. Throws
// brain::sdk::Failure(BRAIN_ERR_INVALID_ARGUMENT) naming the value at fault; device, precision and size limits
// that depend on the backend stay the plugin's own checks.
#pragma once

#include <algorithm>
#include <brain/plugin_abi.h>
#include <brain/plugin_sdk.hpp>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <vector>

namespace brain::sdk {

// One dense layer as a session runs it, with offsets into the flat parameter array.
struct LayerPlan {
    std::size_t inputs = 0;
    std::size_t outputs = 0;
    int32_t activation = BRAIN_ACT_LINEAR;
    float param = 0.0f;            // leaky ReLU slope; 0 for other activations
    std::size_t weight_offset = 0; // W: outputs x inputs, row-major
    std::size_t bias_offset = 0;   // b: outputs
};

// What a session and a predictor plan alike: the validated model, its precision and the memory budget.
struct ModelPlan {
    std::vector<LayerPlan> layers;
    int32_t loss = BRAIN_LOSS_MEAN_SQUARED_ERROR;
    int32_t precision = BRAIN_PRECISION_FLOAT32;
    std::size_t input_width = 0;
    std::size_t parameter_count = 0;
    std::uint64_t budget_bytes = 0;
};

// A validated session descriptor: what a session allocates follows from it alone. Owns copies of every field.
struct SessionPlan : ModelPlan {
    brain_optimizer_desc optimizer{};
    brain_train_config config{};
    std::size_t rows = 0;
    std::size_t target_width = 0;
    std::size_t state_count = 0;
    std::size_t batch_rows = 0;  // min(batch_size, rows): the largest batch the buffers must hold
#if BRAIN_ABI_VERSION_MINOR >= 2 // brain_batch_source arrived in ABI 1.2
    // Where the rows come from when the core streams them (BRAIN_FEATURE_BATCH_SOURCE): core-owned, valid until
    // session_close; null when the dataset view holds the rows.
    const brain_batch_source* batch_source = nullptr;
#endif
};

#if BRAIN_ABI_VERSION_MINOR >= 2
// desc.batch_source when the descriptor is new enough to have it (an older core's is shorter); null otherwise.
inline const brain_batch_source* batch_source_of(const brain_session_desc& desc) noexcept {
    if (desc.struct_size < offsetof(brain_session_desc, batch_source) + sizeof(desc.batch_source)) return nullptr;
    return desc.batch_source;
}
#endif

namespace detail {

template <class... Parts>
[[noreturn]] void invalid(const Parts&... parts) {
    fail(BRAIN_ERR_INVALID_ARGUMENT, parts...);
}

inline const char* activation_name(int32_t activation) noexcept {
    static const char* const names[] = {"linear", "relu", "leaky_relu", "sigmoid", "tanh", "softmax", "gelu"};
    return activation >= BRAIN_ACT_LINEAR && activation <= BRAIN_ACT_GELU ? names[activation] : "unknown";
}

inline const char* loss_name(int32_t loss) noexcept {
    static const char* const names[] = {"mean_squared_error", "binary_cross_entropy", "categorical_cross_entropy"};
    return loss >= BRAIN_LOSS_MEAN_SQUARED_ERROR && loss <= BRAIN_LOSS_CATEGORICAL_CROSS_ENTROPY ? names[loss]
                                                                                                 : "unknown";
}

// a * b for sizes that come from the caller, refusing products that do not fit in memory arithmetic.
inline std::size_t checked_mul(std::uint64_t a, std::uint64_t b, const char* what) {
    constexpr std::uint64_t limit = std::numeric_limits<std::size_t>::max() / 8;
    if (a != 0 && b > limit / a)
        invalid("the ", what, " (", a, " x ", b,
                ") is too large to address on this machine; use a smaller data "
                "set or network");
    return static_cast<std::size_t>(a * b);
}

inline void validate_optimizer(const brain_optimizer_desc& opt) {
    if (opt.kind < BRAIN_OPT_SGD || opt.kind > BRAIN_OPT_ADAMW)
        invalid("optimizer kind ", opt.kind, " is unknown; expected 0 (SGD), 1 (Adam) or 2 (AdamW)");
    if (!std::isfinite(opt.learning_rate) || !(opt.learning_rate > 0.0f))
        invalid("the learning rate must be finite and > 0; got ", opt.learning_rate);
    if (opt.kind == BRAIN_OPT_SGD) {
        if (!std::isfinite(opt.momentum) || opt.momentum < 0.0f)
            invalid("the SGD momentum must be finite and >= 0; got ", opt.momentum);
        return;
    }
    if (!(opt.beta1 >= 0.0f && opt.beta1 < 1.0f)) invalid("Adam beta1 must be in [0, 1); got ", opt.beta1);
    if (!(opt.beta2 >= 0.0f && opt.beta2 < 1.0f)) invalid("Adam beta2 must be in [0, 1); got ", opt.beta2);
    if (!std::isfinite(opt.epsilon) || opt.epsilon < 0.0f)
        invalid("Adam epsilon must be finite and >= 0; got ", opt.epsilon);
    if (opt.kind == BRAIN_OPT_ADAMW && (!std::isfinite(opt.weight_decay) || opt.weight_decay < 0.0f))
        invalid("AdamW weight decay must be finite and >= 0; got ", opt.weight_decay);
}

inline void validate_layers(const brain_model_desc& model, std::size_t input_width, std::size_t target_width) {
    if (model.layer_count == 0 || model.layers == nullptr)
        invalid("the model has no layers (layer_count ", model.layer_count, "); add at least one dense layer");
    const std::uint32_t count = model.layer_count;
    for (std::uint32_t l = 0; l < count; ++l) {
        const brain_layer_desc& layer = model.layers[l];
        if (layer.inputs == 0 || layer.outputs == 0)
            invalid("layer ", l, " has ", layer.inputs, " inputs and ", layer.outputs,
                    " outputs; both must be at least 1");
        const std::size_t expected_inputs = l == 0 ? input_width : model.layers[l - 1].outputs;
        if (layer.inputs != expected_inputs) {
            if (l == 0)
                invalid("layer 0 takes ", layer.inputs, " inputs but the data set has input width ", input_width);
            invalid("layer ", l, " takes ", layer.inputs, " inputs but layer ", l - 1, " produces ",
                    expected_inputs, " outputs");
        }
        if (layer.activation < BRAIN_ACT_LINEAR || layer.activation > BRAIN_ACT_GELU)
            invalid("layer ", l, " has unknown activation ", layer.activation, "; expected 0 (linear) to 6 (gelu)");
        if (layer.activation == BRAIN_ACT_SOFTMAX && l + 1 != count)
            invalid("layer ", l, " uses softmax, which is allowed on the output layer (", count - 1, ") only");
        if (!std::isfinite(layer.activation_param))
            invalid("layer ", l, " has a non-finite activation parameter ", layer.activation_param);
    }
    const brain_layer_desc& out = model.layers[count - 1];
    if (out.outputs != target_width)
        invalid("the output layer (", count - 1, ") has ", out.outputs,
                " outputs but the data set has target width ", target_width);
    if (model.loss < BRAIN_LOSS_MEAN_SQUARED_ERROR || model.loss > BRAIN_LOSS_CATEGORICAL_CROSS_ENTROPY)
        invalid("loss ", model.loss, " is unknown; expected 0 (MSE), 1 (BCE) or 2 (CCE)");
    // dense_math's loss_row computes BCE from sigmoid logits and CCE from softmax logits; softmax's only loss
    // is CCE. Any other pairing would train on a gradient that is not the loss's.
    const bool ok = (model.loss == BRAIN_LOSS_BINARY_CROSS_ENTROPY && out.activation == BRAIN_ACT_SIGMOID) ||
                    (model.loss == BRAIN_LOSS_CATEGORICAL_CROSS_ENTROPY && out.activation == BRAIN_ACT_SOFTMAX) ||
                    (model.loss == BRAIN_LOSS_MEAN_SQUARED_ERROR && out.activation != BRAIN_ACT_SOFTMAX);
    if (!ok)
        invalid("loss ", loss_name(model.loss), " cannot follow a ", activation_name(out.activation),
                " output layer: binary_cross_entropy needs sigmoid, categorical_cross_entropy needs softmax, and "
                "softmax needs categorical_cross_entropy");
}

// The layers of a validated model with their parameter offsets: each layer's weights (outputs x inputs), then its
// biases, layer after layer.
inline std::vector<LayerPlan> lay_out_layers(const brain_model_desc& model) {
    std::vector<LayerPlan> layers;
    std::size_t offset = 0;
    for (std::uint32_t l = 0; l < model.layer_count; ++l) {
        const brain_layer_desc& in = model.layers[l];
        LayerPlan layer;
        layer.inputs = in.inputs;
        layer.outputs = in.outputs;
        layer.activation = in.activation;
        layer.param = in.activation == BRAIN_ACT_LEAKY_RELU ? in.activation_param : 0.0f;
        layer.weight_offset = offset;
        offset += checked_mul(in.outputs, in.inputs, "weight matrix");
        layer.bias_offset = offset;
        offset += in.outputs;
        layers.push_back(layer);
    }
    return layers;
}

} // namespace detail

// Validate a session descriptor (pointers, widths, counts, activation/loss pairs, hyper-parameters, precision
// value) and lay out the parameters. The descriptor's pointers are only read during the call.
inline SessionPlan plan_session(const brain_session_desc& desc) {
    using detail::invalid;
    if (!desc.model || !desc.optimizer || !desc.dataset || !desc.config)
        invalid("the session descriptor lacks its ",
                !desc.model       ? "model"
                : !desc.optimizer ? "optimizer"
                : !desc.dataset   ? "dataset"
                                  : "config",
                " descriptor (null pointer)");
    SessionPlan plan;
    const auto model = read_struct(desc.model);
    const auto data = read_struct(desc.dataset);
    plan.optimizer = read_struct(desc.optimizer);
    plan.config = read_struct(desc.config);
    plan.budget_bytes = desc.memory_budget_bytes;
    if (desc.precision < BRAIN_PRECISION_FLOAT32 || desc.precision > BRAIN_PRECISION_BF16)
        invalid("precision ", desc.precision, " is unknown; expected 0 (float32), 1 (TF32) or 2 (BF16)");
    plan.precision = desc.precision;

    if (data.rows == 0) invalid("the data set has no rows; training needs at least one");
    if (data.input_width == 0 || data.target_width == 0)
        invalid("the data set has input width ", data.input_width, " and target width ", data.target_width,
                "; both must be at least 1");
#if BRAIN_ABI_VERSION_MINOR >= 2
    plan.batch_source = batch_source_of(desc);
    const bool streamed = plan.batch_source != nullptr;
#else
    const bool streamed = false;
#endif
    if (streamed) {
#if BRAIN_ABI_VERSION_MINOR >= 2
        const brain_batch_source& source = *plan.batch_source;
        if (source.struct_size < sizeof(brain_batch_source) || !source.fetch)
            invalid("the batch source is ", !source.fetch ? "missing its fetch function" : "too short",
                    " (struct_size ", source.struct_size, ")");
        if (source.rows != data.rows || source.input_width != data.input_width ||
            source.target_width != data.target_width)
            invalid("the batch source holds ", source.rows, " rows of ", source.input_width, " + ",
                    source.target_width, " floats but the data set view says ", data.rows, " rows of ",
                    data.input_width, " + ", data.target_width);
#endif
    } else if (!data.features || !data.targets) {
        invalid("the data set view has a null ", !data.features ? "features" : "targets", " pointer for ",
                data.rows, " rows");
    }
    plan.rows = detail::checked_mul(data.rows, 1, "row count");
    plan.input_width = data.input_width;
    plan.target_width = data.target_width;
    detail::checked_mul(data.rows, data.input_width, "feature matrix");
    detail::checked_mul(data.rows, data.target_width, "target matrix");

    detail::validate_layers(model, plan.input_width, plan.target_width);
    detail::validate_optimizer(plan.optimizer);
    if (plan.config.batch_size == 0) invalid("batch_size must be at least 1; got 0");

    plan.layers = detail::lay_out_layers(model);
    plan.loss = model.loss;
    plan.parameter_count = plan.layers.back().bias_offset + plan.layers.back().outputs;
    plan.state_count = plan.parameter_count * (plan.optimizer.kind == BRAIN_OPT_SGD ? 1 : 2);
    if (desc.parameter_count != plan.parameter_count)
        invalid("the model has ", plan.parameter_count, " parameters but ", desc.parameter_count, " were given");
    if (desc.optimizer_state_count != plan.state_count)
        invalid("the ", plan.optimizer.kind == BRAIN_OPT_SGD ? "SGD" : "Adam/AdamW",
                " optimizer state of this model has ", plan.state_count, " floats but ", desc.optimizer_state_count,
                " were given");
    if (!desc.parameters || !desc.optimizer_state)
        invalid("the session descriptor has a null ", !desc.parameters ? "parameters" : "optimizer_state",
                " pointer");
    plan.batch_rows = std::min<std::size_t>(plan.config.batch_size, plan.rows);
    return plan;
}

#if BRAIN_ABI_VERSION_MINOR >= 2 // predictor_open arrived in ABI 1.2
// A validated predictor descriptor (predictor_open): the layers with their parameter offsets, the widths and the
// most rows one predictor_run call passes. Owns copies of every field.
struct PredictorPlan : ModelPlan {
    std::size_t output_width = 0;
    std::size_t max_batch_rows = 0;
};

// Validate a predictor descriptor (pointers, layer chain, activation/loss pair, parameter count, precision value,
// max_batch_rows) and lay out the parameters as plan_session does. The descriptor's pointers are only read during
// the call.
inline PredictorPlan plan_predictor(const brain_predictor_desc& desc) {
    using detail::invalid;
    if (!desc.model) invalid("the predictor descriptor lacks its model descriptor (null pointer)");
    const auto model = read_struct(desc.model);
    if (model.layer_count == 0 || model.layers == nullptr)
        invalid("the model has no layers (layer_count ", model.layer_count, "); add at least one dense layer");
    PredictorPlan plan;
    plan.input_width = model.layers[0].inputs;
    plan.output_width = model.layers[model.layer_count - 1].outputs;
    detail::validate_layers(model, plan.input_width, plan.output_width);
    if (desc.precision < BRAIN_PRECISION_FLOAT32 || desc.precision > BRAIN_PRECISION_BF16)
        invalid("precision ", desc.precision, " is unknown; expected 0 (float32), 1 (TF32) or 2 (BF16)");
    plan.precision = desc.precision;
    plan.loss = model.loss;
    plan.budget_bytes = desc.memory_budget_bytes;
    if (desc.max_batch_rows == 0) invalid("max_batch_rows must be at least 1; got 0");
    plan.layers = detail::lay_out_layers(model);
    std::size_t widest = plan.input_width;
    for (const LayerPlan& layer : plan.layers) widest = std::max(widest, layer.outputs);
    plan.parameter_count = plan.layers.back().bias_offset + plan.layers.back().outputs;
    detail::checked_mul(desc.max_batch_rows, widest, "batch of max_batch_rows rows of the widest layer");
    plan.max_batch_rows = static_cast<std::size_t>(desc.max_batch_rows);
    if (desc.parameter_count != plan.parameter_count)
        invalid("the model has ", plan.parameter_count, " parameters but ", desc.parameter_count, " were given");
    if (!desc.parameters) invalid("the predictor descriptor has a null parameters pointer");
    return plan;
}
#endif

// The largest batch size in [0, max_rows] whose tensors, bytes_for(rows) (growing with rows), fit `budget`
// bytes; 0 when not even one row fits. What a BUDGET_EXCEEDED message names as the batch size to use.
template <class BytesFor>
std::size_t largest_batch_within(std::uint64_t budget, std::size_t max_rows, BytesFor&& bytes_for) {
    std::size_t lo = 0, hi = max_rows;
    while (lo < hi) {
        const std::size_t mid = lo + (hi - lo + 1) / 2;
        if (bytes_for(mid) <= budget)
            lo = mid;
        else
            hi = mid - 1;
    }
    return lo;
}

} // namespace brain::sdk
