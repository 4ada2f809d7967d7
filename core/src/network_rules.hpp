// Rules every Network obeys (shared by NetworkBuilder::build and the model-file reader), the default loss,
// and the seeded weight initialisation. Private to the core.
#pragma once

#include <brain/network.hpp>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace brain::detail {

// Leaky ReLU slope for z < 0 (the ABI's activation_param).
inline constexpr float kLeakyReluSlope = 0.01f;

// A broken rule: where it is in a model file (a JSON pointer such as "/layers/2/activation") and what is wrong.
struct RuleViolation {
    std::string json_path;
    std::string message;
};

// The first rule the description breaks, or nothing. Layers must already chain (inputs == previous outputs).
std::optional<RuleViolation> check_network(const std::vector<LayerSpec>& layers, Loss loss,
                                           const Optimizer& optimizer);

// Sigmoid -> BinaryCrossEntropy, Softmax -> CategoricalCrossEntropy, anything else -> MeanSquaredError.
Loss default_loss(Activation output) noexcept;

// Number of floats of weights and biases of the layers.
std::size_t parameter_count(const std::vector<LayerSpec>& layers) noexcept;

// Seeded initial parameters in the ABI's layout: He normal for ReLU-like layers, Glorot uniform otherwise,
// zero biases.
std::vector<float> initial_parameters(const std::vector<LayerSpec>& layers, std::uint64_t seed);

// InvalidArgument for a view that cannot be read: a null address for rows, or rows x cols past size_t.
void require_readable(MatrixView view, const char* who);

// InvalidState for a network without layers: one that was moved from (a Network is never built empty).
void require_layers(const Network& network);

// "layer 1 weight [2, 3]" / "layer 0 bias [4]" for a flat parameter index (for error messages).
std::string describe_parameter(const std::vector<LayerSpec>& layers, std::size_t index);

} // namespace brain::detail
