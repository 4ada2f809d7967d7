// Chapter 11.6 with chapter 7's early stopping: one TrainingSession keeps the device warm for the whole run (fit
// opens it once), the weights come back to the host only when the loss improved, which is also when best.json is
// saved, and training stops after --patience epochs without improvement, ending with the best epoch's weights.
// The chapter's hand-written loop is two callbacks here: EarlyStopping and ModelCheckpoint.
//   training_session [--backend cuda:0] [--budget 8192] [--epochs 50] [--patience 5] [--out best.json]
#include "example_support.hpp"
#include "synthetic.hpp"

#include <brain/brain.hpp>
#include <cstdio>
#include <iostream>
#include <memory>

int main(int argc, char** argv) {
    CLI::App app{
        "Chapter 11.6: one TrainingSession for a whole run with early stopping and best-model checkpoints "
        "(the EarlyStopping and ModelCheckpoint callbacks). Our library has a CPU session too, so --backend "
        "cpu runs the same run without a GPU."};
    brain::examples::ExampleOptions options;
    std::uint32_t patience = 5;
    std::size_t rows = 8192;
    std::string out = "best.json";
    brain::examples::add_example_options(app, options);
    app.add_option("--patience", patience, "stop after this many epochs without improvement")
        ->capture_default_str();
    app.add_option("--rows", rows, "rows of the synthetic regression data set")->capture_default_str();
    app.add_option("--out", out, "where the best model is saved")->capture_default_str();
    BRAIN_EXAMPLE_PARSE(app, argc, argv);

    return brain::examples::run_example([&] {
        const brain::Dataset data = brain::app::make_regression(rows, 16, 2024);
        brain::Network model = brain::examples::chapter_network(16);

        const auto backend = brain::TrainingBackend::parse(options.backend, options.budget_mib);

        // Chapter 7's pattern: checkpoint on improvement, stop on patience.
        brain::EarlyStoppingOptions stopping;
        stopping.monitor = "loss";
        stopping.patience = patience;
        auto early = std::make_shared<brain::EarlyStopping>(stopping);
        auto best = std::make_shared<brain::ModelCheckpoint>(brain::ModelCheckpointOptions{
            out, 1, true, "loss", brain::MonitorMode::Min, false /* the model file */, {}});
        brain::FitOptions fit;
        fit.callbacks = {early, best};
        fit.on_epoch_end = [&](brain::FitContext& context) {
            char line[96];
            std::snprintf(line, sizeof line, "epoch %llu: loss %.6f",
                          static_cast<unsigned long long>(context.epoch() - 1),
                          static_cast<double>(context.loss()));
            std::cout << line; // only this float crossed back
            if (!best->written().empty() && early->best_epoch() == context.epoch())
                std::cout << "  (improved: checkpointed, saved " << out << ")";
            std::cout << "\n";
        };

        brain::FitReport report;
        try {
            report = model.fit_with_backend(data, brain::TrainConfig{options.epochs, 256, true, 7}, backend, fit);
        } catch (const brain::Error& e) {
            return brain::examples::explain_backend_error(
                e, backend, "no session was opened; run with --backend cpu to see the same run on the CPU session");
        }
        if (!report.stop_reason.empty()) std::cout << report.stop_reason << "\n";
        std::cout << report.stats << "\n";
        std::printf("best loss %.6f at epoch %llu; %llu checkpoints in %zu epochs; best model in %s\n",
                    early->best_value().value_or(0.0),
                    static_cast<unsigned long long>(early->best_epoch().value_or(1) - 1),
                    static_cast<unsigned long long>(report.weight_copies), report.epoch_losses.size(), out.c_str());
        return 0;
    });
}
