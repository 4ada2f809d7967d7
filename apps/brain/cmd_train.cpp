// brain train: read a CSV file (or NumPy .npz / .npy data), build a network, train it through a TrainingSession
// epoch by epoch (so progress and validation loss show per epoch, on every backend alike), then save the model.
#include "app_support.hpp"
#include "cli_options.hpp"
#include "commands.hpp"
#include "data_source.hpp"
#include "network_options.hpp"
#include "progress.hpp"

#include <algorithm>
#include <brain/brain.hpp>
#include <filesystem>
#include <iostream>
#include <memory>
#include <optional>

namespace brain::app {

namespace {

struct TrainOptions {
    DataSource source;
    std::vector<std::string> targets;
    std::vector<std::size_t> layers{64, 64};
    std::string activation = "relu";
    std::string output_activation; // empty: softmax for class labels, linear otherwise
    std::string loss;              // empty: the default for the output activation
    std::string optimizer = "adam";
    float learning_rate = 0.001f;
    float momentum = 0.9f;
    float weight_decay = 0.01f;
    std::uint32_t epochs = 50;
    std::optional<std::uint32_t> batch; // default: 256, or every row of a smaller training set
    double validation = 0.0;
    std::uint64_t seed = 42;
    bool standardize = true;
    std::string backend = "cpu";
    std::optional<std::uint64_t> budget_mib;
    std::string precision = "float32";
    std::string out;
    InputOptions input;
    bool stream = false;
    std::uint64_t stream_chunk_rows = StreamOptions{}.chunk_rows;
    std::uint32_t stream_window = StreamOptions{}.window_chunks;
};

// The loss (and accuracy) over every row of a streamed data set, read chunk by chunk: the chunks' figures
// weighted by their rows, so memory stays one chunk.
Evaluation evaluate_streamed(const Network& network, const StreamingDataset& data) {
    double loss = 0.0, accuracy = 0.0;
    bool has_accuracy = false;
    const std::uint64_t chunk = std::max<std::uint64_t>(data.options().chunk_rows, 1);
    for (std::uint64_t begin = 0; begin < data.size(); begin += chunk) {
        const std::uint64_t end = std::min(data.size(), begin + chunk);
        const Evaluation e = network.evaluate(data.read_rows(begin, end));
        const auto n = static_cast<double>(end - begin);
        loss += e.loss * n;
        if (e.accuracy) {
            has_accuracy = true;
            accuracy += *e.accuracy * n;
        }
    }
    const auto rows = static_cast<double>(data.size());
    Evaluation out;
    out.loss = static_cast<float>(loss / rows);
    if (has_accuracy) out.accuracy = static_cast<float>(accuracy / rows);
    return out;
}

std::string describe_layers(const std::vector<LayerSpec>& layers) {
    std::string s = std::to_string(layers.front().inputs);
    for (const auto& layer : layers) s += str(" -> ", layer.outputs, " ", to_string(layer.activation));
    return s;
}

void print_evaluation(const char* what, const Evaluation& e) {
    std::cout << what << " loss " << e.loss;
    if (e.accuracy) std::cout << ", accuracy " << *e.accuracy;
    std::cout << "\n";
}

int run_train(const TrainOptions& o) {
    BRAIN_CHECK_ARG(o.validation >= 0.0 && o.validation < 1.0, "--validation must be in [0, 1), found ",
                    o.validation);
    BRAIN_CHECK_ARG(o.epochs > 0 && o.batch.value_or(1) > 0, "--epochs and --batch must be at least 1, found ",
                    o.epochs, " and ", o.batch.value_or(1));
    // Everything that can be checked before the run is checked first: the output path (not found to be a
    // directory, a device or the input after 40 epochs), the backend spec and its budget, the precision.
    check_data_source(o.source, true, o.targets);
    check_output_path(o.out, o.source.files());
    const bool cpu = o.backend.substr(0, o.backend.find(':')) == "cpu";
    // --budget applies to every backend; without it a device gets 8192 MiB and the CPU no cap.
    const TrainingBackend backend = TrainingBackend::parse(o.backend, o.budget_mib.value_or(cpu ? 0 : 8192))
                                        .with_precision(parse_precision(o.precision));

    // --stream: the rows stay on disk; `train` then holds one row, for the names and the standardisation.
    std::optional<StreamingDataset> stream;
    Dataset train;
    if (o.stream) {
        BRAIN_CHECK_ARG(!o.source.npy_features.empty(),
                        "--stream reads rows at their offsets in .npy files: give --npy-features and --npy-targets "
                        "(brain convert data.csv X.npy Y.npy --target COLUMN writes them)");
        BRAIN_CHECK_ARG(o.validation == 0.0, "--validation needs the rows in memory; with --stream hold out a "
                                             "separate file and run brain predict on it");
        StreamOptions stream_options;
        stream_options.chunk_rows = o.stream_chunk_rows;
        stream_options.window_chunks = o.stream_window;
        stream_options.limits = o.input.limits();
        stream = StreamingDataset::from_npy(o.source.npy_features, o.source.npy_targets, stream_options);
        if (o.standardize) stream->standardize();
        train = stream->read_rows(0, 1);
    } else {
        train = load_data_source(o.source, o.targets, o.input.limits());
    }
    std::optional<Dataset> validation;
    if (o.validation > 0.0) {
        auto [t, v] = train.split(o.validation, o.seed);
        BRAIN_CHECK_ARG(t.size() > 0 && v.size() > 0, "--validation ", o.validation, " splits the ", train.size(),
                        " rows of ", o.source.name(), " into ", t.size(), " training and ", v.size(),
                        " validation rows; both need at least one; use more rows or another fraction");
        train = std::move(t);
        validation = std::move(v);
    }
    // Statistics from the training rows only, so the validation loss is honest.
    if (o.standardize && !stream) train.standardize();
    const std::uint64_t rows = stream ? stream->size() : train.size();

    const Activation hidden = parse_activation(o.activation);
    const Activation output = !o.output_activation.empty()    ? parse_activation(o.output_activation)
                              : !train.class_labels().empty() ? Activation::Softmax
                                                              : Activation::Linear;
    std::vector<LayerSpec> shape;
    std::size_t width = train.input_width();
    for (std::size_t units : o.layers) {
        shape.push_back(LayerSpec{width, units, hidden});
        width = units;
    }
    shape.push_back(LayerSpec{width, train.target_width(), output});
    const Optimizer optimizer = parse_optimizer(o.optimizer, o.learning_rate, o.momentum, o.weight_decay);
    // An explicit --batch larger than the data stays an error (the library's); only the default adapts.
    const std::uint32_t batch = o.batch.value_or(
        static_cast<std::uint32_t>(std::min<std::uint64_t>(256, std::max<std::uint64_t>(rows, 1))));
    // The whole run's host memory from the shapes, before the network is built: the network, the checkpoint
    // copies (one more with --validation) and, on the CPU, the session. A mistyped width fails here, at once.
    require_host_memory(training_host_memory_bytes(shape, optimizer, stream ? batch : rows, batch,
                                                   o.standardize && !stream, backend, validation ? 3 : 2),
                        str("training ", describe_layers(shape), " on ", backend.describe()),
                        "use narrower or fewer layers, a smaller batch or fewer rows, or free memory");

    auto builder = Network::builder();
    builder.input_size(train.input_width());
    for (std::size_t units : o.layers) builder.dense(units, hidden);
    builder.dense(train.target_width(), output);
    if (!o.loss.empty()) builder.loss(parse_loss(o.loss));
    builder.optimizer(optimizer);
    builder.seed(o.seed);
    Network network = builder.build();
    network.adopt_dataset_metadata(train);
    const TrainConfig config{o.epochs, batch, true, o.seed};

    std::cout << "Training " << describe_layers(network.layers()) << " (" << to_string(network.loss()) << ", "
              << to_string(network.optimizer().kind) << " lr " << network.optimizer().learning_rate << ") on "
              << backend.describe() << ", batch " << batch << "\n";
    std::cout << "data: " << o.source.name() << ": " << rows << " training rows"
              << (validation ? str(", ", validation->size(), " validation rows") : std::string()) << ", "
              << train.input_width() << " features -> " << train.target_width() << " outputs";
    if (const auto& labels = train.class_labels(); !labels.empty()) {
        std::cout << " (classes:";
        for (std::size_t k = 0; k < labels.size() && k < 20; ++k) std::cout << " " << printable(labels[k]);
        if (labels.size() > 20) std::cout << " ... (" << labels.size() << " in all)";
        std::cout << ")";
    }
    std::cout << (o.standardize ? ", standardized" : "");
    if (stream)
        std::cout << ", streamed from disk in chunks of " << o.stream_chunk_rows << " rows, shuffled in windows of "
                  << o.stream_window << " chunks (" << stream->buffer_bytes() / (1 << 20) << " MiB of buffers)";
    std::cout << "\n";
    // Which plugin file serves the backend (the first regular libbrain_<name>.so on the search path).
    const PluginRecord plugin = load_plugin(backend.plugin_name());
    std::cout << "plugin: " << plugin.path.string() << (plugin.version.empty() ? "" : " " + plugin.version) << "\n"
              << std::flush;

    TrainingSession session = stream ? TrainingSession(network, *stream, config, backend)
                                     : TrainingSession(network, train, config, backend);
    EpochProgress progress(std::cout, o.epochs, stdout_is_terminal());
    // The validation loss needs the weights on the host: one checkpoint per epoch into one probe network, the
    // price of asking for a split (it shows in checkpoint_time).
    std::optional<Network> probe;
    if (validation) probe = network;
    try {
        for (std::uint32_t epoch = 1; epoch <= o.epochs; ++epoch) {
            const float loss = session.train_epoch();
            std::optional<float> validation_loss;
            if (probe) {
                probe->restore_checkpoint(session.checkpoint());
                validation_loss = probe->evaluate(*validation).loss;
            }
            progress.update(epoch, loss, validation_loss);
        }
        progress.finish();
        network.restore_checkpoint(session.checkpoint());
    } catch (...) {
        progress.finish();
        throw;
    }
    const AcceleratorStats stats = session.stats();
    session.close();

    std::cout << stats << "\n";
    print_evaluation("training:  ", stream ? evaluate_streamed(network, *stream) : network.evaluate(train));
    if (validation) print_evaluation("validation:", network.evaluate(*validation));
    network.save_json(o.out, o.source.files());
    std::cout << "saved model to " << o.out << "\n";
    return exit_ok;
}

} // namespace

void add_train_command(CLI::App& app, int& exit_code) {
    auto o = std::make_shared<TrainOptions>();
    auto* cmd = app.add_subcommand(
        "train", "Train a dense network on a CSV file (or a NumPy .npz archive or .npy files) through a "
                 "TrainingSession on any backend, one progress line per epoch (loss, validation loss with --validation, elapsed time), then print the "
                 "session stats and save the model (whole or not at all: never over a symbolic link, directory, "
                 "device or the input). On error nothing is written.");
    add_data_source_options(*cmd, o->source, true, "training data: a CSV file with a header row");
    cmd->add_option("--target", o->targets,
                    "target column of --csv (repeat or comma-separate for several); a column with text cells is a "
                    "class label, one-hot encoded. With --npz: columns of its 'features' when it has no 'targets'")
        ->delimiter(',');
    cmd->add_option("--layers", o->layers, "hidden layer widths, comma-separated")
        ->delimiter(',')
        ->capture_default_str()
        ->check(whole_number(UINT32_MAX));
    cmd->add_option("--activation", o->activation,
                    "hidden activation: linear, relu, leaky_relu, sigmoid, tanh, gelu")
        ->capture_default_str();
    cmd->add_option("--output-activation", o->output_activation,
                    "output activation: linear, sigmoid or softmax (default: softmax for class-label targets, "
                    "linear otherwise)");
    cmd->add_option("--loss", o->loss,
                    "mse, bce or cce (default: bce for a sigmoid output, cce for softmax, mse otherwise)");
    cmd->add_option("--optimizer", o->optimizer, "adam, sgd or adamw")->capture_default_str();
    cmd->add_option("--lr", o->learning_rate, "learning rate")->capture_default_str();
    cmd->add_option("--momentum", o->momentum, "SGD momentum")->capture_default_str();
    cmd->add_option("--weight-decay", o->weight_decay, "AdamW decoupled weight decay")->capture_default_str();
    cmd->add_option("--epochs", o->epochs, "epochs to train")
        ->capture_default_str()
        ->check(whole_number(UINT32_MAX));
    cmd->add_option("--batch", o->batch, "batch size (default: 256, or all rows when there are fewer)")
        ->check(whole_number(UINT32_MAX));
    cmd->add_option("--validation", o->validation,
                    "fraction of rows held out (shuffled with --seed) to report a validation loss per epoch")
        ->capture_default_str();
    cmd->add_option("--seed", o->seed, "seed for initialisation, the split and the batch order")
        ->capture_default_str()
        ->check(whole_number(UINT64_MAX));
    cmd->add_flag("--standardize,!--no-standardize", o->standardize,
                  "standardize features with training-set statistics saved in the model (default: on)");
    cmd->add_option("--backend", o->backend, "cpu, cuda:<device>, metal:<device> or <plugin>:<device>")
        ->capture_default_str();
    cmd->add_option("--budget", o->budget_mib,
                    "memory budget in MiB for the session's tensors, on every backend (default: none for cpu, 8192 "
                    "for a device); a session that needs more fails before it allocates")
        ->check(whole_number(UINT64_MAX));
    cmd->add_option("--precision", o->precision, "matrix-product precision: float32, tf32 or bf16 (accelerators)")
        ->capture_default_str();
    cmd->add_option("--out", o->out,
                    "where to save the trained model (JSON); checked before training: a symbolic link, directory, "
                    "device, FIFO, socket or an input file is refused")
        ->required();
    cmd->add_flag(
        "--stream", o->stream,
        "with --npy-features/--npy-targets: train from disk without loading the data set: chunks of rows "
        "are read as they are needed and shuffled within a window (memory: three windows), for data larger "
        "than memory; the backend must take batches from a batch source (cpu does)");
    cmd->add_option("--stream-chunk-rows", o->stream_chunk_rows, "with --stream: rows read from disk at once")
        ->capture_default_str()
        ->check(whole_number(UINT32_MAX) & CLI::Range(std::uint64_t{1}, std::uint64_t{UINT32_MAX}));
    cmd->add_option("--stream-window", o->stream_window,
                    "with --stream: chunks whose rows are shuffled together (the shuffle buffer)")
        ->capture_default_str()
        ->check(whole_number(65536) & CLI::Range(1u, 65536u));
    add_input_options(*cmd, o->input, true);
    cmd->callback([o, &exit_code] { exit_code = run_train(*o); });
}

} // namespace brain::app
