// brain train's run: Network::fit_with_backend with a progress hook, EarlyStopping, ModelCheckpoint and the
// schedule, then the report. The run is the library's own fit, so the command and a program behave alike.
#include "train_run.hpp"

#include "app_support.hpp"
#include "commands.hpp"
#include "network_options.hpp"
#include "progress.hpp"

#include <charconv>
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <memory>
#include <system_error>

namespace brain::app {

void print_evaluation(const char* what, const Evaluation& e) {
    std::cout << what << " loss " << e.loss;
    if (e.accuracy) std::cout << ", accuracy " << *e.accuracy;
    if (e.classification) std::cout << ", macro F1 " << e.classification->macro.f1;
    if (e.regression && e.regression->r2.size() == 1)
        std::cout << ", rmse " << e.regression->rmse[0] << ", r2 " << e.regression->r2[0];
    std::cout << "\n";
}

namespace {

std::string number_text(double value) {
    char text[32];
    const auto end = std::to_chars(text, text + sizeof text, value).ptr;
    return std::string(text, end);
}

// The value after `key` in the notes, if any.
const std::string* note(const std::map<std::string, std::string>& notes, const std::string& key) {
    const auto it = notes.find(key);
    return it == notes.end() ? nullptr : &it->second;
}

std::uint64_t whole_note(const std::map<std::string, std::string>& notes, const std::string& key) {
    const std::string* text = note(notes, key);
    std::uint64_t value = 0;
    if (!text || std::from_chars(text->data(), text->data() + text->size(), value).ec != std::errc())
        BRAIN_THROW(ErrorCode::InvalidModelFile, "the checkpoint's note ", key, " is not a whole number");
    return value;
}

} // namespace

void store_flags(const RunFlags& flags, std::map<std::string, std::string>& notes) {
    if (flags.patience) notes["early_stopping"] = std::to_string(*flags.patience);
    if (!flags.monitor.empty()) notes["monitor"] = flags.monitor;
    if (flags.min_delta != 0.0) notes["min_delta"] = number_text(flags.min_delta);
    if (flags.checkpoint_every) {
        notes["checkpoint_every"] = std::to_string(*flags.checkpoint_every);
        notes["checkpoint_dir"] = flags.checkpoint_dir;
    }
}

RunFlags stored_flags(const std::map<std::string, std::string>& notes) {
    RunFlags flags;
    if (note(notes, "early_stopping"))
        flags.patience =
            static_cast<std::uint32_t>(std::min<std::uint64_t>(whole_note(notes, "early_stopping"), UINT32_MAX));
    if (const std::string* monitor = note(notes, "monitor")) flags.monitor = *monitor;
    if (const std::string* delta = note(notes, "min_delta"))
        std::from_chars(delta->data(), delta->data() + delta->size(), flags.min_delta);
    if (note(notes, "checkpoint_every")) {
        flags.checkpoint_every =
            static_cast<std::uint32_t>(std::min<std::uint64_t>(whole_note(notes, "checkpoint_every"), UINT32_MAX));
        if (const std::string* dir = note(notes, "checkpoint_dir")) flags.checkpoint_dir = *dir;
    }
    return flags;
}

int run_training(TrainRun& run) {
    FitOptions options;
    options.validation = run.validation ? &*run.validation : nullptr;
    options.schedule = run.schedule;
    options.resume = run.resume;
    options.checkpoint_notes = run.notes;
    store_flags(run.flags, options.checkpoint_notes);
    const std::vector<std::filesystem::path> inputs =
        run.inputs.empty() ? std::vector<std::filesystem::path>{run.csv} : run.inputs;

    std::shared_ptr<EarlyStopping> early;
    if (run.flags.patience) {
        EarlyStoppingOptions e;
        e.patience = *run.flags.patience;
        e.monitor = run.flags.monitor;
        e.min_delta = run.flags.min_delta;
        early = std::make_shared<EarlyStopping>(e);
        options.callbacks.push_back(early);
    }
    std::shared_ptr<ModelCheckpoint> checkpoints;
    if (run.flags.checkpoint_every) {
        const std::filesystem::path dir = run.flags.checkpoint_dir;
        std::error_code ec;
        std::filesystem::create_directories(dir, ec);
        BRAIN_CHECK(!ec, ErrorCode::IoError, "cannot create the checkpoint directory ", quote_excerpt(dir.string()),
                    " (", ec.message(), "); choose a directory you can write (--checkpoint-dir)");
        ModelCheckpointOptions c;
        c.path = dir / "epoch-{epoch}.json";
        c.every_epochs = *run.flags.checkpoint_every;
        c.inputs = inputs;
        checkpoints = std::make_shared<ModelCheckpoint>(c);
        options.callbacks.push_back(checkpoints);
        // The model (--out) and a checkpoint of this run may not be one file: the later write would replace the
        // other.
        if (!run.out.empty())
            for (const auto& path :
                 checkpoints->paths_between(run.network.epochs_trained() + 1, run.target_epochs)) {
                check_output_path(path, inputs); // what is wrong with the path alone is said as such
                try {
                    check_output_paths({run.out, path}, inputs);
                } catch (const Error&) {
                    BRAIN_THROW(ErrorCode::IoError, "--out ", quote_excerpt(run.out),
                                " is also a checkpoint this run "
                                "writes (",
                                quote_excerpt(path.string()), ", every ", c.every_epochs,
                                " epochs to --checkpoint-dir ", quote_excerpt(dir.string()),
                                "); choose another --out or --checkpoint-dir");
                }
            }
    }
    // A plateau schedule watches what early stopping watches.
    if (run.schedule && run.schedule->monitors() && run.schedule->plateau().monitor.empty() &&
        !run.flags.monitor.empty()) {
        PlateauOptions plateau = run.schedule->plateau();
        plateau.monitor = run.flags.monitor;
        options.schedule = LearningRateSchedule::reduce_on_plateau(plateau);
    }

    const Network& network = run.network;
    std::cout << "Training " << network.layers().front().inputs;
    for (const auto& layer : network.layers())
        std::cout << " -> " << layer.outputs << " " << to_string(layer.activation);
    std::cout << " (" << to_string(network.loss()) << ", " << describe_optimizer(network.optimizer()) << ") on "
              << run.backend.describe() << ", batch " << run.config.batch_size << "\n";
    std::cout << "data: " << run.csv << ": " << run.train.size() << " training rows"
              << (run.validation ? str(", ", run.validation->size(), " validation rows") : std::string()) << ", "
              << run.train.input_width() << " features -> " << run.train.target_width() << " outputs";
    if (const auto& labels = run.train.class_labels(); !labels.empty()) {
        std::cout << " (classes:";
        for (std::size_t k = 0; k < labels.size() && k < 20; ++k) std::cout << " " << printable(labels[k]);
        if (labels.size() > 20) std::cout << " ... (" << labels.size() << " in all)";
        std::cout << ")";
    }
    std::cout << (run.train.standardization() ? ", standardized" : "") << "\n";
    if (run.resume)
        std::cout << "resuming: epoch " << network.epochs_trained() << " of " << run.target_epochs
                  << " done; optimizer step " << network.optimizer_step() << "\n";
    if (const auto& s = options.schedule ? options.schedule : (run.resume ? run.resume->schedule : std::nullopt))
        std::cout << "learning-rate schedule: " << s->to_string() << "\n";
    if (early)
        std::cout << "early stopping: patience " << *run.flags.patience << " on "
                  << (run.flags.monitor.empty() ? (run.validation ? "val_loss" : "loss") : run.flags.monitor)
                  << ", restoring the best epoch's weights\n";
    if (checkpoints)
        std::cout << "checkpoints: every " << *run.flags.checkpoint_every << " epochs to "
                  << checkpoints->path_for(0).parent_path().string() << "/epoch-N.json\n";
    // Which plugin file serves the backend (the first regular libbrain_<name>.so on the search path).
    const PluginRecord plugin = load_plugin(run.backend.plugin_name());
    std::cout << "plugin: " << plugin.path.string() << (plugin.version.empty() ? "" : " " + plugin.version) << "\n"
              << std::flush;

    EpochProgress progress(std::cout, run.target_epochs, stdout_is_terminal());
    options.on_epoch_end = [&progress](FitContext& context) {
        std::optional<float> validation_loss;
        if (context.validation()) validation_loss = context.validation()->loss;
        progress.update(context.epoch(), context.loss(), validation_loss, context.learning_rate());
    };
    FitReport report;
    try {
        report = run.network.fit_with_backend(run.train, run.config, run.backend, options);
        progress.finish();
    } catch (...) {
        progress.finish();
        throw;
    }

    std::cout << report.stats << "\n";
    print_evaluation("training:  ", run.network.evaluate(run.train));
    if (run.validation) print_evaluation("validation:", run.network.evaluate(*run.validation));
    if (checkpoints && !checkpoints->written().empty()) {
        std::cout << "checkpoints written:";
        for (const auto& path : checkpoints->written()) std::cout << " " << path.string();
        std::cout << "\n";
    }
    // Every rank holds the same weights; rank 0 writes them.
    if (run.backend.rank() != 0) {
        std::cout << "rank " << run.backend.rank() << " of " << run.backend.world_size()
                  << ": rank 0 saves the model\n";
        return exit_ok;
    }
    require_standard_output(str("'", run.out, "' is left as it was"));
    run.network.save_json(run.out, inputs);
    std::cout << "saved model to " << run.out << "\n";
    if (!report.stop_reason.empty())
        std::cout << "stopped after epoch " << run.network.epochs_trained() << ": " << report.stop_reason << "\n";
    if (report.restored_epoch && early && early->best_value())
        std::cout << "best epoch " << *report.restored_epoch << " (" << early->monitor() << " "
                  << *early->best_value() << "): early stopping restored its weights\n";
    return exit_ok;
}

std::string describe_layers(const std::vector<LayerSpec>& layers) {
    std::string s = std::to_string(layers.front().inputs);
    for (const auto& layer : layers) s += str(" -> ", layer.outputs, " ", to_string(layer.activation));
    return s;
}

} // namespace brain::app
