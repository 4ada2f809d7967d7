// Chapter 11.6: keeping the device warm between epochs. A TrainingSession trains epoch by epoch; the weights
// stay on the device and come back (checkpoint) only when the loss improved, which is also when best.json is
// saved; training stops early after --patience epochs without improvement.
//   training_session [--backend cuda:0] [--budget 8192] [--epochs 50] [--patience 5] [--out best.json]
#include "example_support.hpp"
#include "synthetic.hpp"

#include <brain/brain.hpp>
#include <cstdio>
#include <iostream>
#include <limits>

int main(int argc, char** argv) {
    CLI::App app{"Chapter 11.6: a TrainingSession with per-epoch early stopping and best-model checkpoints. "
                 "Our library has a CPU session too, so --backend cpu runs the same loop without a GPU."};
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

        const brain::TrainConfig one_epoch{1, 256, true, 7};
        const auto backend = brain::TrainingBackend::parse(options.backend, options.budget_mib);

        std::optional<brain::TrainingSession> opened;
        try {
            opened.emplace(model, data, one_epoch, backend);
        } catch (const brain::Error& e) {
            return brain::examples::explain_backend_error(
                e, backend,
                "no session was opened; run with --backend cpu to see the same loop on the CPU session");
        }
        brain::TrainingSession& session = *opened;

        float best = std::numeric_limits<float>::infinity();
        std::uint32_t best_epoch = 0;
        std::uint32_t checkpoints = 0;
        std::uint32_t epochs_run = 0;
        for (std::uint32_t epoch = 0; epoch < options.epochs; ++epoch) {
            const float loss = session.train_epoch(); // only this float crosses back
            ++epochs_run;
            char line[96];
            std::snprintf(line, sizeof line, "epoch %u: loss %.6f", epoch, static_cast<double>(loss));
            std::cout << line;

            if (loss < best) {
                best = loss;
                best_epoch = epoch;
                const brain::Checkpoint checkpoint = session.checkpoint(); // the copy back to the host
                model.restore_checkpoint(checkpoint);
                model.save_json(out);
                ++checkpoints;
                std::cout << "  (improved: checkpointed, saved " << out << ")";
            }
            std::cout << "\n";
            if (epoch - best_epoch >= patience) {
                std::cout << "early stop: no improvement for " << patience << " epochs\n";
                break;
            }
        }

        std::cout << session.stats() << "\n";
        std::printf("best loss %.6f at epoch %u; %u checkpoints in %u epochs; best model in %s\n",
                    static_cast<double>(best), best_epoch, checkpoints, epochs_run, out.c_str());
        return 0;
    });
}
