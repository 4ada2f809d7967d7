// Chapter 11.5: training a dense network on the GPU. The one-line switch: fit becomes fit_with_backend.
//   fit_with_backend [--backend cuda:0] [--budget 8192] [--epochs 50] [--rows 8192] [--out model.json]
#include "example_support.hpp"
#include "synthetic.hpp"

#include <brain/brain.hpp>
#include <chrono>
#include <iostream>

int main(int argc, char** argv) {
    CLI::App app{"Chapter 11.5: a 16-256-256-1 network trained with fit_with_backend."};
    brain::examples::ExampleOptions options;
    std::size_t rows = 8192;
    std::string out;
    brain::examples::add_example_options(app, options);
    app.add_option("--rows", rows, "rows of the synthetic regression data set")->capture_default_str();
    app.add_option("--out", out, "save the trained model here (the same file a CPU run writes)");
    BRAIN_EXAMPLE_PARSE(app, argc, argv);

    return brain::examples::run_example([&] {
        const brain::Dataset data = brain::app::make_regression(rows, 16, 2024);

        brain::Network model = brain::examples::chapter_network(16);

        const brain::TrainConfig config{options.epochs, 256, true, 7};
        const auto backend = brain::TrainingBackend::parse(options.backend, options.budget_mib);
        const float before = model.evaluate(data).loss;

        brain::FitReport report;
        const auto start = std::chrono::steady_clock::now();
        try {
            report = model.fit_with_backend(data, config, backend);
        } catch (const brain::Error& e) {
            // No silent fallback: the error is the answer. The model keeps its initial weights.
            return brain::examples::explain_backend_error(e, backend,
                                                          "nothing was trained (no fallback to the CPU); run with "
                                                          "--backend cpu to train this network on the CPU plugin "
                                                          "instead");
        }
        const double seconds = brain::app::seconds_since(start);

        std::cout << "trained on " << backend.describe() << " for " << report.epoch_losses.size() << " epochs in "
                  << seconds << " s\n";
        std::cout << "loss before " << before << ", after first epoch " << report.epoch_losses.front()
                  << ", after last epoch " << report.epoch_losses.back() << "\n";
        std::cout << report.stats << "\n";

        // The trained weights live in the same Network: predict runs on the host, no device needed.
        const brain::Matrix first_rows = data.slice(0, 3).features();
        const brain::Matrix predicted = model.predict(first_rows);
        for (std::size_t r = 0; r < predicted.rows(); ++r)
            std::cout << "row " << r << ": predicted " << predicted(r, 0) << ", target " << data.targets()(r, 0)
                      << "\n";
        if (!out.empty()) {
            model.save_json(out);
            std::cout << "saved " << out << "\n";
        }
        return 0;
    });
}
