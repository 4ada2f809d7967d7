// The conformance kit's checks in groups, in table order: the plugin itself (plugin_checks.cpp), training against
// the CPU reference (training_checks.cpp, parity_grid.cpp), what the plugin declares it runs (feature_checks.cpp),
// learning-rate schedules (schedule_checks.cpp) and errors (error_checks.cpp).
#pragma once

#include "check_table.hpp"
#include "kit_fixtures.hpp"

namespace brain::conformance {

// load, capabilities, resolve, devices and doctor, through the plugin's table; false when no session can run (the
// rest of the table is then listed as not run).
bool run_plugin_checks(CheckTable& table, ConformanceReport& report);
// parity: the kit network against the CPU reference.
void run_parity_check(CheckTable& table);
// parity sgd, parity sgd momentum, parity adam, parity adamw: every activation and loss pairing on two shapes with
// odd batch sizes, per optimizer; and last short batch.
void run_parity_grid(CheckTable& table);
// unsupported and precision: what the plugin declares it lacks is refused with Unsupported naming it, what it
// declares it runs is honoured.
void run_feature_checks(CheckTable& table);
// stats, peak in estimate, checkpoint and epochs in one call.
void run_training_checks(CheckTable& table);
// schedule: learning-rate schedules reach the plugin per step (ABI 1.2) or per epoch, and train as on the CPU.
void run_schedule_checks(CheckTable& table);
// closed session, budget refusal, device 99, invalid argument, use after error, numerical error and numerical
// error in one call.
void run_error_checks(CheckTable& table);

} // namespace brain::conformance
