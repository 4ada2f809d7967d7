// Prediction on a backend (Network::predict_with_backend, brain::Predictor, the ABI 1.2 predictor entries) on the
// CPU plugin, the precise refusals of precisions a backend does not run, what an older plugin reports, and the
// memory estimate by precision. The CUDA side is in test_cuda_bf16.cpp.
#include "support/catch.hpp"
#include "support/env.hpp"
#include "support/error_match.hpp"
#include "support/interop.hpp"
#include "support/numeric.hpp"

#include <brain/brain.hpp>
#include <fstream>
#include <sstream>
#include <string>
#include <tuple>
#include <vector>

using brain::Activation;
using brain::ErrorCode;
using brain::Loss;
using brain::Precision;
using brain::TrainingBackend;
using brain::test::ScopedEnv;

namespace {

// Rows of `inputs` features in [-2, 2), seeded.
brain::Matrix rows_of(std::size_t rows, std::size_t inputs, std::uint64_t seed) {
    brain::Random rng(seed);
    brain::Matrix x(rows, inputs);
    for (auto& v : x.data()) v = static_cast<float>(rng.uniform(-2.0, 2.0));
    return x;
}

// A network with the given hidden activation and head, trained for two epochs on the CPU so its weights are not
// the initial ones, and given a standardisation.
brain::Network trained(std::size_t inputs, Activation hidden, Activation head, std::size_t outputs, Loss loss) {
    auto net = brain::Network::builder()
                   .input_size(inputs)
                   .dense(24, hidden)
                   .dense(17, hidden)
                   .dense(outputs, head)
                   .loss(loss)
                   .optimizer(brain::Optimizer::adam(0.01f))
                   .seed(3)
                   .build();
    const brain::Matrix x = rows_of(200, inputs, 5);
    brain::Matrix y(200, outputs);
    for (std::size_t r = 0; r < 200; ++r) {
        const float s = x(r, 0) - 0.5f * x(r, inputs - 1);
        for (std::size_t k = 0; k < outputs; ++k) {
            if (loss == Loss::CategoricalCrossEntropy)
                y(r, k) = (static_cast<std::size_t>(s * 3 + 9) % outputs) == k;
            else if (loss == Loss::BinaryCrossEntropy)
                y(r, k) = s > 0.1f * static_cast<float>(k) ? 1.0f : 0.0f;
            else
                y(r, k) = std::sin(s + static_cast<float>(k));
        }
    }
    brain::Dataset data(x, y);
    data.standardize();
    net.fit(data, brain::TrainConfig{2, 32, true, 1});
    return net;
}

} // namespace

TEST_CASE("the CPU predictor agrees with the host predict for every activation and head", "[plugin]") {
    struct Case {
        Activation hidden, head;
        std::size_t outputs;
        Loss loss;
    };
    const Case cases[] = {{Activation::Relu, Activation::Linear, 2, Loss::MeanSquaredError},
                          {Activation::Gelu, Activation::Softmax, 4, Loss::CategoricalCrossEntropy},
                          {Activation::Tanh, Activation::Sigmoid, 3, Loss::BinaryCrossEntropy},
                          {Activation::LeakyRelu, Activation::Tanh, 1, Loss::MeanSquaredError},
                          {Activation::Sigmoid, Activation::Linear, 1, Loss::MeanSquaredError},
                          {Activation::Linear, Activation::Sigmoid, 1, Loss::MeanSquaredError}};
    for (const Case& c : cases) {
        INFO("hidden " << brain::to_string(c.hidden) << ", head " << brain::to_string(c.head));
        const auto net = trained(9, c.hidden, c.head, c.outputs, c.loss);
        REQUIRE(net.standardization().has_value());
        const brain::Matrix inputs = rows_of(1001, 9, 11);
        const brain::Matrix host = net.predict(inputs);
        const brain::Matrix device = net.predict_with_backend(inputs, TrainingBackend::cpu());
        REQUIRE(device.rows() == host.rows());
        REQUIRE(device.cols() == host.cols());
        CHECK(brain::test::relative_error(device.data(), host.data()) < 1e-5);
        // The same rows streamed through a predictor in calls of 64 rows (the last one short).
        brain::Predictor predictor(net, TrainingBackend::cpu(), 64);
        CHECK(predictor.batch_rows() == 64);
        const brain::Matrix streamed = predictor.predict(inputs);
        CHECK(brain::test::relative_error(streamed.data(), host.data()) < 1e-5);
        CHECK(predictor.predict(inputs).data() == streamed.data()); // the same calls, the same bits
        CHECK(predictor.predict(brain::Matrix(0, 9)).rows() == 0);
    }
}

TEST_CASE("a predictor checks its inputs and closes after an error", "[plugin]") {
    const auto net = trained(4, Activation::Relu, Activation::Linear, 1, Loss::MeanSquaredError);
    brain::Predictor predictor(net, TrainingBackend::cpu(), 16);
    BRAIN_REQUIRE_ERROR(ErrorCode::InvalidArgument, predictor.predict(rows_of(3, 5, 1)), "expected 4 input columns",
                        "found 5");
    brain::Matrix bad = rows_of(3, 4, 1);
    bad(2, 1) = std::nanf("");
    BRAIN_REQUIRE_ERROR(ErrorCode::InvalidData, predictor.predict(bad), "input row 2, column 1");
    CHECK(predictor.is_open()); // refused before anything reached the plugin
    BRAIN_REQUIRE_ERROR(ErrorCode::InvalidArgument,
                        net.predict_with_backend(rows_of(3, 2, 1), TrainingBackend::cpu()),
                        "Network::predict_with_backend", "expected 4 input columns");
    // Rows are checked batch by batch while the backend works on the one before: the row named is the input's.
    brain::Predictor small(net, TrainingBackend::cpu(), 4);
    brain::Matrix late = rows_of(10, 4, 2);
    late(9, 3) = INFINITY;
    BRAIN_REQUIRE_ERROR(ErrorCode::InvalidData, small.predict(late),
                        "prediction on cpu: input row 9, column 3 is inf");
    CHECK(small.is_open());
    // Finite inputs whose outputs overflow float32 are refused, never returned.
    auto big =
        brain::Network::builder().input_size(2).dense(3, Activation::Relu).dense(1, Activation::Linear).build();
    big.set_parameters(std::vector<float>(big.parameter_count(), 1e18f));
    brain::Matrix ok_then_overflow{{1.0f, 1.0f}, {1e20f, 1e20f}};
    BRAIN_REQUIRE_ERROR(ErrorCode::NumericalError,
                        big.predict_with_backend(ok_then_overflow, TrainingBackend::cpu()), "input row 1",
                        "gives a non-finite output");
    predictor.close();
    BRAIN_REQUIRE_ERROR(ErrorCode::InvalidState, predictor.predict(rows_of(3, 4, 1)), "not usable");
}

TEST_CASE("a predictor under a budget halves its batch until it fits, or names the budget", "[plugin]") {
    // 64 -> 512 -> 512 -> 1: 1.1 MB of parameters; each row needs 2 x 512 floats of hidden activations.
    const auto net = brain::Network::builder()
                         .input_size(64)
                         .dense(512, Activation::Relu)
                         .dense(512, Activation::Relu)
                         .dense(1, Activation::Linear)
                         .seed(2)
                         .build();
    const brain::Matrix inputs = rows_of(700, 64, 4);
    const auto tight = TrainingBackend::plugin("cpu", 0, 2); // 2 MiB: the parameters and a few hundred rows
    brain::Predictor predictor(net, tight, 4096);
    CHECK(predictor.batch_rows() < 4096);
    CHECK(predictor.batch_rows() >= 64);
    CHECK(brain::test::relative_error(predictor.predict(inputs).data(), net.predict(inputs).data()) < 1e-5);
    BRAIN_REQUIRE_ERROR(ErrorCode::BudgetExceeded, brain::Predictor(net, TrainingBackend::plugin("cpu", 0, 1), 8),
                        "the CPU predictor needs", "memory budget", "not even one row fits");
}

TEST_CASE("the CPU backend refuses tf32 and bf16 with Unsupported naming itself, the mode and the job",
          "[plugin]") {
    const auto net = trained(4, Activation::Relu, Activation::Linear, 1, Loss::MeanSquaredError);
    const brain::Dataset data(rows_of(16, 4, 1), brain::Matrix(16, 1, 0.5f));
    for (const auto& [precision, mode, name] : {std::tuple{Precision::Tf32, "precision tf32", "tf32"},
                                               std::tuple{Precision::Bf16, "precision bf16", "bf16"}}) {
        const auto backend = TrainingBackend::cpu().with_precision(precision);
        // Training is refused by the core from the plugin's capabilities, before the plugin sees the session.
        BRAIN_REQUIRE_ERROR(ErrorCode::Unsupported,
                            brain::TrainingSession(net, data, brain::TrainConfig{1, 4, true, 1}, backend),
                            "backend \"cpu\" does not compute in", name, "it computes in float32");
        BRAIN_REQUIRE_ERROR(ErrorCode::Unsupported, net.predict_with_backend(rows_of(3, 4, 1), backend),
                            "the CPU backend computes in float32 only", mode, "for prediction");
    }
}

TEST_CASE("the CPU session says which arithmetic ran, in the stats and their JSON", "[plugin]") {
    const auto net = trained(4, Activation::Relu, Activation::Linear, 1, Loss::MeanSquaredError);
    const brain::Dataset data(rows_of(16, 4, 1), brain::Matrix(16, 1, 0.5f));
    brain::TrainingSession session(net, data, brain::TrainConfig{1, 4, true, 1}, TrainingBackend::cpu());
    session.train_epoch();
    const auto stats = session.stats();
    CHECK(stats.arithmetic == "float32 (OpenBLAS)");
    CHECK(brain::to_json(stats).find("\"arithmetic\":\"float32 (OpenBLAS)\"") != std::string::npos);
}

TEST_CASE("a plugin built against ABI 1.0 reports Unsupported for prediction, naming its ABI version", "[core]") {
    ScopedEnv path("BRAIN_PLUGIN_PATH", std::string(BRAIN_TEST_BROKEN_PLUGIN_DIR));
    ScopedEnv only("BRAIN_PLUGIN_PATH_ONLY", std::string("1"));
    const auto net = brain::Network::builder().input_size(3).dense(2, Activation::Linear).seed(1).build();
    const auto old = TrainingBackend::plugin("oldminor", 0, 0);
    BRAIN_REQUIRE_ERROR(ErrorCode::Unsupported, net.predict_with_backend(rows_of(4, 3, 1), old),
                        "backend \"oldminor\" cannot predict", "built against ABI 1.0",
                        "the predictor arrived in ABI 1.2", "Network::predict");
    BRAIN_REQUIRE_ERROR(ErrorCode::Unsupported, brain::Predictor(net, old), "built against ABI 1.0");
    // The host path is unaffected.
    CHECK(net.predict(rows_of(4, 3, 1)).rows() == 4);
}

TEST_CASE("a plugin with only some of the predictor entries is refused at load", "[core]") {
    ScopedEnv path("BRAIN_PLUGIN_PATH", std::string(BRAIN_TEST_BROKEN_PLUGIN_DIR));
    ScopedEnv only("BRAIN_PLUGIN_PATH_ONLY", std::string("1"));
    BRAIN_REQUIRE_ERROR(ErrorCode::PluginAbiMismatch, brain::load_plugin("halfpredictor"), "stage abi",
                        "predictor_open set", "predictor_run null", "predictor_close null", "all three or none");
}

TEST_CASE("the memory estimate follows the precision", "[core]") {
    const auto net = brain::Network::builder()
                         .input_size(100)
                         .dense(300, Activation::Gelu)
                         .dense(200, Activation::Relu)
                         .dense(10, Activation::Linear)
                         .seed(1)
                         .build();
    for (const Precision p : {Precision::Float32, Precision::Tf32})
        CHECK(brain::estimate_tensor_memory_bytes(net, 64, p) == brain::estimate_tensor_memory_bytes(net, 64));
    // bf16 adds a copy of the parameters and halves the hidden activations and deltas: more for one row, less for
    // many.
    CHECK(brain::estimate_tensor_memory_bytes(net, 1, Precision::Bf16) >
          brain::estimate_tensor_memory_bytes(net, 1, Precision::Float32));
    CHECK(brain::estimate_tensor_memory_bytes(net, 100000, Precision::Bf16) <
          brain::estimate_tensor_memory_bytes(net, 100000, Precision::Float32));
    // Linear in the batch, and largest_batch_within inverts it.
    const auto b1 = brain::estimate_tensor_memory_bytes(net, 1, Precision::Bf16);
    const auto b2 = brain::estimate_tensor_memory_bytes(net, 2, Precision::Bf16);
    CHECK(brain::estimate_tensor_memory_bytes(net, 1000, Precision::Bf16) == b1 + 999 * (b2 - b1));
    for (const std::size_t batch : {1u, 37u, 4096u}) {
        const auto bytes = brain::estimate_tensor_memory_bytes(net, batch, Precision::Bf16);
        CHECK(brain::largest_batch_within(net, bytes, Precision::Bf16) == batch);
        CHECK(brain::largest_batch_within(net, bytes - 1, Precision::Bf16) == batch - 1);
    }
    CHECK(brain::estimate_tensor_memory_mib(net, 64, Precision::Bf16) * 1024 * 1024 >=
          brain::estimate_tensor_memory_bytes(net, 64, Precision::Bf16));
}

namespace {

// One line of the pinlog plugin's log: "pin|unpin|run ADDRESS VALUE".
struct PinLogLine {
    std::string what;
    std::uintptr_t address = 0;
    std::uint64_t value = 0;
};

std::vector<PinLogLine> read_pin_log(const std::filesystem::path& file) {
    std::vector<PinLogLine> lines;
    std::ifstream in(file);
    std::string what, address;
    std::uint64_t value = 0;
    while (in >> what >> address >> value) lines.push_back({what, std::stoull(address, nullptr, 16), value});
    return lines;
}

std::size_t count_of(const std::vector<PinLogLine>& lines, const std::string& what) {
    return static_cast<std::size_t>(
        std::count_if(lines.begin(), lines.end(), [&](const PinLogLine& line) { return line.what == what; }));
}

} // namespace

TEST_CASE("a backend that pins memory gets page-locked rows: the core's staged batches, or the user's own",
          "[core]") {
    // Trained on the CPU plugin before the search path narrows to the test plugins.
    const auto standardised = trained(4, Activation::Linear, Activation::Linear, 3, Loss::MeanSquaredError);
    // Features spread by about 1e-3: standardised, an input of 1e36 leaves float32's range.
    auto tight = brain::Network::builder().input_size(4).dense(3, Activation::Linear).seed(4).build();
    {
        brain::Matrix features = rows_of(64, 4, 9);
        for (auto& v : features.data()) v *= 1e-3f;
        brain::Dataset data(features, brain::Matrix(64, 3, 0.5f));
        data.standardize();
        tight.fit(data, brain::TrainConfig{1, 16, true, 1});
    }
    ScopedEnv path("BRAIN_PLUGIN_PATH", std::string(BRAIN_TEST_BROKEN_PLUGIN_DIR));
    ScopedEnv only("BRAIN_PLUGIN_PATH_ONLY", std::string("1"));
    brain::test::ScratchDir dir("pinlog");
    const std::string log = (dir / "log").string();
    ScopedEnv log_file("BRAIN_PINLOG_FILE", log);
    const auto pinlog = TrainingBackend::plugin("pinlog", 0, 0);
    const brain::Matrix x = rows_of(1000, 4, 7);
    const auto begin_of = [](const brain::Matrix& m) { return reinterpret_cast<std::uintptr_t>(m.data().data()); };
    const auto inside = [&](std::uintptr_t address) {
        return address >= begin_of(x) && address < begin_of(x) + x.data().size() * sizeof(float);
    };

    SECTION("without standardisation: staged rows, then the user's pinned rows as they are") {
        const auto net = brain::Network::builder()
                             .input_size(4)
                             .dense(5, Activation::Linear)
                             .dense(2, Activation::Linear)
                             .seed(2)
                             .build();
        {
            brain::Predictor predictor(net, pinlog, 256);
            // The plugin refuses rows outside pinned memory, so an answer means the core staged every batch.
            CHECK(brain::test::relative_error(predictor.predict(x).data(), net.predict(x).data()) < 1e-6);
            auto lines = read_pin_log(log);
            CHECK(count_of(lines, "pin") == 2); // the two staging slots, pinned once for the predictor's life
            CHECK(count_of(lines, "run") >= 4);
            for (const auto& line : lines)
                if (line.what == "run") CHECK_FALSE(inside(line.address));

            brain::PinnedRows pinned = predictor.pin(x);
            REQUIRE(pinned.pinned());
            std::filesystem::remove(log);
            CHECK(brain::test::relative_error(predictor.predict(x).data(), net.predict(x).data()) < 1e-6);
            lines = read_pin_log(log);
            REQUIRE(count_of(lines, "run") == 4); // batches of 256 straight from the user's rows
            CHECK(lines.front().address == begin_of(x));
            for (const auto& line : lines)
                if (line.what == "run") CHECK(inside(line.address));
            pinned.release();
            CHECK_FALSE(pinned.pinned());
            CHECK(count_of(read_pin_log(log), "unpin") == 1);
            // Unpinned again, the rows are staged again.
            CHECK(brain::test::relative_error(predictor.predict(x).data(), net.predict(x).data()) < 1e-6);
        }
        // Every pin the core made was undone when the predictor closed.
        std::filesystem::remove(log);
        CHECK(count_of(read_pin_log(log), "unpin") == 0);
    }

    SECTION("with standardisation the staged rows are standardised as the host's predict does; bad rows named") {
        const auto& net = standardised;
        REQUIRE(net.standardization());
        brain::Predictor predictor(net, pinlog, 300);
        const brain::PinnedRows pinned = predictor.pin(x); // standardised rows must be staged anyway
        CHECK(brain::test::relative_error(predictor.predict(x).data(), net.predict(x).data()) < 1e-6);
        for (const auto& line : read_pin_log(log))
            if (line.what == "run") CHECK_FALSE(inside(line.address));
        brain::Matrix bad = x;
        bad(777, 2) = -INFINITY;
        BRAIN_REQUIRE_ERROR(ErrorCode::InvalidData, predictor.predict(bad),
                            "prediction on pinlog:0: input row 777, column 2 is -inf");
        CHECK(predictor.is_open());
        // Finite rows whose standardised values overflow: the plugin refuses them, and no raw value is to blame.
        brain::Predictor narrow(tight, pinlog, 16);
        brain::Matrix huge = rows_of(40, 4, 2);
        huge(21, 1) = 1e36f;
        BRAIN_REQUIRE_ERROR(ErrorCode::NumericalError, narrow.predict(huge),
                            "prediction on pinlog:0: rows 16 to 31",
                            "finite but their standardised values are not");
        CHECK(narrow.is_open());
    }
    const auto lines = read_pin_log(log);
    CHECK(count_of(lines, "pin") == count_of(lines, "unpin"));
}

TEST_CASE("pinning rows for a host backend is a no-op guard", "[plugin]") {
    const auto net = trained(4, Activation::Relu, Activation::Linear, 1, Loss::MeanSquaredError);
    brain::Predictor predictor(net, TrainingBackend::cpu(), 64);
    const brain::Matrix x = rows_of(100, 4, 3);
    brain::PinnedRows pinned = predictor.pin(x);
    CHECK_FALSE(pinned.pinned());
    CHECK(brain::test::relative_error(predictor.predict(x).data(), net.predict(x).data()) < 1e-5);
    pinned.release(); // idempotent on an empty guard
    CHECK_FALSE(pinned.pinned());
}

TEST_CASE("a plugin with host_memory_pin but no host_memory_unpin is refused at load", "[core]") {
    ScopedEnv path("BRAIN_PLUGIN_PATH", std::string(BRAIN_TEST_BROKEN_PLUGIN_DIR));
    ScopedEnv only("BRAIN_PLUGIN_PATH_ONLY", std::string("1"));
    BRAIN_REQUIRE_ERROR(ErrorCode::PluginAbiMismatch, brain::load_plugin("halfpin"), "stage abi",
                        "host_memory_pin without host_memory_unpin", "both or neither");
}
