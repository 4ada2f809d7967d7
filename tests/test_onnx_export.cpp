// ONNX export: the graph brain writes (read back with ONNX's generated classes: opset, names, dynamic batch,
// initializers in nn.Sequential naming, metadata), its round trip through the importer bit for bit, and the
// safe-output rules. ONNX Runtime and the ONNX checker run the same exports in the interop_* tests.
#include "support/catch.hpp"
#include "support/error_match.hpp"
#include "support/interop.hpp"
#include "support/networks.hpp"

#include <brain/brain.hpp>
#include <onnx/onnx_pb.h>
#include <string>
#include <vector>

using brain::Activation;
using brain::ErrorCode;
using brain::Network;
using brain::test::dense_network;
using brain::test::require_error;

namespace {

// The network with a standardisation and names, as brain train leaves it.
Network with_metadata(Network net, std::vector<std::string> features, std::vector<std::string> labels) {
    brain::Random rng(3);
    brain::Matrix x(20, net.input_size()), y(20, net.output_size());
    for (float& v : x.data()) v = static_cast<float>(rng.uniform(-40.0, 60.0));
    for (std::size_t r = 0; r < 20; ++r) y(r, r % net.output_size()) = 1.0f;
    brain::Dataset data(x, y);
    std::vector<std::string> targets;
    for (std::size_t k = 0; k < net.output_size(); ++k) targets.push_back("class=" + labels[k]);
    data.set_names(std::move(features), targets);
    data.set_class_labels(std::move(labels));
    data.standardize();
    net.adopt_dataset_metadata(data);
    return net;
}

onnx::ModelProto parse(const std::string& bytes) {
    onnx::ModelProto model;
    REQUIRE(model.ParseFromString(bytes));
    return model;
}

std::vector<std::string> ops(const onnx::GraphProto& g) {
    std::vector<std::string> out;
    for (const auto& n : g.node()) out.push_back(n.op_type());
    return out;
}

} // namespace

TEST_CASE("ONNX export: a standard graph of the whole model, with names and a symbolic batch", "[core]") {
    brain::test::ScratchDir dir("onnx_export");
    const Network net = with_metadata(
        dense_network({{8, Activation::Gelu}, {4, Activation::LeakyRelu}, {3, Activation::Softmax}}, 3, 1),
        {"sepal", "petal", "stem"}, {"a", "b", "c"});
    net.save_onnx(dir / "m.onnx");
    const onnx::ModelProto m = parse(brain::test::read_bytes(dir / "m.onnx"));
    CHECK(m.ir_version() == 8);
    REQUIRE(m.opset_import_size() == 1);
    CHECK(m.opset_import(0).domain().empty());
    CHECK(m.opset_import(0).version() == 17);
    CHECK(m.producer_name() == "brain");
    const auto& g = m.graph();
    REQUIRE(g.input_size() == 1);
    REQUIRE(g.output_size() == 1);
    CHECK(g.input(0).name() == "input");
    CHECK(g.output(0).name() == "output");
    const auto& in = g.input(0).type().tensor_type();
    CHECK(in.elem_type() == onnx::TensorProto::FLOAT);
    REQUIRE(in.shape().dim_size() == 2);
    CHECK(in.shape().dim(0).dim_param() == "batch");
    CHECK(in.shape().dim(1).dim_value() == 3);
    CHECK(g.output(0).type().tensor_type().shape().dim(1).dim_value() == 3);
    // Standardisation, then Gemm + the erf form of GELU, Gemm + LeakyRelu, Gemm + Softmax.
    CHECK(ops(g) == std::vector<std::string>{"Sub", "Div", "Gemm", "Div", "Erf", "Add", "Mul", "Mul", "Gemm",
                                             "LeakyRelu", "Gemm", "Softmax"});
    std::vector<std::string> initializers;
    for (const auto& t : g.initializer()) initializers.push_back(t.name());
    for (const char* name : {"standardization.mean", "standardization.stddev", "0.weight", "0.bias", "2.weight",
                             "2.bias", "4.weight", "4.bias"})
        CHECK(std::find(initializers.begin(), initializers.end(), name) != initializers.end());
    for (const auto& t : g.initializer())
        if (t.name() == "2.weight") CHECK((t.dims_size() == 2 && t.dims(0) == 4 && t.dims(1) == 8));
    std::map<std::string, std::string> meta;
    for (const auto& p : m.metadata_props()) meta[p.key()] = p.value();
    CHECK(meta["feature_names"] == R"(["sepal","petal","stem"])");
    CHECK(meta["class_labels"] == R"(["a","b","c"])");
    CHECK(meta["brain.loss"] == "categorical_cross_entropy");
}

TEST_CASE("ONNX export: every activation round-trips through the importer bit for bit", "[core]") {
    brain::test::ScratchDir dir("onnx_roundtrip");
    const Activation hidden[] = {Activation::Linear, Activation::Relu, Activation::LeakyRelu, Activation::Sigmoid,
                                 Activation::Tanh, Activation::Gelu};
    const std::pair<std::size_t, Activation> outputs[] = {
        {1, Activation::Linear}, {1, Activation::Sigmoid}, {4, Activation::Softmax}, {2, Activation::Tanh}};
    brain::Random rng(9);
    brain::Matrix x(33, 5);
    for (float& v : x.data()) v = static_cast<float>(rng.uniform(-4.0, 4.0));
    int count = 0;
    for (Activation h : hidden)
        for (const auto& [units, out] : outputs) {
            Network net = dense_network({{7, h}, {6, h}, {units, out}}, 5, static_cast<std::uint64_t>(++count));
            if (count % 2 == 0) {
                std::vector<std::string> labels;
                for (std::size_t k = 0; k < (units == 1 ? 2 : units); ++k) labels.push_back("c" + std::to_string(k));
                if (out == Activation::Softmax || out == Activation::Sigmoid)
                    net = with_metadata(std::move(net), {"v", "w", "x", "y", "z"}, labels);
            }
            INFO("hidden " << to_string(h) << ", output " << to_string(out));
            const auto path = dir / ("m" + std::to_string(count) + ".onnx");
            net.save_onnx(path);
            const Network back = Network::load_onnx(path);
            REQUIRE(back.layers().size() == net.layers().size());
            for (std::size_t i = 0; i < net.layers().size(); ++i) {
                CHECK(back.layers()[i].activation == net.layers()[i].activation);
                CHECK(back.layers()[i].outputs == net.layers()[i].outputs);
            }
            CHECK(back.parameters() == net.parameters());
            CHECK(back.loss() == net.loss());
            CHECK(back.feature_names() == net.feature_names());
            CHECK(back.class_labels() == net.class_labels());
            CHECK(back.target_names() == net.target_names());
            CHECK(back.standardization().has_value() == net.standardization().has_value());
            CHECK(brain::test::same_bits(back.predict(x), net.predict(x)));
        }
}

TEST_CASE("ONNX export: written whole through the safe-output routine, or not at all", "[core]") {
    brain::test::ScratchDir dir("onnx_output");
    const Network net = dense_network({{2, Activation::Relu}, {1, Activation::Linear}}, 2, 1);
    require_error([&] { net.save_onnx(dir.path); }, ErrorCode::IoError, {"directory"});
    net.save_json(dir / "m.json");
    require_error([&] { net.save_onnx(dir / "m.json", {dir / "m.json"}); }, ErrorCode::IoError, {"m.json"});
    std::filesystem::create_symlink(dir / "target.onnx", dir / "link.onnx");
    require_error([&] { net.save_onnx(dir / "link.onnx"); }, ErrorCode::IoError, {"symbolic link"});
    CHECK(dir.entries() == 2); // m.json and the link: no temporary left behind
    net.save_onnx(dir / "m.onnx");
    const std::string first = brain::test::read_bytes(dir / "m.onnx");
    net.save_onnx(dir / "m.onnx"); // replaces it, with the same bytes: the export is deterministic
    CHECK(brain::test::read_bytes(dir / "m.onnx") == first);
}

TEST_CASE("ONNX import: malformed graphs are refused naming what is wrong", "[core]") {
    brain::test::ScratchDir dir("onnx_malformed");
    const Network net = dense_network({{3, Activation::Relu}, {2, Activation::Sigmoid}}, 2, 5);
    net.save_onnx(dir / "good.onnx");
    const onnx::ModelProto good = parse(brain::test::read_bytes(dir / "good.onnx"));
    const auto refused = [&](const onnx::ModelProto& m, std::initializer_list<std::string> fragments) {
        const auto path = dir / "bad.onnx";
        brain::test::write_bytes(path, m.SerializeAsString());
        require_error([&] { Network::load_onnx(path); }, ErrorCode::InvalidModelFile, fragments);
    };
    const auto find_initializer = [](onnx::ModelProto& m, const std::string& name) {
        for (auto& t : *m.mutable_graph()->mutable_initializer())
            if (t.name() == name) return &t;
        FAIL("no initializer " << name);
        return static_cast<onnx::TensorProto*>(nullptr);
    };

    onnx::ModelProto m = good;
    m.mutable_graph()->mutable_node(1)->set_output(0, "/0/Gemm_output_0");
    refused(m, {"the value '/0/Gemm_output_0' is written by node 0", "and by node 1", "writes each value once"});

    m = good;
    m.mutable_graph()->mutable_node(1)->set_input(0, "nowhere");
    refused(m, {"node 1 '/1/Relu' (Relu) reads 'nowhere', which no node, graph input or initializer defines"});

    m = good; // a node reading its own output
    m.mutable_graph()->mutable_node(1)->set_input(0, m.graph().node(1).output(0));
    refused(m, {"the graph has a cycle: node 1 '/1/Relu' (Relu) -> node 1 '/1/Relu' (Relu)"});

    m = good;
    find_initializer(m, "2.weight")->mutable_raw_data()->resize(20);
    refused(m, {"the initializer '2.weight' has dimensions [2, 3] (6 elements) but 20 bytes of raw data"});

    m = good;
    find_initializer(m, "0.bias")->set_data_type(onnx::TensorProto::STRING);
    refused(m, {"the initializer '0.bias' holds STRING elements", "brain reads FLOAT, DOUBLE, FLOAT16 and BFLOAT16"});

    m = good;
    find_initializer(m, "0.weight")->mutable_raw_data()->replace(0, 4, std::string("\x00\x00\xc0\x7f", 4));
    refused(m, {"the initializer '0.weight' has element 0 that is not a finite float32 number"});

    m = good;
    m.clear_opset_import();
    refused(m, {"imports no version of the standard ONNX operator set"});

    m = good;
    m.set_ir_version(0);
    refused(m, {"IR version 0", "IR version 3 and later"});

    m = good;
    m.mutable_graph()->mutable_input(0)->mutable_type()->mutable_tensor_type()->set_elem_type(onnx::TensorProto::DOUBLE);
    refused(m, {"the input 'input' has element type 11, not FLOAT", "float32 models"});

    m = good;
    m.mutable_graph()->mutable_output(0)->mutable_type()->mutable_tensor_type()->mutable_shape()->mutable_dim(1)->set_dim_value(5);
    refused(m, {"the output 'output' is declared with 5 columns, but the last layer has 2 units"});

    m = good;
    find_initializer(m, "2.weight")->set_dims(1, 4);
    find_initializer(m, "2.weight")->mutable_raw_data()->resize(32);
    refused(m, {"node 2 '/2/Gemm' (Gemm): its weight takes 4 inputs, but the value it reads has 3 features"});

    m = good;
    find_initializer(m, "0.bias")->set_dims(0, 2);
    find_initializer(m, "0.bias")->mutable_raw_data()->resize(8);
    refused(m, {"its bias C has the shape [2]", "one per unit ([3] or [1, 3])"});

    m = good;
    {
        auto* entry = m.add_metadata_props();
        entry->set_key("feature_names");
        entry->set_value(R"(["only one"])");
    }
    refused(m, {"the metadata entry 'feature_names' holds 1 names; the model has 2"});

    m = good;
    {
        auto* entry = m.add_metadata_props();
        entry->set_key("class_labels");
        entry->set_value("a,b");
    }
    refused(m, {"the metadata entry 'class_labels' is not a JSON array of names"});

    m = good;
    m.mutable_graph()->mutable_node(2)->set_op_type("Gemm2");
    m.mutable_graph()->mutable_node(2)->set_domain("com.example");
    refused(m, {"node 2 '/2/Gemm' (com.example.Gemm2)", "the operator domain 'com.example' is not the standard one"});
}
