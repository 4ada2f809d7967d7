// The model file: bit-exact save/load round trips, atomic replacement, and every load error naming the file and
// the JSON path at fault.
#include "support/catch.hpp"
#include "support/error_match.hpp"
#include "support/networks.hpp"

#include <brain/dataset.hpp>
#include <brain/error.hpp>
#include <brain/network.hpp>
#include <brain/random.hpp>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <limits>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <unistd.h>

using brain::Activation;
using brain::ErrorCode;
using brain::Matrix;
using brain::Network;
using brain::Optimizer;
namespace fs = std::filesystem;

using brain::test::require_error;

namespace {

// A fresh, empty directory removed at the end of the test.
struct TempDir {
    fs::path path;
    TempDir() {
        static int count = 0; // the process id and a count name it uniquely among concurrent test processes
        path = fs::temp_directory_path() /
               ("brain_model_test_" + std::to_string(::getpid()) + "_" + std::to_string(++count));
        fs::remove_all(path);
        fs::create_directories(path);
    }
    ~TempDir() {
        std::error_code ec;
        fs::permissions(path, fs::perms::owner_all, fs::perm_options::add, ec);
        fs::remove_all(path, ec);
    }
    std::size_t entries() const {
        return static_cast<std::size_t>(std::distance(fs::directory_iterator(path), {}));
    }
};

std::string read_text(const fs::path& p) {
    std::ifstream in(p, std::ios::binary);
    std::ostringstream s;
    s << in.rdbuf();
    return s.str();
}

std::uint32_t bits(float f) {
    std::uint32_t u;
    std::memcpy(&u, &f, sizeof u);
    return u;
}

bool same_bits(const std::vector<float>& a, const std::vector<float>& b) {
    return a.size() == b.size() && (a.empty() || std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0);
}

// A trained-looking model: odd float values, metadata, SGD with momentum, a large seed, epochs trained.
Network rich_model() {
    Network net = Network::builder()
                      .input_size(3)
                      .dense(16, Activation::Gelu)
                      .dense(8, Activation::LeakyRelu)
                      .dense(3, Activation::Softmax)
                      .optimizer(Optimizer::sgd(0.0123f, 0.9f))
                      .seed(0x8000000000000005ULL)
                      .build();
    // Random finite bit patterns cover every exponent, subnormals and signed zeros.
    std::vector<float> params(net.parameter_count());
    brain::Random rng(12345);
    for (auto& p : params) {
        std::uint32_t u;
        do u = static_cast<std::uint32_t>(rng.next_u64() >> 32);
        while (((u >> 23) & 0xff) == 0xff); // skip inf / nan
        std::memcpy(&p, &u, sizeof p);
    }
    params[0] = 0.1f;
    params[1] = -0.0f;
    params[2] = std::numeric_limits<float>::denorm_min();
    params[3] = std::numeric_limits<float>::max();
    params[4] = -std::numeric_limits<float>::min();
    params[5] = 1.0f / 3.0f;
    brain::Checkpoint cp;
    cp.parameters = params;
    cp.optimizer_state.assign(net.parameter_count(), 0.5f);
    cp.optimizer_step = 99;
    cp.epochs_trained = 7;
    net.restore_checkpoint(cp);

    brain::Dataset d(Matrix{{1, 2, 3}, {4, 5.5f, 6}, {0.1f, 0.2f, 0.3f}}, Matrix{{1, 0, 0}, {0, 1, 0}, {0, 0, 1}});
    d.set_names({"length \"cm\"", "wïdth", "h,eight"}, {"kind=a", "kind=b", "kind=c"});
    d.set_class_labels({"a", "b", "c"});
    d.standardize();
    net.adopt_dataset_metadata(d);
    return net;
}

void require_same_model(const Network& a, const Network& b) {
    REQUIRE(a.layers().size() == b.layers().size());
    for (std::size_t i = 0; i < a.layers().size(); ++i) {
        CHECK(a.layers()[i].inputs == b.layers()[i].inputs);
        CHECK(a.layers()[i].outputs == b.layers()[i].outputs);
        CHECK(a.layers()[i].activation == b.layers()[i].activation);
    }
    CHECK(same_bits(a.parameters(), b.parameters()));
    CHECK(a.loss() == b.loss());
    CHECK(a.optimizer().kind == b.optimizer().kind);
    for (auto field : {&Optimizer::learning_rate, &Optimizer::momentum, &Optimizer::beta1, &Optimizer::beta2,
                       &Optimizer::epsilon, &Optimizer::weight_decay})
        CHECK(bits(a.optimizer().*field) == bits(b.optimizer().*field));
    CHECK(a.seed() == b.seed());
    CHECK(a.epochs_trained() == b.epochs_trained());
    REQUIRE(a.standardization().has_value() == b.standardization().has_value());
    if (a.standardization()) {
        CHECK(same_bits(a.standardization()->mean, b.standardization()->mean));
        CHECK(same_bits(a.standardization()->stddev, b.standardization()->stddev));
    }
    CHECK(a.feature_names() == b.feature_names());
    CHECK(a.target_names() == b.target_names());
    CHECK(a.class_labels() == b.class_labels());
}

// The base document for error tests: 3 -> 4 (relu) -> 2 (softmax).
nlohmann::ordered_json base_document() {
    const Network net =
        Network::builder().input_size(3).dense(4, Activation::Relu).dense(2, Activation::Softmax).seed(1).build();
    return nlohmann::ordered_json::parse(net.to_json_string());
}

// from_json_string of the base document after `edit`, which must fail with InvalidModelFile and the fragments.
void require_load_error(const std::function<void(nlohmann::ordered_json&)>& edit,
                        std::initializer_list<std::string> fragments) {
    auto doc = base_document();
    edit(doc);
    const std::string text = doc.dump();
    require_error([&] { (void)Network::from_json_string(text, "m.json"); }, ErrorCode::InvalidModelFile, fragments);
}

} // namespace

TEST_CASE("Model file: save and load round-trip bit for bit", "[core]") {
    TempDir dir;
    const Network net = rich_model();
    const fs::path file = dir.path / "model.json";
    net.save_json(file);
    const Network loaded = Network::load_json(file);
    require_same_model(net, loaded);
    // The optimizer state is not saved: a loaded model resumes with fresh state sized for its optimizer.
    CHECK(loaded.optimizer_step() == 0);
    CHECK(loaded.optimizer_state() == std::vector<float>(loaded.parameter_count(), 0.0f));
    // Saving the loaded model reproduces the file byte for byte.
    CHECK(loaded.to_json_string() == read_text(file));
    // Predictions agree exactly too. This model's weights (every exponent) overflow any input, which predict
    // refuses; a plain model shows the bits.
    const Matrix x{{0.5f, -1, 2}, {3, 0, -0.25f}};
    const Network plain =
        Network::builder().input_size(3).dense(8, Activation::Gelu).dense(3, Activation::Softmax).seed(3).build();
    plain.save_json(dir.path / "plain.json");
    CHECK(same_bits(plain.predict(x).data(), Network::load_json(dir.path / "plain.json").predict(x).data()));

    const Network from_text = Network::from_json_string(net.to_json_string());
    require_same_model(net, from_text);
}

TEST_CASE("Model file: documented layout", "[core]") {
    Network net = Network::builder().input_size(2).dense(1, Activation::Sigmoid).seed(4).build();
    net.set_parameters({0.5f, -0.25f, 0.125f});
    const auto doc = nlohmann::json::parse(net.to_json_string());
    CHECK(doc["format"] == "brain-model");
    CHECK(doc["version"] == 1);
    CHECK(doc["loss"] == "binary_cross_entropy");
    CHECK(doc["optimizer"]["kind"] == "adam");
    CHECK(doc["seed"] == 4);
    CHECK(doc["epochs_trained"] == 0);
    CHECK(doc["standardization"].is_null());
    CHECK(doc["class_labels"].empty());
    REQUIRE(doc["layers"].size() == 1);
    CHECK(doc["layers"][0]["inputs"] == 2);
    CHECK(doc["layers"][0]["outputs"] == 1);
    CHECK(doc["layers"][0]["activation"] == "sigmoid");
    CHECK(doc["layers"][0]["weights"] == nlohmann::json::array({0.5, -0.25}));
    CHECK(doc["layers"][0]["bias"] == nlohmann::json::array({0.125}));
    // Floats are written in their shortest round-trip form, not as widened doubles.
    CHECK(Network::builder()
              .input_size(1)
              .dense(1, Activation::Linear)
              .optimizer(Optimizer::sgd(0.1f))
              .build()
              .to_json_string()
              .find("\"learning_rate\":0.1,") != std::string::npos);
}

TEST_CASE("Model file: save_json replaces the file atomically", "[core]") {
    TempDir dir;
    const fs::path file = dir.path / "m.json";
    const Network first = Network::builder().input_size(2).dense(3, Activation::Relu).seed(1).build();
    const Network second = Network::builder().input_size(2).dense(3, Activation::Relu).seed(2).build();
    first.save_json(file);
    second.save_json(file);
    CHECK(Network::load_json(file).parameters() == second.parameters());
    CHECK(dir.entries() == 1); // no temporary file left behind

    // The target is a directory: the rename fails, the temporary file is removed, nothing else changes.
    const fs::path sub = dir.path / "sub";
    fs::create_directory(sub);
    require_error([&] { first.save_json(sub); }, ErrorCode::IoError, {sub.string(), "unchanged"});
    CHECK(fs::is_directory(sub));
    CHECK(dir.entries() == 2);

    require_error([&] { first.save_json(dir.path / "missing" / "m.json"); }, ErrorCode::IoError,
                  {(dir.path / "missing" / "m.json").string()});

    if (::geteuid() == 0) {
        WARN("skipped the read-only directory check: running as root, permissions are not enforced");
    } else {
        fs::permissions(dir.path, fs::perms::owner_write | fs::perms::group_write | fs::perms::others_write,
                        fs::perm_options::remove);
        require_error([&] { first.save_json(file); }, ErrorCode::IoError, {file.string()});
        fs::permissions(dir.path, fs::perms::owner_all, fs::perm_options::add);
        // The previous file is intact.
        CHECK(Network::load_json(file).parameters() == second.parameters());
    }
}

TEST_CASE("Model file: load errors name the file and the JSON path", "[core]") {
    require_error([] { (void)Network::load_json("no/such/model.json"); }, ErrorCode::IoError,
                  {"no/such/model.json"});
    require_error([] { (void)Network::from_json_string("{\"format\": brain", "m.json"); },
                  ErrorCode::InvalidModelFile, {"m.json", "not JSON", "line 1, column"});
    require_error([] { (void)Network::from_json_string("", "m.json"); }, ErrorCode::InvalidModelFile,
                  {"m.json", "not JSON"});
    require_error([] { (void)Network::from_json_string("[1, 2]", "m.json"); }, ErrorCode::InvalidModelFile,
                  {"m.json", "expected a JSON object"});

    // A key given twice: which one the writer meant is unknown (parsers disagree), so the file is refused.
    const std::string text =
        brain::test::dense_network({{4, Activation::Relu}, {2, Activation::Linear}}, 3, 1).to_json_string();
    require_error(
        [&] { (void)Network::from_json_string("{\"seed\": 7, " + text.substr(text.find('{') + 1), "m.json"); },
        ErrorCode::InvalidModelFile, {"m.json: the key 'seed' appears twice in one object", "keep one"});

    using J = nlohmann::ordered_json;
    require_load_error([](J& d) { d.erase("format"); }, {"m.json: /format", "missing"});
    require_load_error([](J& d) { d["format"] = "keras"; }, {"m.json: /format", "brain-model", "keras"});
    require_load_error([](J& d) { d["version"] = 2; },
                       {"m.json: /version", "unsupported version 2", "supported versions: 1"});
    require_load_error([](J& d) { d["version"] = "1"; }, {"m.json: /version", "integer"});
    require_load_error([](J& d) { d.erase("layers"); }, {"m.json: /layers", "missing"});
    require_load_error([](J& d) { d["layers"] = J::array(); }, {"m.json: /layers", "non-empty"});
    require_load_error([](J& d) { d["layers"][1]["weights"].erase(0); },
                       {"m.json: /layers/1/weights: expected 8 numbers, found 7"});
    require_load_error(
        [](J& d) {
            d["layers"][0]["bias"] = J::array({1, 2});
        },
        {"m.json: /layers/0/bias: expected 4 numbers, found 2"});
    require_load_error([](J& d) { d["layers"][0]["weights"][2] = "x"; },
                       {"m.json: /layers/0/weights/2", "expected a number", "string"});
    require_load_error([](J& d) { d["layers"][1]["inputs"] = 5; },
                       {"m.json: /layers/1/inputs", "expected 4", "found 5"});
    require_load_error([](J& d) { d["layers"][0]["outputs"] = 0; }, {"m.json: /layers/0/outputs", "found 0"});
    require_load_error([](J& d) { d["layers"][0]["inputs"] = -3; }, {"m.json: /layers/0/inputs", "non-negative"});
    require_load_error([](J& d) { d["layers"][0].erase("activation"); },
                       {"m.json: /layers/0/activation", "missing"});
    require_load_error([](J& d) { d["layers"][0]["activation"] = "swish"; },
                       {"m.json: /layers/0/activation", "'swish'", "leaky_relu"});
    require_load_error([](J& d) { d["layers"][0]["activation"] = "softmax"; },
                       {"m.json: /layers/0/activation", "output layer only"});
    require_load_error([](J& d) { d["loss"] = "mse"; }, {"m.json: /loss", "softmax", "categorical_cross_entropy"});
    require_load_error([](J& d) { d["loss"] = "hinge"; }, {"m.json: /loss", "'hinge'"});
    // A name from the file is quoted as an excerpt: its control bytes cannot reach a terminal.
    require_load_error([](J& d) { d["loss"] = "\x1b]0;title\x07 mse"; },
                       {"m.json: /loss", "'\\x1B]0;title\\x07 mse'"});
    require_load_error([](J& d) { d["optimizer"]["kind"] = "rmsprop"; }, {"m.json: /optimizer/kind", "rmsprop"});
    require_load_error([](J& d) { d["optimizer"]["learning_rate"] = -1; },
                       {"m.json: /optimizer/learning_rate", "-1"});
    require_load_error([](J& d) { d["optimizer"]["beta2"] = 1.0; }, {"m.json: /optimizer/beta2", "[0, 1)"});
    require_load_error([](J& d) { d["seed"] = -1; }, {"m.json: /seed", "non-negative integer"});
    require_load_error([](J& d) { d["epochs_trained"] = 1.5; }, {"m.json: /epochs_trained", "integer"});
    require_load_error(
        [](J& d) {
            d["standardization"] = J{{"mean", J::array({0, 0, 0})}, {"stddev", J::array({1, 0, 1})}};
        },
        {"m.json: /standardization/stddev/1", "> 0"});
    require_load_error(
        [](J& d) {
            d["standardization"] = J{{"mean", J::array({0, 0})}, {"stddev", J::array({1, 1, 1})}};
        },
        {"m.json: /standardization/mean: expected 3 numbers, found 2"});
    require_load_error(
        [](J& d) {
            d["feature_names"] = J::array({"a", "b"});
        },
        {"m.json: /feature_names", "expected 3", "found 2"});
    require_load_error(
        [](J& d) {
            d["class_labels"] = J::array({"a", 7});
        },
        {"m.json: /class_labels/1", "expected a string"});
}

TEST_CASE("Model file: non-finite numbers are rejected", "[core]") {
    // JSON has no inf/nan literals; a number beyond float32's range reads as infinity.
    auto doc = base_document();
    std::string text = doc.dump();
    const std::string key = "\"bias\":[";
    const auto at = text.find(key);
    REQUIRE(at != std::string::npos);
    const auto start = at + key.size();
    text.replace(start, text.find_first_of(",]", start) - start, "1e39");
    require_error([&] { (void)Network::from_json_string(text, "m.json"); }, ErrorCode::InvalidModelFile,
                  {"m.json: /layers/0/bias/0", "non-finite"});
    // 3.40282356e38 rounds to FLT_MAX (finite); the overflowing number after it is the one reported.
    require_error(
        [] {
            (void)Network::from_json_string(
                R"({"format": "brain-model", "version": 1, "layers": [{"inputs": 1, "outputs": 2,
                    "activation": "linear", "weights": [3.40282356e38, -1e300], "bias": [0, 0]}]})",
                "m.json");
        },
        ErrorCode::InvalidModelFile, {"m.json: /layers/0/weights/1", "non-finite"});
    const Network big = Network::from_json_string(
        R"({"format": "brain-model", "version": 1, "layers": [{"inputs": 1, "outputs": 1,
            "activation": "linear", "weights": [3.40282356e38], "bias": [0]}]})");
    CHECK(big.parameters()[0] == std::numeric_limits<float>::max());
    require_error(
        [] {
            (void)Network::from_json_string("{\"format\": \"brain-model\", \"version\": 1, \"layers\": "
                                            "[{\"inputs\": 1, \"outputs\": 1, \"activation\": \"linear\", "
                                            "\"weights\": [NaN], \"bias\": [0]}]}",
                                            "m.json");
        },
        ErrorCode::InvalidModelFile, {"m.json", "not JSON"});
}

TEST_CASE("Model file: optional fields take their documented defaults", "[core]") {
    const Network net = Network::from_json_string(
        R"({"format": "brain-model", "version": 1,
            "layers": [{"inputs": 2, "outputs": 1, "activation": "sigmoid", "weights": [1, -2], "bias": [0.5]}]})",
        "minimal.json");
    CHECK(net.loss() == brain::Loss::BinaryCrossEntropy);
    CHECK(net.optimizer().kind == Optimizer::Kind::Adam);
    CHECK(net.seed() == 0);
    CHECK(net.epochs_trained() == 0);
    CHECK_FALSE(net.standardization().has_value());
    CHECK(net.parameters() == std::vector<float>{1, -2, 0.5f});
    CHECK(net.optimizer_state().size() == 2 * 3);
    CHECK(net.predict_classes(Matrix{{1, 0}, {0, 1}}) == std::vector<std::size_t>{1, 0});
}
