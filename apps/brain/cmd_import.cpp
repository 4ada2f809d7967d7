// brain import: a model from elsewhere as a brain model file: an ONNX multilayer perceptron (torch.onnx.export,
// tf2onnx, brain export), or safetensors parameters in PyTorch's nn.Sequential naming with the layers and
// activations given (docs/interop.md).
#include "app_support.hpp"
#include "cli_options.hpp"
#include "commands.hpp"

#include <brain/brain.hpp>
#include <iostream>
#include <memory>

namespace brain::app {

namespace {

struct ImportOptions {
    std::string onnx;
    std::string safetensors;
    std::string architecture;       // --model: a brain model file whose layers the safetensors fill
    std::vector<std::size_t> layers; // --layers: hidden widths, checked against the file
    std::vector<std::string> activation;
    std::string output_activation = "linear";
    bool layers_given = false;
    bool activation_given = false;
    bool output_activation_given = false;
    std::string out;
    InputOptions input;
};

std::string describe(const Network& net) {
    std::string s = std::to_string(net.input_size());
    for (const LayerSpec& l : net.layers()) s += str(" -> ", l.outputs, " ", to_string(l.activation));
    return s;
}

// The safetensors file with the architecture from --model, from the options, or as the file records it; read
// once, so that a pipe works too.
Network from_safetensors(const ImportOptions& o, const InputLimits& limits) {
    if (!o.architecture.empty())
        return Network::load_safetensors(o.safetensors, Network::load_json(o.architecture, limits), limits);
    return Network::load_safetensors_with(o.safetensors, [&](const std::vector<LayerSpec>& shapes) {
        const std::size_t hidden = shapes.size() - 1;
        std::string widths;
        for (std::size_t i = 0; i < hidden; ++i) widths += str(i ? "," : "", shapes[i].outputs);
        if (o.layers_given) {
            bool same = o.layers.size() == hidden;
            for (std::size_t i = 0; same && i < hidden; ++i) same = o.layers[i] == shapes[i].outputs;
            std::string given;
            for (std::size_t i = 0; i < o.layers.size(); ++i) given += str(i ? "," : "", o.layers[i]);
            BRAIN_CHECK(same, ErrorCode::InvalidModelFile, o.safetensors, ": the file's hidden layers are ",
                        widths.empty() ? std::string("none") : widths + " units wide", ", but --layers says ",
                        given.empty() ? std::string("none") : given,
                        "; check the model the file came from, or leave --layers out");
        }
        // Without activation options the file must record its activations (a file brain wrote does).
        if (!o.activation_given && !o.output_activation_given) return std::vector<Activation>{};
        BRAIN_CHECK_ARG(hidden == 0 || o.activation_given, "the file holds ", hidden, " hidden layers (", widths,
                        " units): give their activation with --activation (one for all, or one each)");
        BRAIN_CHECK_ARG(o.activation.size() <= 1 || o.activation.size() == hidden, "--activation gives ",
                        o.activation.size(), " activations for the file's ", hidden,
                        hidden == 1 ? " hidden layer" : " hidden layers",
                        "; give one for all of them or one for each");
        std::vector<Activation> activations;
        for (std::size_t i = 0; i < hidden; ++i)
            activations.push_back(parse_activation(o.activation[o.activation.size() == 1 ? 0 : i]));
        activations.push_back(parse_activation(o.output_activation));
        return activations;
    });
}

int run_import(const ImportOptions& o) {
    BRAIN_CHECK_ARG(o.onnx.empty() != o.safetensors.empty(),
                    "brain import reads one file: give --onnx <file> or --safetensors <file>");
    const std::string& source = o.onnx.empty() ? o.safetensors : o.onnx;
    std::vector<std::filesystem::path> inputs{source};
    if (!o.architecture.empty()) inputs.emplace_back(o.architecture);
    check_output_path(o.out, inputs);
    const InputLimits limits = o.input.limits();
    const Network net = o.onnx.empty() ? from_safetensors(o, limits) : Network::load_onnx(o.onnx, limits);
    std::cout << "imported " << describe(net) << " (" << to_string(net.loss()) << ") from " << source << "\n";
    if (net.standardization()) std::cout << "inputs are standardised by the model itself\n";
    if (net.feature_names().empty())
        std::cout << "the model names no features: brain predict reads the columns x0..x" << net.input_size() - 1
                  << " of its CSV, and brain train --init takes the CSV's feature columns in order\n";
    require_standard_output(str("'", o.out, "' is left as it was"));
    net.save_json(o.out, inputs);
    std::cout << "saved model to " << o.out << "\n";
    return exit_ok;
}

} // namespace

void add_import_command(CLI::App& app, int& exit_code) {
    auto o = std::make_shared<ImportOptions>();
    auto* cmd = app.add_subcommand(
        "import",
        "Read a model made elsewhere into a brain model file: an ONNX multilayer perceptron (torch.onnx.export of "
        "an nn.Sequential of Linear and activation layers, tf2onnx, brain export), or safetensors parameters in "
        "PyTorch's nn.Sequential naming given the layers and activations (--model, or --layers with --activation "
        "and --output-activation; a file brain wrote records them). What cannot be imported is refused naming the "
        "node or tensor at fault. Continue training with brain train --init; docs/interop.md.");
    auto* onnx = cmd->add_option("--onnx", o->onnx, "the ONNX file to import");
    auto* st = cmd->add_option("--safetensors", o->safetensors, "the safetensors file to import");
    onnx->excludes(st);
    auto* model = cmd->add_option("--model", o->architecture,
                                  "with --safetensors: a brain model file giving the layers, activations, names and "
                                  "standardisation the parameters belong to");
    auto* layers = cmd->add_option("--layers", o->layers,
                                   "with --safetensors: the hidden widths, comma-separated, checked against the "
                                   "file's shapes")
                       ->delimiter(',')
                       ->check(whole_number(UINT32_MAX));
    auto* activation = cmd->add_option("--activation", o->activation,
                                       "with --safetensors: the hidden activation, or one per hidden layer "
                                       "(comma-separated): linear, relu, leaky_relu, sigmoid, tanh, gelu")
                           ->delimiter(',');
    auto* output = cmd->add_option("--output-activation", o->output_activation,
                                   "with --safetensors: the output activation: linear, sigmoid, softmax, ... "
                                   "(default linear, as an nn.Sequential that ends with a Linear)");
    model->needs(st)->excludes(layers)->excludes(activation)->excludes(output);
    layers->needs(st);
    activation->needs(st);
    output->needs(st);
    cmd->add_option("--out", o->out, "where to write the brain model file (JSON), whole or not at all")
        ->required()
        ->check(file_name());
    add_input_options(*cmd, o->input, false);
    cmd->callback([o, layers, activation, output, &exit_code] {
        o->layers_given = layers->count() > 0;
        o->activation_given = activation->count() > 0;
        o->output_activation_given = output->count() > 0;
        exit_code = run_import(*o);
    });
}

} // namespace brain::app
