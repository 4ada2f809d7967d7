// OnnxGraph::check_attributes: the attributes of every node of an operator brain reads must be ones that operator
// has, each given once. Readers look attributes up by name, so a misspelt one (transb for transB) would otherwise
// be ignored and a square weight read transposed, silently.
#include "onnx_graph.hpp"

#include <brain/error.hpp>
#include <set>
#include <string_view>

namespace brain::detail {

namespace {

struct OperatorAttributes {
    std::string_view op;
    std::initializer_list<std::string_view> names; // every opset's, up to opset 22
};

// The operators brain reads (import, constant folding, the patterns of GELU and standardisation). The old
// opsets' attributes (consumed_inputs, broadcast, is_test) are kept: they change nothing brain reads, and files
// that old still load.
const OperatorAttributes k_operators[] = {
    {"Gemm", {"alpha", "beta", "transA", "transB", "broadcast"}},
    {"MatMul", {}},
    {"Relu", {"consumed_inputs"}},
    {"Sigmoid", {"consumed_inputs"}},
    {"Tanh", {"consumed_inputs"}},
    {"Erf", {}},
    {"LeakyRelu", {"alpha", "consumed_inputs"}},
    {"Softmax", {"axis"}},
    {"Gelu", {"approximate"}},
    {"Identity", {}},
    {"Dropout", {"ratio", "is_test", "seed", "consumed_inputs"}},
    {"Flatten", {"axis"}},
    {"Reshape", {"allowzero", "shape", "consumed_inputs"}},
    {"Add", {"axis", "broadcast", "consumed_inputs"}},
    {"Sub", {"axis", "broadcast", "consumed_inputs"}},
    {"Mul", {"axis", "broadcast", "consumed_inputs"}},
    {"Div", {"axis", "broadcast", "consumed_inputs"}},
    {"Constant",
     {"value", "value_float", "value_floats", "value_int", "value_ints", "value_string", "value_strings",
      "sparse_value"}},
    {"Cast", {"to", "saturate", "round_mode"}},
    {"Transpose", {"perm"}},
};

std::string list(std::initializer_list<std::string_view> names) {
    if (names.size() == 0) return "none";
    std::string out;
    for (std::string_view n : names) out += (out.empty() ? "" : ", ") + std::string(n);
    return out;
}

} // namespace

void OnnxGraph::check_attributes() const {
    for (std::size_t i = 0; i < node_count(); ++i) {
        const onnx::NodeProto& n = node(i);
        if (!n.domain().empty() && n.domain() != "ai.onnx") continue;
        const OperatorAttributes* known = nullptr;
        for (const auto& o : k_operators)
            if (o.op == n.op_type()) known = &o;
        if (!known) continue; // an operator brain does not read is refused where it is met, by name
        std::set<std::string> seen;
        for (const onnx::AttributeProto& a : n.attribute()) {
            bool allowed = false;
            for (std::string_view name : known->names) allowed = allowed || name == a.name();
            if (!allowed)
                fail(describe(i) + " has the attribute " + quote_excerpt(a.name(), 60) + ", which " +
                     std::string(known->op) + " does not have (its attributes: " + list(known->names) +
                     "); a misspelt attribute would be ignored, so the file is refused (onnx.checker refuses it "
                     "too); export it again or correct the name");
            if (!seen.insert(a.name()).second)
                fail(describe(i) + " gives the attribute " + quote_excerpt(a.name(), 60) +
                     " twice; an ONNX node names each attribute once, so which one is meant is unknown");
        }
    }
}

} // namespace brain::detail
