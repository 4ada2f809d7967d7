// Exercise 2: the crossover. The same architecture (in -> 256 -> 256 -> 1, Adam, batch 256) at input sizes 16,
// 64, 256 and 1024, trained on the CPU and on the GPU; prints the speedup per size and writes it as CSV
// (scripts/plot-crossover draws the image from it).
//   exercise_crossover [--backend cuda:0] [--budget 8192] [--epochs 5] [--rows 16384] [--out crossover.csv]
#include "example_support.hpp"
#include "synthetic.hpp"

#include <brain/brain.hpp>
#include <chrono>
#include <fstream>
#include <iostream>
#include <sstream>

int main(int argc, char** argv) {
    CLI::App app{"Exercise 2: CPU against GPU speedup at input sizes 16, 64, 256 and 1024."};
    brain::examples::ExampleOptions options;
    options.epochs = 5;
    std::size_t rows = 16384;
    std::string out = "crossover.csv";
    brain::examples::add_example_options(app, options);
    app.add_option("--rows", rows, "rows per data set")->capture_default_str();
    app.add_option("--out", out, "CSV of input size, cpu seconds, gpu seconds, speedup")->capture_default_str();
    BRAIN_EXAMPLE_PARSE(app, argc, argv);

    return brain::examples::run_example([&]() -> int {
        const auto backend = brain::TrainingBackend::parse(options.backend, options.budget_mib);
        std::ostringstream csv;
        csv << "input_size,cpu_seconds,gpu_seconds,speedup\n";
        bool gpu_ok = true;
        // The first use of a device pays for its context and kernel compilation (11.7's "first run" skew): pay
        // it once, untimed, so the smallest model is not charged with it.
        try {
            auto warm = brain::Network::builder()
                            .input_size(16)
                            .dense(16, brain::Activation::Relu)
                            .dense(1, brain::Activation::Linear)
                            .build();
            warm.fit_with_backend(brain::app::make_regression(256, 16, 1), brain::TrainConfig{1, 256, true, 1},
                                  backend);
        } catch (const brain::Error& e) {
            gpu_ok = false;
            if (brain::examples::explain_backend_error(e, backend) != 0) return 2;
        }
        for (std::size_t inputs : {16, 64, 256, 1024}) {
            const auto data = brain::app::make_regression(rows, inputs, 7);
            const auto model = brain::examples::chapter_network(inputs);
            const brain::TrainConfig config{options.epochs, 256, true, 7};
            const auto time = [&](const brain::TrainingBackend& b) {
                brain::Network m = model;
                const auto start = std::chrono::steady_clock::now();
                m.fit_with_backend(data, config, b);
                return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
            };
            const double cpu = time(brain::TrainingBackend::cpu());
            double gpu = 0.0;
            if (gpu_ok) {
                try {
                    gpu = time(backend);
                } catch (const brain::Error& e) {
                    gpu_ok = false;
                    if (brain::examples::explain_backend_error(e, backend) != 0) return 2;
                }
            }
            std::cout << "input " << inputs << ": cpu " << cpu << " s";
            if (gpu_ok) std::cout << ", gpu " << gpu << " s, speedup " << cpu / gpu << "x";
            std::cout << "\n";
            csv << inputs << "," << cpu << "," << (gpu_ok ? gpu : 0.0) << "," << (gpu_ok ? cpu / gpu : 0.0) << "\n";
        }
        brain::app::write_file_atomically(out, csv.str());
        std::cout << "wrote " << out << (gpu_ok ? "" : " (CPU times only)") << "\n";
        return 0;
    });
}
