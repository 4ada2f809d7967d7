// brain estimate: what a network and batch size will cost in device memory, before going near a device
// (chapter 11.4).
#include "app_support.hpp"
#include "commands.hpp"

#include <brain/brain.hpp>
#include <iostream>
#include <memory>

namespace brain::app {

namespace {

struct EstimateOptions {
    std::string model;
    std::size_t inputs = 0;
    std::vector<std::size_t> layers;
    std::size_t outputs = 1;
    std::string activation = "relu";
    std::size_t batch = 256;
    std::uint64_t budget_mib = 0;
};

int run_estimate(const EstimateOptions& o) {
    Network network = [&] {
        if (!o.model.empty()) return Network::load_json(o.model);
        BRAIN_CHECK_ARG(o.inputs > 0, "brain estimate needs either --model <file> or --inputs <n> (with "
                                      "--layers and --outputs) to describe the network");
        auto builder = Network::builder();
        builder.input_size(o.inputs);
        const Activation hidden = parse_activation(o.activation);
        for (std::size_t units : o.layers) builder.dense(units, hidden);
        builder.dense(o.outputs, Activation::Linear);
        return builder.build();
    }();
    BRAIN_CHECK_ARG(o.batch > 0, "--batch must be at least 1, found 0");

    const std::uint64_t needed = estimate_tensor_memory_mib(network, o.batch);
    std::cout << needed << " MiB of tensors for batch " << o.batch << "\n";
    std::cout << "(" << network.parameter_count()
              << " parameters, four copies each, plus activations and deltas for the batch; an upper bound of "
              << estimate_tensor_memory_bytes(network, o.batch) << " bytes)\n";
    if (o.budget_mib > 0) {
        const std::uint64_t budget_bytes = o.budget_mib * 1024ull * 1024ull;
        const std::size_t largest = largest_batch_within(network, budget_bytes);
        if (largest == 0)
            std::cout << "no batch size fits within " << o.budget_mib
                      << " MiB: the parameters alone exceed it; raise the budget or shrink the network\n";
        else
            std::cout << "largest batch within " << o.budget_mib << " MiB: " << largest << "\n";
        std::cout << "batch " << o.batch << (needed <= o.budget_mib ? " fits" : " does NOT fit") << " within "
                  << o.budget_mib << " MiB\n";
    }
    return exit_ok;
}

} // namespace

void add_estimate_command(CLI::App& app, int& exit_code) {
    auto o = std::make_shared<EstimateOptions>();
    auto* cmd = app.add_subcommand(
        "estimate", "Estimate the device memory a training session needs for a network and batch size "
                    "(estimate_tensor_memory_mib: four copies of every parameter plus activations and deltas "
                    "for the batch; an upper bound). Prints \"<N> MiB of tensors for batch <B>\" and, with "
                    "--budget, the largest batch that fits.");
    auto* model = cmd->add_option("--model", o->model, "a model file written by brain train (save_json)");
    auto* inputs = cmd->add_option("--inputs", o->inputs, "input width, to describe a network without a file");
    model->excludes(inputs);
    cmd->add_option("--layers", o->layers, "hidden layer widths, e.g. 256,256")->delimiter(',')->needs(inputs);
    cmd->add_option("--outputs", o->outputs, "output width")->capture_default_str()->needs(inputs);
    cmd->add_option("--activation", o->activation, "hidden activation")->capture_default_str()->needs(inputs);
    cmd->add_option("--batch", o->batch, "batch size")->capture_default_str();
    cmd->add_option("--budget", o->budget_mib, "a memory budget in MiB: also print the largest batch within it");
    cmd->callback([o, &exit_code] { exit_code = run_estimate(*o); });
}

} // namespace brain::app
