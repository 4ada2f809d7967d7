// Exercise 4: a small tabular classifier (the project's churn-like data set) on the GPU, which is slower than
// the CPU for a model this small; the stats show where the time goes (setup against training, batches, bytes).
//   exercise_churn_on_gpu [--backend cuda:0] [--budget 8192] [--epochs 30]
#include "example_support.hpp"
#include "synthetic.hpp"

#include <brain/brain.hpp>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <iostream>

int main(int argc, char** argv) {
    CLI::App app{"Exercise 4: the churn classifier on the GPU and on the CPU, with the stats of both."};
    brain::examples::ExampleOptions options;
    options.epochs = 30;
    brain::examples::add_example_options(app, options);
    BRAIN_EXAMPLE_PARSE(app, argc, argv);

    return brain::examples::run_example([&]() -> int {
        const auto csv = std::filesystem::temp_directory_path() / "brain-exercise-churn.csv";
        brain::app::write_file_atomically(csv, brain::app::generate_csv(brain::app::SyntheticKind::Churn, 5000, 4));
        brain::CsvOptions csv_options;
        csv_options.target_columns = {"churned"};
        auto data = brain::Dataset::from_csv(csv, csv_options);
        std::filesystem::remove(csv);
        data.standardize();
        const auto model = brain::Network::builder()
                               .input_size(data.input_width())
                               .dense(32, brain::Activation::Relu)
                               .dense(16, brain::Activation::Relu)
                               .dense(data.target_width(), brain::Activation::Softmax)
                               .optimizer(brain::Optimizer::adam(0.005f))
                               .seed(1)
                               .build();
        const brain::TrainConfig config{options.epochs, 64, true, 2};
        const auto run = [&](const brain::TrainingBackend& b) {
            brain::Network m = model;
            const auto start = std::chrono::steady_clock::now();
            const auto report = m.fit_with_backend(data, config, b);
            const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
            const auto eval = m.evaluate(data);
            std::cout << b.describe() << ": " << seconds << " s, loss " << eval.loss << ", accuracy "
                      << eval.accuracy.value_or(0.0f) << "\n"
                      << report.stats << "\n";
            return std::pair{seconds, report.stats};
        };
        const auto [cpu_seconds, cpu_stats] = run(brain::TrainingBackend::cpu());
        const auto backend = brain::TrainingBackend::parse(options.backend, options.budget_mib);
        try {
            const auto [gpu_seconds, gpu_stats] = run(backend);
            const double setup = std::chrono::duration<double>(gpu_stats.setup_time).count();
            const double train = std::chrono::duration<double>(gpu_stats.training_time).count();
            std::cout << "gpu/cpu time: " << gpu_seconds / cpu_seconds << "x; on the GPU, setup " << setup
                      << " s and training " << train << " s for " << gpu_stats.batches << " batches ("
                      << (train / static_cast<double>(gpu_stats.batches)) * 1e6
                      << " us per batch of 64 rows: latency-bound, a step this small keeps the GPU mostly idle)\n";
        } catch (const brain::Error& e) {
            return brain::examples::explain_backend_error(e, backend);
        }
        return 0;
    });
}
