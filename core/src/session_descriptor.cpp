#include "network_rules.hpp"
#include "training_input.hpp"

#include <algorithm>
#include <brain/error.hpp>
#include <brain/session_descriptor.hpp>
#include <cmath>
#include <string>

namespace brain {

namespace detail {

void validate_training_input(const Network& network, const Dataset& data, const TrainConfig& config) {
    require_layers(network);
    BRAIN_CHECK(data.size() > 0, ErrorCode::InvalidData,
                "the training data set is empty; expected at least one row");
    BRAIN_CHECK_ARG(data.input_width() == network.input_size(), "the data set has ", data.input_width(),
                    " feature columns but the network's input size is ", network.input_size(),
                    "; build the network with input_size(", data.input_width(), ") or select matching columns");
    BRAIN_CHECK_ARG(data.target_width() == network.output_size(), "the data set has ", data.target_width(),
                    " target columns but the network's output layer has ", network.output_size(),
                    " units; make the last dense layer ", data.target_width(), " wide");
    BRAIN_CHECK_ARG(config.batch_size > 0, "batch_size is 0; expected at least 1 (e.g. 32 or 256)");
    BRAIN_CHECK_ARG(config.batch_size <= data.size(), "batch_size is ", config.batch_size,
                    " but the data set has only ", data.size(), " rows; use a batch size of at most ", data.size());
    check_targets(network.loss(), data.targets().data().data(), data.size(), data.target_width(), 0, "");
}

void check_targets(Loss loss, const float* targets, std::size_t rows, std::size_t cols, std::uint64_t first_row,
                   const std::string& origin) {
    // Softmax with cross-entropy learns from (softmax - target), the loss's gradient only for a target row that is
    // a probability distribution: any other row would train towards something its reported loss does not measure.
    if (loss == Loss::CategoricalCrossEntropy) check_probability_rows(targets, rows, cols, first_row, origin);
    // Binary cross-entropy is a loss over probabilities: a target outside [0, 1] gives a loss without a minimum
    // (it falls below zero without bound as the output saturates), so training diverges instead of fitting.
    if (loss == Loss::BinaryCrossEntropy) check_unit_interval_targets(targets, rows, cols, first_row, origin);
}

void check_unit_interval_targets(const float* targets, std::size_t rows, std::size_t cols, std::uint64_t first_row,
                                 const std::string& origin) {
    for (std::size_t i = 0; i < rows * cols; ++i) {
        const float value = targets[i];
        if (value >= 0.0f && value <= 1.0f) continue;
        BRAIN_THROW(ErrorCode::InvalidData, origin.empty() ? "" : origin + ": ", "target row ",
                    first_row + i / cols, ", column ", i % cols, " is ", value,
                    "; binary cross-entropy (sigmoid outputs) trains on targets from 0 to 1: labels 0 or 1, or "
                    "probabilities. Rescale that column into [0, 1], or use mean_squared_error for a target that "
                    "is a quantity");
    }
}

void check_probability_rows(const float* targets, std::size_t rows, std::size_t cols, std::uint64_t first_row,
                            const std::string& origin) {
    for (std::size_t r = 0; r < rows; ++r) {
        const float* row = targets + r * cols;
        double sum = 0.0;
        float least = 0.0f;
        for (std::size_t c = 0; c < cols; ++c) {
            sum += row[c];
            least = std::min(least, row[c]);
        }
        if (least >= 0.0f && std::abs(sum - 1.0) <= 1e-3) continue;
        std::string values;
        for (std::size_t c = 0; c < cols && c < 8; ++c) values += (c ? ", " : "") + std::to_string(row[c]);
        if (cols > 8) values += ", ...";
        BRAIN_THROW(ErrorCode::InvalidData, origin.empty() ? "" : origin + ": ", "target row ", first_row + r, " (",
                    values, ") ", least < 0.0f ? "has a negative value" : "sums to " + std::to_string(sum),
                    "; categorical cross-entropy (a softmax output) trains on one probability distribution "
                    "per row: one-hot labels, or soft labels that are non-negative and sum to 1. Normalise "
                    "the rows, or give several labels per row to sigmoid outputs with binary cross-entropy");
    }
}

} // namespace detail

SessionDescriptor::SessionDescriptor(const Network& network, const Dataset& data, const TrainConfig& config,
                                     const TrainingBackend& backend) {
    detail::validate_training_input(network, data, config);
    describe(network, config, backend);
    // The data set's own standardisation wins (it is what fit will save with the model); otherwise a model
    // that carries one (e.g. loaded from a file) trains in its own units.
    const auto& standardization = data.standardization() ? data.standardization() : network.standardization();
    const float* features = data.features().data().data();
    if (standardization) {
        m_features = data.features();
        standardization->apply(m_features);
        features = m_features.data().data();
    }
    m_dataset = {sizeof(brain_dataset_view),
                 data.size(),
                 static_cast<uint32_t>(data.input_width()),
                 static_cast<uint32_t>(data.target_width()),
                 features,
                 data.targets().data().data()};
}

SessionDescriptor::SessionDescriptor(const Network& network, const brain_batch_source& source,
                                     const TrainConfig& config, const TrainingBackend& backend) {
    BRAIN_CHECK(source.rows > 0, ErrorCode::InvalidData,
                "the training data set is empty; expected at least one row");
    BRAIN_CHECK_ARG(source.input_width == network.input_size() && source.target_width == network.output_size(),
                    "the streamed data set has ", source.input_width, " feature and ", source.target_width,
                    " target columns but the network takes ", network.input_size(), " inputs and has ",
                    network.output_size(), " outputs; build the network to match the data");
    BRAIN_CHECK_ARG(config.batch_size > 0 && config.batch_size <= source.rows, "batch_size is ", config.batch_size,
                    "; expected 1 to the data set's ", source.rows, " rows");
    describe(network, config, backend);
    m_dataset = {sizeof(brain_dataset_view), source.rows, source.input_width,
                 source.target_width,        nullptr,     nullptr};
    m_desc.batch_source = &source;
}

void SessionDescriptor::describe(const Network& network, const TrainConfig& config,
                                 const TrainingBackend& backend) {
    for (const auto& layer : network.layers())
        m_layers.push_back(brain_layer_desc{static_cast<uint32_t>(layer.inputs),
                                            static_cast<uint32_t>(layer.outputs),
                                            static_cast<int32_t>(layer.activation), 0.01f});

    m_model = {sizeof(brain_model_desc), static_cast<uint32_t>(m_layers.size()), m_layers.data(),
               static_cast<int32_t>(network.loss())};
    const Optimizer& opt = network.optimizer();
    m_optimizer = {sizeof(brain_optimizer_desc),
                   static_cast<int32_t>(opt.kind),
                   opt.learning_rate,
                   opt.momentum,
                   opt.beta1,
                   opt.beta2,
                   opt.epsilon,
                   opt.weight_decay};

    m_config = {sizeof(brain_train_config), config.epochs, config.batch_size, config.shuffle ? 1 : 0,
                config.seed.value_or(network.seed())};

    m_desc.struct_size = sizeof(brain_session_desc);
    m_desc.device = backend.device();
    m_desc.memory_budget_bytes = backend.memory_budget_mib() * 1024ull * 1024ull;
    m_desc.model = &m_model;
    m_desc.optimizer = &m_optimizer;
    m_desc.dataset = &m_dataset;
    m_desc.config = &m_config;
    m_desc.parameters = network.parameters().data();
    m_desc.parameter_count = network.parameters().size();
    m_desc.optimizer_state = network.optimizer_state().data();
    m_desc.optimizer_state_count = network.optimizer_state().size();
    m_desc.optimizer_step = network.optimizer_step();
    m_desc.first_epoch = network.epochs_trained();
    m_desc.precision = static_cast<int32_t>(backend.precision());
    // ABI 1.2: several devices, several processes.
    BRAIN_CHECK_ARG(!backend.all_devices(), "backend ", backend.describe(),
                    " asks for every device; resolve it to a list first (TrainingSession does)");
    if (backend.devices().size() > 1) {
        m_devices.assign(backend.devices().begin(), backend.devices().end());
        m_desc.devices = m_devices.data();
        m_desc.device_list_count = static_cast<uint32_t>(m_devices.size());
    }
    m_desc.rank = backend.rank();
    m_desc.world_size = backend.world_size();
    if (backend.world_size() > 1) {
        m_rendezvous = backend.rendezvous();
        m_desc.rendezvous = m_rendezvous.c_str();
    }
}

} // namespace brain
