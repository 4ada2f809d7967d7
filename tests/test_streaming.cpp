// Streamed data sets (StreamingDataset, the ABI 1.2 batch source): rows read from .npy files chunk by chunk, every
// row once per epoch, the same training as in memory where the orders agree, and a data set four times larger than
// the process's address-space limit trained end to end by `brain train --stream`.
#include "support/catch.hpp"
#include "support/error_match.hpp"
#include "support/gpu.hpp"
#include "support/npz.hpp"
#include "support/process.hpp"

#include <algorithm>
#include <atomic>
#include <brain/brain.hpp>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <limits>
#include <string>
#include <sys/stat.h>
#include <thread>
#include <unistd.h>

namespace fs = std::filesystem;
using brain::Dataset;
using brain::ErrorCode;
using brain::Matrix;
using brain::StreamingDataset;
using brain::StreamOptions;

namespace {

struct TempDir {
    fs::path path;
    explicit TempDir(const std::string& name)
        : path(fs::temp_directory_path() / ("brain_stream_" + name + "_" + std::to_string(::getpid()))) {
        fs::remove_all(path);
        fs::create_directories(path);
    }
    ~TempDir() {
        std::error_code ec;
        fs::remove_all(path, ec);
    }
};

// A '<f4' C-order .npy header for rows x columns, padded as NumPy pads it.
std::string npy_header(std::uint64_t rows, std::uint64_t columns) {
    std::string dict = "{'descr': '<f4', 'fortran_order': False, 'shape': (" + std::to_string(rows) + ", " +
                       std::to_string(columns) + "), }";
    std::size_t total = 10 + dict.size() + 1;
    total = (total + 63) / 64 * 64;
    dict.append(total - 10 - dict.size() - 1, ' ');
    dict += '\n';
    std::string header = "\x93NUMPY";
    header += '\x01';
    header += '\x00';
    const auto length = static_cast<std::uint16_t>(dict.size());
    header += static_cast<char>(length & 0xff);
    header += static_cast<char>(length >> 8);
    return header + dict;
}

// Rows whose target is a smooth function of the features: x[r][c] = sin(0.37 r + 1.3 c), y = mean of x.
Dataset smooth_data(std::size_t rows, std::size_t inputs) {
    Matrix x(rows, inputs), y(rows, 1);
    for (std::size_t r = 0; r < rows; ++r) {
        float sum = 0.0f;
        for (std::size_t c = 0; c < inputs; ++c) {
            x(r, c) = std::sin(0.37f * static_cast<float>(r) + 1.3f * static_cast<float>(c)) * 3.0f + 1.0f;
            sum += x(r, c);
        }
        y(r, 0) = sum / static_cast<float>(inputs);
    }
    return Dataset(std::move(x), std::move(y));
}

// `data` written as dir/x.npy and dir/y.npy and streamed back in chunks of `chunk_rows` rows, `window_chunks` to a
// window.
StreamingDataset streamed(const TempDir& dir, const Dataset& data, std::size_t chunk_rows,
                          std::size_t window_chunks) {
    brain::save_npy(dir.path / "x.npy", data.features());
    brain::save_npy(dir.path / "y.npy", data.targets());
    StreamOptions options;
    options.chunk_rows = chunk_rows;
    options.window_chunks = window_chunks;
    return StreamingDataset::from_npy(dir.path / "x.npy", dir.path / "y.npy", options);
}

brain::Network small_network(std::size_t inputs, std::uint64_t seed) {
    return brain::Network::builder()
        .input_size(inputs)
        .dense(8, brain::Activation::Tanh)
        .dense(1, brain::Activation::Linear)
        .optimizer(brain::Optimizer::sgd(0.05f, 0.0f))
        .seed(seed)
        .build();
}

} // namespace

TEST_CASE("StreamingDataset reads .npy rows in chunks exactly as load_npy does", "[core]") {
    TempDir dir("read");
    const Dataset data = smooth_data(103, 5);
    StreamingDataset stream = streamed(dir, data, 10, 3);
    REQUIRE(stream.size() == 103);
    CHECK(stream.input_width() == 5);
    CHECK(stream.target_width() == 1);
    const Dataset part = stream.read_rows(17, 60);
    for (std::size_t r = 0; r < part.size(); ++r)
        for (std::size_t c = 0; c < 5; ++c) REQUIRE(part.features()(r, c) == data.features()(17 + r, c));
    // The reader's bytes: three windows of 30 rows of 6 floats.
    CHECK(stream.buffer_bytes() == 3 * 30 * 6 * sizeof(float));

    Dataset copy = data;
    copy.standardize();
    stream.standardize();
    for (std::size_t c = 0; c < 5; ++c) {
        CHECK(std::fabs(stream.standardization()->mean[c] - copy.standardization()->mean[c]) < 1e-5f);
        CHECK(std::fabs(stream.standardization()->stddev[c] - copy.standardization()->stddev[c]) < 1e-5f);
    }
}

TEST_CASE("CSV defects deep in a large file keep their exact line and column, in every reader", "[core]") {
    TempDir dir("csv");
    // About 8 MB: several pieces per core, so the defect lies in a piece parsed apart from the first. A class label
    // quoted over two lines every 1000 rows makes line and row numbers part ways.
    std::string text = "a,b,y\n";
    const std::size_t rows = 400000, bad_row = 351234;
    std::uint64_t bad_line = 0, line = 2;
    for (std::size_t r = 0; r < rows; ++r) {
        const bool quoted = r % 1000 == 0;
        if (r == bad_row) bad_line = line;
        text +=
            std::to_string(r) + "," + (r == bad_row ? "1.5x" : "0.25") + "," + (quoted ? "\"p\nq\"" : "k") + "\n";
        line += quoted ? 2 : 1;
    }
    { std::ofstream(dir.path / "big.csv", std::ios::binary) << text; }
    const std::string at = "big.csv:" + std::to_string(bad_line);
    brain::CsvOptions options;
    options.target_columns = {"y"};
    brain::test::require_error([&] { (void)Dataset::from_csv(dir.path / "big.csv", options); },
                               ErrorCode::InvalidData, {at, "column 2 'b'", "1.5x"});
    // Chunk by chunk (1 MiB of text each): every row once, with its line.
    brain::CsvRowStream good(dir.path / "big.csv", {"a"}, ',', {}, 1 << 20);
    Matrix values;
    std::vector<std::uint64_t> lines;
    std::uint64_t seen = 0, expected_line = 2;
    bool lines_right = true, values_right = true;
    while (good.next(values, lines)) {
        for (std::size_t r = 0; r < values.rows(); ++r, ++seen) {
            lines_right = lines_right && lines[r] == expected_line;
            values_right = values_right && values(r, 0) == static_cast<float>(seen);
            expected_line += seen % 1000 == 0 ? 2 : 1;
        }
    }
    CHECK(seen == rows);
    CHECK(good.rows_read() == rows);
    CHECK(lines_right);
    CHECK(values_right);
    brain::test::require_error(
        [&] {
            brain::CsvRowStream bad(dir.path / "big.csv", {"b"}, ',', {}, 1 << 20);
            while (bad.next(values, lines)) {
            }
        },
        ErrorCode::InvalidData, {at, "column 2 'b'", "1.5x"});
    brain::test::require_error(
        [&] {
            brain::CsvRowStream missing(dir.path / "big.csv", {"a", "zz"});
        },
        ErrorCode::InvalidData, {"big.csv", "zz"});
}

TEST_CASE("StreamingDataset refuses mismatched, damaged and non-finite files naming the file", "[core]") {
    TempDir dir("bad");
    brain::save_npy(dir.path / "x.npy", Matrix(4, 2, {1, 2, 3, 4, 5, 6, 7, 8}));
    brain::save_npy(dir.path / "y3.npy", Matrix(3, 1, {1, 2, 3}));
    brain::save_npy(dir.path / "nan.npy", Matrix(4, 1, {1, 2, std::numeric_limits<float>::quiet_NaN(), 4}));
    { std::ofstream(dir.path / "text.npy") << "not numpy"; }
    brain::test::require_error([&] { (void)StreamingDataset::from_npy(dir.path / "x.npy", dir.path / "y3.npy"); },
                               ErrorCode::InvalidData, {"4 rows", "3", "y3.npy"});
    brain::test::require_error(
        [&] { (void)StreamingDataset::from_npy(dir.path / "text.npy", dir.path / "y3.npy"); },
        ErrorCode::InvalidData, {"text.npy"});
    const StreamingDataset nan = StreamingDataset::from_npy(dir.path / "x.npy", dir.path / "nan.npy");
    brain::test::require_error([&] { (void)nan.read_rows(0, 4); }, ErrorCode::InvalidData,
                               {"nan.npy", "row 2", "column 0"});
}

TEST_CASE("a streamed softmax session refuses a target row that is not a distribution, naming file and row",
          "[plugin]") {
    TempDir dir("soft");
    Matrix x(30, 2, 0.5f), y(30, 3);
    for (std::size_t r = 0; r < 30; ++r) y(r, r % 3) = 1.0f;
    y(17, 0) = 1.0f; // two labels in one row
    brain::save_npy(dir.path / "x.npy", x);
    brain::save_npy(dir.path / "y.npy", y);
    StreamOptions options;
    options.chunk_rows = 4;
    options.window_chunks = 2;
    const auto stream = StreamingDataset::from_npy(dir.path / "x.npy", dir.path / "y.npy", options);
    const auto net = brain::Network::builder().input_size(2).dense(3, brain::Activation::Softmax).seed(1).build();
    brain::TrainingSession session(net, stream, brain::TrainConfig{1, 5, true, 2}, brain::TrainingBackend::cpu());
    brain::test::require_error([&] { session.train_epoch(); }, ErrorCode::InvalidData,
                               {"y.npy", "target row 17", "sums to 2", "probability distribution"});
}

TEST_CASE("a CSV stream from a pipe with carriage-return line ends gives its first chunk before the pipe ends",
          "[plugin]") {
    TempDir dir("cr");
    const auto fifo = dir.path / "rows.csv";
    REQUIRE(::mkfifo(fifo.c_str(), 0600) == 0);
    constexpr int first_rows = 20000, last_rows = 10;
    std::atomic<bool> first_chunk{false};
    bool waited_out = false;
    // The writer holds the pipe open after its first rows until the reader has had a chunk (or 20 s pass): a reader
    // that buffers to the pipe's end sees no chunk before then.
    std::thread writer([&] {
        std::ofstream out(fifo, std::ios::binary);
        out << "a,b\r";
        for (int r = 0; r < first_rows; ++r) out << r << ",0.5\r";
        out.flush();
        for (int i = 0; i < 2000 && !first_chunk; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(10));
        waited_out = !first_chunk;
        for (int r = first_rows; r < first_rows + last_rows; ++r) out << r << ",0.5\r";
    });
    std::uint64_t seen = 0, expected_line = 2;
    bool in_order = true;
    {
        brain::CsvRowStream stream(fifo, {"a"}, ',', {}, 4096);
        Matrix values;
        std::vector<std::uint64_t> lines;
        while (stream.next(values, lines)) {
            first_chunk = true;
            for (std::size_t r = 0; r < values.rows(); ++r, ++seen)
                in_order = in_order && values(r, 0) == static_cast<float>(seen) && lines[r] == expected_line++;
        }
    }
    writer.join();
    CHECK(!waited_out);
    CHECK(seen == first_rows + last_rows);
    CHECK(in_order);
}

TEST_CASE("a streamed binary cross-entropy session refuses a target outside 0 to 1 naming file row and column",
          "[plugin]") {
    TempDir dir("unit");
    Matrix x(30, 2, 0.5f), y(30, 1);
    for (std::size_t r = 0; r < 30; ++r) y(r, 0) = static_cast<float>(r % 2);
    y(21, 0) = 2.0f; // a count where a label belongs
    brain::save_npy(dir.path / "x.npy", x);
    brain::save_npy(dir.path / "y.npy", y);
    StreamOptions options;
    options.chunk_rows = 4;
    options.window_chunks = 2;
    const auto stream = StreamingDataset::from_npy(dir.path / "x.npy", dir.path / "y.npy", options);
    const auto net = brain::Network::builder()
                         .input_size(2)
                         .dense(1, brain::Activation::Sigmoid)
                         .loss(brain::Loss::BinaryCrossEntropy)
                         .seed(1)
                         .build();
    brain::TrainingSession session(net, stream, brain::TrainConfig{1, 5, true, 2}, brain::TrainingBackend::cpu());
    brain::test::require_error([&] { session.train_epoch(); }, ErrorCode::InvalidData,
                               {"y.npy", "target row 21, column 0", "from 0 to 1"});
}

TEST_CASE("a streamed session trains exactly as in memory when both keep file order", "[plugin]") {
    TempDir dir("same");
    const Dataset data = smooth_data(250, 6);
    // Windows and chunks that do not divide the batch or the rows.
    const StreamingDataset stream = streamed(dir, data, 7, 3);
    const brain::TrainConfig config{3, 16, false, 5};
    const brain::Network start = small_network(6, 11);

    brain::TrainingSession in_memory(start, data, config, brain::TrainingBackend::cpu());
    brain::TrainingSession streamed(start, stream, config, brain::TrainingBackend::cpu());
    for (int epoch = 0; epoch < 3; ++epoch) CHECK(in_memory.train_epoch() == streamed.train_epoch());
    CHECK(in_memory.checkpoint().parameters == streamed.checkpoint().parameters);
    CHECK(streamed.stats().dataset_bytes == 0); // the plugin holds no copy of the rows
    CHECK(!streamed.stats().dataset_resident);
}

TEST_CASE("a shuffled stream visits every row once per epoch and learns", "[plugin]") {
    TempDir dir("shuffle");
    const Dataset data = smooth_data(1000, 4);
    StreamingDataset stream = streamed(dir, data, 64, 4);
    stream.standardize();
    Dataset standardized = data;
    standardized.set_standardization(stream.standardization());
    const brain::Network start = small_network(4, 3);
    // One batch of every row: its loss is the mean over all rows whatever their order, so a row missed or seen
    // twice would show.
    {
        const brain::TrainConfig whole{1, 1000, true, 9};
        brain::TrainingSession streamed(start, stream, whole, brain::TrainingBackend::cpu());
        brain::TrainingSession in_memory(start, standardized, whole, brain::TrainingBackend::cpu());
        CHECK(std::fabs(streamed.train_epoch() - in_memory.train_epoch()) < 1e-5f);
    }
    // Mini-batches over 4 windows: the loss falls over the epochs and the orders of two epochs differ.
    const brain::TrainConfig config{1, 32, true, 9};
    brain::TrainingSession session(start, stream, config, brain::TrainingBackend::cpu());
    const float first = session.train_epoch();
    float last = first;
    for (int epoch = 1; epoch < 30; ++epoch) last = session.train_epoch();
    CHECK(last < first * 0.5f);
}

TEST_CASE("brain train --stream trains on .npy files four times larger than its address-space limit", "[cli]") {
    if (brain::test::k_asan)
        BRAIN_SKIP("an AddressSanitizer build reserves terabytes of address space; no limit applies");
    TempDir dir("cap");
    // 1 KiB rows (255 features and a target), 4.5 times the cap in all.
    constexpr std::uint64_t cap = std::uint64_t{320} << 20;
    constexpr std::size_t inputs = 255;
    const std::uint64_t rows = cap * 9 / 2 / 1024;
    {
        std::ofstream x(dir.path / "x.npy", std::ios::binary), y(dir.path / "y.npy", std::ios::binary);
        x << npy_header(rows, inputs);
        y << npy_header(rows, 1);
        std::vector<float> row(inputs);
        for (std::uint64_t r = 0; r < rows; ++r) {
            float sum = 0.0f;
            for (std::size_t c = 0; c < inputs; ++c) {
                row[c] = static_cast<float>((r * 31 + c * 17) % 101) / 50.0f - 1.0f;
                if (c < 8) sum += row[c];
            }
            x.write(reinterpret_cast<const char*>(row.data()), static_cast<std::streamsize>(row.size() * 4));
            const float target = sum / 8.0f;
            y.write(reinterpret_cast<const char*>(&target), 4);
        }
        REQUIRE(x.good());
        REQUIRE(y.good());
    }
    const std::uint64_t bytes = fs::file_size(dir.path / "x.npy") + fs::file_size(dir.path / "y.npy");
    REQUIRE(bytes >= 4 * cap);
    const std::string brain_bin = std::string(BRAIN_TEST_BIN_DIR) + "/brain";
    const std::string train = brain::test::shell_quote(brain_bin) +
                              " train --npy-features x.npy --npy-targets y.npy --layers 16 --epochs 1 --batch 512 "
                              "--lr 0.01 --out model.json --max-input-mib 100000";
    // One thread each for the BLAS and the session, and one malloc arena: the address space stays what the program
    // needs, not what idle threads reserve.
    const std::string env = "OPENBLAS_NUM_THREADS=1 BRAIN_CPU_THREADS=1 MALLOC_ARENA_MAX=1 ";
    brain::test::ProcessLimits limits;
    limits.address_space_bytes = cap;
    limits.timeout_seconds = 600;
    const auto streamed = brain::test::run_process(
        env + train + " --stream --stream-chunk-rows 2048 --stream-window 8", dir.path.string(), limits);
    INFO(streamed.output);
    REQUIRE(streamed.status == 0);
    CHECK(streamed.output.find("streamed from disk") != std::string::npos);
    CHECK(streamed.output.find("training:") != std::string::npos);
    CHECK(fs::exists(dir.path / "model.json"));
    CHECK(streamed.max_rss_kib * 1024 < cap);
    std::printf("brain train --stream: %.0f MiB of data under a %.0f MiB address-space limit, peak RSS %.0f MiB\n",
                static_cast<double>(bytes) / (1 << 20), static_cast<double>(cap) / (1 << 20),
                static_cast<double>(streamed.max_rss_kib) / 1024);
    // The same data loaded into memory cannot fit under the limit: the limit is real.
    const auto loaded = brain::test::run_process(env + train, dir.path.string(), limits);
    INFO(loaded.output);
    CHECK(loaded.status == 2);
    CHECK(loaded.output.find("AllocationFailed") != std::string::npos);
}

TEST_CASE("CUDA trains a streamed data set through its staged path as the CPU does", "[cuda]") {
    REQUIRE_GPU();
    TempDir dir("cuda");
    const Dataset data = smooth_data(20000, 32);
    const StreamingDataset stream = streamed(dir, data, 1000, 4);
    const brain::Network start = small_network(32, 5);
    for (const bool shuffle : {false, true}) {
        INFO("shuffle " << shuffle);
        const brain::TrainConfig config{2, 500, shuffle, 4};
        brain::TrainingSession cpu(start, stream, config, brain::TrainingBackend::cpu());
        // A budget far above the data: streamed rows are staged anyway, with the copy stream's second slot.
        brain::TrainingSession gpu(start, stream, config, brain::TrainingBackend::cuda(0, 256));
        for (int epoch = 0; epoch < 2; ++epoch) CHECK(std::fabs(cpu.train_epoch() - gpu.train_epoch()) < 1e-4f);
        const auto a = cpu.checkpoint().parameters, b = gpu.checkpoint().parameters;
        double diff = 0.0, norm = 0.0;
        for (std::size_t i = 0; i < a.size(); ++i) {
            diff += (a[i] - b[i]) * (a[i] - b[i]);
            norm += a[i] * a[i];
        }
        CHECK(std::sqrt(diff / norm) < 1e-4);
        const brain::AcceleratorStats stats = gpu.stats();
        CHECK(!stats.dataset_resident);
        CHECK(stats.dataset_bytes == 0);
        CHECK(stats.host_to_device_bytes >= 2 * 20000 * (32 + 1) * sizeof(float));
    }
}

TEST_CASE("brain convert, train and predict on NumPy files agree with the CSV they came from", "[cli]") {
    REQUIRE_NPZ();
    TempDir dir("convert");
    const std::string brain_bin = brain::test::shell_quote(std::string(BRAIN_TEST_BIN_DIR) + "/brain");
    const auto run = [&](const std::string& args) {
        const auto r = brain::test::run_process(brain_bin + " " + args, dir.path.string());
        INFO(args << "\n" << r.output);
        CHECK(r.status == 0);
        return r;
    };
    const auto read = [&](const char* name) {
        std::ifstream in(dir.path / name);
        return std::string(std::istreambuf_iterator<char>(in), {});
    };
    run("generate --kind churn --rows 3000 --seed 5 --out c.csv");
    run("convert c.csv c.npz --target churned");
    run("convert c.csv x.npy t.npy --target churned");
    run("generate --kind regression --rows 2000 --seed 5 --out r.csv");
    run("convert r.csv all.npz");
    run("train --npz c.npz --layers 8 --epochs 2 --out m.json");
    run("train --csv c.csv --target churned --layers 8 --epochs 2 --out m_csv.json");
    // The archive holds the CSV's parsed values, names and labels: the same model, bit for bit.
    CHECK(read("m.json") == read("m_csv.json"));
    run("predict --model m.json --csv c.csv --out streamed.csv");
    const auto whole = run("predict --model m.json --csv c.csv");
    run("predict --model m.json --npz c.npz --out from_npz.csv");
    run("predict --model m.json --npy-features x.npy --out from_npy.csv");
    const std::string streamed = read("streamed.csv");
    CHECK(streamed.rfind("label,p_no,p_yes\n", 0) == 0);
    CHECK(std::count(streamed.begin(), streamed.end(), '\n') == 3001);
    CHECK(whole.output == streamed);
    CHECK(read("from_npz.csv") == streamed);
    CHECK(read("from_npy.csv") == streamed);
    // The features-only archive takes its target by name at training time, and predicts by feature name.
    run("train --npz all.npz --target y --layers 8 --epochs 1 --out r.json");
    run("predict --model r.json --csv r.csv --out r_csv.csv");
    run("predict --model r.json --npz all.npz --out r_npz.csv");
    CHECK(read("r_npz.csv") == read("r_csv.csv"));
    const auto both = brain::test::run_process(
        brain_bin + " train --csv c.csv --npz c.npz --target churned --out z.json", dir.path.string());
    CHECK(both.status == 108);
    CHECK(both.output.find("--csv excludes --npz") != std::string::npos);
    const auto text = brain::test::run_process(brain_bin + " convert c.csv t.npz", dir.path.string());
    CHECK(text.status == 2);
    CHECK(text.output.find("--target") != std::string::npos);
}
