// brain_bench: trains the workloads of bench/torch_mlp.py (same shapes, data model, optimizer, batch and
// epoch counts) on one backend and prints one JSON line per config: samples/s, final loss and the session stats.
// A warm-up epoch runs outside the timing, as in the PyTorch anchor. With --data DIR it trains on the anchor's own
// data and initial weights (files written by bench/export_torch_data.py); without it, on data drawn from the same
// distribution by brain::Random, from brain's own initialisation.
#include <CLI/CLI.hpp>
#include <bit>
#include <brain/brain.hpp>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <sstream>
#include <stdexcept>
#include <string>
#include <system_error>
#include <vector>

namespace {

struct Workload {
    std::size_t inputs;
    std::vector<std::size_t> hidden;
    std::size_t outputs;
    std::size_t rows;
    std::uint32_t batch;
    std::uint32_t epochs;
};

const std::map<std::string, Workload>& workloads() {
    static const std::map<std::string, Workload> w = {
        {"seed16", {16, {256, 256}, 1, 4096, 256, 50}},
        {"x64", {64, {256, 256}, 1, 16384, 256, 10}},
        {"x256", {256, {256, 256}, 1, 16384, 256, 10}},
        {"x1024", {1024, {256, 256}, 1, 16384, 256, 10}},
        {"wide", {1024, {4096, 4096}, 16, 65536, 1024, 3}},
        {"huge", {4096, {8192, 8192, 8192}, 16, 65536, 4096, 2}},
    };
    return w;
}

// X ~ N(0,1); Y = tanh(X w) + 0.1 noise with w ~ N(0, 1/inputs): the anchor's data model.
brain::Dataset make_data(const Workload& w) {
    brain::Random rng(0);
    const auto normal = [&rng] { return static_cast<float>(rng.normal()); };
    brain::Matrix x(w.rows, w.inputs), y(w.rows, w.outputs);
    std::vector<float> weights(w.inputs * w.outputs);
    for (auto& v : x.data()) v = normal();
    const float scale = 1.0f / std::sqrt(static_cast<float>(w.inputs));
    for (auto& v : weights) v = normal() * scale;
    for (std::size_t r = 0; r < w.rows; ++r)
        for (std::size_t o = 0; o < w.outputs; ++o) {
            float s = 0.0f;
            for (std::size_t i = 0; i < w.inputs; ++i) s += x(r, i) * weights[i * w.outputs + o];
            y(r, o) = std::tanh(s) + 0.1f * normal();
        }
    return brain::Dataset(std::move(x), std::move(y));
}

static_assert(std::endian::native == std::endian::little,
              "the --data files are little-endian float32; reading them needs a little-endian host");

// Reads a raw float32 file of exactly `count` values; the message names the file, the expected and found sizes.
std::vector<float> read_f32(const std::filesystem::path& path, std::size_t count, const std::string& what) {
    const std::uintmax_t expected = static_cast<std::uintmax_t>(count) * sizeof(float);
    std::error_code ec;
    const std::uintmax_t found = std::filesystem::file_size(path, ec);
    if (ec)
        throw std::runtime_error("cannot read " + path.string() + " (" + what + "): " + ec.message() +
                                 "; write it with bench/export_torch_data.py");
    if (found != expected)
        throw std::runtime_error(path.string() + " (" + what + "): expected " + std::to_string(expected) +
                                 " bytes (" + std::to_string(count) + " float32), found " + std::to_string(found) +
                                 " bytes; the file does not match this config's shapes");
    std::vector<float> values(count);
    std::ifstream in(path, std::ios::binary);
    if (!in.read(reinterpret_cast<char*>(values.data()), static_cast<std::streamsize>(expected)))
        throw std::runtime_error("cannot read " + path.string() + " (" + what + "): short read");
    return values;
}

// The anchor's X and Y for config `name` from DIR/<name>.x.f32 and DIR/<name>.y.f32.
brain::Dataset load_data(const std::filesystem::path& dir, const std::string& name, const Workload& w) {
    auto x = read_f32(dir / (name + ".x.f32"), w.rows * w.inputs,
                      "X, " + std::to_string(w.rows) + " x " + std::to_string(w.inputs));
    auto y = read_f32(dir / (name + ".y.f32"), w.rows * w.outputs,
                      "Y, " + std::to_string(w.rows) + " x " + std::to_string(w.outputs));
    return brain::Dataset(brain::Matrix(w.rows, w.inputs, std::move(x)),
                          brain::Matrix(w.rows, w.outputs, std::move(y)));
}

} // namespace

int main(int argc, char** argv) {
    CLI::App app{"Train the PyTorch anchor's workloads (shared/bench/torch_mlp.py) on one brain backend"};
    std::string configs = "seed16,x64,x256,x1024";
    std::string backend_spec = "cpu";
    std::uint64_t budget_mib = 16384;
    std::string precision = "float32";
    std::uint32_t epochs_override = 0;
    app.add_option("--configs", configs, "comma-separated: seed16,x64,x256,x1024,wide,huge")->capture_default_str();
    app.add_option("--backend", backend_spec, "cpu, cuda:0, ...")->capture_default_str();
    app.add_option("--budget", budget_mib, "device memory budget in MiB")->capture_default_str();
    app.add_option("--precision", precision, "float32, tf32 or bf16")->capture_default_str();
    app.add_option("--epochs", epochs_override, "override the timed epoch count (0: the anchor's)");
    std::uint64_t shuffle_seed = 7;
    app.add_option("--shuffle-seed", shuffle_seed,
                   "seed of the batch shuffle (another seed shows how far the final loss moves with batch order "
                   "alone)")
        ->capture_default_str();
    std::string data_dir;
    app.add_option("--data", data_dir,
                   "directory written by bench/export_torch_data.py: train on the anchor's data and initial "
                   "weights (<cfg>.x.f32, <cfg>.y.f32, <cfg>.params.f32) instead of brain's own");
    CLI11_PARSE(app, argc, argv);

    try {
        const auto backend = brain::TrainingBackend::parse(backend_spec, budget_mib)
                                 .with_precision(brain::parse_precision(precision));
        std::stringstream list(configs);
        for (std::string name; std::getline(list, name, ',');) {
            const auto it = workloads().find(name);
            if (it == workloads().end()) {
                std::cerr << "error: unknown config \"" << name << "\"; expected one of seed16, x64, x256, x1024, "
                          << "wide, huge\n";
                return 2;
            }
            const Workload& w = it->second;
            const std::uint32_t epochs = epochs_override ? epochs_override : w.epochs;
            auto builder = brain::Network::builder().input_size(w.inputs);
            for (std::size_t h : w.hidden) builder.dense(h, brain::Activation::Relu);
            auto network = builder.dense(w.outputs, brain::Activation::Linear)
                               .optimizer(brain::Optimizer::adam(1e-3f))
                               .seed(42)
                               .build();
            if (!data_dir.empty()) {
                const std::filesystem::path file = std::filesystem::path(data_dir) / (name + ".params.f32");
                network.set_parameters(
                    read_f32(file, network.parameter_count(), "initial parameters, per layer W (out x in) then b"));
            }
            const auto data = data_dir.empty() ? make_data(w) : load_data(data_dir, name, w);
            brain::TrainingSession session(network, data,
                                           brain::TrainConfig{epochs + 1, w.batch, true, shuffle_seed}, backend);
            session.train_epoch(); // warm-up, untimed
            float loss = 0.0f;
            const auto start = std::chrono::steady_clock::now();
            for (std::uint32_t e = 0; e < epochs; ++e) loss = session.train_epoch();
            const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
            const double samples = static_cast<double>(epochs) * static_cast<double>(w.rows);
            std::cout << "{\"cfg\":\"" << name << "\",\"backend\":\"" << backend_spec << "\",\"precision\":\""
                      << precision << "\",\"data\":\"" << (data_dir.empty() ? "brain" : "torch")
                      << "\",\"seconds\":" << seconds
                      << ",\"samples_per_s\":" << static_cast<long long>(samples / seconds)
                      << ",\"final_loss\":" << loss
                      << ",\"estimate_bytes\":" << brain::estimate_tensor_memory_bytes(network, w.batch)
                      << ",\"stats\":" << brain::to_json(session.stats()) << "}" << std::endl;
        }
    } catch (const brain::Error& e) {
        std::cerr << "error: " << brain::to_string(e.code()) << ": " << e.what() << "\n";
        return 2;
    } catch (const std::runtime_error& e) { // --data files
        std::cerr << "error: " << e.what() << "\n";
        return 2;
    }
    return 0;
}
