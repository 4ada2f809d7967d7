// naive_conformance <path/to/libbrain_naive.so>: brain's conformance kit as the plugin's own test. Prints the
// PASS/FAIL table; exit status 0 when the plugin conforms. The plugin's directory must come first in
// BRAIN_PLUGIN_PATH, since sessions find the backend by name (CMakeLists.txt's test sets it).
#include <brain/conformance.hpp>
#include <iostream>

int main(int argc, char** argv) {
    if (argc != 2) {
        std::cerr << "usage: naive_conformance <path/to/libbrain_naive.so>\n";
        return 2;
    }
    const brain::ConformanceReport report = brain::run_conformance_file(argv[1]);
    std::cout << brain::format_conformance_table(report);
    return report.passed() ? 0 : 1;
}
