// The kit's entry points: the checks in table order (each group in its own file), and the report as a table.
#include "checks.hpp"

#include <algorithm>
#include <brain/conformance.hpp>
#include <brain/plugins.hpp>
#include <sstream>

namespace brain {

namespace {

void run_kit(ConformanceReport& report, const ConformanceOptions& options,
             const std::function<PluginRecord()>& load) {
    conformance::CheckTable table(report);
    conformance::PluginUnderTest plugin;
    if (!conformance::run_plugin_checks(table, report, options, load, plugin)) return;
    const conformance::SessionFixture fixture = conformance::make_session_fixture(plugin, options);
    conformance::run_training_checks(table, fixture);
    conformance::run_schedule_checks(table, fixture);
    conformance::run_error_checks(table, fixture);
}

} // namespace

ConformanceReport run_conformance(const std::string& name, const ConformanceOptions& options) {
    ConformanceReport report;
    report.plugin = name;
    run_kit(report, options, [&name] { return load_plugin(name); });
    return report;
}

ConformanceReport run_conformance_file(const std::filesystem::path& plugin_file,
                                       const ConformanceOptions& options) {
    ConformanceReport report;
    report.plugin = plugin_name_from_file(plugin_file);
    report.path = plugin_file;
    run_kit(report, options, [&plugin_file] { return load_plugin_file(plugin_file); });
    return report;
}

std::string format_conformance_table(const ConformanceReport& report) {
    std::ostringstream out;
    out << "brain conformance kit: plugin \"" << report.plugin << "\"";
    if (!report.path.empty()) out << " (" << report.path.string() << ")";
    out << "\n";
    std::size_t width = 0, passed = 0;
    for (const auto& c : report.checks) width = std::max(width, c.name.size());
    for (const auto& c : report.checks) {
        out << "  " << (c.passed ? "PASS" : "FAIL") << "  " << c.name << std::string(width - c.name.size() + 2, ' ')
            << c.detail << "\n";
        passed += c.passed ? 1 : 0;
    }
    out << passed << " of " << report.checks.size()
        << " checks passed: " << (report.passed() ? "the plugin conforms" : "the plugin does NOT conform") << "\n";
    return out.str();
}

} // namespace brain
