// Optional header-only helper for plugin authors: the memory estimate of a session (brain/session_plan.hpp), byte
// for byte the core's estimate_tensor_memory_bytes (the core computes it with this header), the largest batch whose
// estimate fits a budget, and the data set's residency rule.
//
// The estimate: 4 bytes x (4 x parameters + B x (inputs + outputs + 3 x the sum of the layer widths)) + 64 KiB for
// batches of B rows: weights, gradients and two optimizer moments of every parameter (an upper bound for SGD's
// one), the batch's inputs and targets, each layer's pre-activations, activations and deltas, and scalars. A
// session's peak of tensor bytes (brain_session_stats.peak_allocated_bytes) must stay within it; the conformance
// kit checks.
//
// The residency rule: the budget bounds the tensors alone, so a session is never refused because of its data set.
// A device backend keeps the data set resident only when it fits in what the budget leaves after the tensors, and
// then charges it to the budget (stats: dataset_resident, dataset_bytes); otherwise it streams the rows batch by
// batch (the CUDA plugin). A host backend's copy of the data set lives in host memory beside the tensors and is
// not charged (the CPU and sample plugins). With no budget (0) the data set is resident.
#pragma once

#include <brain/session_plan.hpp>
#include <cstddef>
#include <cstdint>
#include <limits>

namespace brain::sdk {

// The fixed slack of the estimate, for scalars and alignment.
inline constexpr std::uint64_t estimate_slack_bytes = 64 * 1024;

// a + b and a x b, saturating at the largest uint64 instead of wrapping (any shape gives a true "at least").
inline std::uint64_t saturating_add(std::uint64_t a, std::uint64_t b) noexcept {
    return a > std::numeric_limits<std::uint64_t>::max() - b ? std::numeric_limits<std::uint64_t>::max() : a + b;
}
inline std::uint64_t saturating_mul(std::uint64_t a, std::uint64_t b) noexcept {
    return a != 0 && b > std::numeric_limits<std::uint64_t>::max() / a ? std::numeric_limits<std::uint64_t>::max()
                                                                      : a * b;
}

// Bytes of the estimate that do not grow with the batch: four floats per parameter and the slack.
inline std::uint64_t estimate_fixed_bytes(const SessionPlan& plan) noexcept {
    return saturating_add(saturating_mul(sizeof(float) * 4, plan.parameter_count), estimate_slack_bytes);
}

// Bytes of the estimate per batch row: its inputs and targets, and each layer's z, a and delta.
inline std::uint64_t estimate_row_bytes(const SessionPlan& plan) noexcept {
    std::uint64_t floats = saturating_add(plan.input_width, plan.target_width);
    for (const LayerPlan& layer : plan.layers) floats = saturating_add(floats, saturating_mul(3, layer.outputs));
    return saturating_mul(sizeof(float), floats);
}

// The estimate for batches of `batch_rows` rows (saturating at the largest uint64 instead of wrapping).
inline std::uint64_t estimate_tensor_bytes(const SessionPlan& plan, std::uint64_t batch_rows) noexcept {
    return saturating_add(estimate_fixed_bytes(plan), saturating_mul(batch_rows, estimate_row_bytes(plan)));
}

// The largest batch size whose estimate fits `budget_bytes`; 0 when not even one row does. Not capped by the data
// set's rows: the budget alone decides.
inline std::size_t estimate_largest_batch(const SessionPlan& plan, std::uint64_t budget_bytes) noexcept {
    const std::uint64_t fixed = estimate_fixed_bytes(plan), row = estimate_row_bytes(plan);
    if (budget_bytes < fixed || row == 0 || fixed == std::numeric_limits<std::uint64_t>::max()) return 0;
    const std::uint64_t rows = (budget_bytes - fixed) / row;
    return rows > std::numeric_limits<std::size_t>::max() ? std::numeric_limits<std::size_t>::max()
                                                          : static_cast<std::size_t>(rows);
}

// Bytes of the data set as the plan gives it: every feature and target row in float32.
inline std::uint64_t dataset_bytes(const SessionPlan& plan) noexcept {
    return sizeof(float) * static_cast<std::uint64_t>(plan.rows) * (plan.input_width + plan.target_width);
}

// The residency rule for a device backend: the data set (`data_bytes`) is resident when there is no budget, or
// when it fits in what the budget leaves after the session's tensors (`tensor_bytes`, already within the budget).
inline bool dataset_resident_within(std::uint64_t budget_bytes, std::uint64_t tensor_bytes,
                                    std::uint64_t data_bytes) noexcept {
    return budget_bytes == 0 || (tensor_bytes <= budget_bytes && data_bytes <= budget_bytes - tensor_bytes);
}

// A session's budget at a glance, from the estimate: what its tensors take, whether they fit, the largest batch
// that fits and, by the residency rule, whether a device backend would keep the data set resident.
struct SessionBudget {
    std::uint64_t tensor_bytes = 0;  // estimate_tensor_bytes at the plan's batch_rows
    std::uint64_t dataset_bytes = 0; // dataset_bytes(plan)
    bool fits = true;                // the tensors fit the budget (always with no budget)
    bool dataset_resident = true;    // dataset_resident_within(budget, tensor_bytes, dataset_bytes)
    std::size_t largest_batch = 0;   // estimate_largest_batch (the plan's batch_rows with no budget)
};

// The budget of a plan under its own budget_bytes (0: none).
inline SessionBudget plan_budget(const SessionPlan& plan) noexcept {
    SessionBudget out;
    out.tensor_bytes = estimate_tensor_bytes(plan, plan.batch_rows);
    out.dataset_bytes = dataset_bytes(plan);
    out.fits = plan.budget_bytes == 0 || out.tensor_bytes <= plan.budget_bytes;
    out.dataset_resident =
        out.fits && dataset_resident_within(plan.budget_bytes, out.tensor_bytes, out.dataset_bytes);
    out.largest_batch = plan.budget_bytes == 0 ? plan.batch_rows : estimate_largest_batch(plan, plan.budget_bytes);
    return out;
}

} // namespace brain::sdk
