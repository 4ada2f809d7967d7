// brain train: read a CSV, build a network and train it with Network::fit_with_backend epoch by epoch (progress,
// validation loss and learning rate per epoch, on every backend alike), with a learning-rate schedule, early
// stopping and resumable checkpoints as asked; or continue a run from a checkpoint (--resume). Then save the model.
#include "app_support.hpp"
#include "cli_options.hpp"
#include "commands.hpp"
#include "network_options.hpp"
#include "progress.hpp"
#include "train_run.hpp"

#include <algorithm>
#include <brain/brain.hpp>
#include <charconv>
#include <filesystem>
#include <iostream>
#include <memory>
#include <optional>

namespace brain::app {

namespace {

struct TrainOptions {
    std::string csv;
    std::vector<std::string> targets;
    std::string classes; // --classes: a target column read as class labels, numbers included
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
    std::string lr_schedule;
    RunFlags flags;
    std::string resume;
    std::string out;
    InputOptions input;
};

std::string describe_layers(const std::vector<LayerSpec>& layers) {
    std::string s = std::to_string(layers.front().inputs);
    for (const auto& layer : layers) s += str(" -> ", layer.outputs, " ", to_string(layer.activation));
    return s;
}

// The CsvOptions of the run's data: its target columns, the class column if any, the limits.
CsvOptions data_options(const std::vector<std::string>& targets, const std::string& classes,
                        const InputLimits& limits) {
    CsvOptions options;
    options.target_columns = targets;
    if (!classes.empty()) options.class_columns = {classes};
    options.limits = limits;
    return options;
}

// The training and validation rows: the file's rows split with the seed (the same split on --resume).
std::pair<Dataset, std::optional<Dataset>> split_rows(Dataset data, double validation, std::uint64_t seed,
                                                      const std::string& csv) {
    if (validation <= 0.0) return {std::move(data), std::nullopt};
    auto [t, v] = data.split(validation, seed);
    BRAIN_CHECK_ARG(t.size() > 0 && v.size() > 0, "--validation ", validation, " splits the ", data.size(),
                    " rows of ", csv, " into ", t.size(), " training and ", v.size(),
                    " validation rows; both need at least one; use more rows or another fraction");
    return {std::move(t), std::move(v)};
}

std::string number_text(double value) {
    char text[32];
    const auto end = std::to_chars(text, text + sizeof text, value).ptr;
    return std::string(text, end);
}

TrainingBackend parse_backend(const TrainOptions& o) {
    const bool cpu = o.backend.substr(0, o.backend.find(':')) == "cpu";
    // --budget applies to every backend; without it a device gets 8192 MiB and the CPU no cap.
    return TrainingBackend::parse(o.backend, o.budget_mib.value_or(cpu ? 0 : 8192))
        .with_precision(parse_precision(o.precision));
}

int run_train(const TrainOptions& o) {
    BRAIN_CHECK_ARG(o.validation >= 0.0 && o.validation < 1.0, "--validation must be in [0, 1), found ",
                    o.validation);
    BRAIN_CHECK_ARG(o.epochs > 0 && o.batch.value_or(1) > 0, "--epochs and --batch must be at least 1, found ",
                    o.epochs, " and ", o.batch.value_or(1));
    std::vector<std::string> targets = o.targets;
    if (!o.classes.empty()) {
        BRAIN_CHECK_ARG(targets.empty() || targets == std::vector<std::string>{o.classes}, "--classes ",
                        quote_excerpt(o.classes), " names the target column, but --target names ",
                        quote_excerpt(targets.front()), targets.size() > 1 ? " and more" : "",
                        "; give the class column with --classes alone");
        targets = {o.classes};
    }
    BRAIN_CHECK_ARG(!targets.empty(), "no target column: name it with --target COLUMN, or with --classes COLUMN "
                                      "for a column of classes (numbers or text)");
    // Everything that can be checked before the run is checked first: the output path (not found to be a
    // directory, a device or the input after 40 epochs), the backend spec and its budget, the precision, the
    // schedule.
    check_output_path(o.out, {o.csv});
    const TrainingBackend backend = parse_backend(o);
    std::optional<LearningRateSchedule> schedule;
    if (!o.lr_schedule.empty()) schedule = LearningRateSchedule::parse(o.lr_schedule);

    Dataset data = Dataset::from_csv(o.csv, data_options(targets, o.classes, o.input.limits()));
    if (parse_activation(o.output_activation.empty() ? "linear" : o.output_activation) == Activation::Softmax &&
        data.class_labels().empty())
        BRAIN_THROW(ErrorCode::InvalidArgument, "--output-activation softmax needs a class column, but ",
                    targets.size() == 1 ? "target " + quote_excerpt(targets.front()) : std::string("the targets"),
                    " of ", o.csv, " hold numbers (one output per column); to train a classifier on ",
                    targets.size() == 1 ? "its values as classes, use --classes " + targets.front()
                                        : "a column of classes, name it with --classes COLUMN",
                    " (integer or text labels, kept in the model and printed back by predict)");
    auto [train, validation] = split_rows(std::move(data), o.validation, o.seed, o.csv);
    // Statistics from the training rows only, so the validation loss is honest.
    if (o.standardize) train.standardize();

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
        static_cast<std::uint32_t>(std::min<std::size_t>(256, std::max<std::size_t>(train.size(), 1))));
    // The whole run's host memory from the shapes, before the network is built: the network, the checkpoint
    // copies (one more with --validation, and with early stopping's best weights) and, on the CPU, the session. A
    // mistyped width fails here, at once.
    require_host_memory(training_host_memory_bytes(shape, optimizer, train.size(), batch, o.standardize, backend,
                                                   2 + (validation ? 1 : 0) + (o.flags.patience ? 1 : 0)),
                        str("training ", describe_layers(shape), " on ", backend.describe()),
                        "use narrower or fewer layers, a smaller batch or fewer rows, or free memory");

    auto builder = Network::builder();
    builder.input_size(train.input_width());
    for (std::size_t units : o.layers) builder.dense(units, hidden);
    builder.dense(train.target_width(), output);
    if (!o.loss.empty()) builder.loss(parse_loss(o.loss));
    builder.optimizer(optimizer);
    builder.seed(o.seed);
    TrainRun run(builder.build());
    run.train = std::move(train);
    run.validation = std::move(validation);
    run.config = TrainConfig{o.epochs, batch, true, o.seed};
    run.target_epochs = o.epochs;
    run.backend = backend;
    run.schedule = schedule;
    run.flags = o.flags;
    run.csv = o.csv;
    run.out = o.out;
    // What --resume needs to read the same rows again.
    run.notes["csv"] = o.csv;
    for (std::size_t i = 0; i < targets.size(); ++i) run.notes["target." + std::to_string(i)] = targets[i];
    if (!o.classes.empty()) run.notes["classes"] = o.classes;
    run.notes["validation"] = number_text(o.validation);
    run.notes["standardize"] = o.standardize ? "1" : "0";
    return run_training(run);
}

// --resume: the checkpoint's network, batch order, schedule and flags, the same rows read again, trained on to
// --epochs (default: the epochs the run was started for).
int run_resume(const TrainOptions& o, const CLI::App& cmd) {
    for (const char* fixed : {"--target", "--classes", "--layers", "--activation", "--output-activation", "--loss",
                              "--optimizer", "--lr", "--momentum", "--weight-decay", "--batch", "--validation",
                              "--seed", "--standardize", "--lr-schedule"})
        BRAIN_CHECK_ARG(cmd.count(fixed) == 0, "--resume continues the run saved in ", o.resume,
                        " with its own network, optimizer, batch order, data options and schedule; ", fixed,
                        " cannot change them: leave it out (or start a new run without --resume)");
    const InputLimits limits = o.input.limits();
    const TrainingCheckpoint checkpoint = TrainingCheckpoint::load(o.resume, limits);
    const auto& notes = checkpoint.notes;
    auto note = [&](const std::string& key) -> std::string {
        const auto it = notes.find(key);
        return it == notes.end() ? std::string() : it->second;
    };
    std::vector<std::string> targets;
    for (std::size_t i = 0; notes.count("target." + std::to_string(i)); ++i)
        targets.push_back(note("target." + std::to_string(i)));
    BRAIN_CHECK(!targets.empty(), ErrorCode::InvalidModelFile, o.resume,
                ": the checkpoint does not say which columns it was trained on (it was not written by brain "
                "train); resume it with the library (FitOptions::resume)");
    const std::string csv = cmd.count("--csv") ? o.csv : note("csv");
    double fraction = 0.0;
    const std::string fraction_text = note("validation");
    std::from_chars(fraction_text.data(), fraction_text.data() + fraction_text.size(), fraction);
    const std::uint64_t target = cmd.count("--epochs") ? o.epochs : checkpoint.run_epochs;
    BRAIN_CHECK_ARG(target > checkpoint.epochs_trained(), o.resume, " has trained ", checkpoint.epochs_trained(),
                    " epochs, which reaches ", cmd.count("--epochs") ? "--epochs " : "the run's ", target,
                    "; ask for more with --epochs N (the epoch count to reach)");
    check_output_path(o.out, {csv, o.resume});
    const TrainingBackend backend = parse_backend(o);

    Dataset data = Dataset::from_csv(csv, data_options(targets, note("classes"), limits));
    const std::uint64_t seed = checkpoint.config.seed.value_or(checkpoint.network.seed());
    auto [train, validation] = split_rows(std::move(data), fraction, seed, csv);
    // The run's own standardisation (it was computed from these training rows).
    train.set_standardization(checkpoint.network.standardization());

    TrainRun run(checkpoint.network);
    run.train = std::move(train);
    run.validation = std::move(validation);
    run.config = checkpoint.config;
    run.config.epochs =
        static_cast<std::uint32_t>(std::min<std::uint64_t>(target - checkpoint.epochs_trained(), UINT32_MAX));
    run.target_epochs = target;
    run.backend = backend;
    run.resume = &checkpoint;
    run.flags = stored_flags(notes);
    if (cmd.count("--early-stopping")) run.flags.patience = o.flags.patience;
    if (cmd.count("--monitor")) run.flags.monitor = o.flags.monitor;
    if (cmd.count("--min-delta")) run.flags.min_delta = o.flags.min_delta;
    if (cmd.count("--checkpoint-every")) run.flags.checkpoint_every = o.flags.checkpoint_every;
    if (cmd.count("--checkpoint-dir")) run.flags.checkpoint_dir = o.flags.checkpoint_dir;
    BRAIN_CHECK_ARG(!run.flags.checkpoint_every || !run.flags.checkpoint_dir.empty(),
                    "--checkpoint-every needs --checkpoint-dir DIR");
    run.csv = csv;
    run.out = o.out;
    for (const auto& [key, value] : notes)
        if (key == "csv" || key == "classes" || key == "validation" || key == "standardize" ||
            key.starts_with("target."))
            run.notes[key] = value;
    run.notes["csv"] = csv;
    return run_training(run);
}

} // namespace

void add_train_command(CLI::App& app, int& exit_code) {
    auto o = std::make_shared<TrainOptions>();
    auto* cmd = app.add_subcommand(
        "train", "Train a dense network on a CSV file on any backend, one progress line per epoch (loss, "
                 "validation loss with --validation, learning rate, elapsed time), with an optional learning-rate "
                 "schedule, early stopping and resumable checkpoints, then print the session stats and save the "
                 "model (whole or not at all: never over a symbolic link, directory, device or the input). On "
                 "error nothing is written. --resume FILE continues a run saved by --checkpoint-every exactly.");
    cmd->add_option("--csv", o->csv,
                    "training data: a CSV file with a header row (required unless --resume, which defaults to the "
                    "run's file)");
    cmd->add_option("--target", o->targets,
                    "target column (repeat or comma-separate for several); a column with text cells is a class "
                    "label, one-hot encoded")
        ->delimiter(',');
    cmd->add_option("--classes", o->classes,
                    "train a softmax classifier on this column's values as classes, numbers (digits 0-9, codes) or "
                    "text; the labels are kept in the model and printed back by predict (implies --target COLUMN)");
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
    cmd->add_option("--epochs", o->epochs, "epochs to train (with --resume: the epoch count to reach)")
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
    cmd->add_option("--lr-schedule", o->lr_schedule,
                    "learning-rate schedule: constant[:warmup=E], step:every=N[,gamma=G], exponential:gamma=G, "
                    "cosine[:warmup=E,min=R,epochs=N], onecycle[:pct=P,div=D,final_div=F,epochs=N] or "
                    "plateau[:factor=F,patience=N,threshold=T,cooldown=N,min=R] (docs/cli.md)");
    cmd->add_option("--early-stopping", o->flags.patience,
                    "stop when --monitor has not improved for this many epochs and keep the best epoch's weights")
        ->check(whole_number(UINT32_MAX));
    cmd->add_option("--monitor", o->flags.monitor,
                    "what early stopping and a plateau schedule watch: loss, val_loss, val_accuracy, val_macro_f1, "
                    "val_rmse, val_r2, ... (default: val_loss with --validation, else loss)");
    cmd->add_option("--min-delta", o->flags.min_delta,
                    "early stopping: an improvement must beat the best by more than this")
        ->capture_default_str();
    auto* every = cmd->add_option("--checkpoint-every", o->flags.checkpoint_every,
                                  "write a resumable checkpoint every N epochs (to --checkpoint-dir)")
                      ->check(whole_number(UINT32_MAX) & CLI::Range(1u, UINT32_MAX));
    auto* dir = cmd->add_option("--checkpoint-dir", o->flags.checkpoint_dir,
                                "where --checkpoint-every writes epoch-N.json (created if missing)");
    every->needs(dir);
    cmd->add_option("--resume", o->resume,
                    "continue the run saved in this checkpoint (written by --checkpoint-every) exactly: the same "
                    "network, optimizer state, batch order, schedule and early stopping; give --epochs to go past "
                    "the run's own count");
    cmd->add_option("--out", o->out,
                    "where to save the trained model (JSON); checked before training: a symbolic link, directory, "
                    "device, FIFO, socket or the --csv file is refused")
        ->required();
    add_input_options(*cmd, o->input, true);
    cmd->callback([o, cmd, &exit_code] {
        if (!o->resume.empty()) {
            exit_code = run_resume(*o, *cmd);
            return;
        }
        // A usage error like every other missing option (exit 106 and the usage hint), naming both ways to say it.
        if (o->targets.empty() && o->classes.empty())
            throw CLI::RequiredError("--target COLUMN (or --classes COLUMN for a column of classes)");
        BRAIN_CHECK_ARG(!o->csv.empty(), "--csv is required: the training data, a CSV file with a header row");
        exit_code = run_train(*o);
    });
}

} // namespace brain::app
