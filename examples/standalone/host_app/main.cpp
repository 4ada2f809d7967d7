// A host application: trains a small classifier on the CPU backend (or the one named by the first argument,
// e.g. "naive" or "cuda:0") and checks that it learned. Exit status 0 when it did.
#include <brain/brain.hpp>
#include <cmath>
#include <iostream>

int main(int argc, char** argv) {
    try {
        // Two noisy clusters: label 1 when x0 + x1 > 0.
        brain::Random rng(7); // brain's seeded generator: the same points with every compiler
        const std::size_t rows = 400;
        brain::Matrix x(rows, 2), y(rows, 1);
        for (std::size_t r = 0; r < rows; ++r) {
            x(r, 0) = static_cast<float>(rng.normal());
            x(r, 1) = static_cast<float>(rng.normal());
            y(r, 0) = x(r, 0) + x(r, 1) > 0.0f ? 1.0f : 0.0f;
        }
        brain::Dataset data(std::move(x), std::move(y));

        auto network = brain::Network::builder()
                           .input_size(2)
                           .dense(8, brain::Activation::Relu)
                           .dense(1, brain::Activation::Sigmoid)
                           .optimizer(brain::Optimizer::adam(0.05f))
                           .seed(3)
                           .build();
        const auto backend = argc > 1 ? brain::TrainingBackend::parse(argv[1], 256) : brain::TrainingBackend::cpu();
        const auto report = network.fit_with_backend(data, brain::TrainConfig{30, 32, true, 1}, backend);
        const auto evaluation = network.evaluate(data);
        std::cout << "brain " << brain::version() << " on " << backend.describe() << ": loss "
                  << report.epoch_losses.front() << " -> " << report.epoch_losses.back() << ", accuracy "
                  << evaluation.accuracy.value_or(0.0f) << "\n";
        if (!(evaluation.accuracy.value_or(0.0f) > 0.9f)) {
            std::cerr << "host_app: the network did not learn (accuracy below 0.9)\n";
            return 1;
        }
        return 0;
    } catch (const brain::Error& e) {
        std::cerr << "host_app: " << brain::to_string(e.code()) << ": " << e.what() << "\n";
        return 1;
    }
}
