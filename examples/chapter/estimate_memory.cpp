// Chapter 11.4: what a network and batch size will cost, before going near a device; then, if a device is
// there, whether it fits what the device has free.
//   estimate_memory [--batch 256] [--budget 8192] [--inputs 16] [--backend cuda:0]
#include "example_support.hpp"

#include <brain/brain.hpp>
#include <iomanip>
#include <iostream>

int main(int argc, char** argv) {
    CLI::App app{"Chapter 11.4: estimate_tensor_memory_mib for the chapter's 16-256-256-1 network."};
    brain::examples::ExampleOptions options;
    std::size_t batch_size = 256;
    std::size_t inputs = 16;
    app.add_option("--batch", batch_size, "batch size")->capture_default_str();
    app.add_option("--inputs", inputs, "input width")->capture_default_str();
    app.add_option("--backend", options.backend, "device whose free memory to compare with")->capture_default_str();
    app.add_option("--budget", options.budget_mib, "memory budget in MiB")->capture_default_str();
    BRAIN_EXAMPLE_PARSE(app, argc, argv);

    return brain::examples::run_example([&] {
        const brain::Network model = brain::examples::chapter_network(inputs);

        const std::uint64_t needed = brain::estimate_tensor_memory_mib(model, batch_size);
        std::cout << needed << " MiB of tensors for batch " << batch_size << "\n";

        // Parameters cost the same whatever the batch; activations scale with it, so batch_size is the lever.
        std::cout << "\nbatch    MiB\n";
        for (std::size_t b : {32, 256, 2048, 16384, 131072})
            std::cout << std::setw(6) << b << std::setw(7) << brain::estimate_tensor_memory_mib(model, b) << "\n";
        const std::size_t largest = brain::largest_batch_within(model, options.budget_mib * 1024ull * 1024ull);
        std::cout << "\nbudget " << options.budget_mib << " MiB: batch " << batch_size
                  << (needed <= options.budget_mib ? " fits" : " does not fit")
                  << "; the largest batch within it is " << largest << "\n";

        // The estimate needs no device. Comparing it with the card's free memory does.
        const auto backend = brain::TrainingBackend::parse(options.backend, options.budget_mib);
        const auto probe = brain::examples::probe_device(backend);
        if (!probe.report) return probe.exit_status.value_or(0);
        const brain::AcceleratorReport& report = *probe.report;
        if (report.free_memory_mib)
            std::cout << report.name << " has " << *report.free_memory_mib << " MiB free: the estimate "
                      << (static_cast<std::int64_t>(needed) <= *report.free_memory_mib ? "fits" : "does NOT fit")
                      << "; allocation test for the budget: " << std::boolalpha << report.allocation_test << "\n";
        else
            std::cout << report.name
                      << " does not report free memory; allocation test for the budget: " << std::boolalpha
                      << report.allocation_test << "\n";
        return 0;
    });
}
