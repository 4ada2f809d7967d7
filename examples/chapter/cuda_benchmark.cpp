// Chapter 11.7: measuring instead of assuming. The same model, the same data, the same config, trained on the
// CPU and on the GPU; prints both times and the speedup.
//   cuda_benchmark [--backend cuda:0] [--budget 8192] [--epochs 20] [--rows 16384] [--inputs 16] [--batch 256]
#include "example_support.hpp"
#include "synthetic.hpp"

#include <brain/brain.hpp>
#include <chrono>
#include <cstdio>
#include <iostream>

int main(int argc, char** argv) {
    CLI::App app{"Chapter 11.7: time fit on the CPU against fit_with_backend on a GPU."};
    brain::examples::ExampleOptions options;
    options.epochs = 20;
    std::size_t rows = 16384;
    std::size_t inputs = 16;
    std::size_t hidden = 256;
    std::uint32_t batch = 256;
    brain::examples::add_example_options(app, options);
    app.add_option("--rows", rows, "rows of the synthetic regression data set")->capture_default_str();
    app.add_option("--inputs", inputs, "input width (the crossover exercise varies it)")->capture_default_str();
    app.add_option("--hidden", hidden, "width of both hidden layers")->capture_default_str();
    app.add_option("--batch", batch, "batch size")->capture_default_str();
    BRAIN_EXAMPLE_PARSE(app, argc, argv);

    return brain::examples::run_example([&] {
#ifndef NDEBUG
        std::cout << "warning: this is a debug build; the CPU side is many times slower and the comparison "
                     "flatters the GPU. Build with -DCMAKE_BUILD_TYPE=Release.\n";
#endif
        const brain::Dataset data = brain::app::make_regression(rows, inputs, 2024);
        const brain::Network model = brain::Network::builder()
                                         .input_size(inputs)
                                         .dense(hidden, brain::Activation::Relu)
                                         .dense(hidden, brain::Activation::Relu)
                                         .dense(1, brain::Activation::Linear)
                                         .optimizer(brain::Optimizer::adam(0.001f))
                                         .seed(42)
                                         .build();
        const brain::TrainConfig config{options.epochs, batch, true, 7};
        const auto backend = brain::TrainingBackend::parse(options.backend, options.budget_mib);
        std::cout << "model " << inputs << "-" << hidden << "-" << hidden << "-1, " << rows << " rows, "
                  << options.epochs << " epochs, batch " << batch << "\n";

        const auto cpu_start = std::chrono::steady_clock::now();
        brain::Network cpu_model = model;
        const brain::FitReport cpu_report = cpu_model.fit(data, config);
        const auto cpu_time = std::chrono::steady_clock::now() - cpu_start;
        std::cout << "cpu " << brain::app::format_duration(cpu_time) << " (final loss "
                  << cpu_report.epoch_losses.back() << ")\n";

        brain::FitReport gpu_report;
        const auto gpu_start = std::chrono::steady_clock::now();
        brain::Network gpu_model = model;
        try {
            gpu_report = gpu_model.fit_with_backend(data, config, backend);
        } catch (const brain::Error& e) {
            return brain::examples::explain_backend_error(
                e, backend, "no GPU time to compare; the CPU time above is the only measurement");
        }
        const auto gpu_time = std::chrono::steady_clock::now() - gpu_start;

        const double speedup =
            std::chrono::duration<double>(cpu_time).count() / std::chrono::duration<double>(gpu_time).count();
        std::printf("cpu %s, gpu %s, speedup %.2fx\n", brain::app::format_duration(cpu_time).c_str(),
                    brain::app::format_duration(gpu_time).c_str(), speedup);
        std::cout << "gpu final loss " << gpu_report.epoch_losses.back() << "; of the gpu time, setup took "
                  << brain::app::format_duration(gpu_report.stats.setup_time) << " and training "
                  << brain::app::format_duration(gpu_report.stats.training_time) << "\n";
        if (speedup < 1.5)
            std::cout << "below 1.5x: for this model the GPU is not worth the extra dependency and failure mode\n";
        return 0;
    });
}
