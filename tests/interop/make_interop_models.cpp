// brain_interop_models DATA_DIR OUT_DIR: the ONNX files the interop tests hand to the real tools, each with the
// predictions brain makes for its inputs.
//   OUT_DIR/exported/*.onnx   every file brain wrote (save_onnx): the ONNX checker's test checks each one;
//   OUT_DIR/cases/*.json      {"model", "what", "brain_export", "input_shape", "inputs", "expected" and, for a
//                             fixture, "reference": the outputs it was made with}: ONNX
//                             Runtime's test runs "model" on "inputs" and compares with "expected" (brain's
//                             predict), for brain's exports and for the fixtures brain imports (DATA_DIR's patterns/
//                             and, when present, torch/), imported as they are, re-exported, and fine-tuned.
#include <brain/brain.hpp>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <vector>

namespace fs = std::filesystem;
using brain::Activation;
using brain::Matrix;
using brain::Network;

namespace {

fs::path g_out;
int g_cases = 0;

nlohmann::json rows(const Matrix& m) {
    nlohmann::json out = nlohmann::json::array();
    for (std::size_t r = 0; r < m.rows(); ++r) out.push_back(std::vector<float>(m.row(r).begin(), m.row(r).end()));
    return out;
}

Matrix from_rows(const nlohmann::json& j) {
    std::vector<float> data;
    for (const auto& row : j)
        for (const auto& v : row) data.push_back(v.get<float>());
    return Matrix(j.size(), j.empty() ? 0 : j[0].size(), std::move(data));
}

// One case: ONNX Runtime runs `model` on `inputs` and must give what brain's `net` predicts.
void add_case(const std::string& name, const std::string& what, const fs::path& model, const Network& net,
              const Matrix& inputs, bool brain_export, std::vector<std::size_t> input_shape = {},
              const nlohmann::json& reference = nullptr) {
    if (input_shape.empty()) input_shape = {net.input_size()};
    nlohmann::json c{{"model", fs::absolute(model).string()},
                     {"what", what},
                     {"brain_export", brain_export},
                     {"input_shape", input_shape},
                     {"inputs", rows(inputs)},
                     {"expected", rows(net.predict(inputs))}};
    if (!reference.is_null()) c["reference"] = reference;
    if (brain_export) {
        c["feature_names"] = net.feature_names();
        c["class_labels"] = net.class_labels();
    }
    std::ofstream(g_out / "cases" / (name + ".json")) << c.dump() << "\n";
    ++g_cases;
}

fs::path export_onnx(const Network& net, const std::string& name) {
    const fs::path path = g_out / "exported" / (name + ".onnx");
    net.save_onnx(path);
    return path;
}

// Raw inputs around a standardisation's means (a few deviations either side), or in [-3, 3].
Matrix raw_inputs(const Network& net, std::size_t count, std::uint64_t seed) {
    brain::Random rng(seed);
    Matrix x(count, net.input_size());
    for (std::size_t r = 0; r < count; ++r)
        for (std::size_t c = 0; c < net.input_size(); ++c) {
            const double z = rng.uniform(-3.0, 3.0);
            const auto& s = net.standardization();
            x(r, c) = static_cast<float>(s ? s->mean[c] + z * s->stddev[c] : z);
        }
    return x;
}

Network built(std::size_t inputs, const std::vector<std::pair<std::size_t, Activation>>& layers, std::uint64_t seed) {
    auto b = Network::builder().input_size(inputs).seed(seed);
    for (const auto& [units, act] : layers) b.dense(units, act);
    return b.build();
}

// A network trained a few epochs on a synthetic three-class task, with standardisation and names.
Network trained_classifier() {
    brain::Random rng(7);
    const std::size_t n = 600;
    Matrix x(n, 4), y(n, 3);
    for (std::size_t r = 0; r < n; ++r) {
        for (std::size_t c = 0; c < 4; ++c) x(r, c) = static_cast<float>(rng.uniform(-1.0, 1.0) * (c + 1) + 10.0 * c);
        const double score = x(r, 0) - 0.5 * (x(r, 1) - 10.0) + 0.2 * (x(r, 3) - 30.0);
        y(r, score < -0.5 ? 0 : score < 0.5 ? 1 : 2) = 1.0f;
    }
    brain::Dataset data(x, y);
    data.set_names({"a", "b", "c", "d"}, {"class=lo", "class=mid", "class=hi"});
    data.set_class_labels({"lo", "mid", "hi"});
    data.standardize();
    Network net = built(4, {{24, Activation::Gelu}, {12, Activation::Tanh}, {3, Activation::Softmax}}, 11);
    net.fit(data, brain::TrainConfig{.epochs = 15, .batch_size = 32, .shuffle = true, .seed = 3});
    return net;
}

void brain_exports() {
    const Activation hidden[] = {Activation::Relu, Activation::LeakyRelu, Activation::Sigmoid,
                                 Activation::Tanh, Activation::Gelu,      Activation::Linear};
    const std::pair<std::size_t, Activation> outputs[] = {
        {1, Activation::Linear}, {1, Activation::Sigmoid}, {3, Activation::Softmax}, {2, Activation::Linear}};
    for (std::size_t i = 0; i < std::size(hidden); ++i) {
        const auto [units, out] = outputs[i % std::size(outputs)];
        Network net = built(6, {{16, hidden[i]}, {8, hidden[(i + 1) % std::size(hidden)]}, {units, out}}, 100 + i);
        if (i % 2 == 0) { // standardised, with names, as brain train makes them
            brain::Random rng(200 + i);
            Matrix x(50, 6), y(50, units);
            for (float& v : x.data()) v = static_cast<float>(rng.uniform(-50.0, 150.0));
            brain::Dataset data(x, y);
            std::vector<std::string> targets;
            for (std::size_t k = 0; k < units; ++k) targets.push_back("t" + std::to_string(k));
            data.set_names({"f0", "f1", "f2", "f3", "f4", "f5"}, targets);
            data.standardize();
            net.adopt_dataset_metadata(data);
        }
        const std::string name = "export_" + std::string(brain::to_string(hidden[i])) + "_" +
                                 std::string(brain::to_string(out));
        add_case(name, "brain export: " + name, export_onnx(net, name), net, raw_inputs(net, 64, 300 + i), true);
    }
    const Network wide = built(32, {{256, Activation::Gelu}, {256, Activation::Relu}, {10, Activation::Softmax}}, 9);
    add_case("export_wide", "brain export: 32 -> 256 gelu -> 256 relu -> 10 softmax", export_onnx(wide, "export_wide"),
             wide, raw_inputs(wide, 128, 12), true);
    const Network single = built(3, {{1, Activation::Linear}}, 4);
    add_case("export_single_layer", "brain export: one linear layer", export_onnx(single, "export_single_layer"),
             single, raw_inputs(single, 5, 13), true);
    const Network trained = trained_classifier();
    add_case("export_trained", "brain export: a classifier trained 15 epochs", export_onnx(trained, "export_trained"),
             trained, raw_inputs(trained, 64, 14), true);
}

// A fixture brain imports: ONNX Runtime runs the file itself, brain's export of it, and (with training data)
// brain's export after a few epochs of training.
void imported(const fs::path& onnx, const fs::path& reference, const std::string& prefix) {
    const nlohmann::json ref = nlohmann::json::parse(std::ifstream(reference));
    const Network net = Network::load_onnx(onnx);
    const Matrix x = from_rows(ref["inputs"]);
    std::vector<std::size_t> shape = ref.value("input_shape", std::vector<std::size_t>{});
    const std::string name = prefix + onnx.stem().string();
    add_case("import_" + name, "the fixture " + onnx.filename().string() + ", imported", onnx, net, x, false, shape,
             ref["outputs"]);
    add_case("reexport_" + name, "brain's export of " + onnx.filename().string(), export_onnx(net, "reexport_" + name),
             net, x, true);
}

void fine_tuned(const fs::path& torch_dir) {
    for (const auto& entry : fs::directory_iterator(torch_dir)) {
        if (entry.path().extension() != ".json") continue;
        const nlohmann::json ref = nlohmann::json::parse(std::ifstream(entry.path()));
        if (!ref.contains("data") || !ref.contains("targets")) continue;
        for (const char* exporter : {"legacy", "dynamo"}) {
            if (!ref["onnx"].contains(exporter) || ref["onnx"][exporter].is_null()) continue;
            const fs::path onnx = torch_dir / ref["onnx"][exporter].get<std::string>();
            imported(onnx, entry.path(), "torch_");
            Network net = Network::load_onnx(onnx);
            brain::CsvOptions options;
            options.target_columns = ref["targets"].get<std::vector<std::string>>();
            const brain::Dataset data = brain::Dataset::from_csv(torch_dir / ref["data"].get<std::string>(), options);
            net.set_optimizer(brain::Optimizer::adam(1e-3f));
            net.fit(data, brain::TrainConfig{.epochs = 5, .batch_size = 32, .shuffle = true, .seed = 1});
            const std::string name = "finetuned_" + onnx.stem().string();
            add_case(name, "a PyTorch model trained 5 more epochs in brain, exported", export_onnx(net, name), net,
                     from_rows(ref["inputs"]), true);
        }
    }
}

} // namespace

int main(int argc, char** argv) {
    if (argc != 3) {
        std::cerr << "usage: brain_interop_models DATA_DIR OUT_DIR\n";
        return 2;
    }
    const fs::path data = argv[1];
    g_out = argv[2];
    try {
        fs::remove_all(g_out);
        fs::create_directories(g_out / "exported");
        fs::create_directories(g_out / "cases");
        brain_exports();
        for (const auto& entry : fs::directory_iterator(data / "patterns")) {
            const fs::path reference = fs::path(entry.path()).replace_extension(".json");
            if (entry.path().extension() == ".onnx" && fs::exists(reference)) imported(entry.path(), reference, "");
        }
        if (fs::is_directory(data / "torch"))
            fine_tuned(data / "torch");
        else
            std::cout << "no PyTorch fixtures in " << (data / "torch").string()
                      << " (tools/interop/make-fixtures.py makes them); their cases are left out\n";
    } catch (const brain::Error& e) {
        std::cerr << "brain_interop_models: " << brain::to_string(e.code()) << ": " << e.what() << "\n";
        return 1;
    }
    std::cout << "wrote " << g_cases << " cases to " << (g_out / "cases").string() << "\n";
    return 0;
}
