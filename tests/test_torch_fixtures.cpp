// Models made by PyTorch's own exporters (tools/interop/make-fixtures.py, committed in tests/data/interop/torch):
// torch.onnx.export's files (both exporters) and safetensors.torch.save_file's import and predict what PyTorch
// predicted; a PyTorch model trained further in brain still predicts sensibly and exports back. Without the fixture
// files these tests skip, saying how to make them.
#include "support/catch.hpp"
#include "support/gpu.hpp"
#include "support/interop.hpp"
#include "support/numeric.hpp"

#include <brain/brain.hpp>
#include <cmath>
#include <string>
#include <vector>

using brain::Network;
namespace fs = std::filesystem;

namespace {

struct TorchFixture {
    fs::path dir;
    nlohmann::json info;
    fs::path file(const std::string& name) const { return dir / name; }
    std::vector<brain::Activation> activations() const {
        std::vector<brain::Activation> out;
        for (const auto& a : info["activations"]) out.push_back(brain::parse_activation(a.get<std::string>()));
        return out;
    }
    brain::Matrix inputs() const { return brain::test::matrix_from_json(info["inputs"]); }
    brain::Matrix outputs() const { return brain::test::matrix_from_json(info["outputs"]); }
    // The ONNX files that exist, by exporter.
    std::vector<std::pair<std::string, fs::path>> onnx_files() const {
        std::vector<std::pair<std::string, fs::path>> out;
        for (const auto& [exporter, name] : info["onnx"].items())
            if (!name.is_null()) out.emplace_back(exporter, file(name.get<std::string>()));
        return out;
    }
};

// The committed fixtures, or the reason there are none.
std::vector<TorchFixture> torch_fixtures(std::string& none) {
    const fs::path dir = brain::test::interop_data("torch");
    std::vector<TorchFixture> out;
    if (fs::is_directory(dir))
        for (const auto& entry : fs::directory_iterator(dir))
            if (entry.path().extension() == ".json")
                out.push_back({dir, nlohmann::json::parse(brain::test::read_bytes(entry.path()))});
    if (out.empty())
        none = "no PyTorch fixtures in " + dir.string() +
               ": make them with tools/interop/make-fixtures.py on a machine with PyTorch (docs/interop.md)";
    return out;
}

void check_shape(const Network& net, const TorchFixture& f) {
    const auto& widths = f.info["layers"];
    REQUIRE(net.layers().size() + 1 == widths.size());
    CHECK(net.input_size() == widths[0].get<std::size_t>());
    for (std::size_t i = 0; i < net.layers().size(); ++i) {
        CHECK(net.layers()[i].outputs == widths[i + 1].get<std::size_t>());
        CHECK(net.layers()[i].activation == f.activations()[i]);
    }
}

} // namespace

TEST_CASE("PyTorch fixtures: torch.onnx.export's files import and predict what PyTorch predicted", "[core]") {
    std::string none;
    const auto fixtures = torch_fixtures(none);
    if (fixtures.empty()) BRAIN_SKIP(none);
    std::size_t files = 0;
    for (const auto& f : fixtures) {
        const auto onnx = f.onnx_files();
        CHECK_FALSE(onnx.empty()); // at least one exporter worked
        for (const auto& [exporter, path] : onnx) {
            INFO(f.info["name"] << " (" << exporter << " exporter): " << path);
            const Network net = Network::load_onnx(path);
            check_shape(net, f);
            const double error = brain::test::relative_error(net.predict(f.inputs()), f.outputs());
            INFO("relative error against PyTorch " << error);
            CHECK(error <= 1e-5);
            ++files;
        }
    }
    CHECK(files > 0);
}

TEST_CASE("PyTorch fixtures: safetensors.torch.save_file's files load in nn.Sequential naming", "[core]") {
    std::string none;
    const auto fixtures = torch_fixtures(none);
    if (fixtures.empty()) BRAIN_SKIP(none);
    std::size_t checked = 0;
    for (const auto& f : fixtures) {
        INFO(f.info["name"]);
        const auto& files = f.info["safetensors"];
        if (files.is_null()) continue; // made where the safetensors package was missing
        ++checked;
        const Network net = Network::load_safetensors(f.file(files["float32"].get<std::string>()), f.activations());
        check_shape(net, f);
        CHECK(brain::test::relative_error(net.predict(f.inputs()), f.outputs()) <= 1e-5);
        // float16 and bfloat16 copies: each parameter within half an ulp of the float32 one at that precision.
        for (const auto& [precision, ulp] : {std::pair{"float16", 0x1p-11}, std::pair{"bfloat16", 0x1p-8}}) {
            const Network low = Network::load_safetensors(f.file(files[precision].get<std::string>()), f.activations());
            REQUIRE(low.parameter_count() == net.parameter_count());
            for (std::size_t i = 0; i < net.parameter_count(); ++i) {
                const double p = net.parameters()[i], q = low.parameters()[i];
                INFO(precision << " parameter " << i << ": " << p << " read as " << q);
                CHECK(std::fabs(p - q) <= ulp * std::fabs(p) + 6e-8);
            }
        }
    }
    if (checked == 0)
        BRAIN_SKIP("the PyTorch fixtures in " + fixtures.front().dir.string() +
                   " were made without the safetensors package: run tools/interop/make-fixtures.py where it is");
}

TEST_CASE("PyTorch fixtures: a PyTorch model trained further in brain predicts sensibly and exports back",
          "[plugin]") {
    std::string none;
    const auto fixtures = torch_fixtures(none);
    if (fixtures.empty()) BRAIN_SKIP(none);
    brain::test::ScratchDir dir("torch_finetune");
    for (const auto& f : fixtures) {
        const auto onnx = f.onnx_files();
        REQUIRE_FALSE(onnx.empty());
        INFO(f.info["name"] << " from " << onnx.front().second);
        Network net = Network::load_onnx(onnx.front().second);
        brain::CsvOptions options;
        options.target_columns = f.info["targets"].get<std::vector<std::string>>();
        const brain::Dataset data = brain::Dataset::from_csv(f.file(f.info["data"].get<std::string>()), options);
        const brain::Evaluation before = net.evaluate(data);
        net.set_optimizer(brain::Optimizer::adam(1e-3f));
        net.fit(data, brain::TrainConfig{.epochs = 5, .batch_size = 32, .shuffle = true, .seed = 2});
        const brain::Evaluation after = net.evaluate(data);
        INFO("loss " << before.loss << " -> " << after.loss);
        CHECK(after.loss <= before.loss * 1.1f);
        if (const auto& torch_accuracy = f.info["torch_metrics"]["accuracy"]; !torch_accuracy.is_null()) {
            REQUIRE(after.accuracy.has_value());
            CHECK(*after.accuracy >= torch_accuracy.get<float>() - 0.05f);
        }
        net.save_onnx(dir / "tuned.onnx");
        net.save_safetensors(dir / "tuned.safetensors");
        const Network back = Network::load_onnx(dir / "tuned.onnx");
        CHECK(brain::test::same_bits(back.predict(f.inputs()), net.predict(f.inputs())));
        CHECK(Network::load_safetensors(dir / "tuned.safetensors", f.activations()).parameters() == net.parameters());
    }
}

TEST_CASE("PyTorch fixtures: trained further on CUDA, an imported model matches the CPU and exports back", "[cuda]") {
    REQUIRE_GPU();
    std::string none;
    const auto fixtures = torch_fixtures(none);
    if (fixtures.empty()) BRAIN_SKIP(none);
    brain::test::ScratchDir dir("torch_finetune_cuda");
    for (const auto& f : fixtures) {
        const auto onnx = f.onnx_files();
        REQUIRE_FALSE(onnx.empty());
        INFO(f.info["name"] << " from " << onnx.front().second);
        Network cpu = Network::load_onnx(onnx.front().second);
        brain::CsvOptions options;
        options.target_columns = f.info["targets"].get<std::vector<std::string>>();
        const brain::Dataset data = brain::Dataset::from_csv(f.file(f.info["data"].get<std::string>()), options);
        cpu.set_optimizer(brain::Optimizer::adam(1e-3f));
        Network cuda = cpu;
        const brain::TrainConfig config{.epochs = 5, .batch_size = 32, .shuffle = true, .seed = 2};
        const auto cpu_report = cpu.fit(data, config);
        const auto cuda_report = cuda.fit_with_backend(data, config, brain::TrainingBackend::cuda(0, 256));
        CHECK(brain::test::relative_error(cuda.parameters(), cpu.parameters()) < 1e-4);
        REQUIRE(cuda_report.epoch_losses.size() == cpu_report.epoch_losses.size());
        CHECK(brain::test::relative_error(cuda_report.epoch_losses, cpu_report.epoch_losses) < 1e-4);
        CHECK(brain::test::relative_error(cuda.predict(f.inputs()), cpu.predict(f.inputs())) < 1e-4);
        cuda.save_onnx(dir / "tuned_cuda.onnx");
        const Network back = Network::load_onnx(dir / "tuned_cuda.onnx");
        CHECK(brain::test::same_bits(back.predict(f.inputs()), cuda.predict(f.inputs())));
    }
}
