// Network::save_onnx: the whole model as a standard ONNX graph (docs/interop.md, "ONNX export"), built with the
// ONNX project's generated classes and checked by its checker and strict shape inference before it is written.
#include "interop_common.hpp"
#include "network_rules.hpp"
#include "onnx_format.hpp"

#include <brain/error.hpp>
#include <brain/network.hpp>
#include <brain/safe_file.hpp>
#include <brain/version.hpp>
#include <cmath>
#include <nlohmann/json.hpp>
#include <onnx/checker.h>
#include <onnx/defs/schema.h>
#include <onnx/onnx_pb.h>
#include <onnx/shape_inference/implementation.h>
#include <set>

namespace brain {

namespace {

using detail::kOnnxInputName;
using detail::kOnnxOutputName;

// Builds the graph node by node; each value is named after the node that makes it, as PyTorch's exporter does.
class GraphWriter {
public:
    explicit GraphWriter(onnx::GraphProto& graph) : m_graph(graph) {}

    void initializer(const std::string& name, const std::vector<std::int64_t>& dims, const float* values,
                     std::size_t count) {
        onnx::TensorProto* t = m_graph.add_initializer();
        t->set_name(name);
        t->set_data_type(onnx::TensorProto::FLOAT);
        for (std::int64_t d : dims) t->add_dims(d);
        t->set_raw_data(detail::float_bytes(values, count));
    }

    // A scalar constant shared by every use (the GELU's sqrt(2), 1 and 1/2).
    std::string scalar(const std::string& name, float value) {
        if (m_scalars.emplace(name).second) initializer(name, {}, &value, 1);
        return name;
    }

    onnx::NodeProto* node(const std::string& name, const char* op, std::vector<std::string> inputs,
                          std::string output) {
        onnx::NodeProto* n = m_graph.add_node();
        n->set_name(name);
        n->set_op_type(op);
        for (auto& input : inputs) n->add_input(std::move(input));
        n->add_output(std::move(output));
        return n;
    }

    static void attribute(onnx::NodeProto* node, const char* name, std::int64_t value) {
        onnx::AttributeProto* a = node->add_attribute();
        a->set_name(name);
        a->set_type(onnx::AttributeProto::INT);
        a->set_i(value);
    }

    static void attribute(onnx::NodeProto* node, const char* name, float value) {
        onnx::AttributeProto* a = node->add_attribute();
        a->set_name(name);
        a->set_type(onnx::AttributeProto::FLOAT);
        a->set_f(value);
    }

private:
    onnx::GraphProto& m_graph;
    std::set<std::string> m_scalars;
};

// A float tensor [batch, width] with a symbolic batch dimension.
void declare(onnx::ValueInfoProto* value, const std::string& name, std::size_t width) {
    value->set_name(name);
    onnx::TypeProto_Tensor* tensor = value->mutable_type()->mutable_tensor_type();
    tensor->set_elem_type(onnx::TensorProto::FLOAT);
    tensor->mutable_shape()->add_dim()->set_dim_param("batch");
    tensor->mutable_shape()->add_dim()->set_dim_value(static_cast<std::int64_t>(width));
}

std::string json_array(const std::vector<std::string>& names) {
    return nlohmann::json(names).dump();
}

void metadata(onnx::ModelProto& model, const char* key, const std::string& value) {
    onnx::StringStringEntryProto* entry = model.add_metadata_props();
    entry->set_key(key);
    entry->set_value(value);
}

// The layer's activation applied to `z`; returns the value holding the result. The exporter's opset (17) has no
// Gelu operator, so GELU is written in the form PyTorch exports it: x * (1 + erf(x / sqrt 2)) * 0.5.
std::string activation(GraphWriter& g, Activation act, const std::string& prefix, const std::string& z,
                       const std::string& out) {
    switch (act) {
    case Activation::Linear:
        return z;
    case Activation::Relu:
        g.node(prefix + "Relu", "Relu", {z}, out);
        return out;
    case Activation::LeakyRelu:
        GraphWriter::attribute(g.node(prefix + "LeakyRelu", "LeakyRelu", {z}, out), "alpha",
                               detail::kLeakyReluSlope);
        return out;
    case Activation::Sigmoid:
        g.node(prefix + "Sigmoid", "Sigmoid", {z}, out);
        return out;
    case Activation::Tanh:
        g.node(prefix + "Tanh", "Tanh", {z}, out);
        return out;
    case Activation::Softmax:
        GraphWriter::attribute(g.node(prefix + "Softmax", "Softmax", {z}, out), "axis", std::int64_t{-1});
        return out;
    case Activation::Gelu: {
        const std::string sqrt2 = g.scalar("gelu.sqrt2", 1.41421356237309504880f);
        const std::string one = g.scalar("gelu.one", 1.0f);
        const std::string half = g.scalar("gelu.half", 0.5f);
        g.node(prefix + "Div", "Div", {z, sqrt2}, prefix + "Div_output_0");
        g.node(prefix + "Erf", "Erf", {prefix + "Div_output_0"}, prefix + "Erf_output_0");
        g.node(prefix + "Add", "Add", {prefix + "Erf_output_0", one}, prefix + "Add_output_0");
        g.node(prefix + "Mul", "Mul", {z, prefix + "Add_output_0"}, prefix + "Mul_output_0");
        g.node(prefix + "Mul_1", "Mul", {prefix + "Mul_output_0", half}, out);
        return out;
    }
    }
    BRAIN_THROW(ErrorCode::InvalidState, "Network::save_onnx: unknown activation ", static_cast<int>(act));
}

onnx::ModelProto build_model(const Network& net, const std::vector<LayerSpec>& layers) {
    onnx::ModelProto model;
    model.set_ir_version(detail::kOnnxIrVersion);
    model.set_producer_name("brain");
    model.set_producer_version(version());
    model.set_model_version(1);
    model.set_doc_string("brain dense network " + detail::describe_layers(layers) +
                         (net.standardization() ? ", inputs standardised" : ""));
    onnx::OperatorSetIdProto* opset = model.add_opset_import();
    opset->set_domain("");
    opset->set_version(detail::kOnnxExportOpset);

    onnx::GraphProto& graph = *model.mutable_graph();
    graph.set_name("brain_mlp");
    GraphWriter g(graph);
    declare(graph.add_input(), kOnnxInputName, net.input_size());
    declare(graph.add_output(), kOnnxOutputName, net.output_size());

    std::string x = kOnnxInputName;
    if (const auto& s = net.standardization()) {
        const auto width = static_cast<std::int64_t>(net.input_size());
        g.initializer("standardization.mean", {width}, s->mean.data(), s->mean.size());
        g.initializer("standardization.stddev", {width}, s->stddev.data(), s->stddev.size());
        g.node("/standardize/Sub", "Sub", {x, "standardization.mean"}, "/standardize/Sub_output_0");
        g.node("/standardize/Div", "Div", {"/standardize/Sub_output_0", "standardization.stddev"},
               "/standardize/Div_output_0");
        x = "/standardize/Div_output_0";
    }

    const std::vector<std::size_t> index = detail::sequential_indices(layers);
    const float* p = net.parameters().data();
    for (std::size_t i = 0; i < layers.size(); ++i) {
        const LayerSpec& l = layers[i];
        const bool last = i + 1 == layers.size();
        const std::string linear = std::to_string(index[i]);
        const std::string weight = linear + ".weight", bias = linear + ".bias";
        g.initializer(weight, {static_cast<std::int64_t>(l.outputs), static_cast<std::int64_t>(l.inputs)}, p,
                      l.inputs * l.outputs);
        p += l.inputs * l.outputs;
        g.initializer(bias, {static_cast<std::int64_t>(l.outputs)}, p, l.outputs);
        p += l.outputs;
        const std::string gemm_out =
            last && l.activation == Activation::Linear ? kOnnxOutputName : "/" + linear + "/Gemm_output_0";
        GraphWriter::attribute(g.node("/" + linear + "/Gemm", "Gemm", {x, weight, bias}, gemm_out), "transB",
                               std::int64_t{1});
        // Built by appending: GCC 12 misreports "literal" + std::string here under -Wrestrict (GCC bug 105329).
        std::string act_prefix = "/";
        act_prefix.append(std::to_string(index[i] + 1)).append("/");
        const std::string act_out = last ? kOnnxOutputName : act_prefix + detail::to_onnx_name(l.activation) + "_output_0";
        x = activation(g, l.activation, act_prefix, gemm_out, act_out);
    }

    for (const auto& [key, names] : {std::pair{"feature_names", &net.feature_names()},
                                     std::pair{"target_names", &net.target_names()},
                                     std::pair{"class_labels", &net.class_labels()}})
        if (!names->empty()) metadata(model, key, json_array(*names));
    metadata(model, "brain.loss", std::string(to_string(net.loss())));
    return model;
}

// The ONNX project's checks, as onnx.checker.check_model(model, full_check=True) runs them: the model, then
// strict shape inference with type checks. Then the inferred output must be [batch, outputs].
void check_with_onnx(onnx::ModelProto& model, std::size_t outputs) {
    try {
        onnx::checker::check_model(model);
        onnx::shape_inference::InferShapes(model, onnx::OpSchemaRegistry::Instance(),
                                           onnx::ShapeInferenceOptions(true, 1, false));
    } catch (const std::exception& e) {
        BRAIN_THROW(ErrorCode::InvalidState, "Network::save_onnx: the ONNX checker refused the exported graph (",
                    e.what(), "); this is a bug in brain: please report it with the model");
    }
    const auto& shape = model.graph().output(0).type().tensor_type().shape();
    BRAIN_CHECK(shape.dim_size() == 2 && shape.dim(1).dim_value() == static_cast<std::int64_t>(outputs),
                ErrorCode::InvalidState, "Network::save_onnx: ONNX shape inference gives the output ",
                shape.dim_size(), " dimensions, expected [batch, ", outputs,
                "]; this is a bug in brain: please report it");
    // The inferred shapes of intermediate values were for checking only; the file keeps the graph as built.
    model.mutable_graph()->clear_value_info();
}

} // namespace

std::string detail::onnx_model_bytes(const Network& net) {
    const std::vector<LayerSpec>& layers = net.layers();
    for (std::size_t i = 0; i < net.parameters().size(); ++i)
        BRAIN_CHECK(std::isfinite(net.parameters()[i]), ErrorCode::NumericalError,
                    "Network::save_onnx: ", describe_parameter(layers, i), " is ", net.parameters()[i],
                    "; a model with non-finite parameters cannot be exported (training diverged)");
    for (const auto& [key, list, unique] : {std::tuple{"feature_names", &net.feature_names(), true},
                                            std::tuple{"target_names", &net.target_names(), false},
                                            std::tuple{"class_labels", &net.class_labels(), true}})
        if (const auto problem = names_problem(*list, unique))
            BRAIN_THROW(ErrorCode::InvalidArgument, "Network::save_onnx: ", key, ": ", *problem,
                        "; set names that an ONNX file can hold");
    // A protobuf message holds at most 2 GiB; larger ONNX models keep their weights in separate files.
    const std::uint64_t bytes = static_cast<std::uint64_t>(net.parameter_count()) * 4 +
                                (net.standardization() ? 8 * net.input_size() : 0);
    BRAIN_CHECK(bytes < kOnnxMaxParameterBytes, ErrorCode::Unsupported, "Network::save_onnx: the model's ",
                net.parameter_count(), " parameters take ", bytes,
                " bytes, more than a self-contained ONNX file can hold (2 GiB, protobuf's limit); export the "
                "weights as safetensors (save_safetensors) instead");
    onnx::ModelProto model = build_model(net, layers);
    check_with_onnx(model, net.output_size());
    std::string out;
    BRAIN_CHECK(model.SerializeToString(&out), ErrorCode::InvalidState,
                "Network::save_onnx: protobuf could not serialise the graph (", model.ByteSizeLong(),
                " bytes); please report it");
    return out;
}

void Network::save_onnx(const std::filesystem::path& path, const std::vector<std::filesystem::path>& inputs) const {
    validate();
    check_output_path(path, inputs);
    write_file_safely(path, detail::onnx_model_bytes(*this), inputs);
}

} // namespace brain
