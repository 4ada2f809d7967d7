// Enumerations and small value types of the public API: activations, losses, optimizers, training config.
#pragma once

#include <brain/export.hpp>

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace brain {

// Activation of a dense layer. Softmax is allowed on the output layer only.
enum class Activation { Linear = 0, Relu = 1, LeakyRelu = 2, Sigmoid = 3, Tanh = 4, Softmax = 5, Gelu = 6 };

// Training loss. The default follows the output activation: Sigmoid -> BinaryCrossEntropy,
// Softmax -> CategoricalCrossEntropy, anything else -> MeanSquaredError.
enum class Loss { MeanSquaredError = 0, BinaryCrossEntropy = 1, CategoricalCrossEntropy = 2 };

// Arithmetic for matrix products on accelerators. Float32 is the default and the parity reference.
enum class Precision { Float32 = 0, Tf32 = 1, Bf16 = 2 };

BRAIN_API std::string_view to_string(Activation a) noexcept;
BRAIN_API std::string_view to_string(Loss l) noexcept;
BRAIN_API std::string_view to_string(Precision p) noexcept;
// Parse names as printed by to_string (case-insensitive; also "relu", "leaky_relu", "mse", "bce", "cce").
// Throw InvalidArgument naming the text and the accepted names.
BRAIN_API Activation parse_activation(std::string_view text);
BRAIN_API Loss parse_loss(std::string_view text);
BRAIN_API Precision parse_precision(std::string_view text);

// Optimizer and its hyper-parameters (PyTorch's update rules).
struct BRAIN_API Optimizer {
    enum class Kind { Sgd = 0, Adam = 1, AdamW = 2 };
    Kind kind = Kind::Adam;
    float learning_rate = 0.001f;
    float momentum = 0.0f;
    float beta1 = 0.9f;
    float beta2 = 0.999f;
    float epsilon = 1e-8f;
    float weight_decay = 0.0f;

    // Stochastic gradient descent with optional momentum.
    static Optimizer sgd(float learning_rate, float momentum = 0.0f);
    // Adam with the usual betas and epsilon.
    static Optimizer adam(float learning_rate);
    // AdamW with decoupled weight decay.
    static Optimizer adamw(float learning_rate, float weight_decay = 0.01f);
    // Floats of optimizer state per parameter (SGD 1, Adam/AdamW 2).
    std::size_t state_per_parameter() const noexcept { return kind == Kind::Sgd ? 1 : 2; }
};

BRAIN_API std::string_view to_string(Optimizer::Kind k) noexcept;

// One training run's shape: the chapter's TrainConfig.
struct TrainConfig {
    std::uint32_t epochs = 10;
    std::uint32_t batch_size = 32;
    bool shuffle = true;
    std::optional<std::uint64_t> seed; // batch-order seed; none: the network's seed
};

} // namespace brain
