// Optional header-only helper for plugin authors: the capability masks of brain_capabilities (ABI 1.2), the ABI 1.0
// set that a plugin without the capabilities entry is taken to run, the features' names, and the refusal a
// session_open gives to a request outside what the plugin declares: UNSUPPORTED naming the feature, which is what
// the conformance kit expects for exactly the declared gaps. Compiles against an older plugin_abi.h too (the parts
// that need brain_capabilities are then left out).
#pragma once

#include <brain/plugin_abi.h>
#include <brain/plugin_sdk.hpp>
#include <brain/session_plan.hpp>
#include <cstdint>
#include <string>

namespace brain::sdk {

// The bit of one enum value in a capability mask (0 for a value outside 0..31).
constexpr std::uint32_t capability_bit(std::int32_t value) noexcept {
    return value >= 0 && value < 32 ? 1u << value : 0u;
}

// Everything ABI 1.0 defines, which a plugin without a capabilities entry is taken to run: every activation, loss
// and optimizer, with float32 products only.
inline constexpr std::uint32_t abi_1_0_activations = (1u << (BRAIN_ACT_GELU + 1)) - 1u;
inline constexpr std::uint32_t abi_1_0_losses = (1u << (BRAIN_LOSS_CATEGORICAL_CROSS_ENTROPY + 1)) - 1u;
inline constexpr std::uint32_t abi_1_0_optimizers = (1u << (BRAIN_OPT_ADAMW + 1)) - 1u;
inline constexpr std::uint32_t abi_1_0_precisions = capability_bit(BRAIN_PRECISION_FLOAT32);
// Every precision ABI 1.0 names (float32, TF32, BF16).
inline constexpr std::uint32_t all_precisions = (1u << (BRAIN_PRECISION_BF16 + 1)) - 1u;

// The mandatory set: what every backend runs, because the conformance kit's contract checks (checkpoint, stats,
// budget, errors) train with it: linear, ReLU and tanh layers, mean squared error, SGD (with momentum) and Adam,
// float32 products. Everything else may be declared missing.
inline constexpr std::uint32_t mandatory_activations =
    capability_bit(BRAIN_ACT_LINEAR) | capability_bit(BRAIN_ACT_RELU) | capability_bit(BRAIN_ACT_TANH);
inline constexpr std::uint32_t mandatory_losses = capability_bit(BRAIN_LOSS_MEAN_SQUARED_ERROR);
inline constexpr std::uint32_t mandatory_optimizers =
    capability_bit(BRAIN_OPT_SGD) | capability_bit(BRAIN_OPT_ADAM);
inline constexpr std::uint32_t mandatory_precisions = capability_bit(BRAIN_PRECISION_FLOAT32);

// The name of an activation as the core prints it ("leaky_relu"); "unknown" outside the enum.
inline const char* activation_name(std::int32_t activation) noexcept {
    return detail::activation_name(activation);
}
// The name of a loss ("categorical_cross_entropy").
inline const char* loss_name(std::int32_t loss) noexcept {
    return detail::loss_name(loss);
}
// The name of an optimizer ("sgd", "adam", "adamw").
inline const char* optimizer_name(std::int32_t kind) noexcept {
    static const char* const names[] = {"sgd", "adam", "adamw"};
    return kind >= BRAIN_OPT_SGD && kind <= BRAIN_OPT_ADAMW ? names[kind] : "unknown";
}
// The name of a precision ("float32", "tf32", "bf16").
inline const char* precision_name(std::int32_t precision) noexcept {
    static const char* const names[] = {"float32", "tf32", "bf16"};
    return precision >= BRAIN_PRECISION_FLOAT32 && precision <= BRAIN_PRECISION_BF16 ? names[precision] : "unknown";
}

#if BRAIN_ABI_VERSION_MINOR >= 2 // brain_capabilities arrived in ABI 1.2
// The ABI 1.0 set with one device and no features: a starting point a backend clears bits from.
inline brain_capabilities abi_1_0_capabilities() noexcept {
    brain_capabilities caps{};
    caps.struct_size = sizeof(caps);
    caps.activations = abi_1_0_activations;
    caps.losses = abi_1_0_losses;
    caps.optimizers = abi_1_0_optimizers;
    caps.precisions = abi_1_0_precisions;
    caps.max_devices = 1;
    return caps;
}

// Refuse a validated session plan that uses a feature outside `caps`: UNSUPPORTED naming the first such feature
// (and the layer, for an activation), the capabilities' notes, and what to do. `backend` names the backend in the
// message ("the naive backend"). Call it in session_open after plan_session.
inline void refuse_undeclared(const brain_capabilities& caps, const SessionPlan& plan, const std::string& backend) {
    const std::string why = caps.notes[0] != '\0' ? std::string(" (") + caps.notes + ")" : std::string();
    for (std::size_t l = 0; l < plan.layers.size(); ++l)
        if (!(caps.activations & capability_bit(plan.layers[l].activation)))
            fail(BRAIN_ERR_UNSUPPORTED, backend, " does not run the ", activation_name(plan.layers[l].activation),
                 " activation (layer ", l, ")", why,
                 "; use another activation, or a backend whose capabilities list ",
                 activation_name(plan.layers[l].activation));
    if (!(caps.losses & capability_bit(plan.loss)))
        fail(BRAIN_ERR_UNSUPPORTED, backend, " does not run the ", loss_name(plan.loss), " loss", why,
             "; use another loss, or a backend whose capabilities list ", loss_name(plan.loss));
    if (!(caps.optimizers & capability_bit(plan.optimizer.kind)))
        fail(BRAIN_ERR_UNSUPPORTED, backend, " does not run the ", optimizer_name(plan.optimizer.kind),
             " optimizer", why, "; use another optimizer, or a backend whose capabilities list ",
             optimizer_name(plan.optimizer.kind));
    if (!(caps.precisions & capability_bit(plan.precision)))
        fail(BRAIN_ERR_UNSUPPORTED, backend, " does not compute in ", precision_name(plan.precision), why,
             "; request a precision its capabilities list (float32 is always among them)");
    if (plan.batch_source && !(caps.features & BRAIN_FEATURE_BATCH_SOURCE))
        fail(
            BRAIN_ERR_UNSUPPORTED, backend, " does not take rows from a batch source (streamed data sets)", why,
            "; load the data set into memory, or use a backend whose capabilities list BRAIN_FEATURE_BATCH_SOURCE");
}
#endif

} // namespace brain::sdk
