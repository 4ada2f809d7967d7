#include <brain/stats.hpp>

#include <nlohmann/json.hpp>

#include <iomanip>
#include <sstream>

namespace brain {

namespace {
// Digits grouped as the chapter prints them: 41_943_040.
std::string grouped(std::uint64_t value) {
    std::string digits = std::to_string(value);
    std::string out;
    const std::size_t n = digits.size();
    for (std::size_t i = 0; i < n; ++i) {
        out += digits[i];
        if ((n - i - 1) % 3 == 0 && i + 1 != n) out += '_';
    }
    return out;
}

// "  (what the check ran)" after a doctor line, or nothing when the plugin does not say.
std::string what(const std::string& check) {
    return check.empty() ? std::string() : "  (" + check + ")";
}

// Durations the way Rust's Debug prints them: 412ms, 3.1s, 8ms, 250us.
std::string human(std::chrono::nanoseconds d) {
    const double ns = static_cast<double>(d.count());
    std::ostringstream out;
    out << std::setprecision(4);
    if (ns >= 1e9) out << ns / 1e9 << "s";
    else if (ns >= 1e6) out << ns / 1e6 << "ms";
    else if (ns >= 1e3) out << ns / 1e3 << "us";
    else out << ns << "ns";
    return out.str();
}
} // namespace

std::ostream& operator<<(std::ostream& out, const AcceleratorStats& s) {
    out << "AcceleratorStats {\n"
        << "    peak_allocated_bytes: " << grouped(s.peak_allocated_bytes) << ",\n"
        << "    setup_time: " << human(s.setup_time) << ",\n"
        << "    training_time: " << human(s.training_time) << ",\n"
        << "    checkpoint_time: " << human(s.checkpoint_time) << ",\n"
        << "    epochs: " << s.epochs << ",\n"
        << "    batches: " << s.batches << ",\n"
        << "    host_to_device_bytes: " << grouped(s.host_to_device_bytes) << ",\n"
        << "    device_to_host_bytes: " << grouped(s.device_to_host_bytes) << ",\n"
        << "    dataset_resident: " << (s.dataset_resident ? "true" : "false") << ",\n"
        << "    precision: " << to_string(s.precision) << ",\n"
        << "    arithmetic: " << (s.arithmetic.empty() ? "(not reported)" : s.arithmetic) << ",\n"
        << "    dataset_bytes: " << grouped(s.dataset_bytes) << ",\n"
        << "    workspace_bytes: " << grouped(s.workspace_bytes) << ",\n"
        << "    budget_bytes: " << grouped(s.budget_bytes) << ",\n";
    if (s.devices > 1 || s.allreduce_bytes)
        out << "    devices: " << s.devices << ",\n"
            << "    allreduce_bytes: " << grouped(s.allreduce_bytes) << ",\n"
            << "    allreduce_time: " << human(s.allreduce_time) << ",\n";
    out << "}";
    return out;
}

std::string to_json(const AcceleratorStats& s) {
    const auto seconds = [](std::chrono::nanoseconds d) { return static_cast<double>(d.count()) / 1e9; };
    nlohmann::json j = {
        {"peak_allocated_bytes", s.peak_allocated_bytes},
        {"setup_time_s", seconds(s.setup_time)},
        {"training_time_s", seconds(s.training_time)},
        {"checkpoint_time_s", seconds(s.checkpoint_time)},
        {"epochs", s.epochs},
        {"batches", s.batches},
        {"host_to_device_bytes", s.host_to_device_bytes},
        {"device_to_host_bytes", s.device_to_host_bytes},
        {"dataset_resident", s.dataset_resident},
        {"precision", std::string(to_string(s.precision))},
        {"arithmetic", s.arithmetic},
        {"dataset_bytes", s.dataset_bytes},
        {"workspace_bytes", s.workspace_bytes},
        {"budget_bytes", s.budget_bytes},
        {"devices", s.devices},
        {"allreduce_bytes", s.allreduce_bytes},
        {"allreduce_time_s", seconds(s.allreduce_time)},
    };
    return j.dump();
}

std::ostream& operator<<(std::ostream& out, const AcceleratorReport& r) {
    out << r.name << " (" << r.revision << "), " << r.total_memory_mib << " MiB total, ";
    if (r.free_memory_mib) out << "Some(" << *r.free_memory_mib << ")";
    else out << "None";
    out << " MiB free\n"
        << "gemm:    " << (r.gemm_available ? "true" : "false") << what(r.gemm_check) << "\n"
        << "kernels: " << (r.kernel_available ? "true" : "false") << what(r.kernel_check) << "\n"
        << "alloc:   " << (r.allocation_test ? "true" : "false") << what(r.allocation_check);
    if (!r.notes.empty()) out << "\nnotes:   " << r.notes;
    return out;
}

} // namespace brain
