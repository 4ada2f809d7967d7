// --rank, --world-size, --rendezvous and their environment variables (process_options.hpp).
#include "process_options.hpp"

#include <brain/error.hpp>
#include <charconv>
#include <cstdlib>

namespace brain::app {

namespace {

// The environment variable `name` as a number >= 0, if set.
std::optional<int> from_environment(const char* name) {
    const char* text = std::getenv(name);
    if (!text || !*text) return std::nullopt;
    const std::string value = text;
    int out = 0;
    const auto [end, ec] = std::from_chars(value.data(), value.data() + value.size(), out);
    BRAIN_CHECK_ARG(ec == std::errc() && end == value.data() + value.size() && out >= 0,
                    "the environment variable ", name, " is \"", value, "\"; expected a whole number of 0 or more");
    return out;
}

} // namespace

void add_process_options(CLI::App& command, ProcessOptions& options) {
    command.add_option("--rank", options.rank,
                       "this process's rank among --world-size processes training together (default: RANK, or 0)");
    command.add_option("--world-size", options.world_size,
                       "processes training together, each on its own devices (default: WORLD_SIZE, or 1)");
    command.add_option("--rendezvous", options.rendezvous,
                       "where the processes meet: file:<path> on a file system every process sees, or "
                       "tcp:<host>:<port> where rank 0 listens");
}

TrainingBackend with_process_options(const TrainingBackend& backend, bool spec_has_device,
                                     const ProcessOptions& options) {
    const int world = options.world_size ? *options.world_size : from_environment("WORLD_SIZE").value_or(1);
    const int rank = options.rank ? *options.rank : from_environment("RANK").value_or(0);
    BRAIN_CHECK_ARG(world >= 1, "--world-size is ", world, "; expected 1 or more processes");
    BRAIN_CHECK_ARG(rank >= 0 && rank < world, "the rank is ", rank, " (", options.rank ? "--rank" : "RANK",
                    ") but the world has ", world, " process(es) (",
                    options.world_size ? "--world-size" : "WORLD_SIZE", "); expected 0 <= rank < ", world);
    BRAIN_CHECK_ARG(world == 1 || !options.rendezvous.empty(), "a run over ", world,
                    " processes needs --rendezvous file:<path> or tcp:<host>:<port>, the same for every rank");
    TrainingBackend out = backend;
    if (!spec_has_device && !backend.is_cpu())
        if (const auto local = from_environment("LOCAL_RANK")) out = out.with_devices({*local});
    return world > 1 ? out.with_processes(rank, world, options.rendezvous) : out;
}

} // namespace brain::app
