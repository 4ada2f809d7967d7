// The brain command's subcommands. Each add_*_command registers one CLI11 subcommand whose callback runs it
// and stores its exit status in `exit_code`; brain::Error escapes to main, which prints it as one line.
#pragma once

#include <CLI/CLI.hpp>

namespace brain::app {

// brain plugins: the directories searched and every plugin found, with its stage and devices.
void add_plugins_command(CLI::App& app, int& exit_code);
// brain doctor: accelerator_doctor for one backend, printed in the chapter's format.
void add_doctor_command(CLI::App& app, int& exit_code);
// brain estimate: estimate_tensor_memory_mib for a model file or a described network.
void add_estimate_command(CLI::App& app, int& exit_code);
// brain train: a TrainingSession, epoch by epoch with progress, then save_json.
void add_train_command(CLI::App& app, int& exit_code);
// brain predict: a saved model applied to a CSV file.
void add_predict_command(CLI::App& app, int& exit_code);
// brain generate: write a synthetic CSV data set.
void add_generate_command(CLI::App& app, int& exit_code);

// Exit statuses shared by every subcommand.
inline constexpr int exit_ok = 0;
inline constexpr int exit_check_failed = 1; // ran, but a check it reports on failed (doctor)
inline constexpr int exit_error = 2;        // a brain::Error: bad input, unavailable backend, failed run

} // namespace brain::app
