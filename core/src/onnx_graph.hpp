// Internal: an ONNX model read for import: parsed with protobuf under bounds (a failed parse explained by walking
// the bytes against onnx.proto's descriptors), its graph checked as a graph (single assignment, every value
// defined, no cycle), and its constants decoded (initializers, Constant nodes, and constant expressions:
// Transpose, Cast, Identity). Every problem is InvalidModelFile "<file>: <what is wrong>; <what to do>".
#pragma once

#include <brain/error.hpp>
#include <cstdint>
#include <map>
#include <onnx/onnx_pb.h>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace brain::detail {

// A constant tensor, converted to float32 (floating types) or int64 (integer types) once.
struct OnnxConstant {
    std::vector<std::int64_t> dims;
    std::vector<float> floats;
    std::vector<std::int64_t> ints;
    bool integer = false;
    // Why the value cannot serve as a weight (an element type brain does not read, external data, an element
    // that is not finite); the reader says so only when the value is used.
    std::string unusable;
    std::size_t size() const noexcept { return integer ? ints.size() : floats.size(); }
};

// An ONNX file is one protobuf message: at most 2 GiB - 1 bytes, checked before and while the file is read.
inline constexpr std::uint64_t k_onnx_max_bytes = 2147483647;
inline constexpr const char* k_onnx_max_bytes_why =
    "an ONNX file is one protobuf message of at most 2 GiB (larger models keep their weights in external files, "
    "which brain does not read)";

// "[6, 1]" for messages.
std::string dims_text(const std::vector<std::int64_t>& dims);

// Parses `bytes` as an onnx::ModelProto. Refuses more than 2 GiB (protobuf's limit) and nesting deeper than 64.
onnx::ModelProto parse_onnx_model(std::string_view bytes, const std::string& origin);

class OnnxGraph {
public:
    // Checks the model's frame (graph, opset) and the graph's structure, and decodes its constants.
    OnnxGraph(const onnx::ModelProto& model, std::string origin);

    [[noreturn]] void fail(const std::string& message) const;

    const onnx::GraphProto& graph() const noexcept { return m_graph; }
    // The version of the standard operator set ("" / "ai.onnx") the model imports.
    std::int64_t opset() const noexcept { return m_opset; }
    std::size_t node_count() const noexcept { return static_cast<std::size_t>(m_graph.node_size()); }
    const onnx::NodeProto& node(std::size_t i) const { return m_graph.node(static_cast<int>(i)); }
    // "node 3 '/0/Gemm' (Gemm)" for messages.
    std::string describe(std::size_t i) const;
    // The nodes that read `value`, in graph order (a node reading it twice counts once).
    const std::vector<std::size_t>& consumers(const std::string& value) const;
    // The node that writes `value`, if any.
    std::optional<std::size_t> producer(const std::string& value) const;
    // The constant `value` holds, if it is one.
    const OnnxConstant* constant(const std::string& value) const;
    // True for Constant nodes and nodes folded into constants (they need no place in the chain).
    bool is_constant_node(std::size_t i) const { return m_constant_node[i]; }

    // An attribute of node i, if present; fail()s naming the node when it has the wrong type.
    std::optional<std::int64_t> int_attribute(std::size_t i, const char* name) const;
    std::optional<float> float_attribute(std::size_t i, const char* name) const;
    std::optional<std::string> string_attribute(std::size_t i, const char* name) const;

private:
    const onnx::AttributeProto* attribute(std::size_t i, const char* name, int type, const char* type_name) const;
    void check_frame(const onnx::ModelProto& model);
    void index_values();
    void check_acyclic();
    // Refuses an attribute the node's operator does not have, or one given twice (onnx_attributes.cpp).
    void check_attributes() const;
    void fold_constants();
    OnnxConstant decode(const onnx::TensorProto& tensor, const std::string& what) const;
    std::optional<OnnxConstant> evaluate(std::size_t i) const;

    const onnx::GraphProto& m_graph;
    std::string m_origin;
    std::int64_t m_opset = 0;
    std::map<std::string, std::vector<std::size_t>> m_consumers;
    std::map<std::string, std::size_t> m_producer;
    std::map<std::string, OnnxConstant> m_constants;
    std::vector<bool> m_constant_node;
};

} // namespace brain::detail
