// brain train: read a CSV file (or NumPy .npz / .npy data), build a network, train it through a TrainingSession
// epoch by epoch (so progress and validation loss show per epoch, on every backend alike), then save the model.
#include "app_support.hpp"
#include "cli_options.hpp"
#include "commands.hpp"
#include "data_source.hpp"
#include "network_options.hpp"
#include "process_options.hpp"
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
    ProcessOptions processes;
    std::string precision = "float32";
    std::string out;
    std::string init;             // continue training this model file
    bool optimizer_given = false; // --optimizer, --lr, --momentum or --weight-decay on the command line
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

// "a, b, c" of at most eight names, for messages.
std::string name_list(const std::vector<std::string>& names) {
    std::string s;
    for (std::size_t i = 0; i < names.size() && i < 8; ++i) s += (i ? ", " : "") + printable(names[i]);
    return names.size() > 8 ? s + ", ..." : s;
}

// --init: the model to train further, checked against the data. Its layers, loss, standardisation and names stay;
// the data's names fill in those an imported model lacks.
Network initial_network(const TrainOptions& o, Dataset& train) {
    Network network = Network::load_json(o.init, o.input.limits());
    BRAIN_CHECK_ARG(train.input_width() == network.input_size(), o.source.name(), " has ", train.input_width(),
                    " feature columns (", name_list(train.feature_names()), "), but the model ", o.init, " takes ",
                    network.input_size(), " inputs; give the data the model was made for");
    BRAIN_CHECK_ARG(network.feature_names().empty() || network.feature_names() == train.feature_names(), o.source.name(),
                    "'s feature columns (", name_list(train.feature_names()), ") are not the model's (",
                    name_list(network.feature_names()), ", in this order); give the data the model was made for");
    BRAIN_CHECK_ARG(train.target_width() == network.output_size(), "the targets of ", o.source.name(), " make ",
                    train.target_width(), " columns, but the model ", o.init, " has ", network.output_size(),
                    " outputs");
    BRAIN_CHECK_ARG(network.class_labels().empty() || train.class_labels().empty() ||
                        network.class_labels() == train.class_labels(),
                    "the class labels of ", o.source.name(), " (", name_list(train.class_labels()),
                    ") are not the model's (", name_list(network.class_labels()), ")");
    // The model's own input standardisation stays: new statistics would change what its weights mean.
    train.set_standardization(network.standardization());
    if (train.class_labels().empty() && !network.class_labels().empty())
        train.set_class_labels(network.class_labels());
    network.adopt_dataset_metadata(train);
    if (o.optimizer_given)
        network.set_optimizer(parse_optimizer(o.optimizer, o.learning_rate, o.momentum, o.weight_decay));
    return network;
}

int run_train(const TrainOptions& o) {
    BRAIN_CHECK_ARG(o.validation >= 0.0 && o.validation < 1.0, "--validation must be in [0, 1), found ",
                    o.validation);
    BRAIN_CHECK_ARG(o.epochs > 0 && o.batch.value_or(1) > 0, "--epochs and --batch must be at least 1, found ",
                    o.epochs, " and ", o.batch.value_or(1));
    // Everything that can be checked before the run is checked first: the output path (not found to be a
    // directory, a device or the input after 40 epochs), the backend spec and its budget, the precision.
    check_data_source(o.source, true, o.targets);
    std::vector<std::filesystem::path> inputs = o.source.files();
    if (!o.init.empty()) inputs.push_back(o.init);
    check_output_path(o.out, inputs);
    const bool cpu = o.backend.substr(0, o.backend.find(':')) == "cpu";
    // --budget applies to every backend; without it a device gets 8192 MiB and the CPU no cap.
    const TrainingBackend backend =
        with_process_options(TrainingBackend::parse(o.backend, o.budget_mib.value_or(cpu ? 0 : 8192))
                                 .with_precision(parse_precision(o.precision)),
                             o.backend.find(':') != std::string::npos, o.processes);

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
    // Statistics from the training rows only, so the validation loss is honest. A model given with --init keeps
    // its own.
    std::optional<Network> initial;
    if (!o.init.empty())
        initial = initial_network(o, train);
    else if (o.standardize && !stream)
        train.standardize();
    const std::uint64_t rows = stream ? stream->size() : train.size();

    std::vector<LayerSpec> shape;
    Optimizer optimizer;
    if (initial) {
        shape = initial->layers();
        optimizer = initial->optimizer();
    } else {
        const Activation hidden = parse_activation(o.activation);
        const Activation output = !o.output_activation.empty()    ? parse_activation(o.output_activation)
                                  : !train.class_labels().empty() ? Activation::Softmax
                                                                  : Activation::Linear;
        std::size_t width = train.input_width();
        for (std::size_t units : o.layers) {
            shape.push_back(LayerSpec{width, units, hidden});
            width = units;
        }
        shape.push_back(LayerSpec{width, train.target_width(), output});
        optimizer = parse_optimizer(o.optimizer, o.learning_rate, o.momentum, o.weight_decay);
    }
    // An explicit --batch larger than the data stays an error (the library's); only the default adapts.
    const std::uint32_t batch = o.batch.value_or(
        static_cast<std::uint32_t>(std::min<std::uint64_t>(256, std::max<std::uint64_t>(rows, 1))));
    // The whole run's host memory from the shapes, before the network is built: the network, the checkpoint
    // copies (one more with --validation) and, on the CPU, the session. A mistyped width fails here, at once.
    const bool standardized = initial ? initial->standardization().has_value() : o.standardize && !stream;
    require_host_memory(training_host_memory_bytes(shape, optimizer, stream ? batch : rows, batch, standardized,
                                                   backend, validation ? 3 : 2),
                        str("training ", describe_layers(shape), " on ", backend.describe()),
                        "use narrower or fewer layers, a smaller batch or fewer rows, or free memory");

    Network network = initial ? std::move(*initial) : [&] {
        auto builder = Network::builder();
        builder.input_size(train.input_width());
        for (const LayerSpec& layer : shape) builder.dense(layer.outputs, layer.activation);
        if (!o.loss.empty()) builder.loss(parse_loss(o.loss));
        builder.optimizer(optimizer);
        builder.seed(o.seed);
        Network built = builder.build();
        built.adopt_dataset_metadata(train);
        return built;
    }();
    if (!o.init.empty())
        std::cout << "continuing " << o.init << " (" << network.epochs_trained() << " epochs trained before)\n";
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
    std::cout << (network.standardization() ? ", standardized" : "");
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
    const std::vector<AcceleratorStats> device_stats = session.device_stats();
    const std::vector<int> devices = session.backend().devices(); // cuda:all resolved
    session.close();

    std::cout << stats << "\n";
    if (stats.devices > 1)
        for (std::size_t d = 0; d < device_stats.size(); ++d)
            std::cout << "device " << (d < devices.size() ? devices[d] : static_cast<int>(d)) << ": "
                      << to_json(device_stats[d]) << "\n";
    print_evaluation("training:  ", stream ? evaluate_streamed(network, *stream) : network.evaluate(train));
    if (validation) print_evaluation("validation:", network.evaluate(*validation));
    // Every rank holds the same weights; rank 0 writes them.
    if (backend.rank() != 0) {
        std::cout << "rank " << backend.rank() << " of " << backend.world_size() << ": rank 0 saves the model\n";
        return exit_ok;
    }
    network.save_json(o.out, inputs);
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
    auto* init = cmd->add_option("--init", o->init,
                                 "continue training this model file (from brain train or brain import): its layers, "
                                 "loss, standardisation and names stay, and its optimizer unless --optimizer, --lr, "
                                 "--momentum or --weight-decay is given");
    auto* layers = cmd->add_option("--layers", o->layers, "hidden layer widths, comma-separated")
                       ->delimiter(',')
                       ->capture_default_str()
                       ->check(whole_number(UINT32_MAX));
    auto* activation = cmd->add_option("--activation", o->activation,
                                       "hidden activation: linear, relu, leaky_relu, sigmoid, tanh, gelu")
                           ->capture_default_str();
    auto* output = cmd->add_option("--output-activation", o->output_activation,
                                   "output activation: linear, sigmoid or softmax (default: softmax for class-label "
                                   "targets, linear otherwise)");
    auto* loss = cmd->add_option("--loss", o->loss,
                                 "mse, bce or cce (default: bce for a sigmoid output, cce for softmax, mse otherwise)");
    const std::vector<CLI::Option*> optimizer_options{
        cmd->add_option("--optimizer", o->optimizer, "adam, sgd or adamw")->capture_default_str(),
        cmd->add_option("--lr", o->learning_rate, "learning rate")->capture_default_str(),
        cmd->add_option("--momentum", o->momentum, "SGD momentum")->capture_default_str(),
        cmd->add_option("--weight-decay", o->weight_decay, "AdamW decoupled weight decay")->capture_default_str()};
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
    auto* standardize =
        cmd->add_flag("--standardize,!--no-standardize", o->standardize,
                      "standardize features with training-set statistics saved in the model (default: on; with "
                      "--init the model's own standardisation stays)");
    for (CLI::Option* shape_option : {layers, activation, output, loss, standardize}) init->excludes(shape_option);
    cmd->add_option("--backend", o->backend,
                    "cpu, cuda:<device>, cuda:<device>,<device>... (data parallel), cuda:all, metal:<device> or "
                    "<plugin>:<device>; cuda alone takes device LOCAL_RANK when that is set")
        ->capture_default_str();
    cmd->add_option("--budget", o->budget_mib,
                    "memory budget in MiB for the session's tensors, on every backend and every device (default: "
                    "none for cpu, 8192 for a device); a session that needs more fails before it allocates")
        ->check(whole_number(UINT64_MAX));
    add_process_options(*cmd, o->processes);
    cmd->add_option("--precision", o->precision, "matrix-product precision: float32, tf32 or bf16 (accelerators)")
        ->capture_default_str();
    cmd->add_option("--out", o->out,
                    "where to save the trained model (JSON); checked before training: a symbolic link, directory, "
                    "device, FIFO, socket or an input file is refused")
        ->required();
    auto* stream = cmd->add_flag(
        "--stream", o->stream,
        "with --npy-features/--npy-targets: train from disk without loading the data set: chunks of rows "
        "are read as they are needed and shuffled within a window (memory: three windows), for data larger "
        "than memory; the backend must take batches from a batch source (cpu does)");
    init->excludes(stream); // a model given with --init keeps its standardisation, which a stream would recompute
    cmd->add_option("--stream-chunk-rows", o->stream_chunk_rows, "with --stream: rows read from disk at once")
        ->capture_default_str()
        ->check(whole_number(UINT32_MAX) & CLI::Range(std::uint64_t{1}, std::uint64_t{UINT32_MAX}));
    cmd->add_option("--stream-window", o->stream_window,
                    "with --stream: chunks whose rows are shuffled together (the shuffle buffer)")
        ->capture_default_str()
        ->check(whole_number(65536) & CLI::Range(1u, 65536u));
    add_input_options(*cmd, o->input, true);
    cmd->callback([o, optimizer_options, &exit_code] {
        o->optimizer_given = std::any_of(optimizer_options.begin(), optimizer_options.end(),
                                         [](const CLI::Option* option) { return option->count() > 0; });
        exit_code = run_train(*o);
    });
}

} // namespace brain::app
