// brain::Network: a dense feed-forward network, its builder, training entry points and model files.
#pragma once

#include <brain/backend.hpp>
#include <brain/dataset.hpp>
#include <brain/export.hpp>
#include <brain/matrix.hpp>
#include <brain/metrics.hpp>
#include <brain/schedule.hpp>
#include <brain/stats.hpp>
#include <brain/types.hpp>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace brain {

class NetworkBuilder;
namespace detail {
struct NetworkAccess;
} // namespace detail

// One dense layer: outputs = activation(inputs W^T + b).
struct LayerSpec {
    std::size_t inputs = 0;
    std::size_t outputs = 0;
    Activation activation = Activation::Linear;
};

// Host copy of a session's weights and optimizer state (TrainingSession::checkpoint).
struct Checkpoint {
    std::vector<float> parameters;      // flat, the ABI's layout: per layer W (out x in, row-major) then b
    std::vector<float> optimizer_state; // SGD: velocity; Adam/AdamW: first then second moments
    std::uint64_t optimizer_step = 0;
    std::uint64_t epochs_trained = 0; // epochs the session had run when the checkpoint was taken
};

// What fit / fit_with_backend did.
struct FitReport {
    std::vector<float> epoch_losses;
    std::vector<float> validation_losses; // when a validation set was given
    AcceleratorStats stats;
    std::vector<float> learning_rates;            // per epoch: the rate of its last step
    std::optional<LearningRateSchedule> schedule; // the schedule and its state after the run (to continue it)
    std::string stop_reason;                      // why a callback stopped training early; empty if none did
    std::optional<std::uint64_t> restored_epoch;  // the epoch whose weights the network ends with, when a callback
                                                  // (EarlyStopping) restored an earlier epoch's
    std::uint64_t weight_copies = 0;              // copies of the weights from the backend (checkpoints) it took
};

struct FitOptions;

// A dense network with its weights, optimizer state and (optionally) input standardisation. Copyable: copies
// are independent. Not thread-safe for mutation; const member functions may run concurrently.
class BRAIN_API Network {
public:
    // Start describing a network.
    static NetworkBuilder builder();

    const std::vector<LayerSpec>& layers() const noexcept { return m_layers; }
    // The input and output widths (0 for a moved-from network, which every other call refuses).
    std::size_t input_size() const noexcept { return m_layers.empty() ? 0 : m_layers.front().inputs; }
    std::size_t output_size() const noexcept { return m_layers.empty() ? 0 : m_layers.back().outputs; }
    Loss loss() const noexcept { return m_loss; }
    const Optimizer& optimizer() const noexcept { return m_optimizer; }
    std::uint64_t seed() const noexcept { return m_seed; }
    // Number of trainable floats (all weights and biases).
    std::size_t parameter_count() const noexcept { return m_parameters.size(); }
    // The flat parameters in the ABI's layout.
    const std::vector<float>& parameters() const noexcept { return m_parameters; }
    const std::vector<float>& optimizer_state() const noexcept { return m_optimizer_state; }
    std::uint64_t optimizer_step() const noexcept { return m_optimizer_step; }
    // Epochs trained so far (continues the shuffle stream across fit calls).
    std::uint64_t epochs_trained() const noexcept { return m_epochs_trained; }
    const std::optional<Standardization>& standardization() const noexcept { return m_standardization; }
    const std::vector<std::string>& class_labels() const noexcept { return m_class_labels; }
    const std::vector<std::string>& feature_names() const noexcept { return m_feature_names; }
    const std::vector<std::string>& target_names() const noexcept { return m_target_names; }
    // True for sigmoid or softmax outputs (accuracy is reported).
    bool is_classifier() const noexcept;

    // Train on the CPU plugin: fit_with_backend(data, config, TrainingBackend::cpu()).
    FitReport fit(const Dataset& data, const TrainConfig& config, const Dataset* validation = nullptr);
    // Train on the given backend. The weights change only if the whole run succeeds; on error this network
    // keeps its previous weights. Never falls back to another backend.
    FitReport fit_with_backend(const Dataset& data, const TrainConfig& config, const TrainingBackend& backend,
                               const Dataset* validation = nullptr);
    // The same with a validation set, a learning-rate schedule, callbacks or a run to resume (callbacks.hpp).
    FitReport fit(const Dataset& data, const TrainConfig& config, const FitOptions& options);
    FitReport fit_with_backend(const Dataset& data, const TrainConfig& config, const TrainingBackend& backend,
                               const FitOptions& options);

    // Outputs for raw input rows (the network's standardisation is applied). Runs on the host; needs no plugin.
    // Throws InvalidData for a non-finite input and NumericalError naming the row whose output is not finite.
    // Takes a Matrix or a view of rows held elsewhere (a NumPy array), read in place.
    Matrix predict(MatrixView inputs) const;
    // Outputs for raw input rows computed on `backend` (its precision included) by the plugin's predictor: the
    // weights go to the backend once and the rows stream through in batches that fit its memory budget
    // (brain::Predictor). Never falls back to the host; throws Unsupported when the plugin has no predictor
    // (plugins built against ABI 1.0 or 1.1). predict() stays the default.
    Matrix predict_with_backend(MatrixView inputs, const TrainingBackend& backend) const;
    // For classifiers: the predicted class index of each row (argmax; a single sigmoid output thresholds 0.5).
    std::vector<std::size_t> predict_classes(MatrixView inputs) const;
    // Loss (the training loss) over a data set; for classifiers of one label per row (softmax, or one sigmoid unit)
    // also accuracy, per-class precision, recall and F1, their macro and weighted averages and the confusion
    // matrix (several sigmoid units: the argmax's accuracy only); for regressors RMSE, MAE and R^2 per output.
    Evaluation evaluate(const Dataset& data) const;

    // Adopt a session's checkpoint; its sizes must match this network.
    void restore_checkpoint(const Checkpoint& checkpoint);
    // Replace the parameters (size must equal parameter_count()); the optimizer state (moments, step count) stays,
    // set_optimizer restarts it.
    void set_parameters(std::vector<float> parameters);

    // Write the model file (docs/model-format.md) through write_file_safely (safe_file.hpp): whole or not at all,
    // never over a symbolic link, directory, device, FIFO or socket.
    void save_json(const std::filesystem::path& path) const;
    // The same, also refusing a path that is the same file as one of `inputs` (e.g. the training data).
    void save_json(const std::filesystem::path& path, const std::vector<std::filesystem::path>& inputs) const;
    // Read a model file of at most InputLimits{}.max_file_bytes; errors (InvalidModelFile) name the file and the
    // JSON path at fault. A directory, device or socket is IoError.
    static Network load_json(const std::filesystem::path& path);
    // The same with explicit limits (max_file_bytes applies).
    static Network load_json(const std::filesystem::path& path, const InputLimits& limits);
    // The model as a JSON text, and back.
    std::string to_json_string() const;
    static Network from_json_string(const std::string& text, const std::string& origin = "<string>");

    // Record data-set metadata (standardisation, names, class labels) in the model; fit does this.
    void adopt_dataset_metadata(const Dataset& data);
    // Train on with another optimizer (e.g. a model imported from elsewhere); the optimizer state restarts at zero.
    // Throws InvalidArgument naming a hyper-parameter out of range.
    void set_optimizer(const Optimizer& optimizer);

    // Models in and out (docs/interop.md). Every file is written through write_file_safely (safe_file.hpp),
    // refusing a path that is the same file as one of `inputs`, and read under `limits` (max_file_bytes).

    // Write the whole model as an ONNX graph (opset 17) that ONNX Runtime serves: input "input" [batch, inputs],
    // the standardisation (Sub, Div), every layer (Gemm and its activation), output "output" [batch, outputs], the
    // feature, target and class names in the metadata. The graph passes the ONNX checker before it is written.
    void save_onnx(const std::filesystem::path& path, const std::vector<std::filesystem::path>& inputs = {}) const;
    // Read a multilayer perceptron from an ONNX file (torch.onnx.export of an nn.Sequential, tf2onnx, save_onnx).
    // A malformed file, or a graph that is not a chain of dense layers, is InvalidModelFile naming what is wrong
    // (the node, its op type, and what brain supports).
    static Network load_onnx(const std::filesystem::path& path, const InputLimits& limits = InputLimits{});
    // Write the parameters as safetensors (float32) named as PyTorch's nn.Sequential names them: "0.weight",
    // "0.bias", "2.weight", ... (weights outputs x inputs; an activation takes an index too).
    void save_safetensors(const std::filesystem::path& path,
                          const std::vector<std::filesystem::path>& inputs = {}) const;
    // A copy of `architecture` (layers, names, standardisation, loss, optimizer) with the parameters of a
    // safetensors file in nn.Sequential naming; the file's layers must match it. Errors are InvalidModelFile.
    static Network load_safetensors(const std::filesystem::path& path, const Network& architecture,
                                    const InputLimits& limits = InputLimits{});
    // A network whose widths come from the file's tensors, with `activations` (one per layer, output last; empty:
    // those a file written by save_safetensors records).
    static Network load_safetensors(const std::filesystem::path& path, const std::vector<Activation>& activations,
                                    const InputLimits& limits = InputLimits{});
    // As above, with the activations chosen once the file's layers are known: `choose` gets them (widths only,
    // every activation linear) and returns one activation per layer, output last, or throws. The file is read once,
    // so a pipe serves as well as a file.
    static Network
    load_safetensors_with(const std::filesystem::path& path,
                          const std::function<std::vector<Activation>(const std::vector<LayerSpec>&)>& choose,
                          const InputLimits& limits = InputLimits{});
    // The layers a safetensors file in nn.Sequential naming holds, widths only (every activation linear).
    static std::vector<LayerSpec> safetensors_layers(const std::filesystem::path& path,
                                                     const InputLimits& limits = InputLimits{});

private:
    friend class NetworkBuilder;
    friend class TrainingSession;
    friend struct detail::NetworkAccess;
    Network() = default;
    void validate() const;

    std::vector<LayerSpec> m_layers;
    Loss m_loss = Loss::MeanSquaredError;
    Optimizer m_optimizer;
    std::uint64_t m_seed = 0;
    std::vector<float> m_parameters;
    std::vector<float> m_optimizer_state;
    std::uint64_t m_optimizer_step = 0;
    std::uint64_t m_epochs_trained = 0;
    std::optional<Standardization> m_standardization;
    std::vector<std::string> m_feature_names;
    std::vector<std::string> m_target_names;
    std::vector<std::string> m_class_labels;
};

// Fluent description of a Network: Network::builder().input_size(16).dense(256, Activation::Relu)...build().
class BRAIN_API NetworkBuilder {
public:
    NetworkBuilder& input_size(std::size_t n);
    NetworkBuilder& dense(std::size_t units, Activation activation);
    NetworkBuilder& loss(Loss loss);
    NetworkBuilder& optimizer(const Optimizer& optimizer);
    NetworkBuilder& seed(std::uint64_t seed);
    // Validate and initialise (He for ReLU-like layers, Glorot otherwise; zero biases), fully determined by
    // the seed. Throws InvalidArgument naming the layer and value at fault, and AllocationFailed, before
    // allocating, when the parameters and optimizer state exceed the host memory available.
    Network build() const;

private:
    std::size_t m_input_size = 0;
    std::vector<std::pair<std::size_t, Activation>> m_layers;
    std::optional<Loss> m_loss;
    Optimizer m_optimizer;
    std::uint64_t m_seed = 0;
};

} // namespace brain
