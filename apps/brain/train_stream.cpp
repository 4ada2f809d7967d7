// brain train --stream: the rows stay on disk, in .npy files, and a TrainingSession pulls each batch through the
// plugin's batch source.
#include "app_support.hpp"
#include "commands.hpp"
#include "progress.hpp"
#include "train_options.hpp"

#include <algorithm>
#include <brain/brain.hpp>
#include <iostream>

namespace brain::app {

namespace {

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

} // namespace

// --stream: the rows stay on disk, in .npy files; a TrainingSession pulls each batch through the plugin's batch
// source, at the constant --lr.
int run_streamed(const TrainOptions& o, const TrainingBackend& backend,
                 const std::vector<std::filesystem::path>& inputs) {
    BRAIN_CHECK_ARG(!o.source.npy_features.empty(),
                    "--stream reads rows at their offsets in .npy files: give --npy-features and --npy-targets "
                    "(brain convert data.csv X.npy Y.npy --target COLUMN writes them)");
    BRAIN_CHECK_ARG(o.validation == 0.0, "--validation needs the rows in memory; with --stream hold out a "
                                         "separate file and run brain predict on it");
    StreamOptions stream_options;
    stream_options.chunk_rows = o.stream_chunk_rows;
    stream_options.window_chunks = o.stream_window;
    stream_options.limits = o.input.limits();
    StreamingDataset stream =
        StreamingDataset::from_npy(o.source.npy_features, o.source.npy_targets, stream_options);
    if (o.standardize) stream.standardize();
    const Dataset head = stream.read_rows(0, 1); // the names and the standardisation
    const Activation hidden = parse_activation(o.activation);
    const Activation output = !o.output_activation.empty()   ? parse_activation(o.output_activation)
                              : !head.class_labels().empty() ? Activation::Softmax
                                                             : Activation::Linear;
    std::vector<LayerSpec> shape;
    std::size_t width = head.input_width();
    for (std::size_t units : o.layers) {
        shape.push_back(LayerSpec{width, units, hidden});
        width = units;
    }
    shape.push_back(LayerSpec{width, head.target_width(), output});
    const Optimizer optimizer = apply_optimizer_flags(Optimizer::adam(0.001f), o.optimizer_flags, false);
    const std::uint32_t batch = o.batch.value_or(
        static_cast<std::uint32_t>(std::min<std::uint64_t>(256, std::max<std::uint64_t>(stream.size(), 1))));
    require_host_memory(training_host_memory_bytes(shape, optimizer, batch, batch, false, backend, 2),
                        str("training ", describe_layers(shape), " on ", backend.describe()),
                        "use narrower or fewer layers, a smaller batch, or free memory");
    auto builder = Network::builder();
    builder.input_size(head.input_width());
    for (const LayerSpec& layer : shape) builder.dense(layer.outputs, layer.activation);
    if (!o.loss.empty()) builder.loss(parse_loss(o.loss));
    builder.optimizer(optimizer);
    builder.seed(o.seed);
    Network network = builder.build();
    network.adopt_dataset_metadata(head);
    const TrainConfig config{o.epochs, batch, true, o.seed};

    std::cout << "Training " << describe_layers(network.layers()) << " (" << to_string(network.loss()) << ", "
              << to_string(network.optimizer().kind) << " lr " << network.optimizer().learning_rate << ") on "
              << backend.describe() << ", batch " << batch << "\n";
    std::cout << "data: " << o.source.name() << ": " << stream.size() << " training rows, " << head.input_width()
              << " features -> " << head.target_width() << " outputs" << (o.standardize ? ", standardized" : "")
              << ", streamed from disk in chunks of " << o.stream_chunk_rows << " rows, shuffled in windows of "
              << o.stream_window << " chunks (" << stream.buffer_bytes() / (1 << 20) << " MiB of buffers)\n";
    const PluginRecord plugin = load_plugin(backend.plugin_name());
    std::cout << "plugin: " << plugin.path.string() << (plugin.version.empty() ? "" : " " + plugin.version) << "\n"
              << std::flush;

    TrainingSession session(network, stream, config, backend);
    EpochProgress progress(std::cout, o.epochs, stdout_is_terminal());
    try {
        for (std::uint32_t epoch = 1; epoch <= o.epochs; ++epoch)
            progress.update(epoch, session.train_epoch(), std::nullopt);
        progress.finish();
        network.restore_checkpoint(session.checkpoint());
    } catch (...) {
        progress.finish();
        throw;
    }
    const AcceleratorStats stats = session.stats();
    session.close();
    std::cout << stats << "\n";
    print_evaluation("training:  ", evaluate_streamed(network, stream));
    if (backend.rank() != 0) {
        std::cout << "rank " << backend.rank() << " of " << backend.world_size() << ": rank 0 saves the model\n";
        return exit_ok;
    }
    require_standard_output(str("'", o.out, "' is left as it was"));
    network.save_json(o.out, inputs);
    std::cout << "saved model to " << o.out << "\n";
    return exit_ok;
}

} // namespace brain::app
