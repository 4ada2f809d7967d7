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
// brain convert: a CSV file to a NumPy .npz archive or two .npy files.
void add_convert_command(CLI::App& app, int& exit_code);
// brain evaluate: a saved model's loss and metrics on a CSV file with true values.
void add_evaluate_command(CLI::App& app, int& exit_code);
// brain generate: write a synthetic CSV data set.
void add_generate_command(CLI::App& app, int& exit_code);
// brain export: a model file as ONNX and/or safetensors.
void add_export_command(CLI::App& app, int& exit_code);
// brain import: an ONNX or safetensors model as a brain model file.
void add_import_command(CLI::App& app, int& exit_code);

// Exit statuses shared by every subcommand (docs/cli.md, "Exit status").
inline constexpr int exit_ok = 0;
inline constexpr int exit_check_failed = 1; // ran, but a check it reports on failed (doctor)
inline constexpr int exit_error = 2;        // a brain::Error: bad input, unavailable backend, failed run
// Command-line usage errors, CLI11's kinds folded into 105-110.
inline constexpr int exit_bad_value = 105;            // a value that does not convert or fails its check
inline constexpr int exit_missing_option = 106;       // a required option (or the subcommand) is missing
inline constexpr int exit_option_needs_another = 107; // an option given without one it needs
inline constexpr int exit_options_exclude = 108;      // two options that exclude each other
inline constexpr int exit_unknown_argument = 109;     // an unknown option or an extra argument
inline constexpr int exit_other_usage = 110;          // the wrong number of values, or any other usage error

} // namespace brain::app
