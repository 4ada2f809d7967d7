// Exercise 1: the doctor under memory pressure. Probes the device with a budget, then starts a second process
// (gpu_hog) that holds most of the card's memory, probes again — free memory drops and the allocation test fails
// for a budget that no longer fits — and probes once more after the hog exits.
//   exercise_memory_pressure [--backend cuda:0] [--budget 8192] [--hog-fraction 0.9]
#include "example_support.hpp"

#include <brain/brain.hpp>

#include <csignal>
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <string>
#include <sys/wait.h>
#include <unistd.h>

namespace {

void show(const char* when, const brain::AcceleratorReport& r) {
    std::cout << "== " << when << "\n" << r << "\n";
}

} // namespace

int main(int argc, char** argv) {
    CLI::App app{"Exercise 1: accelerator_doctor while another process holds most of the GPU's memory."};
    brain::examples::ExampleOptions options;
    double fraction = 0.9;
    brain::examples::add_example_options(app, options);
    app.add_option("--hog-fraction", fraction, "share of the free memory the second process takes")
        ->capture_default_str();
    BRAIN_EXAMPLE_PARSE(app, argc, argv);

    return brain::examples::run_example([&]() -> int {
        const auto backend = brain::TrainingBackend::parse(options.backend, options.budget_mib);
        const auto probe = brain::examples::probe_device(backend);
        if (!probe.report) return probe.exit_status.value_or(0);
        const auto& before = probe.report;
        show("before", *before);
        const std::int64_t free_mib = before->free_memory_mib.value_or(before->total_memory_mib);
        const auto hog_mib = static_cast<long long>(static_cast<double>(free_mib) * fraction);
        const auto hog = std::filesystem::path(argv[0]).parent_path() / "gpu_hog";
        if (!std::filesystem::exists(hog)) {
            std::cout << "gpu_hog was not built (it needs the CUDA toolkit); cannot apply memory pressure\n";
            return 0;
        }
        int pipe_fds[2];
        if (pipe(pipe_fds) != 0) return 2;
        const pid_t child = fork();
        if (child == 0) {
            dup2(pipe_fds[1], STDOUT_FILENO);
            close(pipe_fds[0]);
            const std::string mib = std::to_string(hog_mib);
            const std::string device = std::to_string(backend.device());
            execl(hog.c_str(), "gpu_hog", mib.c_str(), device.c_str(), static_cast<char*>(nullptr));
            _exit(127);
        }
        close(pipe_fds[1]);
        char line[128] = {};
        const ssize_t n = read(pipe_fds[0], line, sizeof(line) - 1); // waits for "ready <N> MiB"
        if (n <= 0) {
            std::cout << "the second process could not take " << hog_mib << " MiB\n";
            waitpid(child, nullptr, 0);
            return 2;
        }
        std::cout << "second process holds " << hog_mib << " MiB\n";
        const auto during = brain::accelerator_doctor(backend);
        show("during (another process holds memory)", *during);
        kill(child, SIGKILL);
        waitpid(child, nullptr, 0);
        const auto after = brain::accelerator_doctor(backend);
        show("after the second process exited", *after);
        std::cout << "free memory " << before->free_memory_mib.value_or(-1) << " -> "
                  << during->free_memory_mib.value_or(-1) << " -> " << after->free_memory_mib.value_or(-1)
                  << " MiB; allocation test " << std::boolalpha << before->allocation_test << " -> "
                  << during->allocation_test << " -> " << after->allocation_test << "\n";
        return 0;
    });
}
