#include "plugin_name.hpp"

#include <brain/backend.hpp>
#include <brain/error.hpp>
#include <charconv>
#include <limits>

namespace brain {

namespace {
// A budget above 1 PiB is certainly a typo (or a negative number wrapped by the caller's cast).
constexpr std::uint64_t k_max_budget_mib = 1ull << 30;

void check_budget(std::uint64_t budget_mib, bool required, const char* backend) {
    BRAIN_CHECK_ARG(budget_mib <= k_max_budget_mib, "memory budget for ", backend, " is ", budget_mib,
                    " MiB, which is absurd (more than 1 PiB); pass the MiB your program may use, e.g. 8192");
    BRAIN_CHECK_ARG(!required || budget_mib > 0, "memory budget for ", backend,
                    " is 0 MiB; expected a positive number of MiB, e.g. 8192");
}
} // namespace

TrainingBackend::TrainingBackend(std::string plugin, int device, std::uint64_t budget_mib)
    : m_plugin(std::move(plugin)), m_devices{device}, m_budget_mib(budget_mib) {
    BRAIN_CHECK_ARG(device >= 0, "device index for ", m_plugin, " is ", device, "; expected 0 or more");
}

TrainingBackend TrainingBackend::cpu() {
    return TrainingBackend("cpu", 0, 0);
}

TrainingBackend TrainingBackend::cpu(std::uint64_t memory_budget_mib) {
    check_budget(memory_budget_mib, false, "cpu");
    return TrainingBackend("cpu", 0, memory_budget_mib);
}

TrainingBackend TrainingBackend::cuda(int device, std::uint64_t memory_budget_mib) {
    check_budget(memory_budget_mib, true, "cuda");
    return TrainingBackend("cuda", device, memory_budget_mib);
}

TrainingBackend TrainingBackend::cuda(std::vector<int> devices, std::uint64_t budget_per_device_mib) {
    check_budget(budget_per_device_mib, true, "cuda");
    return TrainingBackend("cuda", 0, budget_per_device_mib).with_devices(std::move(devices));
}

TrainingBackend TrainingBackend::cuda_all(std::uint64_t budget_per_device_mib) {
    check_budget(budget_per_device_mib, true, "cuda");
    TrainingBackend out("cuda", 0, budget_per_device_mib);
    out.m_devices.clear();
    out.m_all_devices = true;
    return out;
}

TrainingBackend TrainingBackend::metal(int device, std::uint64_t memory_budget_mib) {
    check_budget(memory_budget_mib, true, "metal");
    return TrainingBackend("metal", device, memory_budget_mib);
}

TrainingBackend TrainingBackend::plugin(std::string name, int device, std::uint64_t memory_budget_mib) {
    BRAIN_CHECK_ARG(!name.empty(), "plugin name is empty; expected e.g. \"cuda\" or the x of libbrain_x.so");
    const std::string problem = detail::plugin_name_problem(name);
    BRAIN_CHECK_ARG(problem.empty(), "plugin name ", quote_excerpt(name), " cannot name a backend: ", problem, "; ",
                    detail::k_plugin_name_rule, " (the x of libbrain_x.so)");
    check_budget(memory_budget_mib, false, name.c_str());
    return TrainingBackend(std::move(name), device, memory_budget_mib);
}

TrainingBackend TrainingBackend::parse(const std::string& spec, std::uint64_t memory_budget_mib) {
    const auto colon = spec.find(':');
    const std::string name = spec.substr(0, colon);
    std::vector<int> devices{0};
    bool all = false;
    if (colon != std::string::npos) {
        const std::string list = spec.substr(colon + 1);
        devices.clear();
        if (list == "all") {
            all = true;
        } else {
            // "0", "0,1", "2,3,1": distinct indices, in the order given.
            std::size_t begin = 0;
            for (;;) {
                const auto comma = list.find(',', begin);
                const std::string index = list.substr(begin, comma == std::string::npos ? comma : comma - begin);
                int device = 0;
                const auto [end, ec] = std::from_chars(index.data(), index.data() + index.size(), device);
                BRAIN_CHECK_ARG(ec == std::errc() && end == index.data() + index.size() && !index.empty(),
                                "backend ", quote_excerpt(spec), ": the device index ", quote_excerpt(index),
                                " is not a number; expected e.g. cuda:0, cuda:0,1 or cuda:all");
                devices.push_back(device);
                if (comma == std::string::npos) break;
                begin = comma + 1;
            }
        }
    }
    if (name == "cpu") {
        BRAIN_CHECK_ARG(!all && devices.size() == 1 && devices[0] == 0, "backend ", quote_excerpt(spec),
                        ": the CPU backend has one device, 0");
        return cpu(memory_budget_mib);
    }
    TrainingBackend out = name == "cuda"    ? (all ? cuda_all(memory_budget_mib) : cuda(0, memory_budget_mib))
                          : name == "metal" ? metal(0, memory_budget_mib)
                                            : plugin(name, 0, memory_budget_mib);
    if (all) {
        out.m_devices.clear();
        out.m_all_devices = true;
        return out;
    }
    return out.with_devices(std::move(devices));
}

TrainingBackend TrainingBackend::with_precision(Precision precision) const {
    BRAIN_CHECK_ARG(to_string(precision) != "unknown_precision",
                    "TrainingBackend::with_precision: unknown precision "
                    "value ",
                    static_cast<int>(precision), "; use Precision::Float32, Tf32 or Bf16");
    TrainingBackend copy = *this;
    copy.m_precision = precision;
    return copy;
}

TrainingBackend TrainingBackend::with_devices(std::vector<int> devices) const {
    BRAIN_CHECK_ARG(!devices.empty(), "the device list for ", m_plugin, " is empty; expected at least one index");
    for (std::size_t i = 0; i < devices.size(); ++i) {
        BRAIN_CHECK_ARG(devices[i] >= 0, "device index for ", m_plugin, " is ", devices[i], "; expected 0 or more");
        for (std::size_t j = 0; j < i; ++j)
            BRAIN_CHECK_ARG(devices[j] != devices[i], "device ", devices[i],
                            " appears twice in the device list for ", m_plugin, "; list each device once");
    }
    BRAIN_CHECK_ARG(!is_cpu() || (devices.size() == 1 && devices[0] == 0), "the CPU backend has one device, 0");
    TrainingBackend copy = *this;
    copy.m_devices = std::move(devices);
    copy.m_all_devices = false;
    return copy;
}

TrainingBackend TrainingBackend::with_processes(int rank, int world_size, std::string rendezvous) const {
    BRAIN_CHECK_ARG(world_size >= 1, "world size is ", world_size, "; expected 1 or more processes");
    BRAIN_CHECK_ARG(rank >= 0 && rank < world_size, "rank is ", rank, " but the world has ", world_size,
                    " process(es); expected 0 <= rank < ", world_size);
    if (world_size > 1) {
        BRAIN_CHECK_ARG(rendezvous.rfind("file:", 0) == 0 || rendezvous.rfind("tcp:", 0) == 0, "rendezvous ",
                        quote_excerpt(rendezvous), " for ", world_size,
                        " processes is neither file:<path> (a path every process can reach) nor tcp:<host>:<port>");
        BRAIN_CHECK_ARG(rendezvous.size() > 5, "rendezvous ", quote_excerpt(rendezvous), " names no path or host");
    }
    TrainingBackend copy = *this;
    copy.m_rank = rank;
    copy.m_world_size = world_size;
    copy.m_rendezvous = world_size > 1 ? std::move(rendezvous) : std::string();
    return copy;
}

std::string TrainingBackend::describe() const {
    std::string out = m_plugin;
    if (!is_cpu()) {
        out += ":";
        if (m_all_devices) out += "all";
        for (std::size_t i = 0; i < m_devices.size(); ++i) {
            if (i) out += ',';
            out += std::to_string(m_devices[i]);
        }
    }
    const bool several = m_all_devices || m_devices.size() > 1;
    if (m_budget_mib) out += " (budget " + std::to_string(m_budget_mib) + " MiB" + (several ? " per device)" : ")");
    if (m_world_size > 1) out += ", rank " + std::to_string(m_rank) + " of " + std::to_string(m_world_size);
    return out;
}

} // namespace brain
