// The kit's entry points: the checks in table order (each group in its own file), and the report as a table.
#include "checks.hpp"

#include <algorithm>
#include <brain/conformance.hpp>
#include <brain/plugins.hpp>
#include <sstream>

namespace brain {

namespace {

void run_kit(ConformanceReport& report, const ConformanceOptions& options, std::function<PluginRecord()> load,
             const std::filesystem::path& file) {
    conformance::KitContext context(options, std::move(load), file);
    conformance::CheckTable table(report, context);
    if (!conformance::run_plugin_checks(table, report)) return;
    conformance::run_parity_check(table);
    conformance::run_parity_grid(table);
    conformance::run_feature_checks(table);
    conformance::run_training_checks(table);
    conformance::run_schedule_checks(table);
    conformance::run_error_checks(table);
}

} // namespace

const std::vector<std::string>& conformance_check_names() {
    static const std::vector<std::string> names = {
        "load",
        "capabilities",
        "resolve",
        "devices",
        "doctor",
        "parity",
        "parity sgd",
        "parity sgd momentum",
        "parity adam",
        "parity adamw",
        "last short batch",
        "unsupported",
        "precision",
        "batch source",
        "stats",
        "peak in estimate",
        "checkpoint",
        "epochs in one call",
        "schedule",
        "closed session",
        "budget refusal",
        "device 99",
        "invalid argument",
        "use after error",
        "numerical error",
        "numerical error in one call",
    };
    return names;
}

ConformanceReport run_conformance(const std::string& name, const ConformanceOptions& options) {
    ConformanceReport report;
    report.plugin = name;
    run_kit(report, options, [name] { return load_plugin(name); }, {});
    return report;
}

ConformanceReport run_conformance_file(const std::filesystem::path& plugin_file,
                                       const ConformanceOptions& options) {
    ConformanceReport report;
    report.plugin = plugin_name_from_file(plugin_file);
    report.path = plugin_file;
    run_kit(
        report, options, [plugin_file] { return load_plugin_file(plugin_file); }, plugin_file);
    return report;
}

std::string format_conformance_row(const ConformanceCheck& check) {
    std::size_t width = check.name.size();
    for (const auto& name : conformance_check_names()) width = std::max(width, name.size());
    return "  " + std::string(check.passed ? "PASS" : "FAIL") + "  " + check.name +
           std::string(width - check.name.size() + 2, ' ') + check.detail + "\n";
}

std::string format_conformance_summary(const ConformanceReport& report) {
    std::ostringstream out;
    if (!report.unsupported.empty()) {
        out << "outside its capabilities (refused with Unsupported, not failures):";
        for (std::size_t i = 0; i < report.unsupported.size(); ++i)
            out << (i ? ", " : " ") << report.unsupported[i];
        out << "\n";
    }
    const auto passed = std::count_if(report.checks.begin(), report.checks.end(),
                                      [](const ConformanceCheck& c) { return c.passed; });
    out << passed << " of " << report.checks.size()
        << " checks passed: " << (report.passed() ? "the plugin conforms" : "the plugin does NOT conform") << "\n";
    return out.str();
}

std::string format_conformance_table(const ConformanceReport& report) {
    std::ostringstream out;
    out << "brain conformance kit: plugin \"" << report.plugin << "\"";
    if (!report.path.empty()) out << " (" << report.path.string() << ")";
    out << "\n";
    for (const auto& c : report.checks) out << format_conformance_row(c);
    out << format_conformance_summary(report);
    return out.str();
}

} // namespace brain
