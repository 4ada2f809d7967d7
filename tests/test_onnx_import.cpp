// ONNX import: the graphs exporters write for a multilayer perceptron (made with ONNX's own helper by
// tools/interop/make-pattern-fixtures.py) import and predict what a float64 reference computed; graphs brain cannot
// represent are refused naming the node, its op type and what brain supports; damaged files are refused precisely.
#include "support/catch.hpp"
#include "support/error_match.hpp"
#include "support/interop.hpp"

#include <brain/brain.hpp>
#include <string>
#include <utility>
#include <vector>

using brain::ErrorCode;
using brain::Network;
using brain::test::interop_data;
using brain::test::require_error;

namespace {

std::string shape_of(const Network& net) {
    std::string s = std::to_string(net.input_size());
    for (const auto& l : net.layers()) s += " -> " + std::to_string(l.outputs) + " " + std::string(to_string(l.activation));
    return s;
}

// Imports a pattern fixture and checks its predictions against the reference; returns the network.
Network import_pattern(const std::string& name) {
    const Network net = Network::load_onnx(interop_data("patterns/" + name + ".onnx"));
    const auto ref = nlohmann::json::parse(brain::test::read_bytes(interop_data("patterns/" + name + ".json")));
    const brain::Matrix got = net.predict(brain::test::matrix_from_json(ref["inputs"]));
    const double error = brain::test::relative_error(got, brain::test::matrix_from_json(ref["outputs"]));
    INFO(name << ": relative error " << error);
    CHECK(error <= 1e-5);
    return net;
}

} // namespace

TEST_CASE("ONNX import: the exporters' forms of a multilayer perceptron predict what the reference computes",
          "[core]") {
    const std::vector<std::pair<std::string, std::string>> fixtures{
        {"torch_legacy_relu_sigmoid", "5 -> 8 relu -> 1 sigmoid"},
        {"keras_gemm_alpha_beta_tanh", "4 -> 6 tanh -> 3 linear"},
        {"tf2onnx_matmul_add_softmax", "3 -> 7 relu -> 4 softmax"},
        {"gelu_legacy", "4 -> 10 gelu -> 2 linear"},
        {"gelu_onnxscript", "3 -> 9 gelu -> 3 linear"},
        {"gelu_keras", "6 -> 5 gelu -> 1 sigmoid"},
        {"gelu_operator", "3 -> 6 gelu -> 2 linear"},
        {"passthrough_leaky_softmax", "5 -> 12 leaky_relu -> 3 softmax"},
        {"rank3_flatten", "6 -> 4 tanh"},
        {"casts_and_reshape", "5 -> 4 relu -> 2 linear"},
        {"standardized_with_names", "3 -> 2 sigmoid"},
        {"dropout_training_mode_false", "4 -> 6 relu -> 2 linear"},
        {"matmul_passthrough_add", "4 -> 6 relu -> 3 linear"},
    };
    for (const auto& [name, shape] : fixtures) {
        INFO(name);
        const Network net = import_pattern(name);
        CHECK(shape_of(net) == shape);
        CHECK(net.loss() == (net.layers().back().activation == brain::Activation::Sigmoid   ? brain::Loss::BinaryCrossEntropy
                             : net.layers().back().activation == brain::Activation::Softmax ? brain::Loss::CategoricalCrossEntropy
                                                                                            : brain::Loss::MeanSquaredError));
    }
}

TEST_CASE("ONNX import: standardisation and names come from the graph and its metadata", "[core]") {
    const Network net = import_pattern("standardized_with_names");
    REQUIRE(net.standardization().has_value());
    CHECK(net.standardization()->mean == std::vector<float>{10.0f, -2.0f, 0.5f});
    CHECK(net.standardization()->stddev == std::vector<float>{4.0f, 0.25f, 1.5f});
    CHECK(net.feature_names() == std::vector<std::string>{"length", "width", "depth"});
    CHECK(net.class_labels() == std::vector<std::string>{"cat", "dog"});
    CHECK(net.target_names() == std::vector<std::string>{"p_cat", "p_dog"});
    const Network plain = import_pattern("torch_legacy_relu_sigmoid");
    CHECK_FALSE(plain.standardization().has_value());
    CHECK(plain.feature_names().empty());
}

TEST_CASE("ONNX import: graphs brain cannot represent are refused naming the node, its op and what is supported",
          "[core]") {
    const std::vector<std::pair<std::string, std::vector<std::string>>> refused{
        {"bad_conv", {"node 0 'conv0' (Conv)", "not a dense layer", "brain imports multilayer perceptrons"}},
        {"bad_branch", {"'z' feeds 2 nodes", "'relu' (Relu)", "'sig' (Sigmoid)", "a branch"}},
        {"bad_unsupported_op", {"node 1 'elu' (Elu) is not supported", "Relu, LeakyRelu (alpha 0.01), Sigmoid"}},
        {"bad_cycle",
         {"the graph has a cycle", "'loop_add' (Add) -> node 2 'loop_relu' (Relu) -> node 1 'loop_add'"}},
        {"bad_leaky_alpha", {"'leaky' (LeakyRelu)", "alpha) is 0.3", "slope 0.01"}},
        {"bad_log_softmax", {"'logsm' (LogSoftmax)", "log-probabilities"}},
        {"bad_hidden_softmax", {"softmax is allowed on the output layer only"}},
        {"bad_two_inputs", {"the graph has 2 inputs ('x', 'x2')", "one input"}},
        {"bad_weight_input", {"'mm' (MatMul) reads its weight from 'w_abs', which is not a constant"}},
        {"bad_gelu_tanh", {"'gelu' (Gelu)", "tanh approximation", "exact, erf-based"}},
        {"bad_softmax_axis", {"'sm' (Softmax)", "axis 0", "axis -1 or 1"}},
        {"bad_dead_node", {"node 1 'stray' (Abs) is not on the path from the input 'x' to the output 'y'"}},
        {"bad_trans_a", {"'fc' (Gemm)", "transA=1"}},
        {"bad_misspelt_attribute",
         {"'fc' (Gemm) has the attribute 'transb', which Gemm does not have", "alpha, beta, transA, transB"}},
        {"bad_repeated_attribute", {"'fc' (Gemm) gives the attribute 'transB' twice"}},
        {"bad_repeated_metadata", {"the metadata entry 'class_labels' appears twice"}},
        {"bad_external_data", {"the initializer 'w' keeps its data in an external file", "save_as_external_data"}},
        {"bad_dropout_training", {"'drop' (Dropout)", "training_mode is true", "evaluation mode"}},
    };
    for (const auto& [name, fragments] : refused) {
        INFO(name);
        const auto path = interop_data("patterns/" + name + ".onnx");
        const std::string message = brain::test::expect_error(ErrorCode::InvalidModelFile, [&] { Network::load_onnx(path); });
        CHECK(message.rfind(path.string() + ": ", 0) == 0);
        for (const auto& fragment : fragments) {
            INFO("expected fragment: " << fragment);
            CHECK(message.find(fragment) != std::string::npos);
        }
    }
}

TEST_CASE("ONNX import: a damaged file is refused saying where and why, never read past its end", "[core]") {
    const std::string good = brain::test::read_bytes(interop_data("patterns/gelu_legacy.onnx"));
    brain::test::ScratchDir dir("onnx_damaged");
    const auto path = dir / "m.onnx";

    SECTION("every truncation is an InvalidModelFile") {
        std::size_t truncated = 0;
        for (std::size_t n = 0; n < good.size(); ++n) {
            brain::test::write_bytes(path, good.substr(0, n));
            try {
                (void)Network::load_onnx(path);
                FAIL("a file cut to " << n << " of " << good.size() << " bytes was accepted");
            } catch (const brain::Error& e) {
                INFO("cut to " << n << " bytes: " << e.what());
                REQUIRE(e.code() == ErrorCode::InvalidModelFile);
                if (std::string(e.what()).find("the file is truncated") != std::string::npos) ++truncated;
            }
        }
        // Most cuts fall inside a length-delimited field: the message says so.
        CHECK(truncated > good.size() / 2);
    }
    SECTION("a cut inside the graph names the field") {
        brain::test::write_bytes(path, good.substr(0, good.size() - 40));
        require_error([&] { Network::load_onnx(path); }, ErrorCode::InvalidModelFile,
                      {path.string(), "not a readable ONNX model: at byte", "graph says it holds", "bytes, but only",
                       "the file is truncated"});
    }
    SECTION("other kinds of files are named") {
        brain::test::write_bytes(path, "{\"format\": \"brain-model\"}");
        require_error([&] { Network::load_onnx(path); }, ErrorCode::InvalidModelFile,
                      {"not a readable ONNX model", "it looks like JSON", "load_json"});
        brain::test::write_bytes(path, std::string("PK\x03\x04", 4) + std::string(60, 'x'));
        require_error([&] { Network::load_onnx(path); }, ErrorCode::InvalidModelFile, {"ZIP archive", "torch.onnx.export"});
        brain::test::write_bytes(path, "");
        require_error([&] { Network::load_onnx(path); }, ErrorCode::InvalidModelFile, {"it has no graph", "the file is empty"});
        brain::test::write_bytes(path, std::string("\x0f\xff\xff", 3));
        require_error([&] { Network::load_onnx(path); }, ErrorCode::InvalidModelFile, {"at byte 0", "an invalid protobuf wire type (7)"});
    }
    SECTION("the input limit applies before anything is parsed") {
        brain::test::write_bytes(path, good);
        brain::InputLimits limits;
        limits.max_file_bytes = 100;
        require_error([&] { Network::load_onnx(path, limits); }, ErrorCode::InvalidModelFile,
                      {"ONNX file", "the limit of", "--max-input-mib"});
    }
    SECTION("a directory or a missing file is an IoError") {
        require_error([&] { Network::load_onnx(dir.path); }, ErrorCode::IoError, {"a directory"});
        require_error([&] { Network::load_onnx(dir / "absent.onnx"); }, ErrorCode::IoError, {"absent.onnx"});
    }
}

TEST_CASE("ONNX import: an imported model trains further and exports back", "[plugin]") {
    const auto ref = nlohmann::json::parse(brain::test::read_bytes(interop_data("patterns/tf2onnx_matmul_add_softmax.json")));
    Network net = Network::load_onnx(interop_data("patterns/tf2onnx_matmul_add_softmax.onnx"));
    // Targets the model itself predicts, one-hot, for inputs around the reference's.
    brain::Random rng(5);
    brain::Matrix x(256, 3), y(256, 4);
    for (float& v : x.data()) v = static_cast<float>(rng.uniform(-2.5, 2.5));
    const auto classes = net.predict_classes(x);
    for (std::size_t r = 0; r < x.rows(); ++r) y(r, classes[r]) = 1.0f;
    const brain::Dataset data(x, y);
    const float before = net.evaluate(data).loss;
    net.set_optimizer(brain::Optimizer::adam(0.01f));
    net.fit(data, brain::TrainConfig{.epochs = 20, .batch_size = 32, .shuffle = true, .seed = 1});
    const auto after = net.evaluate(data);
    CHECK(after.loss < before);
    CHECK(*after.accuracy >= 0.97f);

    brain::test::ScratchDir dir("onnx_retrain");
    net.save_onnx(dir / "tuned.onnx");
    const Network back = Network::load_onnx(dir / "tuned.onnx");
    const brain::Matrix inputs = brain::test::matrix_from_json(ref["inputs"]);
    CHECK(brain::test::same_bits(back.predict(inputs), net.predict(inputs)));
    CHECK(back.epochs_trained() == 0); // training state is not part of an ONNX file
}
