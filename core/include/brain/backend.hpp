// brain::TrainingBackend: which plugin trains, on which device, under which memory budget.
#pragma once

#include <brain/export.hpp>
#include <brain/types.hpp>
#include <cstdint>
#include <string>
#include <vector>

namespace brain {

// A backend request. Cheap value type; resolving it to a plugin happens when it is used, and a request that
// cannot be met is an error, never a silent switch to the CPU.
class BRAIN_API TrainingBackend {
public:
    // The reference CPU plugin (libbrain_cpu.so), without a budget: the core checks the session against the host
    // memory available before opening it.
    static TrainingBackend cpu();
    // The CPU plugin with its session's tensors capped at memory_budget_mib MiB (0: no cap); a session that needs
    // more is BudgetExceeded before it allocates, naming the largest batch that fits.
    static TrainingBackend cpu(std::uint64_t memory_budget_mib);
    // The CUDA plugin on device index `device`, using at most memory_budget_mib MiB of device memory.
    static TrainingBackend cuda(int device, std::uint64_t memory_budget_mib);
    // The CUDA plugin on several devices of this process (data parallelism over NCCL), each under
    // budget_per_device_mib MiB; the list holds distinct indices, in the order the batch's rows are shared out.
    static TrainingBackend cuda(std::vector<int> devices, std::uint64_t budget_per_device_mib);
    // The CUDA plugin on every device the process sees (resolved when a session opens).
    static TrainingBackend cuda_all(std::uint64_t budget_per_device_mib);
    // The Metal plugin; off Apple systems every call reports ErrorCode::MetalFeatureDisabled.
    static TrainingBackend metal(int device, std::uint64_t memory_budget_mib);
    // A third-party plugin named `name` (the file libbrain_<name>.so on the plugin search path).
    static TrainingBackend plugin(std::string name, int device, std::uint64_t memory_budget_mib);
    // Parse "cpu", "cuda:0", "cuda:0,1", "cuda:all", "metal:0" or "<name>:<device>[,<device>...]" with a budget
    // (the CLI's --backend). The budget applies to every backend and, with several devices, to each device; the CPU
    // included (0 means none, which only the CPU and third-party plugins allow).
    static TrainingBackend parse(const std::string& spec, std::uint64_t memory_budget_mib);

    // This request with matrix products in the given precision (accelerators; the CPU supports Float32).
    TrainingBackend with_precision(Precision precision) const;
    // This request on the given devices (distinct indices, at least one) instead of its own.
    TrainingBackend with_devices(std::vector<int> devices) const;
    // This request as rank `rank` of `world_size` processes training together, meeting at `rendezvous`
    // ("file:<path>" every process can reach, or "tcp:<host>:<port>" where rank 0 listens). world_size 1 is one
    // process (the rendezvous is then ignored).
    TrainingBackend with_processes(int rank, int world_size, std::string rendezvous) const;

    // The plugin name: "cpu", "cuda", "metal" or the third-party name.
    const std::string& plugin_name() const noexcept { return m_plugin; }
    // The first device (the only one unless several were asked for).
    int device() const noexcept { return m_devices.empty() ? 0 : m_devices.front(); }
    // Every device of this process, in order; empty when all_devices() has yet to be resolved.
    const std::vector<int>& devices() const noexcept { return m_devices; }
    // Whether the request is for every visible device (cuda:all).
    bool all_devices() const noexcept { return m_all_devices; }
    int rank() const noexcept { return m_rank; }
    int world_size() const noexcept { return m_world_size; }
    const std::string& rendezvous() const noexcept { return m_rendezvous; }
    std::uint64_t memory_budget_mib() const noexcept { return m_budget_mib; }
    Precision precision() const noexcept { return m_precision; }
    bool is_cpu() const noexcept { return m_plugin == "cpu"; }
    // E.g. "cuda:0 (budget 8192 MiB)", "cuda:0,1 (budget 8192 MiB per device)", "cpu", "cpu (budget 512 MiB)",
    // "cuda:0 (budget 8192 MiB), rank 1 of 2".
    std::string describe() const;

private:
    TrainingBackend(std::string plugin, int device, std::uint64_t budget_mib);
    std::string m_plugin;
    std::vector<int> m_devices;
    bool m_all_devices = false;
    int m_rank = 0;
    int m_world_size = 1;
    std::string m_rendezvous;
    std::uint64_t m_budget_mib = 0;
    Precision m_precision = Precision::Float32;
};

} // namespace brain
