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
    : m_plugin(std::move(plugin)), m_device(device), m_budget_mib(budget_mib) {
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

TrainingBackend TrainingBackend::metal(int device, std::uint64_t memory_budget_mib) {
    check_budget(memory_budget_mib, true, "metal");
    return TrainingBackend("metal", device, memory_budget_mib);
}

TrainingBackend TrainingBackend::plugin(std::string name, int device, std::uint64_t memory_budget_mib) {
    BRAIN_CHECK_ARG(!name.empty(), "plugin name is empty; expected e.g. \"cuda\" or the x of libbrain_x.so");
    for (char c : name) {
        const bool ok = (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_' || c == '-';
        BRAIN_CHECK_ARG(ok, "plugin name \"", name,
                        "\" has a character other than lower-case letters, digits, '_' and '-'");
    }
    check_budget(memory_budget_mib, false, name.c_str());
    return TrainingBackend(std::move(name), device, memory_budget_mib);
}

TrainingBackend TrainingBackend::parse(const std::string& spec, std::uint64_t memory_budget_mib) {
    const auto colon = spec.find(':');
    const std::string name = spec.substr(0, colon);
    int device = 0;
    if (colon != std::string::npos) {
        const std::string index = spec.substr(colon + 1);
        const auto [end, ec] = std::from_chars(index.data(), index.data() + index.size(), device);
        BRAIN_CHECK_ARG(ec == std::errc() && end == index.data() + index.size() && !index.empty(), "backend \"",
                        spec, "\": the device index \"", index, "\" is not a number; expected e.g. cuda:0");
    }
    if (name == "cpu") {
        BRAIN_CHECK_ARG(device == 0, "backend \"", spec, "\": the CPU backend has one device, 0");
        return cpu(memory_budget_mib);
    }
    if (name == "cuda") return cuda(device, memory_budget_mib);
    if (name == "metal") return metal(device, memory_budget_mib);
    return plugin(name, device, memory_budget_mib);
}

TrainingBackend TrainingBackend::with_precision(Precision precision) const {
    TrainingBackend copy = *this;
    copy.m_precision = precision;
    return copy;
}

std::string TrainingBackend::describe() const {
    std::string out = is_cpu() ? m_plugin : m_plugin + ":" + std::to_string(m_device);
    if (m_budget_mib) out += " (budget " + std::to_string(m_budget_mib) + " MiB)";
    return out;
}

} // namespace brain
