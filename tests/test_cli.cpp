// The brain command and the chapter-11 examples, run as a user runs them: real processes on generated data in
// a temporary directory, asserting exit statuses, the sentences printed and the files left behind.
#include "support/catch.hpp"
#include "support/cli.hpp"
#include "support/process.hpp"

#include <algorithm>
#include <array>
#include <atomic>
#include <brain/brain.hpp>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <sys/wait.h>
#include <unistd.h>

namespace fs = std::filesystem;

namespace {

struct CommandResult {
    int status = -1;    // exit status; -1 when the process did not exit normally
    std::string output; // stdout and stderr, interleaved
};

using brain::test::bin;
using brain::test::check_refused;
using brain::test::contains;
using brain::test::shell_quote;
using brain::test::succeeded;

CommandResult run(const std::string& command) {
    CommandResult result;
    FILE* pipe = ::popen((command + " 2>&1").c_str(), "r");
    REQUIRE(pipe != nullptr);
    std::array<char, 4096> buffer{};
    std::size_t n = 0;
    while ((n = std::fread(buffer.data(), 1, buffer.size(), pipe)) > 0) result.output.append(buffer.data(), n);
    const int raw = ::pclose(pipe);
    if (raw != -1 && WIFEXITED(raw)) result.status = WEXITSTATUS(raw);
    return result;
}

std::string read_text(const fs::path& path) {
    std::ifstream in(path);
    std::ostringstream out;
    out << in.rdbuf();
    return out.str();
}

void write_text(const fs::path& path, const std::string& text) {
    std::ofstream out(path);
    out << text;
}

// A fresh directory removed at scope exit.
class TempDir {
public:
    TempDir() {
        static std::atomic<int> counter{0};
        m_path = fs::temp_directory_path() /
                 ("brain_cli_" + std::to_string(::getpid()) + "_" + std::to_string(counter++));
        fs::remove_all(m_path);
        fs::create_directories(m_path);
    }
    ~TempDir() {
        std::error_code ec;
        fs::remove_all(m_path, ec);
    }
    TempDir(const TempDir&) = delete;
    TempDir& operator=(const TempDir&) = delete;
    fs::path operator/(const std::string& name) const { return m_path / name; }
    std::string q(const std::string& name) const { return shell_quote((m_path / name).string()); }

private:
    fs::path m_path;
};

// Lines of a text file (without the trailing empty one).
std::vector<std::string> lines_of(const fs::path& path) {
    std::vector<std::string> lines;
    std::ifstream in(path);
    for (std::string line; std::getline(in, line);) lines.push_back(line);
    return lines;
}

std::vector<std::string> split(const std::string& line, char delimiter = ',') {
    std::vector<std::string> cells;
    std::stringstream in(line);
    for (std::string cell; std::getline(in, cell, delimiter);) cells.push_back(cell);
    return cells;
}

// The number after `key` in `text` (e.g. "accuracy against 'y': 0.96"), or -1.
double number_after(const std::string& text, const std::string& key) {
    const auto at = text.find(key);
    if (at == std::string::npos) return -1.0;
    return std::strtod(text.c_str() + at + key.size(), nullptr);
}

// Whether this machine has a usable CUDA device (the examples then run for real).
bool cuda_usable() {
    static const bool usable = run(bin("brain") + " doctor --backend cuda:0 --budget 1024").status == 0;
    return usable;
}

bool says_cuda_unavailable(const std::string& output) {
    return contains(output, "PluginNotFound") || contains(output, "DriverUnavailable") ||
           contains(output, "DeviceNotFound");
}

} // namespace

TEST_CASE("brain --help documents every subcommand", "[cli]") {
    const auto r = run(bin("brain") + " --help");
    CHECK(r.status == 0);
    for (const char* command : {"generate", "train", "predict", "estimate", "doctor", "plugins"})
        CHECK(contains(r.output, command));
    const auto t = run(bin("brain") + " train --help");
    CHECK(t.status == 0);
    for (const char* option : {"--csv", "--target", "--layers", "--output-activation", "--optimizer",
                               "--validation", "--no-standardize", "--backend", "--budget", "--precision", "--out"})
        CHECK(contains(t.output, option));
}

TEST_CASE("brain generate is deterministic in its seed and writes the documented columns", "[cli]") {
    TempDir dir;
    REQUIRE(run(bin("brain") + " generate --kind churn --rows 300 --seed 5 --out " + dir.q("a.csv")).status == 0);
    REQUIRE(run(bin("brain") + " generate --kind churn --rows 300 --seed 5 --out " + dir.q("b.csv")).status == 0);
    REQUIRE(run(bin("brain") + " generate --kind churn --rows 300 --seed 6 --out " + dir.q("c.csv")).status == 0);
    CHECK(read_text(dir / "a.csv") == read_text(dir / "b.csv"));
    CHECK(read_text(dir / "a.csv") != read_text(dir / "c.csv"));

    const auto lines = lines_of(dir / "a.csv");
    REQUIRE(lines.size() == 301);
    const auto header = split(lines[0]);
    CHECK(header.back() == "churned");
    CHECK(std::find(header.begin(), header.end(), "tenure_months") != header.end());
    CHECK(std::find(header.begin(), header.end(), "support_calls") != header.end());
    std::size_t yes = 0;
    for (std::size_t i = 1; i < lines.size(); ++i) {
        const auto cells = split(lines[i]);
        REQUIRE(cells.size() == header.size());
        REQUIRE((cells.back() == "yes" || cells.back() == "no"));
        yes += cells.back() == "yes";
    }
    // Both classes occur, so the set is a real classification task.
    CHECK(yes > 30);
    CHECK(yes < 270);
}

TEST_CASE("brain train then predict round-trips a classifier", "[cli]") {
    TempDir dir;
    REQUIRE(run(bin("brain") + " generate --kind xor --rows 400 --seed 3 --out " + dir.q("train.csv")).status == 0);
    REQUIRE(run(bin("brain") + " generate --kind xor --rows 200 --seed 4 --out " + dir.q("test.csv")).status == 0);

    const std::string train =
        succeeded(run(bin("brain") + " train --csv " + dir.q("train.csv") +
                      " --target y --layers 16 --output-activation sigmoid --lr 0.01 --epochs 60"
                      " --batch 32 --validation 0.2 --seed 1 --backend cpu --out " +
                      dir.q("model.json")));
    // Not a terminal: one plain progress line per epoch, with the validation loss.
    CHECK(contains(train, "epoch  1/60"));
    CHECK(contains(train, "epoch 60/60"));
    CHECK(contains(train, "val_loss"));
    CHECK(contains(train, "AcceleratorStats {"));
    REQUIRE(fs::exists(dir / "model.json"));

    // The saved model is a real model file: the library loads it and it has the data set's feature names.
    const brain::Network model = brain::Network::load_json(dir / "model.json");
    CHECK(model.feature_names() == std::vector<std::string>{"x0", "x1"});
    CHECK(model.is_classifier());

    const auto predict = run(bin("brain") + " predict --model " + dir.q("model.json") + " --csv " +
                             dir.q("test.csv") + " --compare y --out " + dir.q("pred.csv"));
    INFO(predict.output);
    REQUIRE(predict.status == 0);
    const auto lines = lines_of(dir / "pred.csv");
    REQUIRE(lines.size() == 201);
    CHECK(lines[0] == "label,p_1");
    // The CLI's labels agree with the library's own predictions on the same rows.
    const brain::Dataset test = brain::Dataset::from_csv(dir / "test.csv", brain::CsvOptions{{"y"}, ',', {}, {}});
    const auto classes = model.predict_classes(test.features());
    for (std::size_t r = 0; r < classes.size(); ++r) REQUIRE(split(lines[r + 1])[0] == std::to_string(classes[r]));
    // XOR is learnable by one hidden layer: held-out accuracy well above chance.
    CHECK(number_after(predict.output, "accuracy against 'y': ") > 0.8);
}

TEST_CASE("brain predict --backend predicts through the backend's predictor, as the host does", "[cli]") {
    TempDir dir;
    REQUIRE(run(bin("brain") + " generate --kind churn --rows 500 --seed 2 --out " + dir.q("c.csv")).status == 0);
    REQUIRE(run(bin("brain") + " train --csv " + dir.q("c.csv") +
                " --target churned --layers 16,8 --epochs 3 --batch 64 --out " + dir.q("m.json"))
                .status == 0);
    const std::string predict = bin("brain") + " predict --model " + dir.q("m.json") + " --csv " + dir.q("c.csv");
    REQUIRE(run(predict + " --out " + dir.q("host.csv")).status == 0);
    const auto device = run(predict + " --backend cpu --out " + dir.q("cpu.csv"));
    INFO(device.output);
    REQUIRE(device.status == 0);
    const auto host_lines = lines_of(dir / "host.csv"), device_lines = lines_of(dir / "cpu.csv");
    REQUIRE(host_lines.size() == 501);
    REQUIRE(device_lines.size() == host_lines.size());
    CHECK(device_lines[0] == host_lines[0]);
    for (std::size_t r = 1; r < host_lines.size(); ++r) {
        const auto h = split(host_lines[r]), d = split(device_lines[r]);
        REQUIRE(d.size() == h.size());
        for (std::size_t c = 1; c < h.size(); ++c) REQUIRE(std::abs(std::stod(d[c]) - std::stod(h[c])) < 1e-5);
    }
    // --precision and --budget belong to a backend; the CPU refuses what it does not run; nothing is written.
    const auto stray = run(predict + " --precision bf16 --out " + dir.q("stray.csv"));
    CHECK(stray.status == 2);
    CHECK(contains(stray.output, "add --backend"));
    const auto bf16 = run(predict + " --backend cpu --precision bf16 --out " + dir.q("bf16.csv"));
    CHECK(bf16.status == 2);
    CHECK(contains(bf16.output, "error: Unsupported: the CPU backend computes in float32 only"));
    CHECK(contains(bf16.output, "precision bf16"));
    CHECK_FALSE(fs::exists(dir / "stray.csv"));
    CHECK_FALSE(fs::exists(dir / "bf16.csv"));
    if (!cuda_usable()) {
        const auto cuda = run(predict + " --backend cuda:0 --out " + dir.q("cuda.csv"));
        CHECK(cuda.status == 2);
        CHECK(says_cuda_unavailable(cuda.output));
        CHECK_FALSE(fs::exists(dir / "cuda.csv"));
    }
}

TEST_CASE("brain predict writes class labels and probabilities for a class-label target", "[cli]") {
    TempDir dir;
    REQUIRE(run(bin("brain") + " generate --kind churn --rows 600 --seed 1 --out " + dir.q("c.csv")).status == 0);
    REQUIRE(run(bin("brain") + " train --csv " + dir.q("c.csv") +
                " --target churned --layers 16 --epochs 5 --batch 64 --out " + dir.q("m.json"))
                .status == 0);
    // Extra columns (here the label itself) are ignored; features are found by name, in any order.
    const auto r = run(bin("brain") + " predict --model " + dir.q("m.json") + " --csv " + dir.q("c.csv"));
    REQUIRE(r.status == 0);
    std::istringstream out(r.output);
    std::string header;
    std::getline(out, header);
    CHECK(header == "label,p_no,p_yes");
    std::size_t rows = 0;
    for (std::string line; std::getline(out, line); ++rows) {
        const auto cells = split(line);
        REQUIRE(cells.size() == 3);
        REQUIRE((cells[0] == "yes" || cells[0] == "no"));
        const double p_no = std::stod(cells[1]), p_yes = std::stod(cells[2]);
        REQUIRE(std::abs(p_no + p_yes - 1.0) < 1e-4);
        REQUIRE(cells[0] == (p_yes > p_no ? "yes" : "no"));
    }
    CHECK(rows == 600);
}

TEST_CASE("brain train rejects bad input with one sentence and writes nothing", "[cli]") {
    TempDir dir;
    REQUIRE(run(bin("brain") + " generate --kind regression --rows 50 --seed 1 --out " + dir.q("ok.csv")).status ==
            0);
    write_text(dir / "ragged.csv", "a,b,y\n1,2,3\n4,5\n");
    write_text(dir / "nan.csv", "a,b,y\n1,2,3\n4,nan,5\n");
    write_text(dir / "text.csv", "a,b,y\n1,2,3\n4,abc,5\n");
    const std::string train = bin("brain") + " train --epochs 1 --out " + dir.q("m.json") + " --csv ";

    SECTION("unknown target column") {
        check_refused(run(train + dir.q("ok.csv") + " --target nope"), {"error: ", "'nope'", "ok.csv"});
    }
    SECTION("ragged row") {
        check_refused(run(train + dir.q("ragged.csv") + " --target y"), {"error: InvalidData: ", "ragged.csv:3"});
    }
    SECTION("NaN cell") {
        check_refused(run(train + dir.q("nan.csv") + " --target y"), {"error: InvalidData: ", "nan.csv:3", "'b'"});
    }
    SECTION("non-numeric feature cell") {
        check_refused(run(train + dir.q("text.csv") + " --target y"), {"text.csv:3", "'abc'"});
    }
    SECTION("an unavailable backend is an error, not a CPU run") {
        check_refused(run(train + dir.q("ok.csv") + " --target y --backend metal:0"),
                      {"error: MetalFeatureDisabled: "});
    }
    CHECK_FALSE(fs::exists(dir / "m.json"));

    // A failed run leaves an existing model untouched.
    write_text(dir / "m.json", "previous");
    CHECK(run(train + dir.q("nan.csv") + " --target y").status != 0);
    CHECK(read_text(dir / "m.json") == "previous");
}

TEST_CASE("brain predict rejects bad input with one sentence and writes nothing", "[cli]") {
    TempDir dir;
    REQUIRE(run(bin("brain") + " generate --kind regression --rows 80 --seed 1 --out " + dir.q("d.csv")).status ==
            0);
    REQUIRE(run(bin("brain") + " train --csv " + dir.q("d.csv") + " --target y --layers 8 --epochs 2 --out " +
                dir.q("m.json"))
                .status == 0);
    write_text(dir / "notmodel.json", "{\"hello\": 1}\n");
    write_text(dir / "missing.csv", "x0,x1,x2\n1,2,3\n");
    write_text(dir / "nan.csv", "x0,x1,x2,x3,x4,x5\n1,2,3,4,5,6\n1,2,3,NaN,5,6\n");
    write_text(dir / "ragged.csv", "x0,x1,x2,x3,x4,x5\n1,2,3,4,5,6\n1,2,3,4,5\n");
    const std::string predict = bin("brain") + " predict --out " + dir.q("p.csv");

    SECTION("not a model file") {
        check_refused(run(predict + " --model " + dir.q("notmodel.json") + " --csv " + dir.q("d.csv")),
                      {"error: InvalidModelFile: ", "notmodel.json"});
    }
    SECTION("missing feature columns are named") {
        check_refused(run(predict + " --model " + dir.q("m.json") + " --csv " + dir.q("missing.csv")),
                      {"error: InvalidData: ", "'x3', 'x4', 'x5'"});
    }
    SECTION("NaN cell") {
        check_refused(run(predict + " --model " + dir.q("m.json") + " --csv " + dir.q("nan.csv")),
                      {"nan.csv:3", "'x3'"});
    }
    SECTION("ragged row") {
        check_refused(run(predict + " --model " + dir.q("m.json") + " --csv " + dir.q("ragged.csv")),
                      {"ragged.csv:3"});
    }
    CHECK_FALSE(fs::exists(dir / "p.csv"));
}

TEST_CASE("brain doctor reports each backend precisely", "[cli]") {
    SECTION("cuda:0") {
        const auto r = run(bin("brain") + " doctor --backend cuda:0 --budget 8192");
        if (r.status == 0) {
            CHECK(contains(r.output, "MiB total"));
            // Each check followed by what the plugin says it ran.
            CHECK(contains(r.output, "gemm:    true  (cuBLAS SGEMM, a 2x3 by 3x2 product)"));
            CHECK(contains(r.output, "alloc:   true  (the whole budget on the device, written)"));
        } else {
            CHECK(r.status == 2);
            CHECK(says_cuda_unavailable(r.output));
            CHECK(contains(r.output, "error: "));
        }
    }
    SECTION("metal:0") {
        const auto r = run(bin("brain") + " doctor --backend metal:0 --budget 8192");
        CHECK(r.status == 2);
        CHECK(contains(r.output, "error: MetalFeatureDisabled: "));
        CHECK(contains(r.output, "Apple"));
    }
    SECTION("cpu") {
        const auto r = run(bin("brain") + " doctor --backend cpu");
        CHECK(r.status == 0);
        CHECK(contains(r.output, "CPU backend; nothing to probe"));
    }
}

TEST_CASE("brain plugins lists the search path and the plugins found", "[cli]") {
    const auto r = run(bin("brain") + " plugins");
    REQUIRE(r.status == 0);
    CHECK(contains(r.output, fs::path(BRAIN_TEST_PLUGIN_DIR).lexically_normal().string()));
    CHECK(contains(r.output, "cpu  [ok]"));
    CHECK(contains(r.output, "libbrain_cpu.so"));
    // The Metal plugin loads on Linux but has no devices, and says why.
    CHECK(contains(r.output, "libbrain_metal.so"));
    CHECK(contains(r.output, "MetalFeatureDisabled"));
    // What each plugin runs, and what it lacks with its reason.
    CHECK(contains(r.output, "runs:    activations: linear, relu, leaky_relu, sigmoid, tanh, softmax, gelu; losses: "
                             "mean_squared_error, binary_cross_entropy, categorical_cross_entropy; optimizers: sgd, "
                             "adam, adamw; precisions: float32"));
    CHECK(contains(r.output, "lacks:   tf32, bf16 (matrix products in float32 only"));
}

TEST_CASE("brain plugins shows an ABI 1.0 plugin with the ABI 1.0 set, and the doctor a host backend's labels",
          "[cli]") {
    SECTION("a plugin built against the frozen ABI 1.0 header") {
        const auto r = run("BRAIN_PLUGIN_PATH=" + shell_quote(std::string(BRAIN_TEST_SAMPLE_PLUGIN_DIR) + "/abi-1.0") +
                           " " + bin("brain") + " plugins");
        REQUIRE(r.status == 0);
        CHECK(contains(r.output, "naive  [ok]"));
        CHECK(contains(r.output, "ABI:     1.0"));
        CHECK(contains(r.output, "(assumed: the plugin has no capabilities entry, so the ABI 1.0 set)"));
    }
    SECTION("the sample plugin's probe names its checks and allocates 64 MiB, not the 8 GiB budget") {
        const auto r = run("BRAIN_PLUGIN_PATH=" + shell_quote(std::string(BRAIN_TEST_SAMPLE_PLUGIN_DIR) + "/honest") +
                           " " + bin("brain") + " doctor --backend naive:0 --budget 8192");
        INFO(r.output);
        if (r.status == 0) {
            CHECK(contains(r.output, "gemm:    true  (naive dense product, a 2x3 by 3x2 case)"));
            CHECK(contains(r.output, "alloc:   true  (64 MiB of host memory, not the whole budget)"));
        } else {
            // A machine with less than the 8 GiB budget available says so instead of allocating it.
            CHECK(r.status == 1);
            CHECK(contains(r.output, "of available host memory (MemAvailable)"));
        }
    }
}

TEST_CASE("brain estimate prints the library's estimate", "[cli]") {
    const brain::Network network = brain::Network::builder()
                                       .input_size(16)
                                       .dense(256, brain::Activation::Relu)
                                       .dense(256, brain::Activation::Relu)
                                       .dense(1, brain::Activation::Linear)
                                       .build();
    const auto r = run(bin("brain") + " estimate --inputs 16 --layers 256,256 --batch 512 --budget 64");
    REQUIRE(r.status == 0);
    CHECK(contains(r.output, std::to_string(brain::estimate_tensor_memory_mib(network, 512)) +
                                 " MiB of tensors for batch 512"));
    CHECK(contains(r.output, "largest batch within 64 MiB: " +
                                 std::to_string(brain::largest_batch_within(network, 64ull << 20))));
}

TEST_CASE("brain estimate refuses a width or batch of 0 and options that describe nothing", "[cli]") {
    // A usage error naming the option, what it expects and what it found, before anything is estimated.
    auto refused = [](const std::string& args, int status, const std::string& message) {
        const auto r = run(bin("brain") + " estimate " + args);
        INFO(r.output);
        CHECK(r.status == status);
        CHECK(contains(r.output, message));
        CHECK(contains(r.output, "Run with --help for more information."));
        CHECK_FALSE(contains(r.output, "MiB of tensors"));
    };
    refused("--inputs 0", 105, "--inputs: expected a whole number from 1 to 4294967295, found '0'");
    refused("--inputs 16 --layers 256,0", 105, "--layers: expected a whole number from 1 to 4294967295, found '0'");
    refused("--inputs 16 --outputs 0", 105, "--outputs: expected a whole number from 1 to 4294967295, found '0'");
    // The plugin ABI's widths are uint32: a wider layer could never be built.
    refused("--inputs 4294967296", 105,
            "--inputs: expected a whole number from 1 to 4294967295, found '4294967296'");
    refused("--inputs 16 --batch 0", 105,
            "--batch: expected a whole number from 1 to 18446744073709551615, found '0'");
    refused("", 106,
            "--model FILE (or --inputs N, with --layers and --outputs, to describe the network) is required");
    refused("--inputs 16 --max-input-mib 8", 107,
            "--max-input-mib bounds the model file read with --model, but --model is not given (--inputs describes "
            "the network, and no file is read); add --model FILE or leave --max-input-mib out");

    // The valid combinations: the smallest widths and batch, and --max-input-mib with --model.
    CHECK(contains(succeeded(run(bin("brain") + " estimate --inputs 1 --layers 1 --outputs 1 --batch 1")),
                   "MiB of tensors for batch 1"));
    TempDir dir;
    brain::Network::builder()
        .input_size(16)
        .dense(8, brain::Activation::Relu)
        .dense(1, brain::Activation::Linear)
        .build()
        .save_json(dir / "m.json");
    CHECK(contains(succeeded(run(bin("brain") + " estimate --model " + dir.q("m.json") + " --max-input-mib 8")),
                   "MiB of tensors for batch 256"));
}

TEST_CASE("the chapter-11 examples run and explain what this machine cannot do", "[cli]") {
    TempDir dir;
    const bool gpu = cuda_usable();
    const std::string small = " --epochs 2 --rows 1024";

    SECTION("doctor (11.3)") {
        const auto r = run(bin("doctor"));
        INFO(r.output);
        CHECK(r.status == 0);
        if (gpu)
            CHECK(contains(r.output, "cuBLAS:  true"));
        else
            CHECK((contains(r.output, "cuda:0 (budget 8192 MiB) cannot run on this machine: ") &&
                   says_cuda_unavailable(r.output)));
    }
    SECTION("estimate_memory (11.4)") {
        const auto r = run(bin("estimate_memory"));
        INFO(r.output);
        CHECK(r.status == 0);
        CHECK(contains(r.output, " MiB of tensors for batch 256"));
        if (!gpu) CHECK(contains(r.output, "cannot run on this machine: "));
    }
    SECTION("fit_with_backend (11.5)") {
        const auto r = run(bin("fit_with_backend") + small);
        INFO(r.output);
        CHECK(r.status == 0);
        if (gpu)
            CHECK(contains(r.output, "trained on cuda:0"));
        else
            CHECK((contains(r.output, "cannot run on this machine: ") && says_cuda_unavailable(r.output)));
    }
    SECTION("training_session (11.6)") {
        const auto r = run(bin("training_session") + small + " --out " + dir.q("best.json"));
        INFO(r.output);
        CHECK(r.status == 0);
        if (gpu)
            CHECK(contains(r.output, "best loss"));
        else
            CHECK((contains(r.output, "cannot run on this machine: ") && says_cuda_unavailable(r.output)));
        // The same loop on the CPU session: improves, checkpoints, and saves a loadable best model.
        const auto cpu =
            run(bin("training_session") + " --backend cpu --epochs 3 --rows 1024 --out " + dir.q("cpu_best.json"));
        INFO(cpu.output);
        CHECK(cpu.status == 0);
        CHECK(contains(cpu.output, "epoch 0: loss "));
        CHECK(contains(cpu.output, "(improved: checkpointed"));
        CHECK(contains(cpu.output, "AcceleratorStats {"));
        REQUIRE(fs::exists(dir / "cpu_best.json"));
        CHECK(brain::Network::load_json(dir / "cpu_best.json").input_size() == 16);
    }
    SECTION("cuda_benchmark (11.7)") {
        const auto r = run(bin("cuda_benchmark") + " --epochs 1 --rows 1024");
        INFO(r.output);
        CHECK(r.status == 0);
        CHECK(contains(r.output, "\ncpu "));
        if (gpu)
            CHECK(contains(r.output, "speedup"));
        else
            CHECK((contains(r.output, "cannot run on this machine: ") && says_cuda_unavailable(r.output)));
    }
    SECTION("metal_backend (11.8)") {
        const auto r = run(bin("metal_backend"));
        INFO(r.output);
        CHECK(r.status == 0);
        CHECK(contains(r.output, "metal:0 (budget 8192 MiB) cannot run on this machine: MetalFeatureDisabled: "));
    }
}

TEST_CASE("the chapter's exercises run and explain what this machine cannot do", "[cli]") {
    TempDir dir;
    const bool gpu = cuda_usable();
    const auto check_gpu_part = [gpu](const std::string& output, const char* gpu_line) {
        if (gpu)
            CHECK(contains(output, gpu_line));
        else
            CHECK((contains(output, "cannot run on this machine: ") && says_cuda_unavailable(output)));
    };
    // Runs an exercise, which must succeed and end with `gpu_line` or say why the GPU part cannot run; its output.
    const auto run_exercise = [&](const std::string& command, const char* gpu_line) {
        const auto r = run(command);
        INFO(r.output);
        CHECK(r.status == 0);
        check_gpu_part(r.output, gpu_line);
        return r.output;
    };
    SECTION("exercise 1: memory pressure") {
        run_exercise(bin("exercise_memory_pressure") + " --budget 1024 --hog-fraction 0.5",
                     "allocation test true -> ");
    }
    SECTION("exercise 2: crossover") {
        const std::string output = run_exercise(
            "cd " + dir.q("") + " && " + bin("exercise_crossover") + " --epochs 1 --rows 512", "speedup");
        INFO(output);
        for (const char* size : {"input 16: cpu ", "input 64: cpu ", "input 256: cpu ", "input 1024: cpu "})
            CHECK(contains(output, size));
        REQUIRE(fs::exists(dir / "crossover.csv"));
        std::ifstream csv(dir / "crossover.csv");
        std::string header;
        std::getline(csv, header);
        CHECK(header == "input_size,cpu_seconds,gpu_seconds,speedup");
    }
    SECTION("exercise 3: fit_with_backend 50 times against one session") {
        run_exercise(bin("exercise_fit_vs_session") + " --epochs 3", "setup_time of one session: ");
    }
    SECTION("exercise 4: churn on the GPU") {
        const std::string output = run_exercise(bin("exercise_churn_on_gpu") + " --epochs 2", "gpu/cpu time: ");
        INFO(output);
        CHECK(contains(output, "cpu: "));
        CHECK(contains(output, "accuracy "));
    }
}

TEST_CASE("brain_gemm_rate times a step's products or says in one line why it cannot", "[cli]") {
    // Built only where CMake found the CUDA toolkit.
    if (!fs::exists(fs::path(BRAIN_TEST_BIN_DIR) / "brain_gemm_rate"))
        BRAIN_SKIP("brain_gemm_rate was not built (no CUDA toolkit)");
    const auto bad = run(bin("brain_gemm_rate") + " --configs x1024,nonesuch");
    INFO(bad.output);
    CHECK(bad.status == 2);
    CHECK(
        contains(bad.output, "unknown config \"nonesuch\"; expected one of huge, seed16, wide, x1024, x256, x64"));

    const auto r = run(bin("brain_gemm_rate") + " --configs x1024 --repeats 1 --calls 2");
    INFO(r.output);
    if (!cuda_usable()) {
        CHECK(r.status == 2);
        CHECK(contains(r.output, "error: no usable CUDA GPU: "));
        CHECK(std::count(r.output.begin(), r.output.end(), '\n') == 1);
        return;
    }
    REQUIRE(r.status == 0);
    const auto json = nlohmann::json::parse(r.output.substr(r.output.find('{')));
    CHECK(json.at("cfg") == "x1024");
    // x1024 is 1024-256-256-1: three forward products, three weight gradients, two input gradients.
    CHECK(json.at("shapes").size() == 8);
    const double sum = json.at("gemm_seconds_per_step").get<double>();
    const double graph = json.at("graph_seconds_per_step").get<double>();
    CHECK(sum > 0.0);
    CHECK(graph > 0.0);
    CHECK(graph < 1e-2); // eight small products replayed from one graph: microseconds, not milliseconds
}
