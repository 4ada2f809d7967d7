// brain export: a brain model file as ONNX (for ONNX Runtime, TensorRT, OpenVINO...) and/or safetensors in
// PyTorch's nn.Sequential naming (docs/interop.md).
#include "app_support.hpp"
#include "cli_options.hpp"
#include "commands.hpp"

#include <brain/brain.hpp>
#include <filesystem>
#include <iostream>
#include <memory>

namespace brain::app {

namespace {

struct ExportOptions {
    std::string model;
    std::string onnx;
    std::string safetensors;
    InputOptions input;
};

// "0.weight [16, 4], 0.bias [16], 2.weight ..." for the summary line.
std::string sequential_names(const Network& net) {
    std::string s;
    std::size_t index = 0;
    for (const LayerSpec& l : net.layers()) {
        s += str(s.empty() ? "" : ", ", index, ".weight [", l.outputs, ", ", l.inputs, "], ", index, ".bias [",
                 l.outputs, "]");
        index += l.activation == Activation::Linear ? 1 : 2;
    }
    return s;
}

int run_export(const ExportOptions& o) {
    BRAIN_CHECK_ARG(!o.onnx.empty() || !o.safetensors.empty(),
                    "brain export needs --onnx <file>, --safetensors <file> or both: say what to write");
    const std::vector<std::filesystem::path> inputs{o.model};
    std::vector<std::filesystem::path> outputs;
    if (!o.onnx.empty()) outputs.emplace_back(o.onnx);
    if (!o.safetensors.empty()) outputs.emplace_back(o.safetensors);
    // Both outputs are checked before either is written, and replaced only once both are written.
    check_output_paths(outputs, inputs);
    const Network net = Network::load_json(o.model, o.input.limits());
    OutputGroup group;
    if (!o.onnx.empty()) net.save_onnx(o.onnx, inputs);
    if (!o.safetensors.empty()) net.save_safetensors(o.safetensors, inputs);
    if (!o.onnx.empty())
        std::cout << "wrote " << o.onnx << ": ONNX opset 17, input \"input\" [batch, " << net.input_size()
                  << "] -> output \"output\" [batch, " << net.output_size() << "]"
                  << (net.standardization() ? ", the standardisation included" : "") << "\n";
    if (!o.safetensors.empty())
        std::cout << "wrote " << o.safetensors << ": float32 parameters " << sequential_names(net) << "\n";
    require_standard_output("the output files are left as they were");
    group.commit();
    return exit_ok;
}

} // namespace

void add_export_command(CLI::App& app, int& exit_code) {
    auto o = std::make_shared<ExportOptions>();
    auto* cmd = app.add_subcommand(
        "export", "Write a model file as ONNX (the whole model: standardisation, layers, output activation; opset "
                  "17, a dynamic batch, names in the metadata) and/or its parameters as safetensors in PyTorch's "
                  "nn.Sequential naming (0.weight, 0.bias, 2.weight, ...). Each file is written whole or not at "
                  "all; docs/interop.md.");
    cmd->add_option("--model", o->model, "the brain model file to export (JSON, from brain train or import)")
        ->required();
    cmd->add_option("--onnx", o->onnx, "write the model as ONNX here")->check(file_name());
    cmd->add_option("--safetensors", o->safetensors, "write the parameters as safetensors here")
        ->check(file_name());
    add_input_options(*cmd, o->input, false);
    cmd->callback([o, &exit_code] { exit_code = run_export(*o); });
}

} // namespace brain::app
