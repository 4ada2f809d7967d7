// Exercise 3: fit_with_backend called 50 times (one epoch each) against one TrainingSession of 50 epochs.
// Prints both wall times, the difference, and setup_time from the session's stats against that difference.
//   exercise_fit_vs_session [--backend cuda:0] [--budget 8192] [--epochs 50]
#include "example_support.hpp"
#include "synthetic.hpp"

#include <brain/brain.hpp>
#include <chrono>
#include <iostream>

int main(int argc, char** argv) {
    CLI::App app{"Exercise 3: 50 fit_with_backend calls against one 50-epoch TrainingSession."};
    brain::examples::ExampleOptions options;
    brain::examples::add_example_options(app, options);
    BRAIN_EXAMPLE_PARSE(app, argc, argv);

    return brain::examples::run_example([&]() -> int {
        const auto backend = brain::TrainingBackend::parse(options.backend, options.budget_mib);
        const auto data = brain::app::make_regression(4096, 16, 3);
        const auto model = brain::examples::chapter_network(16);
        const brain::TrainConfig one_epoch{1, 256, true, 7};
        try {
            brain::Network repeated = model;
            brain::AcceleratorStats last;
            std::chrono::nanoseconds setup_sum{0};
            const auto start = std::chrono::steady_clock::now();
            for (std::uint32_t e = 0; e < options.epochs; ++e) {
                const auto report = repeated.fit_with_backend(data, one_epoch, backend);
                setup_sum += report.stats.setup_time;
            }
            const double fit_seconds =
                std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();

            brain::Network held = model;
            const auto session_start = std::chrono::steady_clock::now();
            brain::TrainingSession session(held, data, one_epoch, backend);
            for (std::uint32_t e = 0; e < options.epochs; ++e) session.train_epoch();
            held.restore_checkpoint(session.checkpoint());
            const double session_seconds =
                std::chrono::duration<double>(std::chrono::steady_clock::now() - session_start).count();
            const auto stats = session.stats();
            const double setup = std::chrono::duration<double>(stats.setup_time).count();
            std::cout << options.epochs << " x fit_with_backend: " << fit_seconds << " s\n"
                      << "one TrainingSession of " << options.epochs << " epochs: " << session_seconds << " s\n"
                      << "difference: " << fit_seconds - session_seconds << " s\n"
                      << "setup_time of one session: " << setup << " s; x" << options.epochs - 1 << " = "
                      << setup * (options.epochs - 1) << " s (setup paid by the extra fit calls, measured: "
                      << std::chrono::duration<double>(setup_sum).count() - setup << " s)\n"
                      << "weights agree: "
                      << (repeated.parameters() == held.parameters() ? "bitwise" : "no (see docs/guide.md)") << "\n"
                      << stats << "\n";
        } catch (const brain::Error& e) {
            return brain::examples::explain_backend_error(e, backend);
        }
        return 0;
    });
}
