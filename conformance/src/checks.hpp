// The conformance kit's checks in four groups, in table order: the plugin itself (plugin_checks.cpp), training
// (training_checks.cpp), schedules (schedule_checks.cpp) and errors (error_checks.cpp).
#pragma once

#include "check_table.hpp"
#include "kit_fixtures.hpp"

#include <brain/conformance.hpp>
#include <brain/plugins.hpp>
#include <functional>

namespace brain::conformance {

// load, resolve, devices and doctor, through the plugin's table; false when no session can run (the rest of the
// table is then listed as not run).
bool run_plugin_checks(CheckTable& table, ConformanceReport& report, const ConformanceOptions& options,
                       const std::function<PluginRecord()>& load, PluginUnderTest& plugin);
// parity, stats, peak in estimate and checkpoint: training through the public API against the CPU reference.
void run_training_checks(CheckTable& table, const SessionFixture& kit);
// schedule: learning-rate schedules reach the plugin per step (ABI 1.2) or per epoch, and train as on the CPU.
void run_schedule_checks(CheckTable& table, const SessionFixture& kit);
// closed session, budget refusal, device 99, invalid argument, use after error, numerical error and precision:
// every error the contract names, through the public API and through malformed calls to the table.
void run_error_checks(CheckTable& table, const SessionFixture& kit);

} // namespace brain::conformance
