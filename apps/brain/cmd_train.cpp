// brain train: read a CSV file (or NumPy .npz / .npy data), build a network (or take one given with --init) and
// train it with Network::fit_with_backend epoch by epoch (progress, validation loss and learning rate per epoch, on
// every backend alike), with a learning-rate schedule, early stopping and resumable checkpoints as asked; or
// continue a run from a checkpoint (--resume), or train from .npy files larger than memory (--stream,
// train_stream.cpp). Then save the model.
#include "app_support.hpp"
#include "cli_options.hpp"
#include "commands.hpp"
#include "data_source.hpp"
#include "network_options.hpp"
#include "process_options.hpp"
#include "progress.hpp"
#include "train_options.hpp"
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
    return with_process_options(TrainingBackend::parse(o.backend, o.budget_mib.value_or(cpu ? 0 : 8192))
                                    .with_precision(parse_precision(o.precision)),
                                o.backend.find(':') != std::string::npos, o.processes);
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
    BRAIN_CHECK_ARG(network.feature_names().empty() || network.feature_names() == train.feature_names(),
                    o.source.name(), "'s feature columns (", name_list(train.feature_names()),
                    ") are not the model's (", name_list(network.feature_names()),
                    ", in this order); give the data the model was made for");
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
    const OptimizerFlags& f = o.optimizer_flags;
    if (f.kind || f.learning_rate || f.momentum || f.weight_decay)
        network.set_optimizer(apply_optimizer_flags(network.optimizer(), f, true));
    return network;
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
        // A binary source holds numbers as they are; only a CSV column is read as class labels.
        BRAIN_CHECK_ARG(o.source.csv.size() > 0, "--classes ", quote_excerpt(o.classes),
                        " reads a CSV column's values as class labels, but the data comes from ",
                        o.source.npz.empty() ? "--npy-features/--npy-targets" : "--npz",
                        ", whose columns are numbers as they are (an archive's classes are one-hot 'targets' with "
                        "'class_labels', as brain convert writes them for a column of text labels); train on the "
                        "CSV with --classes");
    }
    // Everything that can be checked before the run is checked first: the data files named, the output path (not
    // found to be a directory, a device or an input after 40 epochs), the backend spec and its budget, the
    // precision, the schedule.
    check_data_source(o.source, true, targets);
    BRAIN_CHECK_ARG(!targets.empty() || o.source.csv.empty(),
                    "no target column: name it with --target COLUMN, or with --classes COLUMN for a column of "
                    "classes (numbers or text)");
    std::vector<std::filesystem::path> inputs = o.source.files();
    if (!o.init.empty()) inputs.push_back(o.init);
    check_output_path(o.out, inputs);
    const TrainingBackend backend = parse_backend(o);
    std::optional<LearningRateSchedule> schedule;
    if (!o.lr_schedule.empty()) schedule = LearningRateSchedule::parse(o.lr_schedule);
    if (o.stream) {
        BRAIN_CHECK_ARG(!schedule && !o.flags.patience && !o.flags.checkpoint_every,
                        "--stream trains at the constant --lr, without early stopping or checkpoints; leave out "
                        "--lr-schedule, --early-stopping and --checkpoint-every, or load the data (drop --stream)");
        return run_streamed(o, backend, inputs);
    }

    Dataset data = load_data_source(o.source, targets, o.input.limits(), o.classes);
    if (parse_activation(o.output_activation.empty() ? "linear" : o.output_activation) == Activation::Softmax &&
        data.class_labels().empty())
        BRAIN_THROW(ErrorCode::InvalidArgument, "--output-activation softmax needs a class column, but ",
                    targets.size() == 1 ? "target " + quote_excerpt(targets.front()) : std::string("the targets"),
                    " of ", o.source.name(), " hold numbers (one output per column); to train a classifier on ",
                    targets.size() == 1 ? "its values as classes, use --classes " + targets.front()
                                        : "a column of classes, name it with --classes COLUMN",
                    " (integer or text labels, kept in the model and printed back by predict)");
    auto split = split_rows(std::move(data), o.validation, o.seed, o.source.name());
    Dataset train = std::move(split.first);
    std::optional<Dataset> validation = std::move(split.second);
    // Statistics from the training rows only, so the validation loss is honest. A model given with --init keeps
    // its own.
    std::optional<Network> initial;
    if (!o.init.empty())
        initial = initial_network(o, train);
    else if (o.standardize)
        train.standardize();
    const std::uint64_t rows = train.size();

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
        optimizer = apply_optimizer_flags(Optimizer::adam(0.001f), o.optimizer_flags, false);
    }
    // An explicit --batch larger than the data stays an error (the library's); only the default adapts.
    const std::uint32_t batch = o.batch.value_or(
        static_cast<std::uint32_t>(std::min<std::uint64_t>(256, std::max<std::uint64_t>(rows, 1))));
    // The whole run's host memory from the shapes, before the network is built: the network, the checkpoint
    // copies (one more with --validation, and with early stopping's best weights) and, on the CPU, the session. A
    // mistyped width fails here, at once.
    const bool standardized = initial ? initial->standardization().has_value() : o.standardize;
    require_host_memory(training_host_memory_bytes(shape, optimizer, rows, batch, standardized, backend,
                                                   2 + (validation ? 1 : 0) + (o.flags.patience ? 1 : 0)),
                        str("training ", describe_layers(shape), " on ", backend.describe()),
                        "use narrower or fewer layers, a smaller batch or fewer rows, or free memory");

    Network network = initial ? std::move(*initial) : [&] {
        auto builder = Network::builder();
        builder.input_size(train.input_width());
        for (const LayerSpec& layer : shape) builder.dense(layer.outputs, layer.activation);
        if (!o.loss.empty()) builder.loss(parse_loss(o.loss));
        builder.optimizer(optimizer);
        builder.seed(o.seed);
        return builder.build();
    }();
    if (!o.init.empty())
        std::cout << "continuing " << o.init << " (" << network.epochs_trained() << " epochs trained before)\n";
    TrainRun run(std::move(network));
    run.train = std::move(train);
    run.validation = std::move(validation);
    run.config = TrainConfig{o.epochs, batch, true, o.seed};
    run.target_epochs = run.network.epochs_trained() + o.epochs; // counted over the model's life, as the epochs are
    run.backend = backend;
    run.schedule = schedule;
    run.flags = o.flags;
    run.csv = o.source.name();
    run.inputs = inputs;
    run.out = o.out;
    // What --resume needs to read the same rows again (a CSV run).
    // Absolute, so that --resume finds the rows from any working directory.
    if (!o.source.csv.empty())
        run.notes["csv"] = std::filesystem::absolute(o.source.csv).lexically_normal().string();
    else // named, so that --resume can say why it cannot read the rows again
        run.notes["source"] =
            o.source.npz.empty() ? "--npy-features " + o.source.npy_features : "--npz " + o.source.npz;
    for (std::size_t i = 0; i < targets.size(); ++i) run.notes["target." + std::to_string(i)] = targets[i];
    if (!o.classes.empty()) run.notes["classes"] = o.classes;
    run.notes["validation"] = number_text(o.validation);
    run.notes["standardize"] = o.standardize ? "1" : "0";
    return run_training(run);
}

// Options of a new run that act only with another one, given without it: a usage error (exit 107) naming both and
// what to do, never a setting silently unused.
void refuse_unused_options(const TrainOptions& o, const CLI::App& cmd) {
    const bool early_stopping = cmd.count("--early-stopping") > 0;
    if (cmd.count("--min-delta") && !early_stopping)
        refuse_option_without("--min-delta sets how much early stopping's monitored value must improve, but early "
                              "stopping is off (no --early-stopping); add --early-stopping PATIENCE or leave "
                              "--min-delta out");
    // A plateau schedule watches --monitor too; no other schedule does.
    if (cmd.count("--monitor") && !early_stopping &&
        (o.lr_schedule.empty() || !LearningRateSchedule::parse(o.lr_schedule).monitors()))
        refuse_option_without("--monitor names what early stopping and a plateau schedule watch, but this run has "
                              "neither (no --early-stopping, and no --lr-schedule plateau); add --early-stopping "
                              "PATIENCE or --lr-schedule plateau, or leave --monitor out");
    // Only --checkpoint-every writes into the directory (--checkpoint-every without it is CLI11's own 107).
    if (cmd.count("--checkpoint-dir") && !cmd.count("--checkpoint-every"))
        refuse_option_without("--checkpoint-dir names where --checkpoint-every writes its checkpoints, but "
                              "--checkpoint-every is not given, so nothing would be written there; add "
                              "--checkpoint-every N or leave --checkpoint-dir out");
    for (const char* tuning : {"--stream-chunk-rows", "--stream-window"})
        if (cmd.count(tuning) && !o.stream)
            refuse_option_without(str(tuning,
                                      " tunes how --stream reads rows from disk, but --stream is not given "
                                      "(the data is loaded into memory); add --stream (with --npy-features "
                                      "and --npy-targets) or leave ",
                                      tuning, " out"));
}

// --resume: the checkpoint's network, batch order, schedule and flags, the same rows read again, trained on to
// --epochs (default: the epochs the run was started for).
int run_resume(const TrainOptions& o, const CLI::App& cmd) {
    for (const char* fixed : {"--target", "--classes", "--init", "--layers", "--activation", "--output-activation",
                              "--loss", "--optimizer", "--lr", "--momentum", "--weight-decay", "--batch",
                              "--validation", "--seed", "--standardize", "--lr-schedule"})
        BRAIN_CHECK_ARG(cmd.count(fixed) == 0, "--resume continues the run saved in ", o.resume,
                        " with its own network, optimizer, batch order, data options and schedule; ", fixed,
                        " cannot change them: leave it out (or start a new run without --resume)");
    // The rows are read again from the run's CSV file, whole: the other sources and streaming do not apply.
    for (const char* source :
         {"--npz", "--npy-features", "--npy-targets", "--stream", "--stream-chunk-rows", "--stream-window"})
        BRAIN_CHECK_ARG(cmd.count(source) == 0, "--resume reads the rows of the run saved in ", o.resume,
                        " again from its CSV file (the one recorded there, or --csv FILE), into memory; ", source,
                        " does not apply: leave it out");
    const InputLimits limits = o.input.limits();
    const TrainingCheckpoint checkpoint = TrainingCheckpoint::load(o.resume, limits);
    const auto& notes = checkpoint.notes;
    auto note = [&](const std::string& key) -> std::string {
        const auto it = notes.find(key);
        return it == notes.end() ? std::string() : it->second;
    };
    BRAIN_CHECK_ARG(note("source").empty() || cmd.count("--csv"), o.resume, ": the run trained on ", note("source"),
                    ", and --resume reads a run's rows again from its CSV file only; resume it with the library on "
                    "the same rows (FitOptions::resume; Python: fit(..., resume=checkpoint)), or give --csv FILE "
                    "holding the same rows with the run's column names");
    std::vector<std::string> targets;
    for (std::size_t i = 0; notes.count("target." + std::to_string(i)); ++i)
        targets.push_back(note("target." + std::to_string(i)));
    BRAIN_CHECK(!targets.empty(), ErrorCode::InvalidModelFile, o.resume,
                ": the checkpoint does not say which columns it was trained on (a checkpoint of the library's "
                "fit, or of brain train on an archive's own targets); resume it with the library "
                "(FitOptions::resume)");
    const std::string csv = cmd.count("--csv") ? o.source.csv : note("csv");
    double fraction = 0.0;
    const std::string fraction_text = note("validation");
    std::from_chars(fraction_text.data(), fraction_text.data() + fraction_text.size(), fraction);
    const std::uint64_t target = cmd.count("--epochs") ? o.epochs : checkpoint.run_epochs;
    BRAIN_CHECK_ARG(target > checkpoint.epochs_trained(), o.resume, " has trained ", checkpoint.epochs_trained(),
                    " epochs, which reaches ", cmd.count("--epochs") ? "--epochs " : "the run's ", target,
                    "; ask for more with --epochs N (the epoch count to reach)");
    if (!cmd.count("--csv")) {
        std::error_code ec;
        BRAIN_CHECK(std::filesystem::exists(csv, ec), ErrorCode::IoError, "the data file ", quote_excerpt(csv),
                    " that ", o.resume, " was trained on (recorded in the checkpoint) is not there",
                    std::filesystem::path(csv).is_relative() ? " from this working directory" : "",
                    "; give --csv FILE to name it (the same rows: the checkpoint checks them)");
    }
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
    // Early stopping comes from the checkpoint or from --early-stopping; without either these would act on nothing.
    // (A resumed plateau schedule keeps the monitor it was saved with.)
    if (!run.flags.patience)
        for (const char* watched : {"--min-delta", "--monitor"})
            if (cmd.count(watched))
                refuse_option_without(str(watched, " is early stopping's, but the run saved in ", o.resume,
                                          " has no early stopping and --early-stopping is not given; add "
                                          "--early-stopping PATIENCE or leave ",
                                          watched, " out"));
    if (cmd.count("--checkpoint-every")) run.flags.checkpoint_every = o.flags.checkpoint_every;
    if (cmd.count("--checkpoint-dir")) run.flags.checkpoint_dir = o.flags.checkpoint_dir;
    BRAIN_CHECK_ARG(!run.flags.checkpoint_every || !run.flags.checkpoint_dir.empty(),
                    "--checkpoint-every needs --checkpoint-dir DIR");
    if (cmd.count("--checkpoint-dir") && !run.flags.checkpoint_every)
        refuse_option_without(str("--checkpoint-dir names where checkpoints are written, but the run saved in ",
                                  o.resume,
                                  " writes none and --checkpoint-every is not given; add "
                                  "--checkpoint-every N or leave --checkpoint-dir out"));
    run.csv = csv;
    // The checkpoint resumed from is an input too: a checkpoint this run writes may not replace it.
    run.inputs = {csv, o.resume};
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
        "train",
        "Train a dense network on a CSV file (or a NumPy .npz archive or .npy files) on any backend, one "
        "progress line per epoch (loss, validation loss with --validation, learning rate, elapsed time), "
        "with an optional learning-rate schedule, early stopping and resumable checkpoints, then print the "
        "session stats and save the model (whole or not at all: never over a symbolic link, directory, "
        "device or an input). On error nothing is written. --resume FILE continues a run saved by "
        "--checkpoint-every exactly.");
    add_data_source_options(*cmd, o->source, true, "training data: a CSV file with a header row");
    add_column_list_option(
        *cmd, "--target", o->targets,
        "target column of --csv (repeat or comma-separate for several; '\\,' is a comma inside a "
        "name); a column with text cells is a class label, one-hot encoded. With --npz: columns of "
        "its 'features' when it has no 'targets'");
    cmd->add_option("--classes", o->classes,
                    "train a softmax classifier on this column's values as classes, numbers (digits 0-9, codes) or "
                    "text; the labels are kept in the model and printed back by predict (implies --target COLUMN)");
    auto* init = cmd->add_option(
        "--init", o->init,
        "continue training this model file (from brain train or brain import): its layers, "
        "loss, standardisation, names and optimizer stay (--lr, --momentum and --weight-decay change "
        "that setting, --optimizer starts another kind)");
    auto* layers = cmd->add_option("--layers", o->layers, "hidden layer widths, comma-separated")
                       ->delimiter(',')
                       ->capture_default_str()
                       ->check(whole_number(UINT32_MAX));
    auto* activation = cmd->add_option("--activation", o->activation,
                                       "hidden activation: linear, relu, leaky_relu, sigmoid, tanh, gelu")
                           ->capture_default_str();
    auto* output =
        cmd->add_option("--output-activation", o->output_activation,
                        "output activation: linear, sigmoid or softmax (default: softmax for class-label "
                        "targets, linear otherwise)");
    auto* loss = cmd->add_option(
        "--loss", o->loss, "mse, bce or cce (default: bce for a sigmoid output, cce for softmax, mse otherwise)");
    const std::vector<CLI::Option*> optimizer_options{
        cmd->add_option("--optimizer", o->optimizer, "adam, sgd or adamw")->capture_default_str(),
        cmd->add_option("--lr", o->learning_rate, "learning rate")
            ->capture_default_str()
            ->check(finite_above(0, false)),
        cmd->add_option("--momentum", o->momentum, "SGD momentum (with --optimizer sgd)")
            ->capture_default_str()
            ->check(finite_above(0, true)),
        cmd->add_option("--weight-decay", o->weight_decay, "AdamW decoupled weight decay (with --optimizer adamw)")
            ->capture_default_str()
            ->check(finite_above(0, true))};
    cmd->add_option("--epochs", o->epochs, "epochs to train (with --resume: the epoch count to reach)")
        ->capture_default_str()
        ->check(whole_number_in(1, UINT32_MAX));
    cmd->add_option("--batch", o->batch, "batch size (default: 256, or all rows when there are fewer)")
        ->check(whole_number_in(1, UINT32_MAX));
    cmd->add_option("--validation", o->validation,
                    "fraction of rows held out (shuffled with --seed) to report a validation loss per epoch")
        ->capture_default_str()
        ->check(fraction());
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
        ->check(whole_number_in(1, UINT64_MAX));
    add_process_options(*cmd, o->processes);
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
        ->capture_default_str()
        ->check(finite_above(0, true));
    auto* every = cmd->add_option("--checkpoint-every", o->flags.checkpoint_every,
                                  "write a resumable checkpoint every N epochs (to --checkpoint-dir)")
                      ->check(whole_number(UINT32_MAX) & CLI::Range(1u, UINT32_MAX));
    auto* dir = cmd->add_option("--checkpoint-dir", o->flags.checkpoint_dir,
                                "where --checkpoint-every writes epoch-N.json (created if missing)")
                    ->check(file_name());
    every->needs(dir);
    cmd->add_option("--resume", o->resume,
                    "continue the run saved in this checkpoint (written by --checkpoint-every) exactly: the same "
                    "network, optimizer state, batch order, schedule and early stopping; give --epochs to go past "
                    "the run's own count");
    cmd->add_option("--out", o->out,
                    "where to save the trained model (JSON); checked before training: a symbolic link, directory, "
                    "device, FIFO, socket or an input file is refused")
        ->required()
        ->check(file_name());
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
    cmd->callback([o, cmd, optimizer_options, &exit_code] {
        o->optimizer_flags = {};
        if (optimizer_options[0]->count()) o->optimizer_flags.kind = o->optimizer;
        if (optimizer_options[1]->count()) o->optimizer_flags.learning_rate = o->learning_rate;
        if (optimizer_options[2]->count()) o->optimizer_flags.momentum = o->momentum;
        if (optimizer_options[3]->count()) o->optimizer_flags.weight_decay = o->weight_decay;
        if (!o->resume.empty()) {
            exit_code = run_resume(*o, *cmd);
            return;
        }
        // A usage error like every other missing option (exit 106 and the usage hint), naming both ways to say it.
        if (o->targets.empty() && o->classes.empty() && o->source.npz.empty() && o->source.npy_features.empty())
            throw CLI::RequiredError("--target COLUMN (or --classes COLUMN for a column of classes)");
        refuse_unused_options(*o, *cmd);
        exit_code = run_train(*o);
    });
}

} // namespace brain::app
