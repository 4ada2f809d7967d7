// brain estimate: what a network and batch size will cost in device memory, before going near a device
// (chapter 11.4).
#include "app_support.hpp"
#include "cli_options.hpp"
#include "commands.hpp"

#include <brain/brain.hpp>
#include <iostream>
#include <memory>
#include <optional>

namespace brain::app {

namespace {

struct EstimateOptions {
    std::string model;
    std::size_t inputs = 0;
    std::vector<std::size_t> layers;
    std::size_t outputs = 1;
    std::string activation = "relu";
    std::uint64_t batch = 256;
    std::optional<std::uint64_t> budget_mib;
    InputOptions input;
};

int run_estimate(const EstimateOptions& o) {
    // The shape alone: nothing is built, allocated or initialised, so any width answers at once.
    std::vector<LayerSpec> shape;
    if (!o.model.empty()) {
        shape = Network::load_json(o.model, o.input.limits()).layers();
    } else {
        // A usage error like any missing option (exit 106); --inputs given is at least 1 (its check).
        if (o.inputs == 0)
            throw CLI::RequiredError("--model FILE (or --inputs N, with --layers and --outputs, to describe the "
                                     "network)");
        const Activation hidden = parse_activation(o.activation);
        // As brain train refuses it: a network that cannot be built has no estimate.
        BRAIN_CHECK_ARG(
            hidden != Activation::Softmax || o.layers.empty(),
            "--activation softmax: softmax is allowed on the output layer only; use relu, tanh, gelu... "
            "for hidden layers");
        std::size_t width = o.inputs;
        for (std::size_t units : o.layers) {
            shape.push_back(LayerSpec{width, units, hidden});
            width = units;
        }
        shape.push_back(LayerSpec{width, o.outputs, Activation::Linear});
    }

    const MemoryEstimate e = estimate_tensor_memory(shape, o.batch);
    if (e.saturated) {
        std::cout << "more than 17592186044416 MiB (16 EiB) of tensors for batch " << o.batch
                  << ": the estimate exceeds what 64-bit sizes can count; no machine can hold it\n";
    } else {
        std::cout << e.mib() << " MiB of tensors for batch " << o.batch << "\n";
        std::cout << "(" << e.parameter_count
                  << " parameters, four copies each, plus activations and deltas for the batch; an upper bound of "
                  << e.bytes << " bytes)\n";
    }
    if (o.budget_mib) {
        // A budget beyond 2^64 bytes is unbounded for any purpose here; saturate rather than wrap.
        const std::uint64_t budget_bytes = *o.budget_mib > (UINT64_MAX >> 20) ? UINT64_MAX : *o.budget_mib << 20;
        const std::uint64_t largest = largest_batch_within(shape, budget_bytes);
        if (largest == 0)
            std::cout << "no batch size fits within " << *o.budget_mib
                      << " MiB: the parameters alone exceed it; raise the budget or shrink the network\n";
        else
            std::cout << "largest batch within " << *o.budget_mib << " MiB: " << largest << "\n";
        // The same comparison as largest_batch_within's, in bytes, so the two lines never disagree.
        const bool fits = !e.saturated && e.bytes <= budget_bytes;
        std::cout << "batch " << o.batch << (fits ? " fits" : " does NOT fit") << " within " << *o.budget_mib
                  << " MiB\n";
    }
    return exit_ok;
}

} // namespace

void add_estimate_command(CLI::App& app, int& exit_code) {
    auto o = std::make_shared<EstimateOptions>();
    auto* cmd = app.add_subcommand(
        "estimate", "Estimate the device memory a training session needs for a network and batch size "
                    "(estimate_tensor_memory_mib: four copies of every parameter plus activations and deltas "
                    "for the batch; an upper bound), from the network's shape alone: nothing is built, so any size "
                    "answers at once. Prints \"<N> MiB of tensors for batch <B>\" and, with --budget, the largest "
                    "batch that fits.");
    auto* model = cmd->add_option("--model", o->model, "a model file written by brain train (save_json)");
    // A width is at least one unit and at most the plugin ABI's uint32 (what a network can be built with); a batch
    // at least one row. "--inputs 0" is a usage error naming the option and the range (exit 105).
    const CLI::Validator width = whole_number_in(1, UINT32_MAX);
    auto* inputs =
        cmd->add_option("--inputs", o->inputs, "input width, to describe a network without a file")->check(width);
    model->excludes(inputs);
    cmd->add_option("--layers", o->layers, "hidden layer widths, e.g. 256,256")
        ->delimiter(',')
        ->needs(inputs)
        ->check(width);
    cmd->add_option("--outputs", o->outputs, "output width")->capture_default_str()->needs(inputs)->check(width);
    cmd->add_option("--activation", o->activation, "hidden activation")->capture_default_str()->needs(inputs);
    cmd->add_option("--batch", o->batch, "batch size")
        ->capture_default_str()
        ->check(whole_number_in(1, UINT64_MAX));
    cmd->add_option("--budget", o->budget_mib, "a memory budget in MiB: also print the largest batch within it")
        ->check(whole_number_in(1, UINT64_MAX));
    add_input_options(*cmd, o->input, false);
    cmd->callback([o, cmd, &exit_code] {
        // The limit bounds the model file read; a network described with --inputs reads none.
        if (cmd->count("--max-input-mib") && o->model.empty())
            refuse_option_without("--max-input-mib bounds the model file read with --model, but --model is not "
                                  "given (--inputs describes the network, and no file is read); add --model FILE "
                                  "or leave --max-input-mib out");
        exit_code = run_estimate(*o);
    });
}

} // namespace brain::app
