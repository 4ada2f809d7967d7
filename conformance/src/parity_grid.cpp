// Parity over the whole math: every activation (hidden, and as a mean-squared-error output) with every loss and
// its output activation (mean squared error, binary cross-entropy from sigmoid, categorical cross-entropy from
// softmax), on two network shapes with odd batch sizes whose last batch is short, for each optimizer (one row per
// optimizer: SGD, SGD with momentum, Adam, AdamW with decay), against the CPU reference. A failing row says which
// cases fail, what they share (the feature at fault) and, for the optimizers, whether the plugin matches the
// rule with a term left out (momentum ignored, no weight decay). Then the last short batch on its own.
#include "checks.hpp"

#include <algorithm>
#include <brain/training_session.hpp>
#include <map>
#include <optional>
#include <set>

namespace brain::conformance {

namespace {

// A network shape: hidden layers take the case's activation; a mean-squared-error output takes it too when
// output_follows_hidden (else linear), so every activation is also tested as an output.
struct Shape {
    const char* name;
    std::size_t inputs;
    std::vector<std::size_t> hidden;
    std::size_t outputs;
    std::size_t rows;
    std::uint32_t batch; // odd, and rows % batch != 0: every epoch ends with a short batch
    bool output_follows_hidden;
};

const Shape k_shapes[] = {
    {"5-7-3", 5, {7}, 3, 37, 5, false},     // 7 batches of 5, then 2 rows
    {"6-9-5-4", 6, {9, 5}, 4, 41, 7, true}, // 5 batches of 7, then 6 rows
};

const Activation k_hidden[] = {Activation::Linear,  Activation::Relu, Activation::LeakyRelu,
                               Activation::Sigmoid, Activation::Tanh, Activation::Gelu};

// A loss with the output activation it requires (mean squared error takes the shape's).
struct Pairing {
    const char* name;
    Loss loss;
    std::optional<Activation> output;
};

const Pairing k_pairings[] = {
    {"mean_squared_error", Loss::MeanSquaredError, std::nullopt},
    {"binary_cross_entropy with a sigmoid output", Loss::BinaryCrossEntropy, Activation::Sigmoid},
    {"categorical_cross_entropy with a softmax output", Loss::CategoricalCrossEntropy, Activation::Softmax},
};

// One optimizer row, and the rule with one term left out that a failing plugin is compared against.
struct OptimizerRow {
    const char* check;
    const char* label;
    Optimizer optimizer;
    std::optional<Optimizer> without; // the rule with one term left out
    const char* without_label;
    const char* without_means;
};

const OptimizerRow k_rows[] = {
    {"parity sgd", "SGD (learning rate 0.05, no momentum)", Optimizer::sgd(0.05f), std::nullopt, "", ""},
    {"parity sgd momentum", "SGD with momentum 0.9", Optimizer::sgd(0.05f, 0.9f), Optimizer::sgd(0.05f),
     "SGD without momentum",
     "the plugin ignores the momentum: apply v = momentum * v + g, p -= lr * v (PyTorch's SGD)"},
    {"parity adam", "Adam (learning rate 0.01)", Optimizer::adam(0.01f), std::nullopt, "", ""},
    {"parity adamw", "AdamW with weight decay 0.1", Optimizer::adamw(0.01f, 0.1f), Optimizer::adamw(0.01f, 0.0f),
     "AdamW without weight decay",
     "the plugin ignores the weight decay: AdamW first decays every parameter, "
     "p -= lr * weight_decay * p, then takes the Adam step"},
};

struct GridCase {
    const Shape* shape = nullptr;
    Activation activation = Activation::Linear;
    const Pairing* pairing = nullptr;

    Activation output() const {
        if (pairing->output) return *pairing->output;
        return shape->output_follows_hidden ? activation : Activation::Linear;
    }
    std::string name() const {
        return std::string(to_string(activation)) + " layers, " + pairing->name +
               (pairing->output ? "" : std::string(" (") + std::string(to_string(output())) + " output)") + ", " +
               shape->name;
    }
    // What a row's failures are attributed to.
    std::vector<std::string> attributes() const {
        return {"activation " + std::string(to_string(activation)), std::string("loss ") + pairing->name,
                std::string("shape ") + shape->name};
    }
};

Network build(const GridCase& c, const Optimizer& optimizer) {
    auto builder = Network::builder().input_size(c.shape->inputs);
    for (std::size_t width : c.shape->hidden) builder.dense(width, c.activation);
    return builder.dense(c.shape->outputs, c.output()).loss(c.pairing->loss).optimizer(optimizer).seed(17).build();
}

Dataset grid_data(const GridCase& c) {
    const Shape& s = *c.shape;
    switch (c.pairing->loss) {
    case Loss::BinaryCrossEntropy:
        return binary_data(s.rows, s.inputs, s.outputs, 23);
    case Loss::CategoricalCrossEntropy:
        return class_data(s.rows, s.inputs, s.outputs, 29);
    default:
        return regression_data(s.rows, s.inputs, s.outputs, 31);
    }
}

TrainConfig grid_config(const GridCase& c) {
    return TrainConfig{2, c.shape->batch, true, 7};
}

// The features of a case the plugin declares it does not run (empty: it declares them all).
std::vector<std::string> undeclared(const GridCase& c, const Optimizer& optimizer, const PluginCapabilities& caps) {
    std::vector<std::string> out;
    for (Activation a : {c.activation, c.output()})
        if (!caps.runs(a)) out.emplace_back(to_string(a));
    if (!caps.runs(c.pairing->loss)) out.emplace_back(to_string(c.pairing->loss));
    if (!caps.runs(optimizer.kind)) out.emplace_back(to_string(optimizer.kind));
    return out;
}

struct CaseResult {
    GridCase grid;
    bool agrees = false;
    double parameter_error = 0.0;
    std::string detail; // why it fails
    bool refused = false;
};

CaseResult run_case(const GridCase& c, const OptimizerRow& row, const SessionFixture& kit) {
    CaseResult out;
    out.grid = c;
    const Dataset data = grid_data(c);
    const TrainConfig config = grid_config(c);
    Network reference = build(c, row.optimizer);
    Network trained = reference;
    const FitReport reference_fit = reference.fit(data, config);
    FitReport fit;
    try {
        fit = trained.fit_with_backend(data, config, kit.backend);
    } catch (const Error& e) {
        out.refused = e.code() == ErrorCode::Unsupported;
        out.detail =
            (out.refused ? "refused although the plugin's capabilities list every feature it uses: " : "failed: ") +
            error_text(e) +
            (out.refused ? "; run it, or declare in brain_capabilities what the plugin does not run (the "
                           "kit then expects exactly that refusal)"
                         : "");
        return out;
    }
    const Agreement agreement = compare_runs(trained, fit, reference, reference_fit);
    out.agrees = agreement.agrees;
    out.parameter_error = agreement.parameter_error;
    out.detail = agreement.detail;
    if (!out.agrees && row.without) {
        // Does the plugin follow the rule with a term left out?
        Network partial = build(c, *row.without);
        const FitReport partial_fit = partial.fit(data, config);
        if (compare_runs(trained, fit, partial, partial_fit).agrees)
            out.detail += "; they match " + std::string(row.without_label) + " instead: " + row.without_means;
    }
    return out;
}

// "exactly the cases with activation gelu", when the failing cases are exactly those sharing one attribute.
std::string shared_attribute(const std::vector<CaseResult>& results, std::size_t failing) {
    std::map<std::string, std::pair<std::size_t, std::size_t>> counts; // attribute -> (cases, failing)
    for (const CaseResult& r : results)
        for (const std::string& a : r.grid.attributes()) {
            counts[a].first += 1;
            counts[a].second += r.agrees ? 0 : 1;
        }
    std::string out;
    for (const auto& [attribute, n] : counts)
        if (n.first == failing && n.second == failing) out += (out.empty() ? "" : " / ") + attribute;
    return out;
}

std::string grid_row(const OptimizerRow& row, KitContext& context) {
    const SessionFixture& kit = context.fixture();
    const PluginCapabilities& caps = context.capabilities();
    std::vector<CaseResult> results;
    std::set<std::string> skipped_features;
    std::size_t skipped = 0;
    double worst = 0.0;
    for (const Shape& shape : k_shapes)
        for (Activation activation : k_hidden)
            for (const Pairing& pairing : k_pairings) {
                const GridCase c{&shape, activation, &pairing};
                if (const auto lacking = undeclared(c, row.optimizer, caps); !lacking.empty()) {
                    ++skipped;
                    skipped_features.insert(lacking.begin(), lacking.end());
                    continue;
                }
                results.push_back(run_case(c, row, kit));
                worst = std::max(worst, results.back().parameter_error);
            }
    std::string skipped_text;
    if (skipped > 0) {
        skipped_text = "; " + std::to_string(skipped) + " skipped: the plugin declares it does not run ";
        std::string list;
        for (const std::string& f : skipped_features) list += (list.empty() ? "" : ", ") + f;
        skipped_text += list + " (see unsupported)";
    }
    const std::size_t failing = static_cast<std::size_t>(
        std::count_if(results.begin(), results.end(), [](const CaseResult& r) { return !r.agrees; }));
    const std::string scope = std::string(row.label) + ", 2 epochs, batches of 5 and 7 with a short last batch";
    if (failing == 0)
        return std::to_string(results.size()) + " cases agree with the CPU reference (" + scope +
               "; largest parameter error " + sci(worst) + ")" + skipped_text;

    const CaseResult& first =
        *std::find_if(results.begin(), results.end(), [](const CaseResult& r) { return !r.agrees; });
    std::string message = row.label + std::string(": ") + std::to_string(failing) + " of " +
                          std::to_string(results.size()) + " cases fail against the CPU reference";
    if (failing == results.size()) {
        const bool explained = first.detail.find("; they match ") != std::string::npos;
        message += explained ? " (every case)"
                             : " (every case; as each ends its epochs with a short batch, see last short batch)";
    } else if (const std::string shared = shared_attribute(results, failing); !shared.empty()) {
        message += ", exactly those with " + shared + "; every other case agrees";
    } else {
        message += ", among them";
        std::size_t listed = 0;
        for (const CaseResult& r : results)
            if (!r.agrees && listed++ < 3) {
                message += listed > 1 ? "; " : " ";
                message += r.grid.name();
            }
    }
    fail_check(message + ". First: " + first.grid.name() + ": " + first.detail + skipped_text);
}

std::string short_batch_check(KitContext& context) {
    const SessionFixture& kit = context.fixture();
    // 11 rows in batches of 4: two whole batches and one of 3, the rows in order so that the batches are known.
    const auto net = Network::builder()
                         .input_size(4)
                         .dense(6, Activation::Tanh)
                         .dense(2, Activation::Linear)
                         .optimizer(Optimizer::sgd(0.1f))
                         .seed(5)
                         .build();
    const auto run = [&](std::size_t rows, std::uint32_t epochs, bool shuffle, const TrainingBackend* backend) {
        Network trained = net;
        FitReport fit = backend ? trained.fit_with_backend(regression_data(rows, 4, 2, 13),
                                                           TrainConfig{epochs, 4, shuffle, 3}, *backend)
                                : trained.fit(regression_data(rows, 4, 2, 13), TrainConfig{epochs, 4, shuffle, 3});
        return std::make_pair(std::move(trained), std::move(fit));
    };
    const auto [whole, whole_fit] = run(12, 1, false, &kit.backend);
    const auto [whole_ref, whole_ref_fit] = run(12, 1, false, nullptr);
    require(compare_runs(whole, whole_fit, whole_ref, whole_ref_fit).agrees,
            "12 rows in 3 whole batches of 4 already differ from the CPU reference; see parity first");
    const auto [shorter, shorter_fit] = run(11, 1, false, &kit.backend);
    const auto [shorter_ref, shorter_ref_fit] = run(11, 1, false, nullptr);
    const Agreement in_order = compare_runs(shorter, shorter_fit, shorter_ref, shorter_ref_fit);
    if (!in_order.agrees) {
        // The first 8 rows alone are what training without the short batch gives.
        const auto [dropped_ref, dropped_ref_fit] = run(8, 1, false, nullptr);
        const bool drops = relative_error(shorter.parameters(), dropped_ref.parameters()) < k_parameter_tolerance;
        fail_check("11 rows in batches of 4 (the last short batch holds 3 rows), in order: " + in_order.detail +
                   (drops ? "; the parameters match training on the first 8 rows alone: the plugin skips the last "
                            "short batch. Train it like any other, its loss normalised by its own 3 rows"
                          : "; 12 rows in whole batches agree, so the last short batch is trained wrongly: "
                            "normalise its loss and gradients by its own row count"));
    }
    const auto [shuffled, shuffled_fit] = run(11, 3, true, &kit.backend);
    const auto [shuffled_ref, shuffled_ref_fit] = run(11, 3, true, nullptr);
    const Agreement mixed = compare_runs(shuffled, shuffled_fit, shuffled_ref, shuffled_ref_fit);
    require(mixed.agrees,
            "11 rows in batches of 4 (the last short batch holds 3 rows), shuffled, 3 epochs: " + mixed.detail +
                "; whole batches and the rows in order agree, so check which rows "
                "the short batch takes: positions 8 to 10 of each epoch's brain_shuffle_index order");
    return "11 rows in batches of 4 (the last holds 3): agrees with the CPU reference in order and shuffled "
           "over 3 epochs (parameters within " +
           sci(mixed.parameter_error) + ")";
}

} // namespace

void run_parity_grid(CheckTable& table) {
    for (const OptimizerRow& row : k_rows)
        table.run(row.check, [&row](KitContext& context) { return grid_row(row, context); });
    table.run("last short batch", short_batch_check);
}

} // namespace brain::conformance
