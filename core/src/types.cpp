// Names of the public enumerations (to_string / parse_*) and the Optimizer factory functions.
#include <array>
#include <brain/error.hpp>
#include <brain/types.hpp>
#include <string>

namespace brain {

namespace {

// One accepted spelling of an enumerator.
template <class E>
struct Name {
    std::string_view text;
    E value;
};

// Lower-case without '_', '-' and blanks, so "Leaky-ReLU", "leaky_relu" and the enumerator name "LeakyRelu"
// all mean the same thing.
std::string squash(std::string_view text) {
    std::string out;
    out.reserve(text.size());
    for (char c : text) {
        if (c == '_' || c == '-' || c == ' ' || c == '\t') continue;
        if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
        out.push_back(c);
    }
    return out;
}

template <class E, std::size_t N>
E parse_name(std::string_view text, const std::array<Name<E>, N>& names, std::string_view what,
             std::string_view accepted) {
    const std::string key = squash(text);
    for (const auto& name : names)
        if (!key.empty() && squash(name.text) == key) return name.value;
    // Quoted as an excerpt: the name may come from a file, whose bytes must neither flood nor garble a terminal.
    BRAIN_THROW(ErrorCode::InvalidArgument, "unknown ", what, " ", quote_excerpt(text),
                "; accepted names: ", accepted, " (case-insensitive)");
}

// The spellings each parse_* accepts; the first spelling of a value is the name to_string gives it.
constexpr std::array<Name<Activation>, 9> kActivationNames{{
    {"linear", Activation::Linear},
    {"identity", Activation::Linear},
    {"relu", Activation::Relu},
    {"leaky_relu", Activation::LeakyRelu},
    {"sigmoid", Activation::Sigmoid},
    {"logistic", Activation::Sigmoid},
    {"tanh", Activation::Tanh},
    {"softmax", Activation::Softmax},
    {"gelu", Activation::Gelu},
}};

constexpr std::array<Name<Loss>, 6> kLossNames{{
    {"mean_squared_error", Loss::MeanSquaredError},
    {"mse", Loss::MeanSquaredError},
    {"binary_cross_entropy", Loss::BinaryCrossEntropy},
    {"bce", Loss::BinaryCrossEntropy},
    {"categorical_cross_entropy", Loss::CategoricalCrossEntropy},
    {"cce", Loss::CategoricalCrossEntropy},
}};

constexpr std::array<Name<Precision>, 5> kPrecisionNames{{
    {"float32", Precision::Float32},
    {"fp32", Precision::Float32},
    {"f32", Precision::Float32},
    {"tf32", Precision::Tf32},
    {"bf16", Precision::Bf16},
}};

constexpr std::array<Name<Optimizer::Kind>, 3> kOptimizerNames{{
    {"sgd", Optimizer::Kind::Sgd},
    {"adam", Optimizer::Kind::Adam},
    {"adamw", Optimizer::Kind::AdamW},
}};

template <class E, std::size_t N>
std::string_view name_of(E value, const std::array<Name<E>, N>& names, std::string_view unknown) noexcept {
    for (const auto& name : names)
        if (name.value == value) return name.text;
    return unknown;
}

} // namespace

std::string_view to_string(Activation a) noexcept {
    return name_of(a, kActivationNames, "unknown_activation");
}

std::string_view to_string(Loss l) noexcept {
    return name_of(l, kLossNames, "unknown_loss");
}

std::string_view to_string(Precision p) noexcept {
    return name_of(p, kPrecisionNames, "unknown_precision");
}

std::string_view to_string(Optimizer::Kind k) noexcept {
    return name_of(k, kOptimizerNames, "unknown_optimizer");
}

Activation parse_activation(std::string_view text) {
    return parse_name(text, kActivationNames, "activation",
                      "linear, relu, leaky_relu, sigmoid, tanh, softmax, gelu");
}

Loss parse_loss(std::string_view text) {
    return parse_name(text, kLossNames, "loss",
                      "mse|mean_squared_error, bce|binary_cross_entropy, cce|categorical_cross_entropy");
}

Precision parse_precision(std::string_view text) {
    return parse_name(text, kPrecisionNames, "precision", "float32|fp32, tf32, bf16");
}

Optimizer Optimizer::sgd(float learning_rate, float momentum) {
    return Optimizer{.kind = Kind::Sgd, .learning_rate = learning_rate, .momentum = momentum};
}

Optimizer Optimizer::adam(float learning_rate) {
    return Optimizer{.kind = Kind::Adam, .learning_rate = learning_rate};
}

Optimizer Optimizer::adamw(float learning_rate, float weight_decay) {
    return Optimizer{.kind = Kind::AdamW, .learning_rate = learning_rate, .weight_decay = weight_decay};
}

} // namespace brain
