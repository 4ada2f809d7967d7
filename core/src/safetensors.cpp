// safetensors files (safetensors_format.hpp): the strict reader, the writer in nn.Sequential naming, and
// Network::save_safetensors / load_safetensors.
#include "file_kind.hpp"
#include "input_file.hpp"
#include "interop_common.hpp"
#include "json_reader.hpp"
#include "network_access.hpp"
#include "safetensors_format.hpp"

#include <algorithm>
#include <brain/error.hpp>
#include <brain/network.hpp>
#include <brain/safe_file.hpp>
#include <limits>
#include <new>
#include <nlohmann/json.hpp>
#include <set>

namespace brain {

namespace detail {

namespace {

using Json = nlohmann::json;

// Bytes per element of every dtype the format defines with a whole number of bytes.
std::optional<std::uint64_t> dtype_size(const std::string& dtype) {
    static const std::map<std::string, std::uint64_t> sizes{
        {"BOOL", 1}, {"U8", 1},  {"I8", 1},  {"F8_E5M2", 1}, {"F8_E4M3", 1}, {"F8_E8M0", 1},
        {"I16", 2},  {"U16", 2}, {"F16", 2}, {"BF16", 2},    {"I32", 4},     {"U32", 4},
        {"F32", 4},  {"F64", 8}, {"I64", 8}, {"U64", 8},     {"C64", 8}};
    const auto it = sizes.find(dtype);
    if (it == sizes.end()) return std::nullopt;
    return it->second;
}

std::string shape_text(const std::vector<std::uint64_t>& shape) {
    std::string s = "[";
    for (std::size_t i = 0; i < shape.size(); ++i) s += (i ? ", " : "") + std::to_string(shape[i]);
    return s + "]";
}

class HeaderReader {
public:
    explicit HeaderReader(const std::string& origin) : m_origin(origin) {}

    [[noreturn]] void fail(const std::string& message) const {
        BRAIN_THROW(ErrorCode::InvalidModelFile, m_origin, ": ", message);
    }

    std::uint64_t unsigned_number(const Json& j, const std::string& where) const {
        if (!j.is_number_unsigned()) {
            const std::string text = j.dump(-1, ' ', false, Json::error_handler_t::replace);
            fail(where + " is " + (text.size() <= 40 ? text : quote_excerpt(text, 40)) + ", not a whole number >= 0");
        }
        return j.get<std::uint64_t>();
    }

    SafetensorsTensor tensor(const std::string& name, const Json& entry) const {
        const std::string where = "the header entry " + quote_excerpt(name);
        if (name.empty()) fail("a header entry has an empty name; every tensor needs one");
        if (!entry.is_object()) fail(where + " is not an object with dtype, shape and data_offsets");
        for (const auto& [key, value] : entry.items())
            if (key != "dtype" && key != "shape" && key != "data_offsets")
                fail(where + " has the unknown field " + quote_excerpt(key) +
                     "; a tensor entry has exactly dtype, shape and data_offsets");
        for (const char* key : {"dtype", "shape", "data_offsets"})
            if (!entry.contains(key)) fail(where + " has no " + key);
        SafetensorsTensor t;
        t.name = name;
        const Json& dtype = entry["dtype"];
        if (!dtype.is_string()) fail(where + ": dtype is not a string");
        t.dtype = dtype.get<std::string>();
        const auto element = dtype_size(t.dtype);
        if (!element)
            fail(where + ": unknown dtype " + quote_excerpt(t.dtype) +
                 " (safetensors' dtypes: F64, F32, F16, BF16, I64, I32, I16, I8, U64, U32, U16, U8, BOOL, F8_*)");
        const Json& shape = entry["shape"];
        if (!shape.is_array()) fail(where + ": shape is not an array");
        std::uint64_t count = 1;
        for (std::size_t k = 0; k < shape.size(); ++k) {
            t.shape.push_back(unsigned_number(shape[k], where + ": shape[" + std::to_string(k) + "]"));
            const auto product = checked_mul(count, t.shape.back());
            if (!product) fail(where + ": the shape " + quote_excerpt(shape.dump(), 60) + " overflows a byte count");
            count = *product;
        }
        const Json& offsets = entry["data_offsets"];
        if (!offsets.is_array() || offsets.size() != 2) fail(where + ": data_offsets is not a pair [begin, end]");
        t.begin = unsigned_number(offsets[0], where + ": data_offsets[0]");
        t.end = unsigned_number(offsets[1], where + ": data_offsets[1]");
        if (t.end < t.begin)
            fail(where + ": data_offsets [" + std::to_string(t.begin) + ", " + std::to_string(t.end) +
                 "] end before they begin");
        const auto bytes = checked_mul(count, *element);
        if (!bytes || *bytes != t.end - t.begin)
            fail(where + ": a " + t.dtype + " tensor of shape " + shape_text(t.shape) + " takes " +
                 (bytes ? std::to_string(*bytes) : std::string("more than 2^64")) + " bytes, but data_offsets [" +
                 std::to_string(t.begin) + ", " + std::to_string(t.end) + "] hold " +
                 std::to_string(t.end - t.begin));
        return t;
    }

private:
    const std::string& m_origin;
};

// The layer index and part of a name in nn.Sequential's naming ("2.weight" -> {2, true}).
std::optional<std::pair<std::uint64_t, bool>> sequential_name(const std::string& name) {
    const auto dot = name.find('.');
    if (dot == std::string::npos || dot == 0 || dot > 9) return std::nullopt;
    const std::string digits = name.substr(0, dot), part = name.substr(dot + 1);
    if (part != "weight" && part != "bias") return std::nullopt;
    if (!std::all_of(digits.begin(), digits.end(), [](char c) { return c >= '0' && c <= '9'; })) return std::nullopt;
    if (digits.size() > 1 && digits[0] == '0') return std::nullopt;
    return std::pair{std::stoull(digits), part == "weight"};
}

std::optional<StoredFloat> stored_type(const std::string& dtype) {
    if (dtype == "F32") return StoredFloat::Float32;
    if (dtype == "F16") return StoredFloat::Float16;
    if (dtype == "BF16") return StoredFloat::BFloat16;
    if (dtype == "F64") return StoredFloat::Float64;
    return std::nullopt;
}

} // namespace

SafetensorsFile parse_safetensors(std::string_view bytes, const std::string& origin) {
    const HeaderReader rd(origin);
    if (bytes.size() < 8)
        rd.fail("not a safetensors file: " + std::to_string(bytes.size()) +
                " bytes, fewer than the 8 of the header length that starts one");
    const std::uint64_t length = load_le<std::uint64_t>(reinterpret_cast<const unsigned char*>(bytes.data()));
    if (length > kSafetensorsMaxHeaderBytes)
        rd.fail("the header length field says " + std::to_string(length) +
                " bytes, more than safetensors' limit of " + std::to_string(kSafetensorsMaxHeaderBytes) +
                "; this is not a safetensors file, or it is damaged" +
                other_format_hint(bytes, FileKind::Safetensors));
    if (length > bytes.size() - 8)
        rd.fail("the header length field says " + std::to_string(length) + " bytes, but only " +
                std::to_string(bytes.size() - 8) + " follow it: the file is truncated, or not a safetensors file" +
                other_format_hint(bytes, FileKind::Safetensors));
    const std::string_view header = bytes.substr(8, static_cast<std::size_t>(length));
    if (header.empty() || header[0] != '{')
        rd.fail("the header does not start with '{'; a safetensors header is a JSON object (this is not a "
                "safetensors file, or it is damaged)" +
                other_format_hint(bytes, FileKind::Safetensors));

    // A repeated key is refused (JSON parsers disagree about which one wins); nesting is bounded on the way in.
    std::vector<std::set<std::string>> keys;
    const Json::parser_callback_t check = [&](int depth, Json::parse_event_t event, Json& parsed) {
        if (depth > 3) rd.fail("the header nests deeper than a tensor entry's shape; it is not a safetensors header");
        if (event == Json::parse_event_t::object_start) keys.emplace_back();
        if (event == Json::parse_event_t::object_end && !keys.empty()) keys.pop_back();
        if (event == Json::parse_event_t::key && !keys.empty() && !keys.back().insert(parsed.get<std::string>()).second)
            rd.fail("the header repeats the key " + quote_excerpt(parsed.get<std::string>()) + "; every key is unique");
        return true;
    };
    Json doc;
    try {
        doc = Json::parse(header.begin(), header.end(), check);
    } catch (const Json::exception& e) {
        rd.fail("the header is not valid JSON (" + detail::json_error_text(e) + ")");
    }
    if (!doc.is_object()) rd.fail("the header is not a JSON object");

    SafetensorsFile file;
    file.data = bytes.substr(8 + static_cast<std::size_t>(length));
    for (const auto& [name, entry] : doc.items()) {
        if (name == "__metadata__") {
            if (!entry.is_object()) rd.fail("__metadata__ is not an object of strings");
            for (const auto& [key, value] : entry.items()) {
                if (!value.is_string())
                    rd.fail("__metadata__ entry " + quote_excerpt(key) + " is not a string (the format's metadata "
                            "maps strings to strings)");
                file.metadata[key] = value.get<std::string>();
            }
            continue;
        }
        file.tensors.push_back(rd.tensor(name, entry));
    }
    // Byte ranges, in order, must tile the data exactly: from 0, each where the last ended, to the file's end.
    std::sort(file.tensors.begin(), file.tensors.end(), [](const auto& a, const auto& b) {
        return a.begin != b.begin ? a.begin < b.begin : a.end < b.end;
    });
    const auto range = [](const SafetensorsTensor& t) {
        return quote_excerpt(t.name) + " (bytes " + std::to_string(t.begin) + " to " + std::to_string(t.end) + ")";
    };
    std::uint64_t covered = 0;
    for (std::size_t k = 0; k < file.tensors.size(); ++k) {
        const SafetensorsTensor& t = file.tensors[k];
        if (t.begin < covered)
            rd.fail("the tensors " + range(file.tensors[k - 1]) + " and " + range(t) + " overlap");
        if (t.begin > covered)
            rd.fail("bytes " + std::to_string(covered) + " to " + std::to_string(t.begin) +
                    " of the data belong to no tensor (before " + quote_excerpt(t.name) +
                    "); the tensors' byte ranges must follow one another without gaps");
        covered = t.end;
    }
    if (covered > file.data.size())
        rd.fail("the header places " + (file.tensors.empty() ? std::string("data") : range(file.tensors.back())) +
                " past the end of the data, which holds " + std::to_string(file.data.size()) +
                " bytes: the file is truncated, or its header is wrong");
    if (covered < file.data.size())
        rd.fail("the last " + std::to_string(file.data.size() - covered) +
                " bytes of the file belong to no tensor; the header does not describe this file");
    return file;
}

std::string safetensors_bytes(const Network& net) {
    const std::vector<LayerSpec>& layers = net.layers();
    const std::vector<std::size_t> index = sequential_indices(layers);
    nlohmann::ordered_json header = nlohmann::ordered_json::object();
    std::string activations;
    for (const LayerSpec& l : layers) {
        if (!activations.empty()) activations += ',';
        activations += to_string(l.activation);
    }
    header["__metadata__"] = {{"format", "pt"}, {"brain.activations", activations}};
    std::uint64_t offset = 0;
    for (std::size_t i = 0; i < layers.size(); ++i) {
        const std::uint64_t weights = std::uint64_t{4} * layers[i].inputs * layers[i].outputs;
        header[std::to_string(index[i]) + ".weight"] = {
            {"dtype", "F32"}, {"shape", {layers[i].outputs, layers[i].inputs}}, {"data_offsets", {offset, offset + weights}}};
        offset += weights;
        header[std::to_string(index[i]) + ".bias"] = {
            {"dtype", "F32"}, {"shape", {layers[i].outputs}}, {"data_offsets", {offset, offset + 4 * layers[i].outputs}}};
        offset += 4 * layers[i].outputs;
    }
    std::string text = header.dump();
    // Spaces pad the header so that the data starts 8-byte aligned, as safetensors' own writer does.
    text.append((8 - text.size() % 8) % 8, ' ');
    std::string out;
    out.reserve(8 + text.size() + offset);
    store_le<std::uint64_t>(text.size(), out);
    out += text;
    out += float_bytes(net.parameters().data(), net.parameters().size());
    return out;
}

namespace {

// The Linear layers of an nn.Sequential's state_dict, in index order, their names and shapes checked.
struct SequentialLayout {
    std::vector<std::uint64_t> index;
    std::vector<LayerSpec> shapes; // activations linear
    std::vector<const SafetensorsTensor*> weights;
    std::vector<const SafetensorsTensor*> biases; // nullptr: nn.Linear(bias=False)
};

SequentialLayout sequential_layout(const SafetensorsFile& file, const HeaderReader& rd) {
    struct Linear {
        const SafetensorsTensor* weight = nullptr;
        const SafetensorsTensor* bias = nullptr;
    };
    std::map<std::uint64_t, Linear> linears;
    for (const SafetensorsTensor& t : file.tensors) {
        const auto parsed = sequential_name(t.name);
        if (!parsed)
            rd.fail("the tensor " + quote_excerpt(t.name) +
                    " is not named as nn.Sequential names the parameters of its Linear layers ('<index>.weight', "
                    "'<index>.bias'); save the state_dict of an nn.Sequential of Linear and activation layers");
        (parsed->second ? linears[parsed->first].weight : linears[parsed->first].bias) = &t;
    }
    if (linears.empty()) rd.fail("the file holds no tensors; expected the parameters of an nn.Sequential");
    SequentialLayout layout;
    for (const auto& [k, linear] : linears) {
        if (!linear.weight)
            rd.fail("the tensor " + quote_excerpt(linear.bias->name) + " has no " +
                    quote_excerpt(std::to_string(k) + ".weight") + " beside it");
        const SafetensorsTensor& w = *linear.weight;
        if (w.shape.size() != 2 || w.shape[0] == 0 || w.shape[1] == 0)
            rd.fail("the tensor " + quote_excerpt(w.name) + " has shape " + shape_text(w.shape) +
                    "; a Linear layer's weight is [outputs, inputs], both at least 1");
        if (!layout.shapes.empty() && w.shape[1] != layout.shapes.back().outputs)
            rd.fail("the tensor " + quote_excerpt(w.name) + " has shape " + shape_text(w.shape) + ": it takes " +
                    std::to_string(w.shape[1]) + " inputs, but the layer before it has " +
                    std::to_string(layout.shapes.back().outputs) + " outputs");
        if (linear.bias && linear.bias->shape != std::vector<std::uint64_t>{w.shape[0]})
            rd.fail("the tensor " + quote_excerpt(linear.bias->name) + " has shape " + shape_text(linear.bias->shape) +
                    "; the bias of a layer with " + std::to_string(w.shape[0]) + " outputs is [" +
                    std::to_string(w.shape[0]) + "]");
        if (w.shape[0] > std::numeric_limits<std::uint32_t>::max() || w.shape[1] > std::numeric_limits<std::uint32_t>::max())
            rd.fail("the tensor " + quote_excerpt(w.name) + " has shape " + shape_text(w.shape) +
                    "; brain's layers are at most 4294967295 wide");
        layout.shapes.push_back(LayerSpec{static_cast<std::size_t>(w.shape[1]), static_cast<std::size_t>(w.shape[0]),
                                          Activation::Linear});
        layout.index.push_back(k);
        layout.weights.push_back(linear.weight);
        layout.biases.push_back(linear.bias);
    }
    return layout;
}

} // namespace

std::vector<LayerSpec> safetensors_layers(std::string_view bytes, const std::string& origin) {
    const SafetensorsFile file = parse_safetensors(bytes, origin);
    return sequential_layout(file, HeaderReader(origin)).shapes;
}

Network network_from_safetensors(std::string_view bytes, const std::string& origin, const Network* architecture,
                                 const std::vector<Activation>& activations) {
    const SafetensorsFile file = parse_safetensors(bytes, origin);
    const HeaderReader rd(origin);
    SequentialLayout layout = sequential_layout(file, rd);
    std::vector<LayerSpec>& shapes = layout.shapes;
    const std::vector<std::uint64_t>& index = layout.index;
    NetworkParts parts;
    if (architecture) parts = NetworkAccess::parts(*architecture);

    // The activations: the architecture's, the caller's, or those the file records.
    std::vector<Activation> acts = activations;
    if (architecture) {
        const auto& layers = architecture->layers();
        bool same = layers.size() == shapes.size();
        for (std::size_t i = 0; same && i < layers.size(); ++i)
            same = layers[i].inputs == shapes[i].inputs && layers[i].outputs == shapes[i].outputs;
        if (!same)
            rd.fail("the file's layers (" + describe_layers(shapes) + ", linear activations shown) do not match the "
                    "architecture's (" + describe_layers(layers) + ")");
        acts.clear();
        for (const LayerSpec& l : layers) acts.push_back(l.activation);
    } else if (acts.empty()) {
        const auto it = file.metadata.find("brain.activations");
        if (it == file.metadata.end())
            rd.fail("the file does not record its activations (it was not written by brain); give one per layer "
                    "(the brain command's --activation and --output-activation, or a model file's)");
        for (std::size_t start = 0; start <= it->second.size();) {
            const std::size_t comma = std::min(it->second.find(',', start), it->second.size());
            try {
                acts.push_back(parse_activation(it->second.substr(start, comma - start)));
            } catch (const Error& e) {
                rd.fail(std::string("__metadata__ brain.activations: ") + e.what());
            }
            start = comma + 1;
        }
    }
    if (acts.size() != shapes.size())
        rd.fail("the file holds " + std::to_string(shapes.size()) + " layers (" + describe_layers(shapes) +
                "), but " + count_of(acts.size(), "activation") + (acts.size() == 1 ? " was" : " were") +
                " given; give one per layer");
    for (std::size_t i = 0; i < shapes.size(); ++i) shapes[i].activation = acts[i];
    // Adjacent indices mean PyTorch had no module (no activation) between the two Linear layers.
    for (std::size_t i = 0; i + 1 < shapes.size(); ++i)
        if (index[i + 1] == index[i] + 1 && acts[i] != Activation::Linear)
            rd.fail("the Linear layers " + std::to_string(index[i]) + " and " + std::to_string(index[i + 1]) +
                    " are adjacent in the nn.Sequential, so nothing lies between them, but layer " + std::to_string(i) +
                    "'s activation is " + std::string(to_string(acts[i])) + "; give linear for it, or check the model");

    std::vector<float> params;
    for (std::size_t i = 0; i < shapes.size(); ++i) {
        for (const SafetensorsTensor* t : {layout.weights[i], layout.biases[i]}) {
            if (!t) {
                params.insert(params.end(), shapes[i].outputs, 0.0f); // nn.Linear(bias=False)
                continue;
            }
            const auto type = stored_type(t->dtype);
            if (!type)
                rd.fail("the tensor " + quote_excerpt(t->name) + " holds " + t->dtype +
                        "; brain reads F32, F16, BF16 and F64 parameters (converted once to float32)");
            const auto* data = reinterpret_cast<const unsigned char*>(file.data.data() + t->begin);
            const std::size_t count = static_cast<std::size_t>((t->end - t->begin) / stored_size(*type));
            for (std::size_t k = 0; k < count; ++k) {
                const auto v = stored_float(data, k, *type);
                if (!v)
                    rd.fail("the tensor " + quote_excerpt(t->name) + ": element " + std::to_string(k) +
                            " is not a finite float32 number (NaN, infinite, or beyond +-3.4e38)");
                params.push_back(*v);
            }
        }
    }
    parts.layers = std::move(shapes);
    parts.parameters = std::move(params);
    if (!architecture) parts.loss.reset();
    return NetworkAccess::assemble(std::move(parts), origin);
}

} // namespace detail

void Network::save_safetensors(const std::filesystem::path& path,
                               const std::vector<std::filesystem::path>& inputs) const {
    validate();
    for (std::size_t i = 0; i < m_parameters.size(); ++i)
        BRAIN_CHECK(std::isfinite(m_parameters[i]), ErrorCode::NumericalError,
                    "Network::save_safetensors: ", detail::describe_parameter(m_layers, i), " is ", m_parameters[i],
                    "; a model with non-finite parameters cannot be saved (training diverged)");
    check_output_path(path, inputs);
    write_file_safely(path, detail::safetensors_bytes(*this), inputs);
}

namespace {

Network load_safetensors_file(const std::filesystem::path& path, const Network* architecture,
                              const std::vector<Activation>& activations, const InputLimits& limits) {
    const std::string bytes =
        detail::read_input_file(path, "safetensors file", limits.max_file_bytes, ErrorCode::InvalidModelFile);
    try {
        return detail::network_from_safetensors(bytes, path.string(), architecture, activations);
    } catch (const std::bad_alloc&) {
        BRAIN_THROW(ErrorCode::AllocationFailed, "not enough host memory to read the safetensors file '",
                    path.string(), "' (", bytes.size(), " bytes); free memory or raise the process's memory limit");
    }
}

} // namespace

Network Network::load_safetensors(const std::filesystem::path& path, const Network& architecture,
                                  const InputLimits& limits) {
    architecture.validate();
    return load_safetensors_file(path, &architecture, {}, limits);
}

Network Network::load_safetensors(const std::filesystem::path& path, const std::vector<Activation>& activations,
                                  const InputLimits& limits) {
    return load_safetensors_file(path, nullptr, activations, limits);
}

Network
Network::load_safetensors_with(const std::filesystem::path& path,
                               const std::function<std::vector<Activation>(const std::vector<LayerSpec>&)>& choose,
                               const InputLimits& limits) {
    const std::string bytes =
        detail::read_input_file(path, "safetensors file", limits.max_file_bytes, ErrorCode::InvalidModelFile);
    try {
        const std::vector<Activation> activations = choose(detail::safetensors_layers(bytes, path.string()));
        return detail::network_from_safetensors(bytes, path.string(), nullptr, activations);
    } catch (const std::bad_alloc&) {
        BRAIN_THROW(ErrorCode::AllocationFailed, "not enough host memory to read the safetensors file '",
                    path.string(), "' (", bytes.size(), " bytes); free memory or raise the process's memory limit");
    }
}

std::vector<LayerSpec> Network::safetensors_layers(const std::filesystem::path& path, const InputLimits& limits) {
    const std::string bytes =
        detail::read_input_file(path, "safetensors file", limits.max_file_bytes, ErrorCode::InvalidModelFile);
    return detail::safetensors_layers(bytes, path.string());
}

} // namespace brain
