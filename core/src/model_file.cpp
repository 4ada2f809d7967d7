// The model file (docs/model-format.md): Network::to_json_string / from_json_string / save_json / load_json.
// Numbers are stored as float32 and parsed straight to float32 (nlohmann::basic_json with float as its number
// type), so every weight survives a save/load round trip bit for bit.
#include "file_kind.hpp"
#include "input_file.hpp"
#include "json_reader.hpp"
#include "network_rules.hpp"
#include "utf8.hpp"

#include <brain/error.hpp>
#include <brain/network.hpp>
#include <brain/safe_file.hpp>
#include <cctype>
#include <cmath>
#include <cstdint>
#include <functional>
#include <limits>
#include <new>
#include <unordered_map>

namespace brain {

namespace {

using Json = detail::FloatJson;

constexpr const char* kFormatName = "brain-model";
constexpr std::uint64_t kFormatVersion = 1;

// --- writing ---------------------------------------------------------------------------------------------------

Json names_json(const std::vector<std::string>& names) {
    Json a = Json::array();
    for (const auto& n : names) a.push_back(n);
    return a;
}

// What is wrong with a list of names, if anything: text that is not UTF-8 (JSON cannot hold it), or, for feature
// names and class labels, an empty or repeated entry (a CSV header cannot hold those, so predict could not use
// the model). Returns "<index>: <problem>".
std::optional<std::pair<std::size_t, std::string>> names_problem(const std::vector<std::string>& names,
                                                                 bool unique) {
    std::unordered_map<std::string_view, std::size_t> seen;
    for (std::size_t i = 0; i < names.size(); ++i) {
        if (!detail::is_valid_utf8(names[i])) return std::pair{i, quote_excerpt(names[i]) + " is not valid UTF-8"};
        if (!unique) continue;
        if (names[i].empty()) return std::pair{i, std::string("an empty name; every entry needs one")};
        if (const auto [at, fresh] = seen.emplace(names[i], i); !fresh)
            return std::pair{i, quote_excerpt(names[i]) + " repeats entry " + std::to_string(at->second) +
                                    "; entries must be unique"};
    }
    return std::nullopt;
}

// --- reading ---------------------------------------------------------------------------------------------------

// Reads one model document; every error names the origin (file) and the JSON pointer at fault.
class Reader : public detail::JsonReader {
public:
    explicit Reader(const std::string& origin) : JsonReader(origin, "a brain model file") {}
};

// JSON pointer (RFC 6901) of the first number whose magnitude exceeds float32's range, or "" if none is found
// (e.g. the number overflows even a double).
std::string find_out_of_range_number(const std::string& text) {
    nlohmann::ordered_json doc; // document order, so the first offending number is reported
    try {
        doc = nlohmann::ordered_json::parse(text);
    } catch (const nlohmann::ordered_json::exception&) {
        return {};
    }
    std::string found;
    // Decimal values at or beyond FLT_MAX + half an ulp round to infinity in float32.
    const double overflow = std::ldexp(1.0, 128) - std::ldexp(1.0, 103);
    // Model files nest four levels deep; the limit keeps hostile nesting from exhausting the stack.
    constexpr int kMaxDepth = 64;
    std::function<bool(const nlohmann::ordered_json&, const std::string&, int)> walk =
        [&](const nlohmann::ordered_json& j, const std::string& path, int depth) {
            if (depth > kMaxDepth) return false;
            if (j.is_number_float()) {
                if (!(std::fabs(j.get<double>()) < overflow)) {
                    found = path;
                    return true;
                }
            } else if (j.is_array()) {
                for (std::size_t i = 0; i < j.size(); ++i)
                    if (walk(j[i], path + "/" + std::to_string(i), depth + 1)) return true;
            } else if (j.is_object()) {
                for (const auto& [key, value] : j.items()) {
                    std::string escaped;
                    for (char c : key) escaped += c == '~' ? "~0" : c == '/' ? "~1" : std::string(1, c);
                    if (walk(value, path + "/" + escaped, depth + 1)) return true;
                }
            }
            return false;
        };
    walk(doc, "", 0);
    return found;
}

Optimizer::Kind parse_optimizer_kind(const Reader& reader, const std::string& text, const std::string& path) {
    std::string key;
    for (char c : text)
        if (c != '_' && c != '-' && c != ' ')
            key.push_back(static_cast<char>(std::tolower(static_cast<unsigned char>(c))));
    if (key == "sgd") return Optimizer::Kind::Sgd;
    if (key == "adam") return Optimizer::Kind::Adam;
    if (key == "adamw") return Optimizer::Kind::AdamW;
    reader.fail(path, "unknown optimizer " + quote_excerpt(text) + "; accepted names: sgd, adam, adamw");
}

} // namespace

std::string Network::to_json_string() const {
    validate();
    for (std::size_t i = 0; i < m_parameters.size(); ++i)
        BRAIN_CHECK(std::isfinite(m_parameters[i]), ErrorCode::NumericalError,
                    "Network::to_json_string: ", detail::describe_parameter(m_layers, i), " is ", m_parameters[i],
                    "; a model with non-finite parameters cannot be saved (training diverged)");
    for (const auto& [key, list, unique] :
         {std::tuple{"feature_names", &m_feature_names, true}, std::tuple{"target_names", &m_target_names, false},
          std::tuple{"class_labels", &m_class_labels, true}})
        if (const auto problem = names_problem(*list, unique))
            BRAIN_THROW(ErrorCode::InvalidArgument, "Network::to_json_string: ", key, " entry ", problem->first,
                        " is ", problem->second, "; set names that a model file can hold");

    Json optimizer = Json::object();
    optimizer["kind"] = std::string(to_string(m_optimizer.kind));
    optimizer["learning_rate"] = m_optimizer.learning_rate;
    optimizer["momentum"] = m_optimizer.momentum;
    optimizer["beta1"] = m_optimizer.beta1;
    optimizer["beta2"] = m_optimizer.beta2;
    optimizer["epsilon"] = m_optimizer.epsilon;
    optimizer["weight_decay"] = m_optimizer.weight_decay;

    Json standardization = nullptr;
    if (m_standardization) {
        standardization = Json::object();
        standardization["mean"] = m_standardization->mean;
        standardization["stddev"] = m_standardization->stddev;
    }

    // One top-level key per line and one layer per line: readable and diff-friendly, yet compact.
    std::string out = "{\n";
    auto field = [&out](const char* key, const Json& value, bool last = false) {
        out += "  " + detail::dump_json(Json(key)) + ": " + detail::dump_json(value) + (last ? "\n" : ",\n");
    };
    field("format", kFormatName);
    field("version", kFormatVersion);
    field("loss", std::string(to_string(m_loss)));
    field("optimizer", optimizer);
    field("seed", m_seed);
    field("epochs_trained", m_epochs_trained);
    field("standardization", standardization);
    field("feature_names", names_json(m_feature_names));
    field("target_names", names_json(m_target_names));
    field("class_labels", names_json(m_class_labels));
    out += "  \"layers\": [\n";
    const float* p = m_parameters.data();
    for (std::size_t i = 0; i < m_layers.size(); ++i) {
        const LayerSpec& l = m_layers[i];
        Json layer = Json::object();
        layer["inputs"] = static_cast<std::uint64_t>(l.inputs);
        layer["outputs"] = static_cast<std::uint64_t>(l.outputs);
        layer["activation"] = std::string(to_string(l.activation));
        layer["weights"] = std::vector<float>(p, p + l.inputs * l.outputs);
        p += l.inputs * l.outputs;
        layer["bias"] = std::vector<float>(p, p + l.outputs);
        p += l.outputs;
        out += "    " + detail::dump_json(layer) + (i + 1 < m_layers.size() ? ",\n" : "\n");
    }
    out += "  ]\n}\n";
    return out;
}

Network Network::from_json_string(const std::string& text, const std::string& origin) {
    Json doc;
    try {
        doc = detail::parse_json_unique_keys(text, origin);
    } catch (const Json::parse_error& e) {
        BRAIN_THROW(ErrorCode::InvalidModelFile, origin, ": not JSON (", detail::json_error_text(e),
                    "); a brain model file is the JSON written by save_json",
                    detail::other_format_hint(text, detail::FileKind::ModelJson));
    } catch (const Json::out_of_range& e) {
        // The float parser refuses numbers beyond float32's range; find which one for the message.
        const std::string where = find_out_of_range_number(text);
        BRAIN_THROW(ErrorCode::InvalidModelFile, origin, ": ", where.empty() ? std::string("a number") : where,
                    ": non-finite number: outside the float32 range (+-3.4e38) (", detail::json_error_text(e),
                    "); every number must be finite");
    } catch (const Json::exception& e) {
        BRAIN_THROW(ErrorCode::InvalidModelFile, origin, ": not readable as JSON (", detail::json_error_text(e),
                    ")");
    }
    const Reader rd(origin);
    if (!doc.is_object()) rd.fail("top level", "expected a JSON object, found " + Reader::describe(doc));

    const std::string& format = rd.string(rd.require(doc, "", "format"), "/format");
    if (format != kFormatName)
        rd.fail("/format", std::string("expected \"") + kFormatName + "\", found \"" + format +
                               "\"; this is not a brain model file");
    const std::uint64_t version = rd.unsigned_integer(rd.require(doc, "", "version"), "/version");
    if (version != kFormatVersion)
        rd.fail("/version", "unsupported version " + std::to_string(version) + "; supported versions: " +
                                std::to_string(kFormatVersion) + ". Read it with the brain release that wrote it");

    Network net;
    const Json& layers = rd.require(doc, "", "layers");
    if (!layers.is_array() || layers.empty())
        rd.fail("/layers", "expected a non-empty array of layers, found " + Reader::describe(layers));
    std::vector<float> params;
    for (std::size_t i = 0; i < layers.size(); ++i) {
        const std::string at = "/layers/" + std::to_string(i);
        const Json& l = layers[i];
        if (!l.is_object()) rd.fail(at, "expected a layer object, found " + Reader::describe(l));
        LayerSpec spec;
        spec.inputs = rd.width(rd.require(l, at, "inputs"), at + "/inputs");
        spec.outputs = rd.width(rd.require(l, at, "outputs"), at + "/outputs");
        if (i > 0 && spec.inputs != net.m_layers.back().outputs)
            rd.fail(at + "/inputs", "expected " + std::to_string(net.m_layers.back().outputs) +
                                        " (the outputs of layer " + std::to_string(i - 1) + "), found " +
                                        std::to_string(spec.inputs));
        const std::string& activation = rd.string(rd.require(l, at, "activation"), at + "/activation");
        try {
            spec.activation = parse_activation(activation);
        } catch (const Error& e) {
            rd.fail(at + "/activation", e.what());
        }
        const auto weights = rd.floats(rd.require(l, at, "weights"), at + "/weights", spec.inputs * spec.outputs);
        const auto bias = rd.floats(rd.require(l, at, "bias"), at + "/bias", spec.outputs);
        params.insert(params.end(), weights.begin(), weights.end());
        params.insert(params.end(), bias.begin(), bias.end());
        net.m_layers.push_back(spec);
    }

    if (const Json* loss = rd.optional(doc, "loss")) {
        try {
            net.m_loss = parse_loss(rd.string(*loss, "/loss"));
        } catch (const Error& e) {
            if (e.code() == ErrorCode::InvalidModelFile) throw;
            rd.fail("/loss", e.what());
        }
    } else {
        net.m_loss = detail::default_loss(net.m_layers.back().activation);
    }

    if (const Json* opt = rd.optional(doc, "optimizer")) {
        if (!opt->is_object()) rd.fail("/optimizer", "expected an object, found " + Reader::describe(*opt));
        Optimizer o;
        o.kind = parse_optimizer_kind(rd, rd.string(rd.require(*opt, "/optimizer", "kind"), "/optimizer/kind"),
                                      "/optimizer/kind");
        auto read = [&](const char* key, float& into) {
            if (const Json* v = rd.optional(*opt, key)) into = rd.number(*v, std::string("/optimizer/") + key);
        };
        read("learning_rate", o.learning_rate);
        read("momentum", o.momentum);
        read("beta1", o.beta1);
        read("beta2", o.beta2);
        read("epsilon", o.epsilon);
        read("weight_decay", o.weight_decay);
        net.m_optimizer = o;
    }

    if (auto broken = detail::check_network(net.m_layers, net.m_loss, net.m_optimizer))
        rd.fail(broken->json_path, broken->message);

    if (const Json* seed = rd.optional(doc, "seed")) net.m_seed = rd.unsigned_integer(*seed, "/seed");
    if (const Json* epochs = rd.optional(doc, "epochs_trained"))
        net.m_epochs_trained = rd.unsigned_integer(*epochs, "/epochs_trained");

    const std::size_t in = net.m_layers.front().inputs, out = net.m_layers.back().outputs;
    if (const Json* s = rd.optional(doc, "standardization"); s && !s->is_null()) {
        if (!s->is_object())
            rd.fail("/standardization", "expected an object or null, found " + Reader::describe(*s));
        Standardization st;
        st.mean = rd.floats(rd.require(*s, "/standardization", "mean"), "/standardization/mean", in);
        st.stddev = rd.floats(rd.require(*s, "/standardization", "stddev"), "/standardization/stddev", in);
        // Inputs are divided by it: zero, subnormal (below 1.2e-38) or negative deviations turn finite inputs into
        // infinities and NaN predictions.
        for (std::size_t i = 0; i < in; ++i)
            if (!(std::isnormal(st.stddev[i]) && st.stddev[i] > 0.0f))
                rd.fail("/standardization/stddev/" + std::to_string(i),
                        "a standard deviation must be > 0 and a normal float32 (at least 1.17549435e-38), "
                        "found " +
                            detail::dump_json(Json(st.stddev[i])) +
                            "; the file is damaged or was not written by brain: retrain or restore it");
        net.m_standardization = std::move(st);
    }

    auto names = [&](const char* key, std::size_t expected, bool allow_two) {
        std::vector<std::string> v;
        if (const Json* j = rd.optional(doc, key)) {
            const std::string path = std::string("/") + key;
            v = rd.strings(*j, path);
            if (!v.empty() && v.size() != expected && !(allow_two && expected == 1 && v.size() == 2))
                rd.fail(path, "expected " + std::to_string(expected) + " names (or none), found " +
                                  std::to_string(v.size()));
            if (const auto problem = names_problem(v, std::string_view(key) != "target_names"))
                rd.fail(path + "/" + std::to_string(problem->first), problem->second);
        }
        return v;
    };
    net.m_feature_names = names("feature_names", in, false);
    net.m_target_names = names("target_names", out, false);
    net.m_class_labels = names("class_labels", out, true);

    net.m_parameters = std::move(params);
    net.m_optimizer_state.assign(net.m_optimizer.state_per_parameter() * net.m_parameters.size(), 0.0f);
    net.m_optimizer_step = 0;
    return net;
}

void Network::save_json(const std::filesystem::path& path) const {
    save_json(path, {});
}

void Network::save_json(const std::filesystem::path& path, const std::vector<std::filesystem::path>& inputs) const {
    write_file_safely(path, to_json_string(), inputs);
}

Network Network::load_json(const std::filesystem::path& path) {
    return load_json(path, InputLimits{});
}

Network Network::load_json(const std::filesystem::path& path, const InputLimits& limits) {
    const std::string text =
        detail::read_input_file(path, "model file", limits.max_file_bytes, ErrorCode::InvalidModelFile);
    try {
        return from_json_string(text, path.string());
    } catch (const std::bad_alloc&) {
        BRAIN_THROW(ErrorCode::AllocationFailed, "not enough host memory to load the model file '", path.string(),
                    "' (", text.size(), " bytes); free memory or raise the process's memory limit");
    }
}

} // namespace brain
