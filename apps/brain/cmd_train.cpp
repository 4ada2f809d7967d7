// brain train: read a CSV, build a network, train it through a TrainingSession epoch by epoch (so progress and
// validation loss show per epoch, on every backend alike), then save the model.
#include "app_support.hpp"
#include "commands.hpp"
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
    std::string csv;
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
};

std::string describe_layers(const Network& network) {
    std::string s = std::to_string(network.input_size());
    for (const auto& layer : network.layers()) s += str(" -> ", layer.outputs, " ", to_string(layer.activation));
    return s;
}

void print_evaluation(const char* what, const Evaluation& e) {
    std::cout << what << " loss " << e.loss;
    if (e.accuracy) std::cout << ", accuracy " << *e.accuracy;
    std::cout << "\n";
}

int run_train(const TrainOptions& o) {
    // Fail before the run, not after it, when the model could not be written anyway.
    const std::filesystem::path out = std::filesystem::absolute(o.out);
    BRAIN_CHECK(std::filesystem::is_directory(out.parent_path()), ErrorCode::IoError, "cannot write the model to '",
                o.out, "': the directory '", out.parent_path().string(), "' does not exist; create it first");
    BRAIN_CHECK_ARG(o.validation >= 0.0 && o.validation < 1.0, "--validation must be in [0, 1), found ",
                    o.validation);
    BRAIN_CHECK_ARG(o.epochs > 0 && o.batch.value_or(1) > 0, "--epochs and --batch must be at least 1, found ",
                    o.epochs, " and ", o.batch.value_or(1));

    CsvOptions csv_options;
    csv_options.target_columns = o.targets;
    const Dataset data = Dataset::from_csv(o.csv, csv_options);

    Dataset train = data;
    std::optional<Dataset> validation;
    if (o.validation > 0.0) {
        auto [t, v] = data.split(o.validation, o.seed);
        BRAIN_CHECK_ARG(t.size() > 0 && v.size() > 0, "--validation ", o.validation, " splits the ", data.size(),
                        " rows of ", o.csv, " into ", t.size(), " training and ", v.size(),
                        " validation rows; both need at least one; use more rows or another fraction");
        train = std::move(t);
        validation = std::move(v);
    }
    // Statistics from the training rows only, so the validation loss is honest.
    if (o.standardize) train.standardize();

    const Activation hidden = parse_activation(o.activation);
    const Activation output = !o.output_activation.empty()    ? parse_activation(o.output_activation)
                              : !train.class_labels().empty() ? Activation::Softmax
                                                              : Activation::Linear;
    auto builder = Network::builder();
    builder.input_size(train.input_width());
    for (std::size_t units : o.layers) builder.dense(units, hidden);
    builder.dense(train.target_width(), output);
    if (!o.loss.empty()) builder.loss(parse_loss(o.loss));
    builder.optimizer(parse_optimizer(o.optimizer, o.learning_rate, o.momentum, o.weight_decay));
    builder.seed(o.seed);
    Network network = builder.build();
    network.adopt_dataset_metadata(train);

    const std::uint64_t budget = o.budget_mib.value_or(o.backend == "cpu" ? 0 : 8192);
    const TrainingBackend backend =
        TrainingBackend::parse(o.backend, budget).with_precision(parse_precision(o.precision));
    // An explicit --batch larger than the data stays an error (the library's); only the default adapts.
    const std::uint32_t batch = o.batch.value_or(
        static_cast<std::uint32_t>(std::min<std::size_t>(256, std::max<std::size_t>(train.size(), 1))));
    const TrainConfig config{o.epochs, batch, true, o.seed};

    std::cout << "Training " << describe_layers(network) << " (" << to_string(network.loss()) << ", "
              << to_string(network.optimizer().kind) << " lr " << network.optimizer().learning_rate << ") on "
              << backend.describe() << ", batch " << batch << "\n";
    std::cout << "data: " << o.csv << ": " << train.size() << " training rows"
              << (validation ? str(", ", validation->size(), " validation rows") : std::string()) << ", "
              << train.input_width() << " features -> " << train.target_width() << " outputs";
    if (!train.class_labels().empty()) {
        std::cout << " (classes:";
        for (const auto& label : train.class_labels()) std::cout << " " << label;
        std::cout << ")";
    }
    std::cout << (o.standardize ? ", standardized" : "") << "\n" << std::flush;

    TrainingSession session(network, train, config, backend);
    EpochProgress progress(std::cout, o.epochs, stdout_is_terminal());
    try {
        for (std::uint32_t epoch = 1; epoch <= o.epochs; ++epoch) {
            const float loss = session.train_epoch();
            std::optional<float> validation_loss;
            if (validation) {
                // The validation loss needs the weights on the host: one checkpoint per epoch, the price of
                // asking for a split (it shows in checkpoint_time).
                Network probe = network;
                probe.restore_checkpoint(session.checkpoint());
                validation_loss = probe.evaluate(*validation).loss;
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
    print_evaluation("training:  ", network.evaluate(train));
    if (validation) print_evaluation("validation:", network.evaluate(*validation));
    network.save_json(o.out);
    std::cout << "saved model to " << o.out << "\n";
    return exit_ok;
}

} // namespace

void add_train_command(CLI::App& app, int& exit_code) {
    auto o = std::make_shared<TrainOptions>();
    auto* cmd = app.add_subcommand(
        "train", "Train a dense network on a CSV file through a TrainingSession on any backend, one progress "
                 "line per epoch (loss, validation loss with --validation, elapsed time), then print the "
                 "session stats and save the model atomically. On error nothing is written.");
    cmd->add_option("--csv", o->csv, "training data: a CSV file with a header row")->required();
    cmd->add_option("--target", o->targets,
                    "target column (repeat or comma-separate for several); a column with text cells is a class "
                    "label, one-hot encoded")
        ->required()
        ->delimiter(',');
    cmd->add_option("--layers", o->layers, "hidden layer widths, comma-separated")
        ->delimiter(',')
        ->capture_default_str();
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
    cmd->add_option("--epochs", o->epochs, "epochs to train")->capture_default_str();
    cmd->add_option("--batch", o->batch, "batch size (default: 256, or all rows when there are fewer)");
    cmd->add_option("--validation", o->validation,
                    "fraction of rows held out (shuffled with --seed) to report a validation loss per epoch")
        ->capture_default_str();
    cmd->add_option("--seed", o->seed, "seed for initialisation, the split and the batch order")
        ->capture_default_str();
    cmd->add_flag("--standardize,!--no-standardize", o->standardize,
                  "standardize features with training-set statistics saved in the model (default: on)");
    cmd->add_option("--backend", o->backend, "cpu, cuda:<device>, metal:<device> or <plugin>:<device>")
        ->capture_default_str();
    cmd->add_option("--budget", o->budget_mib,
                    "device memory budget in MiB (default: none for cpu, 8192 for a device)");
    cmd->add_option("--precision", o->precision, "matrix-product precision: float32, tf32 or bf16 (accelerators)")
        ->capture_default_str();
    cmd->add_option("--out", o->out, "where to save the trained model (JSON, written atomically)")->required();
    cmd->callback([o, &exit_code] { exit_code = run_train(*o); });
}

} // namespace brain::app
