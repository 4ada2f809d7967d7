// What a plugin declares it runs, held to its word: every activation, loss, optimizer or precision it declares it
// lacks is refused by the plugin itself (straight through its table, past the core's own up-front refusal) with
// Unsupported naming the feature; every precision it declares is honoured and reported in the stats; a declared
// batch source trains as the dataset view does.
#include "checks.hpp"

#include <algorithm>
#include <brain/npy_file.hpp>
#include <brain/session_descriptor.hpp>
#include <brain/streaming_dataset.hpp>
#include <brain/training_session.hpp>
#include <cmath>
#include <filesystem>
#include <memory>
#include <unistd.h>
#include <vector>

namespace brain::conformance {

namespace {

// A small session that uses one feature and otherwise only the mandatory set (relu hidden layer, linear output,
// mean squared error, Adam); `uses` lists its features the plugin declares it lacks.
struct Probe {
    std::string feature;
    Network network;
    Dataset data;
    std::vector<std::string> uses;
};

Probe make_probe(const std::string& feature, Activation hidden, Activation output, Loss loss, Optimizer optimizer,
                 const PluginCapabilities& caps) {
    Network net = Network::builder()
                      .input_size(4)
                      .dense(5, hidden)
                      .dense(3, output)
                      .loss(loss)
                      .optimizer(optimizer)
                      .seed(3)
                      .build();
    Dataset data = loss == Loss::BinaryCrossEntropy        ? binary_data(8, 4, 3, 41)
                   : loss == Loss::CategoricalCrossEntropy ? class_data(8, 4, 3, 43)
                                                           : regression_data(8, 4, 3, 47);
    std::vector<std::string> uses;
    for (Activation a : {hidden, output})
        if (!caps.runs(a)) uses.emplace_back(to_string(a));
    if (!caps.runs(loss)) uses.emplace_back(to_string(loss));
    if (!caps.runs(optimizer.kind)) uses.emplace_back(to_string(optimizer.kind));
    return Probe{feature, std::move(net), std::move(data), std::move(uses)};
}

// A session for every activation, loss and optimizer the plugin declares it lacks.
std::vector<Probe> probes(const PluginCapabilities& caps) {
    const Optimizer adam = Optimizer::adam(0.01f);
    std::vector<Probe> out;
    for (Activation a : {Activation::Linear, Activation::Relu, Activation::LeakyRelu, Activation::Sigmoid,
                         Activation::Tanh, Activation::Gelu})
        if (!caps.runs(a))
            out.push_back(
                make_probe(std::string(to_string(a)), a, Activation::Linear, Loss::MeanSquaredError, adam, caps));
    if (!caps.runs(Activation::Softmax))
        out.push_back(make_probe("softmax", Activation::Relu, Activation::Softmax, Loss::CategoricalCrossEntropy,
                                 adam, caps));
    if (!caps.runs(Loss::MeanSquaredError))
        out.push_back(make_probe(std::string(to_string(Loss::MeanSquaredError)), Activation::Relu,
                                 Activation::Linear, Loss::MeanSquaredError, adam, caps));
    if (!caps.runs(Loss::BinaryCrossEntropy))
        out.push_back(make_probe(std::string(to_string(Loss::BinaryCrossEntropy)), Activation::Relu,
                                 Activation::Sigmoid, Loss::BinaryCrossEntropy, adam, caps));
    if (!caps.runs(Loss::CategoricalCrossEntropy))
        out.push_back(make_probe(std::string(to_string(Loss::CategoricalCrossEntropy)), Activation::Relu,
                                 Activation::Softmax, Loss::CategoricalCrossEntropy, adam, caps));
    for (const Optimizer& o : {Optimizer::sgd(0.05f, 0.9f), adam, Optimizer::adamw(0.01f, 0.1f)})
        if (!caps.runs(o.kind))
            out.push_back(make_probe(std::string(to_string(o.kind)), Activation::Relu, Activation::Linear,
                                     Loss::MeanSquaredError, o, caps));
    return out;
}

// The names of `uses` joined with " or ".
std::string any_of(const std::vector<std::string>& uses) {
    std::string out;
    for (const auto& u : uses) out += (out.empty() ? "" : " or ") + u;
    return out;
}

// session_open straight through the table must refuse with Unsupported naming one of `uses`; returns the message.
std::string require_refusal(const SessionFixture& kit, const Network& net, const Dataset& data,
                            const TrainingBackend& backend, const std::vector<std::string>& uses,
                            const std::string& what) {
    const brain_plugin_api& api = *kit.plugin.api;
    const SessionDescriptor desc(net, data, TrainConfig{1, 4, false, 1}, backend);
    brain_session* session = nullptr;
    const RawOutcome open = take(api, api.session_open(&desc.desc(), &session));
    if (open.ok && session) api.session_close(session);
    require(!open.ok,
            what + ": the plugin declares that it does not run " + any_of(uses) +
                " but opened the session; refuse it with Unsupported naming the feature, or declare it in "
                "brain_capabilities");
    const std::string message = require_raw_error(open, ErrorCode::Unsupported, what);
    bool named = false;
    for (const auto& u : uses) named = named || names(message, u);
    require(named, what + ": the Unsupported message should name " + any_of(uses) + " but says: " + message);
    return message;
}

std::string unsupported_check(KitContext& context) {
    const SessionFixture& kit = context.fixture();
    const PluginCapabilities& caps = context.capabilities();
    const std::vector<Probe> all = probes(caps);
    if (all.empty())
        return caps.declared ? "the plugin declares every activation, loss and optimizer; nothing to refuse"
                             : "no capabilities entry: the ABI 1.0 set is assumed; nothing to refuse";
    std::string detail;
    for (const Probe& probe : all) {
        const std::string what = "a session using " + probe.feature;
        const std::string message = require_refusal(kit, probe.network, probe.data, kit.backend, probe.uses, what);
        // The core refuses it first, so a user never reaches the plugin with it.
        expect_error(
            ErrorCode::Unsupported,
            [&] {
                (void)TrainingSession(probe.network, probe.data, TrainConfig{1, 4, false, 1}, kit.backend);
            },
            {}, what + " through TrainingSession");
        detail += (detail.empty() ? "" : "; ") + probe.feature + " refused (" + message + ")";
    }
    return "as declared: " + detail;
}

std::string precision_check(KitContext& context) {
    const SessionFixture& kit = context.fixture();
    const PluginCapabilities& caps = context.capabilities();
    std::string detail;
    for (Precision p : {Precision::Tf32, Precision::Bf16}) {
        const std::string name(to_string(p));
        const TrainingBackend backend = kit.backend.with_precision(p);
        if (caps.runs(p)) {
            // Honoured means reported in the stats and training to other bits than float32: a plugin that ran
            // float32 under another name would give the same weights.
            const auto trained = [&](const TrainingBackend& b, AcceleratorStats* stats) {
                auto net = kit_network();
                TrainingSession session(net, kit.data, kit.config, b);
                const float loss = session.train_epoch();
                require(std::isfinite(loss), name + " was accepted but the epoch loss is " + std::to_string(loss));
                if (stats) *stats = session.stats();
                return session.checkpoint().parameters;
            };
            AcceleratorStats stats;
            const std::vector<float> weights = trained(backend, &stats);
            require(stats.precision == p, name + " was accepted but the stats report " +
                                              std::string(to_string(stats.precision)) +
                                              "; never fall back silently: refuse with Unsupported instead");
            require(weights != trained(kit.backend, nullptr),
                    name + " was accepted but trained to the same bits as float32: the plugin did not run " + name +
                        "; run what the name says or refuse it with Unsupported");
            detail += (detail.empty() ? "" : "; ") + name + " declared, honoured and reported in the stats" +
                      (stats.arithmetic.empty() ? std::string() : " (" + stats.arithmetic + ")") +
                      ", other bits than float32";
        } else {
            const std::string message =
                require_refusal(kit, kit_network(), kit.data, backend, {name}, "a session asking for " + name);
            detail += (detail.empty() ? "" : "; ") + name + " not declared, refused (" + message + ")";
        }
    }
    return detail;
}

// A plugin declaring BRAIN_FEATURE_BATCH_SOURCE trains the kit's rows pulled through the ABI's batch source (the
// core streaming them from .npy files in chunks of 3 rows, windows of 2 chunks, unshuffled: file order) as it
// trains them from the dataset view in the same order.
std::string batch_source_check(KitContext& context) {
    const SessionFixture& kit = context.fixture();
    const PluginCapabilities& caps = context.capabilities();
    if (!caps.offers(BRAIN_FEATURE_BATCH_SOURCE))
        return "not declared (BRAIN_FEATURE_BATCH_SOURCE): the core never streams rows to this plugin";
    namespace fs = std::filesystem;
    const fs::path dir = fs::temp_directory_path() / ("brain_kit_stream_" + std::to_string(::getpid()));
    struct Remove {
        fs::path path;
        ~Remove() {
            std::error_code ec;
            fs::remove_all(path, ec);
        }
    } remove{dir};
    fs::create_directories(dir);
    save_npy(dir / "x.npy", kit.data.features());
    save_npy(dir / "y.npy", kit.data.targets());
    StreamOptions options;
    options.chunk_rows = 3;
    options.window_chunks = 2;
    StreamingDataset stream = StreamingDataset::from_npy(dir / "x.npy", dir / "y.npy", options);
    stream.set_standardization(kit.data.standardization());
    TrainConfig config = kit.config;
    config.shuffle = false;
    const Network net = kit_network();
    TrainingSession viewed(net, kit.data, config, kit.backend);
    TrainingSession streamed(net, stream, config, kit.backend);
    double worst_loss = 0.0;
    for (std::uint32_t epoch = 0; epoch < config.epochs; ++epoch) {
        const double a = viewed.train_epoch(), b = streamed.train_epoch();
        worst_loss = std::max(worst_loss, std::fabs(a - b) / std::max(1.0, std::fabs(a)));
    }
    const std::vector<float> a = viewed.checkpoint().parameters, b = streamed.checkpoint().parameters;
    double diff = 0.0, norm = 0.0;
    for (std::size_t i = 0; i < a.size(); ++i) {
        diff += (static_cast<double>(a[i]) - b[i]) * (static_cast<double>(a[i]) - b[i]);
        norm += static_cast<double>(a[i]) * a[i];
    }
    const double relative = std::sqrt(diff / std::max(norm, 1e-30));
    require(worst_loss <= 1e-4 && relative <= 1e-4,
            "rows from the batch source trained to other weights than the same rows from the dataset view (epoch "
            "losses up to " +
                std::to_string(worst_loss) + " apart, weights " + std::to_string(relative) +
                " apart, relative): train the rows fetch returns for positions [first, first + count) of each "
                "batch, in that order, and call fetch with the epoch's number (first_epoch + k)");
    return "declared: streamed rows (fetched in chunks of 3) train as the dataset view's, weights " +
           std::to_string(relative) + " apart (relative)";
}

} // namespace

void run_feature_checks(CheckTable& table) {
    table.run("unsupported", unsupported_check);
    table.run("precision", precision_check);
    table.run("batch source", batch_source_check);
}

} // namespace brain::conformance
