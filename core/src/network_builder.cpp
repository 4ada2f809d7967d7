// NetworkBuilder::build: validation of the description and the seeded, portable weight initialisation.
#include "host_memory.hpp"
#include "network_rules.hpp"

#include <brain/error.hpp>
#include <brain/network.hpp>
#include <brain/random.hpp>
#include <cmath>
#include <cstdint>
#include <limits>
#include <new>
#include <sstream>

namespace brain {

namespace detail {

namespace {

// Stream id separating weight initialisation from split shuffles for the same seed.
constexpr std::uint64_t kInitStream = 1;

bool known(Activation a) noexcept {
    return static_cast<int>(a) >= 0 && static_cast<int>(a) <= 6;
}
bool known(Loss l) noexcept {
    return static_cast<int>(l) >= 0 && static_cast<int>(l) <= 2;
}
bool known(Optimizer::Kind k) noexcept {
    return static_cast<int>(k) >= 0 && static_cast<int>(k) <= 2;
}

template <class... Parts>
std::optional<RuleViolation> violation(std::string path, const Parts&... parts) {
    return RuleViolation{std::move(path), ::brain::detail::concat(parts...)};
}

std::string layer_label(const std::vector<LayerSpec>& layers, std::size_t i) {
    std::ostringstream s;
    s << "layer " << i << " of " << layers.size() << " (";
    if (known(layers[i].activation))
        s << to_string(layers[i].activation);
    else
        s << "activation " << static_cast<int>(layers[i].activation);
    s << ", " << layers[i].outputs << " units)";
    return s.str();
}

} // namespace

std::optional<RuleViolation> check_network(const std::vector<LayerSpec>& layers, Loss loss,
                                           const Optimizer& optimizer) {
    constexpr std::size_t kMaxWidth = std::numeric_limits<std::uint32_t>::max();
    if (layers.empty()) return violation("/layers", "the network has no layers; add at least one dense layer");
    if (layers[0].inputs == 0)
        return violation("/layers/0/inputs", "the input size must be > 0, found 0; set it with input_size(n)");
    const std::size_t last = layers.size() - 1;
    for (std::size_t i = 0; i < layers.size(); ++i) {
        const LayerSpec& l = layers[i];
        const std::string at = "/layers/" + std::to_string(i);
        if (!known(l.activation))
            return violation(at + "/activation", "layer ", i, ": unknown activation value ",
                             static_cast<int>(l.activation),
                             "; use one of linear, relu, leaky_relu, sigmoid, tanh, "
                             "softmax, gelu");
        if (l.outputs == 0)
            return violation(at + "/outputs", layer_label(layers, i), ": the width must be > 0, found 0");
        if (l.inputs > kMaxWidth || l.outputs > kMaxWidth)
            return violation(at + "/outputs", layer_label(layers, i), ": widths are limited to ", kMaxWidth,
                             " (the plugin ABI's uint32), found ", l.inputs, " inputs and ", l.outputs, " outputs");
        if (l.activation == Activation::Softmax && i != last)
            return violation(at + "/activation", layer_label(layers, i),
                             ": softmax is allowed on the output layer only (layer ", last,
                             "); use relu, tanh, gelu... for hidden layers");
    }
    std::size_t total = 0;
    for (std::size_t i = 0; i < layers.size(); ++i) {
        // (outputs + 1) * inputs bounds W and b; overflow here would make every later size wrong.
        const std::size_t per = layers[i].outputs * (layers[i].inputs + 1);
        constexpr std::size_t kMaxFloats = std::numeric_limits<std::size_t>::max() / 4;
        if (layers[i].inputs + 1 > std::numeric_limits<std::size_t>::max() / layers[i].outputs ||
            per > kMaxFloats || total > kMaxFloats - per)
            return violation("/layers/" + std::to_string(i), layer_label(layers, i),
                             ": the parameter count overflows; use narrower layers");
        total += per;
    }
    if (!known(loss))
        return violation("/loss", "unknown loss value ", static_cast<int>(loss),
                         "; use mean_squared_error, binary_cross_entropy or categorical_cross_entropy");
    const LayerSpec& out = layers[last];
    if (loss == Loss::BinaryCrossEntropy && out.activation != Activation::Sigmoid)
        return violation("/loss", "binary_cross_entropy requires a sigmoid output layer, but the output layer is ",
                         to_string(out.activation), " (", layer_label(layers, last), ")",
                         "; make the output layer sigmoid (dense(n, Activation::Sigmoid) last; --output-activation "
                         "sigmoid in the brain command) or use another loss");
    if (loss == Loss::CategoricalCrossEntropy && out.activation != Activation::Softmax)
        return violation("/loss",
                         "categorical_cross_entropy requires a softmax output layer, but the output layer is ",
                         to_string(out.activation), " (", layer_label(layers, last), ")",
                         "; make the output layer softmax (dense(k, Activation::Softmax) last; --output-activation "
                         "softmax in the brain command) or use another loss");
    if (out.activation == Activation::Softmax && loss != Loss::CategoricalCrossEntropy)
        return violation("/loss", "a softmax output layer requires categorical_cross_entropy, found ",
                         to_string(loss), "; use sigmoid outputs for ", to_string(loss));
    if (out.activation == Activation::Softmax && out.outputs < 2)
        return violation("/layers/" + std::to_string(last) + "/outputs",
                         "a softmax output layer needs >= 2 units "
                         "(one per class), found ",
                         out.outputs,
                         "; use a single sigmoid unit for two classes, or, for a column of class numbers, read it "
                         "as classes (CsvOptions::class_columns; the brain command's --classes COLUMN)");

    if (!known(optimizer.kind))
        return violation("/optimizer/kind", "unknown optimizer kind ", static_cast<int>(optimizer.kind),
                         "; use sgd, adam or adamw");
    if (!(std::isfinite(optimizer.learning_rate) && optimizer.learning_rate > 0.0f))
        return violation("/optimizer/learning_rate", "the learning rate must be finite and > 0, found ",
                         optimizer.learning_rate);
    if (!(std::isfinite(optimizer.momentum) && optimizer.momentum >= 0.0f))
        return violation("/optimizer/momentum", "momentum must be finite and >= 0, found ", optimizer.momentum);
    if (!(optimizer.beta1 >= 0.0f && optimizer.beta1 < 1.0f))
        return violation("/optimizer/beta1", "beta1 must be in [0, 1), found ", optimizer.beta1);
    if (!(optimizer.beta2 >= 0.0f && optimizer.beta2 < 1.0f))
        return violation("/optimizer/beta2", "beta2 must be in [0, 1), found ", optimizer.beta2);
    if (!(std::isfinite(optimizer.epsilon) && optimizer.epsilon > 0.0f))
        return violation("/optimizer/epsilon", "epsilon must be finite and > 0, found ", optimizer.epsilon);
    if (!(std::isfinite(optimizer.weight_decay) && optimizer.weight_decay >= 0.0f))
        return violation("/optimizer/weight_decay", "weight_decay must be finite and >= 0, found ",
                         optimizer.weight_decay);
    return std::nullopt;
}

Loss default_loss(Activation output) noexcept {
    switch (output) {
    case Activation::Sigmoid:
        return Loss::BinaryCrossEntropy;
    case Activation::Softmax:
        return Loss::CategoricalCrossEntropy;
    default:
        return Loss::MeanSquaredError;
    }
}

std::size_t parameter_count(const std::vector<LayerSpec>& layers) noexcept {
    std::size_t n = 0;
    for (const auto& l : layers) n += l.outputs * l.inputs + l.outputs;
    return n;
}

std::vector<float> initial_parameters(const std::vector<LayerSpec>& layers, std::uint64_t seed) {
    std::vector<float> params;
    params.reserve(parameter_count(layers));
    Random rng(seed, kInitStream);
    for (const auto& l : layers) {
        const std::size_t weights = l.outputs * l.inputs;
        const bool relu_like = l.activation == Activation::Relu || l.activation == Activation::LeakyRelu ||
                               l.activation == Activation::Gelu;
        if (relu_like) {
            const double stddev = std::sqrt(2.0 / static_cast<double>(l.inputs));
            for (std::size_t i = 0; i < weights; ++i) params.push_back(static_cast<float>(rng.normal() * stddev));
        } else {
            const double limit = std::sqrt(6.0 / static_cast<double>(l.inputs + l.outputs));
            for (std::size_t i = 0; i < weights; ++i)
                params.push_back(static_cast<float>(rng.uniform(-limit, limit)));
        }
        params.insert(params.end(), l.outputs, 0.0f);
    }
    return params;
}

std::string describe_parameter(const std::vector<LayerSpec>& layers, std::size_t index) {
    for (std::size_t i = 0; i < layers.size(); ++i) {
        const std::size_t weights = layers[i].outputs * layers[i].inputs;
        if (index < weights)
            return concat("layer ", i, " weight [", index / layers[i].inputs, ", ", index % layers[i].inputs, "]");
        index -= weights;
        if (index < layers[i].outputs) return concat("layer ", i, " bias [", index, "]");
        index -= layers[i].outputs;
    }
    return concat("index ", index, " past the last layer");
}

} // namespace detail

NetworkBuilder& NetworkBuilder::input_size(std::size_t n) {
    m_input_size = n;
    return *this;
}

NetworkBuilder& NetworkBuilder::dense(std::size_t units, Activation activation) {
    m_layers.emplace_back(units, activation);
    return *this;
}

NetworkBuilder& NetworkBuilder::loss(Loss loss) {
    m_loss = loss;
    return *this;
}

NetworkBuilder& NetworkBuilder::optimizer(const Optimizer& optimizer) {
    m_optimizer = optimizer;
    return *this;
}

NetworkBuilder& NetworkBuilder::seed(std::uint64_t seed) {
    m_seed = seed;
    return *this;
}

Network NetworkBuilder::build() const {
    BRAIN_CHECK_ARG(m_input_size > 0, "NetworkBuilder: the input size must be > 0, found ", m_input_size,
                    "; call input_size(n) with the number of feature columns");
    BRAIN_CHECK_ARG(!m_layers.empty(),
                    "NetworkBuilder: the network has no layers; add at least one with dense(units, "
                    "activation)");
    Network net;
    std::size_t inputs = m_input_size;
    for (const auto& [units, activation] : m_layers) {
        net.m_layers.push_back(LayerSpec{inputs, units, activation});
        inputs = units;
    }
    net.m_loss = m_loss.value_or(detail::default_loss(net.m_layers.back().activation));
    if (auto broken = detail::check_network(net.m_layers, net.m_loss, m_optimizer))
        BRAIN_THROW(ErrorCode::InvalidArgument, "NetworkBuilder: ", broken->message);
    net.m_optimizer = m_optimizer;
    net.m_seed = m_seed;
    // Sized from the shape before anything is allocated: a mistyped width fails here, in a second, rather than
    // after minutes of allocating and initialising.
    const std::uint64_t count = detail::parameter_count(net.m_layers);
    detail::require_host_memory(
        detail::saturating_mul(detail::saturating_mul(count, 1 + m_optimizer.state_per_parameter()), sizeof(float)),
        "NetworkBuilder: the network's " + std::to_string(count) + " parameters with their optimizer state",
        "use narrower or fewer layers");
    try {
        net.m_parameters = detail::initial_parameters(net.m_layers, m_seed);
        net.m_optimizer_state.assign(m_optimizer.state_per_parameter() * net.m_parameters.size(), 0.0f);
    } catch (const std::bad_alloc&) {
        BRAIN_THROW(ErrorCode::AllocationFailed, "NetworkBuilder: cannot allocate ",
                    detail::parameter_count(net.m_layers),
                    " parameters plus optimizer state in host memory; "
                    "use narrower layers");
    }
    net.m_optimizer_step = 0;
    net.m_epochs_trained = 0;
    return net;
}

} // namespace brain
