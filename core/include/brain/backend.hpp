// brain::TrainingBackend: which plugin trains, on which device, under which memory budget.
#pragma once

#include <brain/export.hpp>
#include <brain/types.hpp>
#include <cstdint>
#include <string>

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
    // The Metal plugin; off Apple systems every call reports ErrorCode::MetalFeatureDisabled.
    static TrainingBackend metal(int device, std::uint64_t memory_budget_mib);
    // A third-party plugin named `name` (the file libbrain_<name>.so on the plugin search path).
    static TrainingBackend plugin(std::string name, int device, std::uint64_t memory_budget_mib);
    // Parse "cpu", "cuda:0", "metal:0" or "<name>:<device>" with a budget (the CLI's --backend). The budget
    // applies to every backend, the CPU included (0 means none, which only the CPU and third-party plugins allow).
    static TrainingBackend parse(const std::string& spec, std::uint64_t memory_budget_mib);

    // This request with matrix products in the given precision (accelerators; the CPU supports Float32).
    TrainingBackend with_precision(Precision precision) const;

    // The plugin name: "cpu", "cuda", "metal" or the third-party name.
    const std::string& plugin_name() const noexcept { return m_plugin; }
    int device() const noexcept { return m_device; }
    std::uint64_t memory_budget_mib() const noexcept { return m_budget_mib; }
    Precision precision() const noexcept { return m_precision; }
    bool is_cpu() const noexcept { return m_plugin == "cpu"; }
    // E.g. "cuda:0 (budget 8192 MiB)", "cpu", "cpu (budget 512 MiB)".
    std::string describe() const;

private:
    TrainingBackend(std::string plugin, int device, std::uint64_t budget_mib);
    std::string m_plugin;
    int m_device = 0;
    std::uint64_t m_budget_mib = 0;
    Precision m_precision = Precision::Float32;
};

} // namespace brain
