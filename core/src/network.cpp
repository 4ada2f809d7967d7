// Network's host-side inference (predict, evaluate) and state management. Training lives in fit.cpp.
#include "network_rules.hpp"
#include "training_input.hpp"

#include <algorithm>
#include <brain/dense_math.hpp>
#include <brain/error.hpp>
#include <brain/network.hpp>
#include <brain/vector_math.hpp>
#include <cmath>
#include <cstdint>

namespace brain {

namespace {

// Rows processed together: each weight row is loaded once per block and used for this many input rows.
constexpr std::size_t kRowBlock = 4;
// Rows per forward pass in predict/evaluate: bounds the memory of hidden activations for large inputs.
constexpr std::size_t kChunkRows = 1024;
// Bytes of weights kept hot in cache while every row block passes over them.
constexpr std::size_t kWeightBlockBytes = 256 * 1024;

// Sum of x[i] * w[i] with eight independent partial sums, which the compiler turns into vector code.
inline void dot_rows(const float* const* x, std::size_t nrows, const float* w, std::size_t n, float* out) {
    float acc[kRowBlock][8] = {};
    std::size_t i = 0;
    for (; i + 8 <= n; i += 8)
        for (std::size_t r = 0; r < nrows; ++r)
            for (std::size_t j = 0; j < 8; ++j) acc[r][j] += x[r][i + j] * w[i + j];
    for (std::size_t r = 0; r < nrows; ++r) {
        float tail = 0.0f;
        for (std::size_t k = i; k < n; ++k) tail += x[r][k] * w[k];
        out[r] = ((acc[r][0] + acc[r][4]) + (acc[r][1] + acc[r][5])) +
                 ((acc[r][2] + acc[r][6]) + (acc[r][3] + acc[r][7])) + tail;
    }
}

// z = x W^T + b for one layer; W is outputs x inputs, row-major.
Matrix dense_forward(const Matrix& x, const float* w, const float* b, std::size_t outputs) {
    const std::size_t rows = x.rows(), inputs = x.cols();
    Matrix z(rows, outputs);
    const std::size_t out_block =
        std::max<std::size_t>(1, kWeightBlockBytes / (sizeof(float) * std::max<std::size_t>(inputs, 1)));
    for (std::size_t o0 = 0; o0 < outputs; o0 += out_block) {
        const std::size_t o1 = std::min(outputs, o0 + out_block);
        for (std::size_t r0 = 0; r0 < rows; r0 += kRowBlock) {
            const std::size_t nr = std::min(kRowBlock, rows - r0);
            const float* xr[kRowBlock];
            for (std::size_t r = 0; r < nr; ++r) xr[r] = x.row(r0 + r).data();
            float out[kRowBlock];
            for (std::size_t o = o0; o < o1; ++o) {
                dot_rows(xr, nr, w + o * inputs, inputs, out);
                for (std::size_t r = 0; r < nr; ++r) z(r0 + r, o) = out[r] + b[o];
            }
        }
    }
    return z;
}

// Runs every layer; returns the output activations and, if asked, the output layer's pre-activations.
Matrix forward(const std::vector<LayerSpec>& layers, const std::vector<float>& params, Matrix x, Matrix* last_z) {
    const float* p = params.data();
    for (std::size_t li = 0; li < layers.size(); ++li) {
        const LayerSpec& l = layers[li];
        const float* w = p;
        const float* b = p + l.outputs * l.inputs;
        p = b + l.outputs;
        Matrix z = dense_forward(x, w, b, l.outputs);
        Matrix a(z.rows(), z.cols());
        // The CPU plugin's training runs the same vectorised code (brain/vector_math.hpp): both agree.
        vector_math::bias_activation(static_cast<int32_t>(l.activation), detail::kLeakyReluSlope, nullptr,
                                     z.data().data(), a.data().data(), z.rows(), z.cols());
        if (last_z && li + 1 == layers.size()) *last_z = std::move(z);
        x = std::move(a);
    }
    return x;
}

// Rows [begin, end) of raw inputs as a new matrix, standardised when the network has a standardisation.
Matrix prepared_rows(MatrixView x, std::size_t begin, std::size_t end, const std::optional<Standardization>& s) {
    const float* first = x.data() + begin * x.cols();
    Matrix rows(end - begin, x.cols(), std::vector<float>(first, first + (end - begin) * x.cols()));
    if (s) s->apply(rows);
    return rows;
}

std::size_t argmax(std::span<const float> v) {
    return static_cast<std::size_t>(std::max_element(v.begin(), v.end()) - v.begin());
}

} // namespace

NetworkBuilder Network::builder() {
    return NetworkBuilder{};
}

bool Network::is_classifier() const noexcept {
    if (m_layers.empty()) return false;
    const Activation out = m_layers.back().activation;
    return out == Activation::Sigmoid || out == Activation::Softmax;
}

Matrix Network::predict(MatrixView inputs) const {
    validate();
    detail::require_readable(inputs, "Network::predict");
    if (inputs.cols() != input_size()) {
        std::string names;
        for (std::size_t i = 0; i < m_feature_names.size() && i < 8; ++i)
            names += (i ? ", " : " (") + m_feature_names[i];
        if (!names.empty()) names += m_feature_names.size() > 8 ? ", ...)" : ")";
        BRAIN_THROW(ErrorCode::InvalidArgument, "Network::predict: expected ", input_size(), " input columns",
                    names, ", found ", inputs.cols(), "; pass one column per feature the network was built for");
    }
    for (std::size_t r = 0; r < inputs.rows(); ++r)
        for (std::size_t c = 0; c < inputs.cols(); ++c)
            BRAIN_CHECK(std::isfinite(inputs(r, c)), ErrorCode::InvalidData, "Network::predict: input row ", r,
                        ", column ", c, " is ", inputs(r, c), "; every input must be finite");
    Matrix out(inputs.rows(), output_size());
    for (std::size_t begin = 0; begin < inputs.rows(); begin += kChunkRows) {
        const std::size_t end = std::min(inputs.rows(), begin + kChunkRows);
        const Matrix a =
            forward(m_layers, m_parameters, prepared_rows(inputs, begin, end, m_standardization), nullptr);
        // A NaN or infinite prediction is never handed back as if it were an answer.
        for (std::size_t r = 0; r < a.rows(); ++r)
            for (std::size_t k = 0; k < a.cols(); ++k)
                BRAIN_CHECK(std::isfinite(a(r, k)), ErrorCode::NumericalError, "Network::predict: input row ",
                            begin + r, " gives a non-finite output (output ", k, " is ", a(r, k),
                            "): its values overflow this model's float32 arithmetic (values near +-3.4e38, or far "
                            "outside the data the model was trained on); check that row");
        std::copy(a.data().begin(), a.data().end(),
                  out.data().begin() + static_cast<std::ptrdiff_t>(begin * output_size()));
    }
    return out;
}

std::vector<std::size_t> Network::predict_classes(MatrixView inputs) const {
    BRAIN_CHECK_ARG(is_classifier(), "Network::predict_classes: the output layer is ",
                    m_layers.empty() ? std::string_view("missing") : to_string(m_layers.back().activation),
                    ", not a classifier (sigmoid or softmax); use predict for regression outputs");
    const Matrix out = predict(inputs);
    std::vector<std::size_t> classes(out.rows());
    for (std::size_t r = 0; r < out.rows(); ++r)
        // A single sigmoid unit is P(class 1); >= 0.5 matches z >= 0.
        classes[r] = out.cols() == 1 ? (out(r, 0) >= 0.5f ? 1 : 0) : argmax(out.row(r));
    return classes;
}

Evaluation Network::evaluate(const Dataset& data) const {
    validate();
    BRAIN_CHECK_ARG(data.size() > 0, "Network::evaluate: the data set is empty");
    BRAIN_CHECK_ARG(data.input_width() == input_size(), "Network::evaluate: the network expects ", input_size(),
                    " feature columns, the data set has ", data.input_width());
    BRAIN_CHECK_ARG(data.target_width() == output_size(), "Network::evaluate: the network has ", output_size(),
                    " outputs, the data set has ", data.target_width(), " target columns");
    const Matrix& t_all = data.targets();
    const std::size_t rows = data.size(), k = output_size();
    // The targets training would refuse (a cross-entropy's outside its range) give a meaningless loss here too.
    detail::check_targets(m_loss, t_all.data().data(), rows, k, 0, "Network::evaluate");
    const auto activation = static_cast<int32_t>(m_layers.back().activation);
    const bool classifier = is_classifier();
    // One label per row: a softmax output, or a single sigmoid unit (classes 0 and 1). Several sigmoid units are
    // independent labels, for which only the accuracy of the argmax is reported.
    const bool single_label = classifier && (k == 1 || m_layers.back().activation == Activation::Softmax);
    std::vector<float> delta(k);
    double total = 0.0;
    std::size_t correct = 0;
    std::vector<std::size_t> truth, predicted;
    Matrix outputs;
    if (single_label) {
        truth.reserve(rows);
        predicted.reserve(rows);
    } else if (!classifier) {
        outputs = Matrix(rows, k);
    }
    for (std::size_t begin = 0; begin < rows; begin += kChunkRows) {
        const std::size_t end = std::min(rows, begin + kChunkRows);
        Matrix z;
        const Matrix a =
            forward(m_layers, m_parameters, prepared_rows(data.features(), begin, end, m_standardization), &z);
        for (std::size_t i = 0; i < end - begin; ++i) {
            const float* t = t_all.row(begin + i).data();
            // batch = all rows: the same normalisation as one full-batch training epoch.
            total += math::loss_row(static_cast<int32_t>(m_loss), activation, detail::kLeakyReluSlope,
                                    z.row(i).data(), a.row(i).data(), t, delta.data(), k, rows);
            if (!classifier) {
                std::copy_n(a.row(i).data(), k, outputs.row(begin + i).data());
                continue;
            }
            const std::size_t want = k == 1 ? (t[0] >= 0.5f ? 1 : 0) : argmax(t_all.row(begin + i));
            const std::size_t got = k == 1 ? (a(i, 0) >= 0.5f ? 1 : 0) : argmax(a.row(i));
            correct += want == got ? 1 : 0;
            if (single_label) {
                truth.push_back(want);
                predicted.push_back(got);
            }
        }
    }
    Evaluation result;
    result.loss = static_cast<float>(total);
    if (classifier) {
        result.accuracy = static_cast<float>(static_cast<double>(correct) / static_cast<double>(rows));
    }
    if (single_label) {
        const std::size_t classes = k == 1 ? 2 : k;
        std::vector<std::string> labels = m_class_labels;
        if (labels.size() != classes) {
            labels.clear();
            for (std::size_t c = 0; c < classes; ++c) labels.push_back(std::to_string(c));
        }
        result.classification = classification_metrics(truth, predicted, std::move(labels));
    } else if (!classifier) {
        result.regression = regression_metrics(
            t_all, outputs, m_target_names.size() == k ? m_target_names : std::vector<std::string>{});
    }
    return result;
}

void Network::restore_checkpoint(const Checkpoint& checkpoint) {
    detail::require_layers(*this);
    BRAIN_CHECK_ARG(checkpoint.parameters.size() == m_parameters.size(), "Network::restore_checkpoint: expected ",
                    m_parameters.size(), " parameters, the checkpoint has ", checkpoint.parameters.size(),
                    "; it was taken from a different network");
    const std::size_t state = m_optimizer.state_per_parameter() * m_parameters.size();
    BRAIN_CHECK_ARG(checkpoint.optimizer_state.size() == state, "Network::restore_checkpoint: expected ", state,
                    " optimizer-state values (", to_string(m_optimizer.kind), "), the checkpoint has ",
                    checkpoint.optimizer_state.size());
    for (std::size_t i = 0; i < checkpoint.parameters.size(); ++i)
        BRAIN_CHECK(std::isfinite(checkpoint.parameters[i]), ErrorCode::NumericalError,
                    "Network::restore_checkpoint: ", detail::describe_parameter(m_layers, i), " is ",
                    checkpoint.parameters[i],
                    "; training diverged (lower the learning rate or standardize inputs)");
    // Refused here, naming the value, rather than at the next fit as a divergence it is not.
    const std::size_t count = m_parameters.size();
    for (std::size_t i = 0; i < checkpoint.optimizer_state.size(); ++i) {
        const float value = checkpoint.optimizer_state[i];
        const bool second_moment = m_optimizer.kind != Optimizer::Kind::Sgd && i >= count;
        BRAIN_CHECK_ARG(std::isfinite(value) && (!second_moment || value >= 0.0f),
                        "Network::restore_checkpoint: optimizer-state value ", i, " (",
                        m_optimizer.kind == Optimizer::Kind::Sgd ? "velocity"
                        : second_moment                          ? "second moment"
                                                                 : "first moment",
                        " of ", detail::describe_parameter(m_layers, i % count), ") is ", value, "; expected ",
                        second_moment ? "a finite number >= 0" : "a finite number",
                        " (a checkpoint taken from a session of this network)");
    }
    m_parameters = checkpoint.parameters;
    m_optimizer_state = checkpoint.optimizer_state;
    m_optimizer_step = checkpoint.optimizer_step;
    m_epochs_trained = checkpoint.epochs_trained;
}

void Network::set_parameters(std::vector<float> parameters) {
    detail::require_layers(*this);
    BRAIN_CHECK_ARG(parameters.size() == m_parameters.size(), "Network::set_parameters: expected ",
                    m_parameters.size(), " values (all weights then biases of each layer), found ",
                    parameters.size());
    for (std::size_t i = 0; i < parameters.size(); ++i)
        BRAIN_CHECK_ARG(std::isfinite(parameters[i]),
                        "Network::set_parameters: ", detail::describe_parameter(m_layers, i), " is ", parameters[i],
                        "; every parameter must be finite");
    m_parameters = std::move(parameters);
}

void Network::adopt_dataset_metadata(const Dataset& data) {
    detail::require_layers(*this);
    BRAIN_CHECK_ARG(data.input_width() == input_size(), "Network::adopt_dataset_metadata: the network expects ",
                    input_size(), " feature columns, the data set has ", data.input_width());
    BRAIN_CHECK_ARG(data.target_width() == output_size(), "Network::adopt_dataset_metadata: the network has ",
                    output_size(), " outputs, the data set has ", data.target_width(), " target columns");
    if (const auto& s = data.standardization())
        BRAIN_CHECK_ARG(s->mean.size() == input_size() && s->stddev.size() == input_size(),
                        "Network::adopt_dataset_metadata: the standardisation has ", s->mean.size(), " means and ",
                        s->stddev.size(), " deviations; expected ", input_size());
    m_standardization = data.standardization();
    m_feature_names = data.feature_names();
    m_target_names = data.target_names();
    m_class_labels = data.class_labels();
}

void detail::require_layers(const Network& network) {
    BRAIN_CHECK(!network.layers().empty(), ErrorCode::InvalidState,
                "Network: no layers (the network was moved from); use the network it was moved to, or build one");
}

void detail::require_readable(MatrixView view, const char* who) {
    BRAIN_CHECK_ARG(view.cols() == 0 || view.rows() <= SIZE_MAX / view.cols(), who, ": a view of ", view.rows(),
                    " x ", view.cols(), " values overflows size_t; give the shape of the rows it views");
    BRAIN_CHECK_ARG(view.data() != nullptr || view.size() == 0, who, ": the view of ", view.rows(), " x ",
                    view.cols(), " values has no address (a null pointer); point it at the rows");
}

void Network::validate() const {
    // Guards internal invariants (e.g. after a friend edited the members); a failure is a bug, not bad input.
    detail::require_layers(*this);
    for (std::size_t i = 1; i < m_layers.size(); ++i)
        BRAIN_CHECK(m_layers[i].inputs == m_layers[i - 1].outputs, ErrorCode::InvalidState, "Network: layer ", i,
                    " has ", m_layers[i].inputs, " inputs but layer ", i - 1, " has ", m_layers[i - 1].outputs,
                    " outputs");
    BRAIN_CHECK(m_parameters.size() == detail::parameter_count(m_layers), ErrorCode::InvalidState,
                "Network: ", m_parameters.size(), " parameters stored, the layers need ",
                detail::parameter_count(m_layers));
    BRAIN_CHECK(m_optimizer_state.size() == m_optimizer.state_per_parameter() * m_parameters.size(),
                ErrorCode::InvalidState, "Network: ", m_optimizer_state.size(),
                " optimizer-state values stored, expected ",
                m_optimizer.state_per_parameter() * m_parameters.size());
    if (m_standardization)
        BRAIN_CHECK(m_standardization->mean.size() == input_size() &&
                        m_standardization->stddev.size() == input_size(),
                    ErrorCode::InvalidState, "Network: the standardisation covers ", m_standardization->mean.size(),
                    " features, the network has ", input_size());
}

} // namespace brain

namespace brain {

void Network::set_optimizer(const Optimizer& optimizer) {
    validate();
    if (auto broken = detail::check_network(m_layers, m_loss, optimizer))
        BRAIN_THROW(ErrorCode::InvalidArgument, "Network::set_optimizer: ", broken->message);
    std::vector<float> state(optimizer.state_per_parameter() * m_parameters.size(), 0.0f);
    m_optimizer = optimizer;
    m_optimizer_state = std::move(state);
    m_optimizer_step = 0;
}

} // namespace brain
