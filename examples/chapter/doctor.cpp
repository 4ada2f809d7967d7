// Chapter 11.3: asking the device what it can do, before committing a run to it.
//   doctor [--backend cuda:0] [--budget 8192]
#include "example_support.hpp"

#include <brain/brain.hpp>
#include <iostream>

int main(int argc, char** argv) {
    CLI::App app{"Chapter 11.3: probe a backend's device (accelerator_doctor) under a memory budget."};
    brain::examples::ExampleOptions options;
    app.add_option("--backend", options.backend, "cpu, cuda:<device>, metal:<device> or <plugin>:<device>")
        ->capture_default_str();
    app.add_option("--budget", options.budget_mib, "memory budget in MiB the allocation test really allocates")
        ->capture_default_str();
    BRAIN_EXAMPLE_PARSE(app, argc, argv);

    return brain::examples::run_example([&] {
        const auto backend = brain::TrainingBackend::parse(options.backend, options.budget_mib);
        const auto probe = brain::examples::probe_device(backend);
        if (!probe.report) return probe.exit_status.value_or(0);
        const brain::AcceleratorReport& report = *probe.report;
        // The chapter's println! lines, field by field.
        std::cout << report.name << " (" << report.revision << "), " << report.total_memory_mib << " MiB total, "
                  << (report.free_memory_mib ? brain::app::str("Some(", *report.free_memory_mib, ")")
                                             : std::string("None"))
                  << " MiB free\n";
        std::cout << "cuBLAS:  " << std::boolalpha << report.gemm_available << "\n";
        std::cout << "kernels: " << report.kernel_available << "\n";
        std::cout << "alloc:   " << report.allocation_test << "\n";
        if (!report.notes.empty()) std::cout << "notes:   " << report.notes << "\n";
        return 0;
    });
}
