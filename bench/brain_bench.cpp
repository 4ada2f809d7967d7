// brain_bench: trains the workloads of bench/torch_mlp.py (same shapes, data model, optimizer, batch and
// epoch counts) on one backend and prints one JSON line per config: samples/s, final loss and the session stats.
// A warm-up epoch runs outside the timing, as in the PyTorch anchor. With --data DIR it trains on the anchor's own
// data and initial weights (files written by bench/export_torch_data.py); without it, on data drawn from the same
// distribution by brain::Random, from brain's own initialisation. --grid N adds the shape grid's N points (names
// g00, g01, ...; bench_grid.hpp), the same as the anchor's: every activation, loss and optimizer over a range of
// shapes. --predict measures prediction on the backend instead (brain::Predictor), with the outputs checked against
// the host's, and --checksum adds a hash of the trained parameters. --data-load FILE measures a CSV load instead.
#include "bench_grid.hpp"
#include "data_load.hpp"

#include <CLI/CLI.hpp>
#include <algorithm>
#include <bit>
#include <brain/brain.hpp>
#include <brain/dense_math.hpp>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
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

using bench::Workload;

// A hidden activation by the anchor's name (bench_grid.hpp's grid_activations).
brain::Activation activation_named(const std::string& name) {
    if (name == "linear") return brain::Activation::Linear;
    if (name == "leaky_relu") return brain::Activation::LeakyRelu;
    if (name == "sigmoid") return brain::Activation::Sigmoid;
    if (name == "tanh") return brain::Activation::Tanh;
    if (name == "gelu") return brain::Activation::Gelu;
    return brain::Activation::Relu;
}

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

// X ~ N(0,1); s = X w with w ~ N(0, 1/inputs); Y = tanh(s) + 0.1 noise (MSE), its sign as 0/1 (BCE) or the one-hot
// argmax of s + 0.1 noise (CCE): the anchor's data model.
brain::Dataset make_data(const Workload& w) {
    brain::Random rng(0);
    const auto normal = [&rng] { return static_cast<float>(rng.normal()); };
    brain::Matrix x(w.rows, w.inputs), y(w.rows, w.outputs);
    std::vector<float> weights(w.inputs * w.outputs);
    for (auto& v : x.data()) v = normal();
    const float scale = 1.0f / std::sqrt(static_cast<float>(w.inputs));
    for (auto& v : weights) v = normal() * scale;
    std::vector<float> s(w.outputs);
    for (std::size_t r = 0; r < w.rows; ++r) {
        for (std::size_t o = 0; o < w.outputs; ++o) {
            float sum = 0.0f;
            for (std::size_t i = 0; i < w.inputs; ++i) sum += x(r, i) * weights[i * w.outputs + o];
            s[o] = sum;
        }
        std::size_t best = 0;
        float best_value = 0.0f;
        for (std::size_t o = 0; o < w.outputs; ++o) {
            const float noise = 0.1f * normal();
            if (w.loss == "cce") {
                y(r, o) = 0.0f;
                if (o == 0 || s[o] + noise > best_value) best = o, best_value = s[o] + noise;
            } else {
                const float v = std::tanh(s[o]) + noise;
                y(r, o) = w.loss == "bce" ? (v > 0.0f ? 1.0f : 0.0f) : v;
            }
        }
        if (w.loss == "cce") y(r, best) = 1.0f;
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

// FNV-1a of the values' bytes: two runs with equal hashes computed the same bits.
std::string fnv1a(const std::vector<float>& values) {
    std::uint64_t hash = 0xcbf29ce484222325ULL;
    const auto* bytes = reinterpret_cast<const unsigned char*>(values.data());
    for (std::size_t i = 0; i < values.size() * sizeof(float); ++i) hash = (hash ^ bytes[i]) * 0x100000001b3ULL;
    char text[17];
    std::snprintf(text, sizeof text, "%016llx", static_cast<unsigned long long>(hash));
    return text;
}

// The first `rows` rows of x.
brain::Matrix first_rows(const brain::Matrix& x, std::size_t rows) {
    rows = std::min(rows, x.rows());
    const auto begin = x.data().begin();
    return brain::Matrix(rows, x.cols(),
                         std::vector<float>(begin, begin + static_cast<std::ptrdiff_t>(rows * x.cols())));
}

// What --predict measures for one config: the whole of x predicted `reps` times by a brain::Predictor that takes
// at most `batch` rows per call (one untimed call of a batch first), and the device's outputs on the first
// `check_rows` rows against the host's Network::predict (norm-wise relative error). One JSON line.
void measure_prediction(const std::string& name, const brain::Network& network, const brain::Matrix& x,
                        const brain::TrainingBackend& backend, const std::string& backend_spec,
                        const std::string& precision, bool torch_data, std::size_t batch, unsigned reps,
                        std::size_t check_rows, bool pinned) {
    brain::Predictor predictor(network, backend, batch);
    (void)predictor.predict(first_rows(x, batch)); // warm-up: graphs captured, caches filled
    // --pinned: the rows page-locked once, as a serving loop that reuses its input buffer would hold them.
    const brain::PinnedRows pin = pinned ? predictor.pin(x) : brain::PinnedRows();
    const auto start = std::chrono::steady_clock::now();
    for (unsigned r = 0; r < reps; ++r) (void)predictor.predict(x);
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    const brain::Matrix sample = first_rows(x, check_rows);
    const brain::Matrix device = predictor.predict(sample);
    const brain::Matrix host = network.predict(sample);
    const double error = brain::math::relative_error(device.data().data(), host.data().data(), host.data().size());
    std::cout << "{\"cfg\":\"" << name << "\",\"mode\":\"predict\",\"backend\":\"" << backend_spec
              << "\",\"precision\":\"" << precision << "\",\"data\":\"" << (torch_data ? "torch" : "brain")
              << "\",\"rows_from\":\"" << (pin.pinned() ? "pinned" : "pageable") << "\",\"batch\":" << batch
              << ",\"batch_rows\":" << predictor.batch_rows() << ",\"rows\":" << x.rows() << ",\"reps\":" << reps
              << ",\"seconds\":" << seconds << ",\"rows_per_s\":"
              << static_cast<long long>(static_cast<double>(reps) * static_cast<double>(x.rows()) / seconds)
              << ",\"check_rows\":" << sample.rows() << ",\"relative_error_vs_host\":" << error << "}" << std::endl;
}

} // namespace

int main(int argc, char** argv) {
    CLI::App app{"Train the PyTorch anchor's workloads (shared/bench/torch_mlp.py) on one brain backend"};
    std::string configs = "seed16,x64,x256,x1024";
    std::string backend_spec = "cpu";
    std::uint64_t budget_mib = 16384;
    std::string precision = "float32";
    std::uint32_t epochs_override = 0;
    std::uint32_t epochs_per_call = 0;
    app.add_option("--configs", configs,
                   "comma-separated: seed16,x64,x256,x1024,wide,huge, grid points g00,g01,... or grid (all of them)")
        ->capture_default_str();
    app.add_option("--backend", backend_spec, "cpu, cuda:0, ...")->capture_default_str();
    app.add_option("--budget", budget_mib, "device memory budget in MiB")->capture_default_str();
    app.add_option("--precision", precision, "float32, tf32 or bf16")->capture_default_str();
    app.add_option("--epochs", epochs_override, "override the timed epoch count (0: the anchor's)");
    app.add_option(
           "--epochs-per-call", epochs_per_call,
           "timed epochs per call into the session (0: all in one train_epochs call, as fit trains them; 1: "
           "one train_epoch call each)")
        ->capture_default_str();
    std::uint64_t shuffle_seed = 7;
    app.add_option("--shuffle-seed", shuffle_seed,
                   "seed of the batch shuffle (another seed shows how far the final loss moves with batch order "
                   "alone)")
        ->capture_default_str();
    std::string data_dir;
    app.add_option("--data", data_dir,
                   "directory written by bench/export_torch_data.py: train on the anchor's data and initial "
                   "weights (<cfg>.x.f32, <cfg>.y.f32, <cfg>.params.f32) instead of brain's own");
    std::size_t grid_points = 48;
    std::uint64_t grid_seed = 1;
    double grid_work = 3e10;
    app.add_option("--grid-points", grid_points, "points of the shape grid (bench_grid.hpp), as the anchor's")
        ->capture_default_str();
    app.add_option("--grid-seed", grid_seed, "seed of the shape grid")->capture_default_str();
    app.add_option("--grid-work", grid_work, "timed multiply-adds per grid point (sets its epochs, 2 to 20)")
        ->capture_default_str();
    bool grid_flag = false;
    app.add_flag("--grid", grid_flag, "run every point of the shape grid (as --configs grid)");
    bool checksum = false;
    app.add_flag("--checksum", checksum,
                 "add the trained parameters' FNV-1a hash (params_fnv): equal hashes, equal bits (one checkpoint)");
    bool predict = false;
    std::size_t predict_batch = 4096;
    unsigned reps = 3;
    std::size_t check_rows = 256;
    app.add_flag("--predict", predict,
                 "measure prediction instead of training: the config's rows through a brain::Predictor on the "
                 "backend (rows_per_s), and its outputs against the host's predict (relative_error_vs_host)");
    app.add_option("--predict-batch", predict_batch, "--predict: the most rows per call into the backend")
        ->capture_default_str();
    app.add_option("--reps", reps, "--predict: timed passes over the config's rows")->capture_default_str();
    app.add_option("--check-rows", check_rows, "--predict: rows predicted on the host too, for the comparison")
        ->capture_default_str();
    bool pinned = false;
    app.add_flag(
        "--pinned", pinned,
        "--predict: page-lock the rows first (Predictor::pin), so that they reach the device without a host "
        "copy (rows_from says whether the backend pinned them)");
    int rank = 0, world_size = 1;
    std::string rendezvous, save_params, compare_params;
    app.add_option("--rank", rank, "this process's rank of --world-size processes training together")
        ->capture_default_str();
    app.add_option("--world-size", world_size, "processes training together (data parallelism over NCCL)")
        ->capture_default_str();
    app.add_option("--rendezvous", rendezvous, "where the processes meet: file:<path> or tcp:<host>:<port>");
    app.add_option("--save-params", save_params,
                   "folder to write each config's trained parameters to (<cfg>.params.f32, float32; rank 0 only)");
    app.add_option("--compare-params", compare_params,
                   "folder of <cfg>.params.f32 from another run: adds params_rel_l2, ||p - ref|| / ||ref||");
    std::string data_load;
    std::vector<std::string> load_targets;
    app.add_option("--data-load", data_load,
                   "measure loading this CSV file into a Dataset instead of training (tools/perf/data-load-compare "
                   "runs NumPy's loadtxt beside it); prints wall time, MB/s, rows/s and peak memory");
    app.add_option("--target", load_targets, "--data-load: the target column(s)")->delimiter(',');
    CLI11_PARSE(app, argc, argv);
    if (!data_load.empty()) {
        try {
            return bench::run_data_load(data_load,
                                        load_targets.empty() ? std::vector<std::string>{"y"} : load_targets, reps);
        } catch (const brain::Error& e) {
            std::cerr << "error: " << e.what() << "\n";
            return 2;
        }
    }
    if (grid_flag) configs = "grid";

    try {
        const auto backend = brain::TrainingBackend::parse(backend_spec, budget_mib)
                                 .with_precision(brain::parse_precision(precision))
                                 .with_processes(rank, world_size, rendezvous);
        // The named workloads, then the grid's points, by name.
        std::vector<std::pair<std::string, Workload>> chosen;
        const auto points = bench::grid(grid_points, grid_seed, static_cast<std::uint64_t>(grid_work));
        std::stringstream list(configs);
        for (std::string name; std::getline(list, name, ',');) {
            if (name == "grid") {
                chosen.insert(chosen.end(), points.begin(), points.end());
                continue;
            }
            if (const auto it = workloads().find(name); it != workloads().end()) {
                chosen.emplace_back(name, it->second);
                continue;
            }
            const auto point = std::find_if(points.begin(), points.end(), [&](const auto& p) { return p.first == name; });
            if (point == points.end()) {
                std::cerr << "error: unknown config \"" << name << "\"; expected one of seed16, x64, x256, x1024, "
                          << "wide, huge, grid or g00..g" << (grid_points > 0 ? grid_points - 1 : 0)
                          << " (--grid-points " << grid_points << ")\n";
                return 2;
            }
            chosen.push_back(*point);
        }
        int status = 0;
        for (const auto& [name, w] : chosen) try {
            const bool named = workloads().count(name) != 0;
            const std::uint32_t epochs = epochs_override ? epochs_override : w.epochs;
            auto builder = brain::Network::builder().input_size(w.inputs);
            for (std::size_t h : w.hidden) builder.dense(h, activation_named(w.activation));
            const brain::Activation output = w.loss == "bce"   ? brain::Activation::Sigmoid
                                             : w.loss == "cce" ? brain::Activation::Softmax
                                                               : brain::Activation::Linear;
            auto network = builder.dense(w.outputs, output)
                               .loss(w.loss == "bce"   ? brain::Loss::BinaryCrossEntropy
                                     : w.loss == "cce" ? brain::Loss::CategoricalCrossEntropy
                                                       : brain::Loss::MeanSquaredError)
                               .optimizer(w.optimizer == "sgd"     ? brain::Optimizer::sgd(0.01f, 0.9f)
                                          : w.optimizer == "adamw" ? brain::Optimizer::adamw(1e-3f, 0.01f)
                                                                   : brain::Optimizer::adam(1e-3f))
                               .seed(42)
                               .build();
            if (!data_dir.empty()) {
                const std::filesystem::path file = std::filesystem::path(data_dir) / (name + ".params.f32");
                network.set_parameters(
                    read_f32(file, network.parameter_count(), "initial parameters, per layer W (out x in) then b"));
            }
            const auto data = data_dir.empty() ? make_data(w) : load_data(data_dir, name, w);
            if (predict) {
                measure_prediction(name, network, data.features(), backend, backend_spec, precision,
                                   !data_dir.empty(), predict_batch, std::max(1u, reps), check_rows, pinned);
                continue;
            }
            brain::TrainingSession session(network, data,
                                           brain::TrainConfig{epochs + 1, w.batch, true, shuffle_seed}, backend);
            session.train_epoch(); // warm-up, untimed
            float loss = 0.0f;
            const auto start = std::chrono::steady_clock::now();
            // As fit trains them: the timed epochs in one train_epochs call, or --epochs-per-call at a time.
            for (std::uint32_t done = 0; done < epochs;) {
                const std::uint32_t part =
                    epochs_per_call ? std::min(epochs_per_call, epochs - done) : epochs - done;
                loss = session.train_epochs(part).back();
                done += part;
            }
            const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
            const double samples = static_cast<double>(epochs) * static_cast<double>(w.rows);
            std::cout << "{\"cfg\":\"" << name << "\",\"backend\":\"" << backend_spec << "\",\"precision\":\""
                      << precision << "\",\"data\":\"" << (data_dir.empty() ? "brain" : "torch")
                      << "\",\"seconds\":" << seconds
                      << ",\"samples_per_s\":" << static_cast<long long>(samples / seconds)
                      << ",\"final_loss\":" << loss
                      << ",\"estimate_bytes\":"
                      << brain::estimate_tensor_memory_bytes(network, w.batch, backend.precision())
                      << ",\"stats\":" << brain::to_json(session.stats());
            if (checksum) std::cout << ",\"params_fnv\":\"" << fnv1a(session.checkpoint().parameters) << "\"";
            if (!save_params.empty() || !compare_params.empty()) {
                const std::vector<float> params = session.checkpoint().parameters;
                if (!compare_params.empty()) {
                    const auto reference = read_f32(std::filesystem::path(compare_params) / (name + ".params.f32"),
                                                    params.size(), "reference parameters");
                    double diff = 0, norm = 0;
                    for (std::size_t i = 0; i < params.size(); ++i) {
                        const double d = static_cast<double>(params[i]) - reference[i];
                        diff += d * d;
                        norm += static_cast<double>(reference[i]) * reference[i];
                    }
                    std::cout << ",\"params_rel_l2\":" << std::sqrt(diff / std::max(norm, 1e-300));
                }
                if (!save_params.empty() && rank == 0) {
                    std::filesystem::create_directories(save_params);
                    std::ofstream out(std::filesystem::path(save_params) / (name + ".params.f32"),
                                      std::ios::binary);
                    out.write(reinterpret_cast<const char*>(params.data()),
                              static_cast<std::streamsize>(params.size() * sizeof(float)));
                    if (!out) throw std::runtime_error("cannot write the parameters to " + save_params);
                }
            }
            const auto all_devices = session.stats().devices;
            if (all_devices > 1 || world_size > 1) {
                std::cout << ",\"devices\":[";
                const auto per_device = session.device_stats();
                for (std::size_t d = 0; d < per_device.size(); ++d)
                    std::cout << (d ? "," : "") << brain::to_json(per_device[d]);
                std::cout << "],\"rank\":" << rank << ",\"world_size\":" << world_size;
            }
            if (!named) {
                std::cout << ",\"macs_per_step\":" << bench::multiply_adds(w) << ",\"inp\":" << w.inputs
                          << ",\"hidden\":[";
                for (std::size_t l = 0; l < w.hidden.size(); ++l) std::cout << (l ? "," : "") << w.hidden[l];
                std::cout << "],\"out\":" << w.outputs << ",\"batch\":" << w.batch << ",\"act\":\"" << w.activation
                          << "\",\"loss\":\"" << w.loss << "\",\"opt\":\"" << w.optimizer << "\",\"epochs\":" << epochs;
            }
            std::cout << "}" << std::endl;
        } catch (const brain::Error& e) {
            // One workload's failure (a grid point) is reported and the others still run; the exit status says it.
            std::cerr << "error: " << name << ": " << brain::to_string(e.code()) << ": " << e.what() << "\n";
            status = 2;
        } catch (const std::runtime_error& e) { // --data files
            std::cerr << "error: " << name << ": " << e.what() << "\n";
            status = 2;
        }
        return status;
    } catch (const brain::Error& e) {
        std::cerr << "error: " << brain::to_string(e.code()) << ": " << e.what() << "\n";
        return 2;
    } catch (const std::runtime_error& e) { // --data files
        std::cerr << "error: " << e.what() << "\n";
        return 2;
    }
    return 0;
}
