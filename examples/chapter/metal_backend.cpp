// Chapter 11.8: the Metal backend request. The same doctor-then-session code as for CUDA; off Apple systems
// the Metal plugin answers every call with MetalFeatureDisabled instead of failing to build.
//   metal_backend [--backend metal:0] [--budget 8192] [--epochs 5]
#include "example_support.hpp"
#include "synthetic.hpp"

#include <brain/brain.hpp>
#include <iostream>

int main(int argc, char** argv) {
    CLI::App app{"Chapter 11.8: ask for the Metal backend; --backend runs the same code on any other backend."};
    brain::examples::ExampleOptions options;
    options.backend = "metal:0";
    options.epochs = 5;
    brain::examples::add_example_options(app, options);
    BRAIN_EXAMPLE_PARSE(app, argc, argv);

    return brain::examples::run_example([&] {
        const auto backend = brain::TrainingBackend::parse(options.backend, options.budget_mib);
        const brain::Dataset data = brain::app::make_regression(2048, 16, 2024);
        brain::Network model = brain::Network::builder()
                                   .input_size(16)
                                   .dense(64, brain::Activation::Relu)
                                   .dense(1, brain::Activation::Linear)
                                   .optimizer(brain::Optimizer::adam(0.001f))
                                   .seed(42)
                                   .build();
        // accelerator_doctor, TrainingSession, train_epoch, checkpoint and stats: unchanged from CUDA.
        const auto probe = brain::examples::probe_device(backend);
        if (probe.exit_status) return *probe.exit_status;
        if (probe.report) std::cout << *probe.report << "\n";
        try {
            brain::TrainingSession session(model, data, brain::TrainConfig{1, 256, true, 7}, backend);
            for (std::uint32_t epoch = 0; epoch < options.epochs; ++epoch)
                std::cout << "epoch " << epoch << ": loss " << session.train_epoch() << "\n";
            model.restore_checkpoint(session.checkpoint());
            std::cout << session.stats() << "\n";
        } catch (const brain::Error& e) {
            return brain::examples::explain_backend_error(e, backend);
        }
        return 0;
    });
}
