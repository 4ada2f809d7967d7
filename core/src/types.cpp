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
    BRAIN_THROW(ErrorCode::InvalidArgument, "unknown ", what, " '", text, "'; accepted names: ", accepted,
                " (case-insensitive)");
}

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
    {"mse", Loss::MeanSquaredError},
    {"mean_squared_error", Loss::MeanSquaredError},
    {"bce", Loss::BinaryCrossEntropy},
    {"binary_cross_entropy", Loss::BinaryCrossEntropy},
    {"cce", Loss::CategoricalCrossEntropy},
    {"categorical_cross_entropy", Loss::CategoricalCrossEntropy},
}};

constexpr std::array<Name<Precision>, 5> kPrecisionNames{{
    {"float32", Precision::Float32},
    {"fp32", Precision::Float32},
    {"f32", Precision::Float32},
    {"tf32", Precision::Tf32},
    {"bf16", Precision::Bf16},
}};

} // namespace

std::string_view to_string(Activation a) noexcept {
    switch (a) {
    case Activation::Linear:
        return "linear";
    case Activation::Relu:
        return "relu";
    case Activation::LeakyRelu:
        return "leaky_relu";
    case Activation::Sigmoid:
        return "sigmoid";
    case Activation::Tanh:
        return "tanh";
    case Activation::Softmax:
        return "softmax";
    case Activation::Gelu:
        return "gelu";
    }
    return "unknown_activation";
}

std::string_view to_string(Loss l) noexcept {
    switch (l) {
    case Loss::MeanSquaredError:
        return "mean_squared_error";
    case Loss::BinaryCrossEntropy:
        return "binary_cross_entropy";
    case Loss::CategoricalCrossEntropy:
        return "categorical_cross_entropy";
    }
    return "unknown_loss";
}

std::string_view to_string(Precision p) noexcept {
    switch (p) {
    case Precision::Float32:
        return "float32";
    case Precision::Tf32:
        return "tf32";
    case Precision::Bf16:
        return "bf16";
    }
    return "unknown_precision";
}

std::string_view to_string(Optimizer::Kind k) noexcept {
    switch (k) {
    case Optimizer::Kind::Sgd:
        return "sgd";
    case Optimizer::Kind::Adam:
        return "adam";
    case Optimizer::Kind::AdamW:
        return "adamw";
    }
    return "unknown_optimizer";
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
    Optimizer o;
    o.kind = Kind::Sgd;
    o.learning_rate = learning_rate;
    o.momentum = momentum;
    return o;
}

Optimizer Optimizer::adam(float learning_rate) {
    Optimizer o;
    o.kind = Kind::Adam;
    o.learning_rate = learning_rate;
    return o;
}

Optimizer Optimizer::adamw(float learning_rate, float weight_decay) {
    Optimizer o;
    o.kind = Kind::AdamW;
    o.learning_rate = learning_rate;
    o.weight_decay = weight_decay;
    return o;
}

} // namespace brain
