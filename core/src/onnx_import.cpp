// Network::load_onnx: a multilayer perceptron read from an ONNX graph (docs/interop.md, "ONNX import"). The graph
// is followed from its input to its output as a chain of layers; every node on the way must be one brain knows,
// and every node must be on the way.
#include "input_file.hpp"
#include "interop_common.hpp"
#include "network_access.hpp"
#include "onnx_format.hpp"
#include "onnx_graph.hpp"

#include <brain/error.hpp>
#include <brain/network.hpp>
#include <cmath>
#include <cstdlib>
#include <map>
#include <new>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>

namespace brain {

namespace detail {

namespace {

constexpr const char* kSupported =
    "brain imports multilayer perceptrons: Gemm, or MatMul then Add, each followed by at most one of Relu, "
    "LeakyRelu (alpha 0.01), Sigmoid, Tanh, Gelu (or its Erf form) and Softmax (last axis, output layer); "
    "Identity, Dropout, Flatten and a Reshape that keeps rows pass through; Sub then Div before the first layer "
    "standardises the inputs";

// A number as people write it: 0.3, not 0.300000; all the digits a float32 needs where fewer would hide what
// differs (an alpha of 0.010000001 is not 0.01).
std::string number_text(double v) {
    std::ostringstream out;
    out << v;
    if (std::strtod(out.str().c_str(), nullptr) != v) {
        out.str("");
        out.precision(9);
        out << v;
    }
    return out.str();
}

bool near(double value, double expected) {
    return std::fabs(value - expected) <= 1e-6 * std::fabs(expected);
}

class ChainReader {
public:
    ChainReader(const onnx::ModelProto& model, const OnnxGraph& graph, const std::string& origin)
        : m_model(model), m_g(graph), m_origin(origin), m_used(graph.node_count(), false) {}

    Network read() {
        const std::string input = select_input();
        const auto& outputs = m_g.graph().output();
        if (outputs.size() != 1)
            fail("the graph has " + std::to_string(outputs.size()) +
                 " outputs; brain imports a model with one output, a batch of predictions");
        const std::string& output = outputs.Get(0).name();
        m_cur = input;
        while (m_cur != output) {
            const std::vector<std::size_t>& users = m_g.consumers(m_cur);
            if (users.empty())
                fail("the value " + quote_excerpt(m_cur) + " leads nowhere: no node reads it and it is not the "
                     "graph output " + quote_excerpt(output) + "; the graph is not a chain from input to output");
            if (users.size() == 2 && gelu_erf_form(users[0], users[1])) continue;
            if (users.size() != 1) {
                std::string list;
                for (std::size_t k = 0; k < users.size() && k < 4; ++k) list += (k ? ", " : "") + m_g.describe(users[k]);
                if (users.size() > 4) list += ", ...";
                fail("the value " + quote_excerpt(m_cur) + " feeds " + std::to_string(users.size()) + " nodes (" +
                     list + "): a branch, and not the Erf form of GELU; " + kSupported);
            }
            step(users[0]);
        }
        return finish(input, output);
    }

private:
    [[noreturn]] void fail(const std::string& message) const { m_g.fail(message); }

    [[noreturn]] void unsupported(std::size_t i, const std::string& why = "") const {
        fail(m_g.describe(i) + (why.empty() ? " is not supported" : ": " + why) + "; " + kSupported);
    }

    const onnx::NodeProto& node(std::size_t i) const { return m_g.node(i); }

    // The constant `value` (an input of node i), which must be usable as a weight.
    const OnnxConstant& weight(std::size_t i, const std::string& value, const char* role) const {
        const OnnxConstant* c = m_g.constant(value);
        if (!c)
            fail(m_g.describe(i) + " reads its " + role + " from " + quote_excerpt(value) +
                 ", which is not a constant (an initializer or a Constant node); brain imports fixed weights");
        if (!c->unusable.empty()) fail(c->unusable);
        return *c;
    }

    // The one node that reads `value`, if there is exactly one.
    std::optional<std::size_t> sole_user(const std::string& value) const {
        const auto& users = m_g.consumers(value);
        if (users.size() != 1) return std::nullopt;
        return users[0];
    }

    bool is_op(std::size_t i, const char* op) const {
        const auto& n = node(i);
        return n.op_type() == op && (n.domain().empty() || n.domain() == "ai.onnx");
    }

    // The input of node i that is not `value` (binary nodes), or "" when both are.
    std::string other_input(std::size_t i, const std::string& value) const {
        const auto& n = node(i);
        if (n.input_size() != 2) return "";
        if (n.input(0) == value && n.input(1) != value) return n.input(1);
        if (n.input(1) == value && n.input(0) != value) return n.input(0);
        return "";
    }

    bool scalar_near(const std::string& value, double expected) const {
        const OnnxConstant* c = m_g.constant(value);
        if (!c || !c->unusable.empty() || c->size() != 1) return false;
        return near(c->integer ? static_cast<double>(c->ints[0]) : static_cast<double>(c->floats[0]), expected);
    }

    std::string select_input() {
        std::set<std::string> initializers;
        for (const auto& t : m_g.graph().initializer()) initializers.insert(t.name());
        std::vector<const onnx::ValueInfoProto*> inputs;
        for (const auto& in : m_g.graph().input())
            if (!initializers.count(in.name())) inputs.push_back(&in);
        if (inputs.size() != 1) {
            std::string names;
            for (std::size_t k = 0; k < inputs.size() && k < 4; ++k) names += (k ? ", " : "") + quote_excerpt(inputs[k]->name());
            fail("the graph has " + std::to_string(inputs.size()) + " inputs" + (names.empty() ? "" : " (" + names + ")") +
                 "; brain imports a model with one input, a batch of feature rows");
        }
        const onnx::ValueInfoProto& in = *inputs[0];
        if (in.has_type()) {
            if (!in.type().has_tensor_type())
                fail("the input " + quote_excerpt(in.name()) + " is not a tensor; brain imports a model whose input "
                     "is a float32 tensor [batch, features]");
            const auto& tensor = in.type().tensor_type();
            if (tensor.elem_type() != onnx::TensorProto::FLOAT)
                fail("the input " + quote_excerpt(in.name()) + " has element type " +
                     std::to_string(tensor.elem_type()) +
                     ", not FLOAT (1); brain imports float32 models (export the model in float32, e.g. after "
                     "model.float())");
            if (tensor.has_shape()) {
                const auto& shape = tensor.shape();
                m_rank = shape.dim_size();
                if (m_rank < 2)
                    fail("the input " + quote_excerpt(in.name()) + " has " +
                         count_of(static_cast<std::uint64_t>(m_rank), "dimension") +
                         "; brain imports a model whose input is [batch, features] (export it with a "
                         "batch of examples, e.g. torch.randn(1, n))");
                std::uint64_t width = 1;
                for (int d = 1; d < m_rank; ++d) {
                    const auto& dim = shape.dim(d);
                    if (!dim.has_dim_value() || dim.dim_value() <= 0) {
                        width = 0;
                        break;
                    }
                    width = checked_mul(width, static_cast<std::uint64_t>(dim.dim_value())).value_or(0);
                }
                m_width = static_cast<std::size_t>(width);
            }
        }
        return in.name();
    }

    void advance(std::size_t i) {
        m_used[i] = true;
        if (node(i).output_size() < 1 || node(i).output(0).empty())
            fail(m_g.describe(i) + " has no output; the graph is damaged");
        m_cur = node(i).output(0);
    }

    void require_first_input(std::size_t i) const {
        if (node(i).input_size() < 1 || node(i).input(0) != m_cur)
            unsupported(i, "it reads " + quote_excerpt(m_cur) + " other than as its first input");
    }

    void step(std::size_t i) {
        const auto& n = node(i);
        if (!n.domain().empty() && n.domain() != "ai.onnx")
            unsupported(i, "the operator domain " + quote_excerpt(n.domain()) + " is not the standard one");
        const std::string& op = n.op_type();
        if (op == "Gemm") return gemm(i);
        if (op == "MatMul") return matmul(i);
        if (op == "Relu") return activation(i, Activation::Relu);
        if (op == "Sigmoid") return activation(i, Activation::Sigmoid);
        if (op == "Tanh") return activation(i, Activation::Tanh);
        if (op == "LeakyRelu") {
            const float alpha = m_g.float_attribute(i, "alpha").value_or(0.01f);
            if (alpha != kLeakyReluSlope)
                unsupported(i, "its negative slope (alpha) is " + number_text(alpha) +
                                   ", and brain's leaky_relu has slope 0.01 (PyTorch's default; Keras's LeakyReLU "
                                   "defaults to 0.3: build it with negative_slope=0.01)");
            return activation(i, Activation::LeakyRelu);
        }
        if (op == "Softmax") {
            const std::int64_t axis = m_g.int_attribute(i, "axis").value_or(m_g.opset() >= 13 ? -1 : 1);
            if (axis != -1 && axis != 1)
                unsupported(i, "it normalises over axis " + std::to_string(axis) +
                                   "; brain's softmax normalises each row (axis -1 or 1)");
            return activation(i, Activation::Softmax);
        }
        if (op == "Gelu") {
            const std::string approximate = m_g.string_attribute(i, "approximate").value_or("none");
            if (approximate != "none")
                unsupported(i, "it is the tanh approximation (approximate='" + approximate +
                                   "'); brain's gelu is the exact, erf-based GELU (nn.GELU() without "
                                   "approximate='tanh')");
            return activation(i, Activation::Gelu);
        }
        if (op == "Identity") return pass(i);
        if (op == "Dropout") return dropout(i);
        if (op == "Flatten") return flatten(i);
        if (op == "Reshape") return reshape(i);
        if (op == "Sub") return standardization(i);
        if (op == "LogSoftmax")
            unsupported(i, "it gives log-probabilities, and brain's output layers give probabilities (Softmax); "
                           "export the model with nn.Softmax as its last module, or without LogSoftmax");
        if (op == "Conv" || op == "ConvTranspose" || op == "MaxPool" || op == "AveragePool" ||
            op == "BatchNormalization" || op == "LayerNormalization" || op == "LSTM" || op == "GRU" || op == "RNN")
            unsupported(i, "it is not a dense layer");
        if (op == "If" || op == "Loop" || op == "Scan") unsupported(i, "it is control flow (a subgraph)");
        unsupported(i);
    }

    void pass(std::size_t i) {
        require_first_input(i);
        advance(i);
    }

    void dropout(std::size_t i) {
        require_first_input(i);
        const auto& n = node(i);
        if (n.input_size() > 2 && !n.input(2).empty()) {
            const OnnxConstant* mode = m_g.constant(n.input(2));
            const bool known = mode && mode->unusable.empty() && mode->size() == 1;
            if (!known)
                unsupported(i, "its training_mode is not a constant; brain imports inference graphs (export the "
                               "model in evaluation mode)");
            if (mode->integer ? mode->ints[0] != 0 : mode->floats[0] != 0.0f)
                unsupported(i, "its training_mode is true; brain imports inference graphs (export the model in "
                               "evaluation mode)");
        }
        if (n.output_size() > 1 && !n.output(1).empty() && !m_g.consumers(n.output(1)).empty())
            unsupported(i, "its mask output is used");
        advance(i);
    }

    void flatten(std::size_t i) {
        require_first_input(i);
        const std::int64_t axis = m_g.int_attribute(i, "axis").value_or(1);
        if (axis != 1 && !(m_rank == 2 && axis == -1))
            unsupported(i, "it flattens from axis " + std::to_string(axis) + "; brain keeps the batch axis (axis 1)");
        m_rank = 2;
        advance(i);
    }

    void reshape(std::size_t i) {
        require_first_input(i);
        const auto& n = node(i);
        const OnnxConstant* shape = n.input_size() > 1 ? m_g.constant(n.input(1)) : nullptr;
        bool keeps_rows = false;
        if (shape && shape->unusable.empty() && shape->integer && shape->ints.size() == 2) {
            const std::int64_t rows = shape->ints[0], cols = shape->ints[1];
            const bool whole = cols == -1 || (m_width != 0 && cols == static_cast<std::int64_t>(m_width));
            keeps_rows = (rows == 0 && whole) || (rows == -1 && cols != -1 && whole);
        }
        if (!keeps_rows)
            unsupported(i, "its target shape is not a constant [batch, features] that keeps every row (such as "
                           "[0, -1] or [-1, " + std::to_string(m_width) + "])");
        m_rank = 2;
        advance(i);
    }

    void standardization(std::size_t i) {
        if (!m_parts.layers.empty() || m_parts.standardization)
            unsupported(i, "a Sub is read only as the start of the input standardisation (Sub then Div) before "
                           "the first layer");
        require_first_input(i);
        const auto& n = node(i);
        const OnnxConstant& mean = weight(i, n.input_size() > 1 ? n.input(1) : "", "mean");
        const std::size_t width = m_width != 0 ? m_width : mean.size();
        const auto per_feature = [&](const OnnxConstant& c) {
            return c.size() == width && (c.dims.size() == 1 || (c.dims.size() == 2 && c.dims[0] == 1));
        };
        if (m_rank != 2 || !per_feature(mean))
            unsupported(i, "it subtracts " + std::to_string(mean.size()) + " values from " +
                               std::to_string(width) + " features; an input standardisation subtracts one mean per "
                               "feature");
        advance(i);
        const auto div = sole_user(m_cur);
        if (!div || !is_op(*div, "Div") || node(*div).input(0) != m_cur || node(*div).input_size() != 2)
            unsupported(i, "a Sub is read only as an input standardisation, followed by a Div by each feature's "
                           "standard deviation");
        const OnnxConstant& stddev = weight(*div, node(*div).input(1), "standard deviation");
        if (!per_feature(stddev))
            unsupported(*div, "it divides by " + std::to_string(stddev.size()) + " values; an input standardisation "
                              "divides each of the " + std::to_string(width) + " features by its deviation");
        for (std::size_t k = 0; k < width; ++k)
            if (!(std::isnormal(stddev.floats[k]) && stddev.floats[k] > 0.0f))
                unsupported(*div, "feature " + std::to_string(k) + "'s standard deviation is " +
                                      number_text(stddev.floats[k]) +
                                      "; a standard deviation must be > 0 and a normal float32");
        m_parts.standardization = Standardization{mean.floats, stddev.floats};
        m_width = width;
        advance(*div);
    }

    // A new layer from W (outputs x inputs, row-major) and b, read by node i.
    void dense(std::size_t i, std::size_t outputs, std::size_t inputs, std::vector<float> w, std::vector<float> b) {
        if (m_rank != 2)
            unsupported(i, "it multiplies a tensor of " +
                               count_of(static_cast<std::uint64_t>(m_rank), "dimension") +
                               "; flatten the input to [batch, features] first (nn.Flatten)");
        if (m_width != 0 && inputs != m_width)
            fail(m_g.describe(i) + ": its weight takes " + std::to_string(inputs) + " inputs, but the value it reads has " +
                 std::to_string(m_width) + " features; the graph is inconsistent");
        for (std::size_t k = 0; k < w.size(); ++k)
            if (!std::isfinite(w[k]))
                fail(m_g.describe(i) + ": weight [" + std::to_string(k / inputs) + ", " + std::to_string(k % inputs) +
                     "] is not finite after scaling by alpha");
        for (std::size_t k = 0; k < b.size(); ++k)
            if (!std::isfinite(b[k]))
                fail(m_g.describe(i) + ": bias [" + std::to_string(k) + "] is not finite after scaling by beta");
        m_parts.layers.push_back(LayerSpec{inputs, outputs, Activation::Linear});
        m_parts.parameters.insert(m_parts.parameters.end(), w.begin(), w.end());
        m_parts.parameters.insert(m_parts.parameters.end(), b.begin(), b.end());
        m_width = outputs;
        m_layer_open = true;
    }

    // The bias of a layer with `outputs` units from a constant of one value or one per unit ([n] or [1, n]).
    std::optional<std::vector<float>> bias_of(const OnnxConstant& c, std::size_t outputs, float scale) const {
        std::vector<float> b;
        if (c.size() == 1)
            b.assign(outputs, c.floats[0]);
        else if (c.size() == outputs && (c.dims.size() == 1 || (c.dims.size() == 2 && c.dims[0] == 1)))
            b = c.floats;
        else
            return std::nullopt;
        if (scale != 1.0f)
            for (float& v : b) v *= scale;
        return b;
    }

    void gemm(std::size_t i) {
        const auto& n = node(i);
        if (n.input_size() > 1 && n.input(1) == m_cur && n.input(0) != m_cur)
            unsupported(i, "it multiplies its weight by the input (W x); brain's layers compute x W^T + b");
        require_first_input(i);
        if (m_g.int_attribute(i, "transA").value_or(0) != 0)
            unsupported(i, "transA=1 transposes the batch; brain's layers compute x W^T + b");
        const bool trans_b = m_g.int_attribute(i, "transB").value_or(0) != 0;
        const float alpha = m_g.float_attribute(i, "alpha").value_or(1.0f);
        const float beta = m_g.float_attribute(i, "beta").value_or(1.0f);
        if (n.input_size() < 2) fail(m_g.describe(i) + " has no second input; the graph is damaged");
        const OnnxConstant& b = weight(i, n.input(1), "weight");
        if (b.dims.size() != 2)
            unsupported(i, "its weight has " + count_of(b.dims.size(), "dimension") + "; a dense layer's has 2");
        const auto rows = static_cast<std::size_t>(b.dims[0]), cols = static_cast<std::size_t>(b.dims[1]);
        const std::size_t outputs = trans_b ? rows : cols, inputs = trans_b ? cols : rows;
        if (outputs == 0 || inputs == 0) unsupported(i, "its weight is empty");
        std::vector<float> w(outputs * inputs);
        for (std::size_t o = 0; o < outputs; ++o)
            for (std::size_t k = 0; k < inputs; ++k)
                w[o * inputs + k] = alpha * (trans_b ? b.floats[o * inputs + k] : b.floats[k * outputs + o]);
        std::vector<float> bias(outputs, 0.0f);
        if (n.input_size() > 2 && !n.input(2).empty()) {
            auto c = bias_of(weight(i, n.input(2), "bias"), outputs, beta);
            if (!c)
                unsupported(i, "its bias C has the shape " + dims_text(weight(i, n.input(2), "bias").dims) +
                                   "; a dense layer's bias has one value, or one per unit ([" +
                                   std::to_string(outputs) + "] or [1, " + std::to_string(outputs) + "])");
            bias = std::move(*c);
        }
        dense(i, outputs, inputs, std::move(w), std::move(bias));
        advance(i);
    }

    void matmul(std::size_t i) {
        const auto& n = node(i);
        if (n.input_size() == 2 && n.input(1) == m_cur && n.input(0) != m_cur)
            unsupported(i, "it multiplies its weight by the input (W x); brain's layers compute x W^T + b");
        require_first_input(i);
        if (n.input_size() != 2) fail(m_g.describe(i) + " does not have two inputs; the graph is damaged");
        const OnnxConstant& b = weight(i, n.input(1), "weight");
        if (b.dims.size() != 2)
            unsupported(i, "its weight has " + count_of(b.dims.size(), "dimension") + "; a dense layer's has 2");
        const auto inputs = static_cast<std::size_t>(b.dims[0]), outputs = static_cast<std::size_t>(b.dims[1]);
        if (outputs == 0 || inputs == 0) unsupported(i, "its weight is empty");
        std::vector<float> w(outputs * inputs);
        for (std::size_t o = 0; o < outputs; ++o)
            for (std::size_t k = 0; k < inputs; ++k) w[o * inputs + k] = b.floats[k * outputs + o];
        advance(i);
        dense(i, outputs, inputs, std::move(w), std::vector<float>(outputs, 0.0f));
        // The bias: an Add of a constant that reads the product and nothing else, also through nodes that pass it
        // on unchanged (Identity, Dropout in evaluation mode, a Reshape that keeps the rows), each checked as it
        // would be anywhere else in the chain.
        for (auto next = sole_user(m_cur); next; next = sole_user(m_cur)) {
            if (is_op(*next, "Identity"))
                pass(*next);
            else if (is_op(*next, "Dropout"))
                dropout(*next);
            else if (is_op(*next, "Reshape"))
                reshape(*next);
            else
                break;
        }
        if (const auto add = sole_user(m_cur); add && is_op(*add, "Add")) {
            const std::string other = other_input(*add, m_cur);
            const OnnxConstant* c = other.empty() ? nullptr : m_g.constant(other);
            if (c) {
                auto values = bias_of(weight(*add, other, "bias"), outputs, 1.0f);
                if (!values)
                    unsupported(*add, "it adds a constant of shape " + dims_text(c->dims) + " to the " +
                                          std::to_string(outputs) + " units of " + m_g.describe(i) +
                                          "; a dense layer's bias has one value, or one per unit ([" +
                                          std::to_string(outputs) + "] or [1, " + std::to_string(outputs) + "])");
                for (std::size_t k = 0; k < outputs; ++k)
                    if (!std::isfinite((*values)[k]))
                        fail(m_g.describe(*add) + ": bias [" + std::to_string(k) + "] is not finite");
                std::copy(values->begin(), values->end(),
                          m_parts.parameters.end() - static_cast<std::ptrdiff_t>(outputs));
                advance(*add);
            }
        }
    }

    void activation(std::size_t i, Activation act) {
        require_first_input(i);
        if (m_parts.layers.empty())
            unsupported(i, "it comes before any dense layer (Gemm or MatMul)");
        if (!m_layer_open)
            unsupported(i, "it follows " + m_g.describe(m_activation_node) +
                               ", and a brain layer has one activation after its Gemm or MatMul");
        m_parts.layers.back().activation = act;
        m_layer_open = false;
        m_activation_node = i;
        advance(i);
    }

    // GELU as exporters write it in the opsets without a Gelu operator: x * (1 + erf(x / sqrt 2)) * 0.5, its
    // products in any order (PyTorch's legacy exporter, onnxscript, tf2onnx).
    bool gelu_erf_form(std::size_t first, std::size_t second) {
        const std::string x = m_cur;
        for (const auto& [d, m] : {std::pair{first, second}, std::pair{second, first}}) {
            const bool scaled = (is_op(d, "Div") && node(d).input_size() == 2 && node(d).input(0) == x &&
                                 scalar_near(node(d).input(1), std::sqrt(2.0))) ||
                                (is_op(d, "Mul") && scalar_near(other_input(d, x), std::sqrt(0.5)));
            if (!scaled || !is_op(m, "Mul") || node(d).output_size() != 1) continue;
            const auto erf = sole_user(node(d).output(0));
            if (!erf || !is_op(*erf, "Erf")) continue;
            const auto plus = sole_user(node(*erf).output(0));
            if (!plus || !is_op(*plus, "Add") || !scalar_near(other_input(*plus, node(*erf).output(0)), 1.0))
                continue;
            const std::string s = node(*plus).output(0);
            const std::string m_other = other_input(m, x);
            std::vector<std::size_t> nodes{d, *erf, *plus, m};
            std::optional<std::string> result;
            if (m_other == s) { // (x * s) * 0.5
                const auto half = sole_user(node(m).output(0));
                if (half && is_op(*half, "Mul") && scalar_near(other_input(*half, node(m).output(0)), 0.5)) {
                    nodes.push_back(*half);
                    result = node(*half).output(0);
                }
            } else if (scalar_near(m_other, 0.5)) { // (x * 0.5) * s
                const auto times = sole_user(node(m).output(0));
                if (times && is_op(*times, "Mul") && other_input(*times, node(m).output(0)) == s &&
                    sole_user(s) == times) {
                    nodes.push_back(*times);
                    result = node(*times).output(0);
                }
            } else if (const auto p = m_g.producer(m_other); p && is_op(*p, "Mul") && sole_user(s) == p &&
                                                             scalar_near(other_input(*p, s), 0.5) &&
                                                             sole_user(m_other) == m) { // x * (s * 0.5)
                nodes.push_back(*p);
                result = node(m).output(0);
            }
            if (!result) continue;
            activation_of_pattern(d, nodes, *result);
            return true;
        }
        return false;
    }

    void activation_of_pattern(std::size_t first, const std::vector<std::size_t>& nodes, const std::string& out) {
        if (m_parts.layers.empty()) unsupported(first, "a GELU comes before any dense layer (Gemm or MatMul)");
        if (!m_layer_open)
            unsupported(first, "a GELU follows " + m_g.describe(m_activation_node) +
                                   ", and a brain layer has one activation after its Gemm or MatMul");
        m_parts.layers.back().activation = Activation::Gelu;
        m_layer_open = false;
        m_activation_node = first;
        for (std::size_t k : nodes) m_used[k] = true;
        m_cur = out;
    }

    std::vector<std::string> names(const std::map<std::string, std::string>& metadata, const char* key,
                                   std::size_t expected, bool unique, bool allow_two) const {
        const auto it = metadata.find(key);
        if (it == metadata.end()) return {};
        const std::string where = std::string("the metadata entry '") + key + "'";
        const nlohmann::json j = nlohmann::json::parse(it->second, nullptr, false);
        std::vector<std::string> out;
        if (!j.is_array())
            fail(where + " is not a JSON array of names (found " + quote_excerpt(it->second) + ")");
        for (const auto& v : j) {
            if (!v.is_string()) fail(where + " holds something other than strings (" + quote_excerpt(it->second) + ")");
            out.push_back(v.get<std::string>());
        }
        if (!out.empty() && out.size() != expected && !(allow_two && expected == 1 && out.size() == 2))
            fail(where + " holds " + std::to_string(out.size()) + " names; the model has " + std::to_string(expected));
        if (const auto problem = names_problem(out, unique)) fail(where + ": " + *problem);
        return out;
    }

    Network finish(const std::string& input, const std::string& output) {
        if (m_parts.layers.empty())
            fail("no dense layer (Gemm or MatMul) lies between the input " + quote_excerpt(input) +
                 " and the output " + quote_excerpt(output) + "; " + kSupported);
        for (std::size_t i = 0; i < m_g.node_count(); ++i)
            if (!m_used[i] && !m_g.is_constant_node(i))
                fail(m_g.describe(i) + " is not on the path from the input " + quote_excerpt(input) +
                     " to the output " + quote_excerpt(output) + "; brain imports one chain of layers");
        const auto& declared = m_g.graph().output(0);
        if (declared.type().tensor_type().has_shape()) {
            const auto& shape = declared.type().tensor_type().shape();
            if (shape.dim_size() == 2 && shape.dim(1).has_dim_value() &&
                shape.dim(1).dim_value() != static_cast<std::int64_t>(m_width))
                fail("the output " + quote_excerpt(output) + " is declared with " +
                     std::to_string(shape.dim(1).dim_value()) + " columns, but the last layer has " +
                     std::to_string(m_width) + " units; the graph is inconsistent");
        }
        std::map<std::string, std::string> metadata;
        for (const auto& entry : m_model.metadata_props())
            if (!metadata.emplace(entry.key(), entry.value()).second)
                fail("the metadata entry " + quote_excerpt(entry.key()) +
                     " appears twice; which one is meant is unknown, so the file is refused: keep one of them");
        const std::size_t in = m_parts.layers.front().inputs, out = m_parts.layers.back().outputs;
        m_parts.feature_names = names(metadata, "feature_names", in, true, false);
        m_parts.target_names = names(metadata, "target_names", out, false, false);
        m_parts.class_labels = names(metadata, "class_labels", out, true, true);
        if (const auto it = metadata.find("brain.loss"); it != metadata.end()) {
            try {
                m_parts.loss = parse_loss(it->second);
            } catch (const Error& e) {
                fail(std::string("the metadata entry 'brain.loss': ") + e.what());
            }
        }
        return NetworkAccess::assemble(std::move(m_parts), m_origin);
    }

    const onnx::ModelProto& m_model;
    const OnnxGraph& m_g;
    const std::string& m_origin;
    std::vector<bool> m_used;
    std::string m_cur;
    int m_rank = 2;
    std::size_t m_width = 0; // features of the current value; 0 while unknown
    bool m_layer_open = false; // the last layer has no activation yet
    std::size_t m_activation_node = 0;
    NetworkParts m_parts;
};

} // namespace

Network network_from_onnx(std::string_view bytes, const std::string& origin) {
    const onnx::ModelProto model = parse_onnx_model(bytes, origin);
    const OnnxGraph graph(model, origin);
    return ChainReader(model, graph, origin).read();
}

} // namespace detail

Network Network::load_onnx(const std::filesystem::path& path, const InputLimits& limits) {
    const std::string bytes =
        detail::read_input_file(path, "ONNX file", limits.max_file_bytes, ErrorCode::InvalidModelFile,
                                {detail::k_onnx_max_bytes, detail::k_onnx_max_bytes_why});
    try {
        return detail::network_from_onnx(bytes, path.string());
    } catch (const std::bad_alloc&) {
        BRAIN_THROW(ErrorCode::AllocationFailed, "not enough host memory to import the ONNX file '", path.string(),
                    "' (", bytes.size(), " bytes); free memory or raise the process's memory limit");
    }
}

} // namespace brain
