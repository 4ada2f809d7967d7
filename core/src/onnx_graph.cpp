// Reading an ONNX model for import (onnx_graph.hpp): protobuf parsing under bounds, the explanation of a failed
// parse, the graph's structure and its constants.
#include "onnx_graph.hpp"

#include "file_kind.hpp"
#include "interop_common.hpp"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <google/protobuf/descriptor.h>
#include <google/protobuf/io/coded_stream.h>
#include <limits>
#include <set>

namespace brain::detail {

namespace {

using google::protobuf::Descriptor;
using google::protobuf::FieldDescriptor;

// ONNX messages nest model > graph > node > attribute > graph (control flow) ...; 64 levels is far beyond any
// exporter's output and keeps hostile nesting from exhausting the stack.
constexpr int kMaxNesting = 64;
constexpr const char* kNotOnnx = "this is not an ONNX model, or it is damaged";

// --- explaining a failed parse -------------------------------------------------------------------------------

bool read_varint(const unsigned char* data, std::size_t end, std::size_t& pos, std::uint64_t& value) {
    value = 0;
    for (int shift = 0; shift < 70 && pos < end; shift += 7) {
        const unsigned char b = data[pos++];
        value |= static_cast<std::uint64_t>(b & 0x7F) << std::min(shift, 63);
        if ((b & 0x80) == 0) return shift < 63 || b <= 1;
    }
    return false;
}

// The size of one element of a packed repeated field (0: varints).
std::size_t packed_element_size(const FieldDescriptor& f) {
    switch (f.type()) {
    case FieldDescriptor::TYPE_FLOAT:
    case FieldDescriptor::TYPE_FIXED32:
    case FieldDescriptor::TYPE_SFIXED32:
        return 4;
    case FieldDescriptor::TYPE_DOUBLE:
    case FieldDescriptor::TYPE_FIXED64:
    case FieldDescriptor::TYPE_SFIXED64:
        return 8;
    default:
        return 0;
    }
}

// Walks protobuf's wire format against onnx.proto's descriptors and names the first thing protobuf cannot read:
// "graph.node[3].input[0] at byte 1234 says it holds 80 bytes, but only 12 remain (the file is truncated)".
class WireExplainer {
public:
    WireExplainer(const unsigned char* data, std::size_t size) : m_data(data), m_size(size) {}

    std::optional<std::string> message(std::size_t begin, std::size_t end, const Descriptor* type,
                                       const std::string& path, int depth) const {
        if (depth > kMaxNesting)
            return at(begin, path) + "messages nest more than " + std::to_string(kMaxNesting) +
                   " levels deep; " + kNotOnnx;
        std::map<int, std::size_t> seen;
        std::size_t pos = begin;
        while (pos < end) {
            const std::size_t start = pos;
            std::uint64_t tag = 0;
            if (!read_varint(m_data, end, pos, tag))
                return at(start, path) + "a field's tag is cut off" + cut(end);
            const std::uint64_t number = tag >> 3;
            const auto wire = static_cast<int>(tag & 7);
            const FieldDescriptor* f =
                type && number <= 536870911 ? type->FindFieldByNumber(static_cast<int>(number)) : nullptr;
            std::string full = path.empty() ? "" : path + ".";
            full += f ? f->name() : "field " + std::to_string(number);
            if (f && f->is_repeated()) full += "[" + std::to_string(seen[f->number()]++) + "]";
            const std::string name = shorten(full);
            if (number == 0 || number > 536870911)
                return at(start, path) + "field number " + std::to_string(number) +
                       " is not valid protobuf; " + kNotOnnx;
            std::uint64_t value = 0;
            switch (wire) {
            case 0:
                if (!read_varint(m_data, end, pos, value)) return at(start, "") + name + " is cut off" + cut(end);
                break;
            case 1:
            case 5: {
                const std::size_t n = wire == 1 ? 8 : 4;
                if (end - pos < n) return at(start, "") + name + " is cut off" + cut(end);
                pos += n;
                break;
            }
            case 2: {
                if (!read_varint(m_data, end, pos, value))
                    return at(start, "") + "the length of " + name + " is cut off" + cut(end);
                if (value > end - pos)
                    return at(start, "") + name + " says it holds " + std::to_string(value) +
                           " bytes, but only " + std::to_string(end - pos) + " remain" + cut(end);
                const std::size_t stop = pos + static_cast<std::size_t>(value);
                if (f && f->type() == FieldDescriptor::TYPE_MESSAGE) {
                    if (auto problem = message(pos, stop, f->message_type(), name, depth + 1)) return problem;
                } else if (f && f->is_packable()) {
                    if (auto problem = packed(pos, stop, *f, name)) return problem;
                }
                pos = stop;
                break;
            }
            case 3:
            case 4:
                return at(start, path) + "a protobuf group (wire type " + std::to_string(wire) +
                       "), which ONNX never uses; " + kNotOnnx;
            default:
                return at(start, path) + "an invalid protobuf wire type (" + std::to_string(wire) + "); " +
                       kNotOnnx;
            }
        }
        return std::nullopt;
    }

private:
    std::optional<std::string> packed(std::size_t begin, std::size_t end, const FieldDescriptor& f,
                                      const std::string& name) const {
        if (const std::size_t n = packed_element_size(f)) {
            if ((end - begin) % n != 0)
                return at(begin, "") + name + " packs " + std::to_string(end - begin) +
                       " bytes, not a whole number of " + std::to_string(n) + "-byte values; " + kNotOnnx;
            return std::nullopt;
        }
        for (std::size_t pos = begin; pos < end;) {
            std::uint64_t v = 0;
            const std::size_t start = pos;
            if (!read_varint(m_data, end, pos, v))
                return at(start, "") + "a value packed in " + name + " is cut off; " + kNotOnnx;
        }
        return std::nullopt;
    }

    // A field's path for a message; a deep one keeps its last fields.
    static std::string shorten(const std::string& path) {
        if (path.size() <= 100) return path;
        const auto dot = path.find('.', path.size() - 100);
        // "...node[0]", not "....node[0]": the cut is at a dot, which the ellipsis stands for.
        return "..." + path.substr(dot == std::string::npos ? path.size() - 100 : dot + 1);
    }

    // "at byte 12 (in graph.node[3]): ".
    static std::string at(std::size_t offset, const std::string& path) {
        return "at byte " + std::to_string(offset) + (path.empty() ? ": " : " (in " + shorten(path) + "): ");
    }

    std::string cut(std::size_t end) const {
        return end == m_size ? ": the file is truncated (or not an ONNX model)" : " of its enclosing message; " +
                                                                                     std::string(kNotOnnx);
    }

    const unsigned char* m_data;
    std::size_t m_size;
};

// What the bytes look like when they are clearly another kind of file.
const char* tensor_type_name(int type) {
    static const char* const names[] = {"UNDEFINED", "FLOAT",  "UINT8",   "INT8",    "UINT16",    "INT16",
                                        "INT32",     "INT64",  "STRING",  "BOOL",    "FLOAT16",   "DOUBLE",
                                        "UINT32",    "UINT64", "COMPLEX64", "COMPLEX128", "BFLOAT16"};
    return type >= 0 && type < 17 ? names[type] : "a type this reader does not know";
}

} // namespace

std::string dims_text(const std::vector<std::int64_t>& dims) {
    std::string s = "[";
    for (std::size_t i = 0; i < dims.size(); ++i) s += (i ? ", " : "") + std::to_string(dims[i]);
    return s + "]";
}

// --- parsing -------------------------------------------------------------------------------------------------

onnx::ModelProto parse_onnx_model(std::string_view bytes, const std::string& origin) {
    if (bytes.size() > k_onnx_max_bytes)
        BRAIN_THROW(ErrorCode::InvalidModelFile, origin, ": ", bytes.size(), " bytes: ", k_onnx_max_bytes_why);
    const auto* data = reinterpret_cast<const unsigned char*>(bytes.data());
    onnx::ModelProto model;
    google::protobuf::io::CodedInputStream input(data, static_cast<int>(bytes.size()));
    input.SetRecursionLimit(kMaxNesting);
    if (!model.ParseFromCodedStream(&input) || !input.ConsumedEntireMessage()) {
        const WireExplainer explainer(data, bytes.size());
        const auto why = explainer.message(0, bytes.size(), onnx::ModelProto::descriptor(), "", 0);
        BRAIN_THROW(ErrorCode::InvalidModelFile, origin, ": not a readable ONNX model: ",
                    why ? *why : std::string("protobuf refused its bytes; ") + kNotOnnx,
                    other_format_hint(bytes, FileKind::Onnx));
    }
    if (!model.has_graph())
        BRAIN_THROW(ErrorCode::InvalidModelFile, origin, ": not an ONNX model: it has no graph",
                    bytes.empty() ? std::string(" (the file is empty)") : other_format_hint(bytes, FileKind::Onnx));
    return model;
}

// --- the graph -----------------------------------------------------------------------------------------------

OnnxGraph::OnnxGraph(const onnx::ModelProto& model, std::string origin)
    : m_graph(model.graph()), m_origin(std::move(origin)), m_constant_node(node_count(), false) {
    check_frame(model);
    index_values();
    check_acyclic();
    check_attributes();
    fold_constants();
}

void OnnxGraph::fail(const std::string& message) const {
    BRAIN_THROW(ErrorCode::InvalidModelFile, m_origin, ": ", message);
}

std::string OnnxGraph::describe(std::size_t i) const {
    const onnx::NodeProto& n = node(i);
    std::string op = n.op_type();
    if (!n.domain().empty() && n.domain() != "ai.onnx") op = n.domain() + "." + op;
    const bool plain = !op.empty() && op.size() <= 60 && std::all_of(op.begin(), op.end(), [](char ch) {
        return std::isalnum(static_cast<unsigned char>(ch)) || ch == '.' || ch == '_';
    });
    return "node " + std::to_string(i) + (n.name().empty() ? "" : " " + quote_excerpt(n.name(), 60)) + " (" +
           (plain ? op : quote_excerpt(op, 60)) + ")";
}

const std::vector<std::size_t>& OnnxGraph::consumers(const std::string& value) const {
    static const std::vector<std::size_t> none;
    const auto it = m_consumers.find(value);
    return it == m_consumers.end() ? none : it->second;
}

std::optional<std::size_t> OnnxGraph::producer(const std::string& value) const {
    const auto it = m_producer.find(value);
    if (it == m_producer.end()) return std::nullopt;
    return it->second;
}

const OnnxConstant* OnnxGraph::constant(const std::string& value) const {
    const auto it = m_constants.find(value);
    return it == m_constants.end() ? nullptr : &it->second;
}

const onnx::AttributeProto* OnnxGraph::attribute(std::size_t i, const char* name, int type,
                                                 const char* type_name) const {
    for (const onnx::AttributeProto& a : node(i).attribute()) {
        if (a.name() != name) continue;
        if (a.type() != type)
            fail(describe(i) + ": attribute '" + name + "' is not " + type_name +
                 "; the file is damaged or was not written by an ONNX exporter");
        return &a;
    }
    return nullptr;
}

std::optional<std::int64_t> OnnxGraph::int_attribute(std::size_t i, const char* name) const {
    if (const auto* a = attribute(i, name, onnx::AttributeProto::INT, "an integer")) return a->i();
    return std::nullopt;
}

std::optional<float> OnnxGraph::float_attribute(std::size_t i, const char* name) const {
    if (const auto* a = attribute(i, name, onnx::AttributeProto::FLOAT, "a float")) return a->f();
    return std::nullopt;
}

std::optional<std::string> OnnxGraph::string_attribute(std::size_t i, const char* name) const {
    if (const auto* a = attribute(i, name, onnx::AttributeProto::STRING, "a string")) return a->s();
    return std::nullopt;
}

void OnnxGraph::check_frame(const onnx::ModelProto& model) {
    if (model.ir_version() < 3)
        fail("the model declares ONNX IR version " + std::to_string(model.ir_version()) +
             "; brain reads IR version 3 and later (re-export the model with a current exporter)");
    for (const auto& opset : model.opset_import())
        if (opset.domain().empty() || opset.domain() == "ai.onnx") m_opset = opset.version();
    if (m_opset == 0)
        fail("the model imports no version of the standard ONNX operator set (no opset_import for domain \"\"); "
             "the file is damaged or was not written by an ONNX exporter");
    if (m_opset < 7)
        fail("the model uses ONNX opset " + std::to_string(m_opset) +
             "; brain reads opset 7 and later (re-export with a newer opset, e.g. opset_version=17)");
}

void OnnxGraph::index_values() {
    std::set<std::string> defined;
    for (const auto& t : m_graph.initializer())
        if (!defined.insert(t.name()).second)
            fail("two initializers are named " + quote_excerpt(t.name()) + "; every value has one name");
    std::set<std::string> inputs;
    for (const auto& in : m_graph.input()) {
        if (!inputs.insert(in.name()).second)
            fail("two graph inputs are named " + quote_excerpt(in.name()) + "; every value has one name");
        defined.insert(in.name());
    }
    for (std::size_t i = 0; i < node_count(); ++i)
        for (const std::string& out : node(i).output()) {
            if (out.empty()) continue; // an optional output left out
            if (const auto it = m_producer.find(out); it != m_producer.end())
                fail("the value " + quote_excerpt(out) + " is written by " + describe(it->second) + " and by " +
                     describe(i) + "; an ONNX graph writes each value once");
            if (defined.count(out))
                fail(describe(i) + " writes " + quote_excerpt(out) +
                     ", which is already a graph input or initializer; an ONNX graph writes each value once");
            m_producer.emplace(out, i);
        }
    for (std::size_t i = 0; i < node_count(); ++i)
        for (const std::string& in : node(i).input()) {
            if (in.empty()) continue; // an optional input left out
            if (!defined.count(in) && !m_producer.count(in))
                fail(describe(i) + " reads " + quote_excerpt(in) +
                     ", which no node, graph input or initializer defines; the graph is incomplete");
            auto& list = m_consumers[in];
            if (list.empty() || list.back() != i) list.push_back(i);
        }
    for (const auto& out : m_graph.output())
        if (!defined.count(out.name()) && !m_producer.count(out.name()))
            fail("the graph output " + quote_excerpt(out.name()) +
                 " is not defined by any node, input or initializer; the graph is incomplete");
}

void OnnxGraph::check_acyclic() {
    // Kahn's algorithm over the nodes; whatever cannot be ordered lies on or behind a cycle.
    const std::size_t n = node_count();
    std::vector<std::size_t> waiting(n, 0);
    std::vector<std::vector<std::size_t>> next(n);
    for (std::size_t i = 0; i < n; ++i) {
        std::set<std::size_t> from;
        for (const std::string& in : node(i).input())
            if (const auto p = producer(in)) from.insert(*p);
        waiting[i] = from.size();
        for (std::size_t p : from) next[p].push_back(i);
    }
    std::vector<std::size_t> ready;
    for (std::size_t i = 0; i < n; ++i)
        if (waiting[i] == 0) ready.push_back(i);
    std::size_t ordered = 0;
    while (!ready.empty()) {
        const std::size_t i = ready.back();
        ready.pop_back();
        ++ordered;
        for (std::size_t j : next[i])
            if (--waiting[j] == 0) ready.push_back(j);
    }
    if (ordered == n) return;
    // Walk back from an unordered node through unordered producers until a node repeats: that is a cycle.
    std::size_t at = 0;
    while (waiting[at] == 0) ++at;
    std::vector<std::size_t> path;
    std::vector<std::size_t> position(n, n);
    while (position[at] == n) {
        position[at] = path.size();
        path.push_back(at);
        for (const std::string& in : node(at).input())
            if (const auto p = producer(in); p && waiting[*p] != 0) {
                at = *p;
                break;
            }
    }
    // path[k + 1] writes what path[k] reads, and `at` writes what path.back() reads: in the order values flow,
    // at -> path.back() -> ... -> path[first] == at.
    const std::size_t first = position[at];
    std::string cycle = describe(at);
    for (std::size_t k = path.size(), shown = 0; k-- > first && shown < 6; ++shown)
        cycle += " -> " + (shown == 5 && k > first ? std::string("...") : describe(path[k]));
    fail("the graph has a cycle: " + cycle +
         " (each reads what the one before it writes); an ONNX graph is acyclic, so the file is damaged or was "
         "not written by an ONNX exporter");
}

OnnxConstant OnnxGraph::decode(const onnx::TensorProto& t, const std::string& what) const {
    OnnxConstant c;
    std::uint64_t count = 1;
    for (std::int64_t d : t.dims()) {
        if (d < 0) fail(what + " has a negative dimension (" + std::to_string(d) + ")");
        const auto product = checked_mul(count, static_cast<std::uint64_t>(d));
        if (!product) fail(what + " has dimensions whose product overflows");
        count = *product;
        c.dims.push_back(d);
    }
    const auto unusable = [&](std::string why) {
        c.unusable = what + " " + std::move(why);
        return c;
    };
    if (t.has_data_location() && t.data_location() == onnx::TensorProto::EXTERNAL)
        return unusable("keeps its data in an external file; brain reads self-contained ONNX files (save the model "
                        "without external data: onnx.save_model(model, path, save_as_external_data=False))");
    if (t.has_segment()) return unusable("is stored in segments, which brain does not read");
    const int type = t.data_type();
    StoredFloat stored = StoredFloat::Float32;
    std::size_t element = 0;
    bool integer = false;
    switch (type) {
    case onnx::TensorProto::FLOAT:
        element = 4;
        break;
    case onnx::TensorProto::DOUBLE:
        stored = StoredFloat::Float64;
        element = 8;
        break;
    case onnx::TensorProto::FLOAT16:
        stored = StoredFloat::Float16;
        element = 2;
        break;
    case onnx::TensorProto::BFLOAT16:
        stored = StoredFloat::BFloat16;
        element = 2;
        break;
    case onnx::TensorProto::INT64:
        integer = true;
        element = 8;
        break;
    case onnx::TensorProto::INT32:
        integer = true;
        element = 4;
        break;
    case onnx::TensorProto::BOOL: // Dropout's training_mode
        integer = true;
        element = 1;
        break;
    default:
        return unusable(std::string("holds ") + tensor_type_name(type) +
                        " elements; brain reads FLOAT, DOUBLE, FLOAT16 and BFLOAT16 weights (and INT32/INT64 "
                        "shapes, BOOL flags)");
    }
    const std::string& raw = t.raw_data();
    std::uint64_t held = 0;
    if (!raw.empty()) {
        held = raw.size() / element;
        if (raw.size() % element != 0 || held != count)
            fail(what + " has dimensions " + dims_text(c.dims) + " (" + std::to_string(count) + " elements) but " +
                 std::to_string(raw.size()) + " bytes of raw data (" + std::to_string(element) +
                 " bytes each); the file is damaged");
    } else {
        held = type == onnx::TensorProto::FLOAT    ? static_cast<std::uint64_t>(t.float_data_size())
               : type == onnx::TensorProto::DOUBLE ? static_cast<std::uint64_t>(t.double_data_size())
               : type == onnx::TensorProto::INT64  ? static_cast<std::uint64_t>(t.int64_data_size())
                                                   : static_cast<std::uint64_t>(t.int32_data_size());
        if (held != count)
            fail(what + " has dimensions " + dims_text(c.dims) + " (" + std::to_string(count) +
                 " elements) but holds " + std::to_string(held) + " values; the file is damaged");
    }
    const auto* bytes = reinterpret_cast<const unsigned char*>(raw.data());
    c.integer = integer;
    if (integer) {
        c.ints.reserve(count);
        for (std::size_t i = 0; i < count; ++i) {
            if (!raw.empty())
                c.ints.push_back(element == 8   ? static_cast<std::int64_t>(load_le<std::uint64_t>(bytes + 8 * i))
                                 : element == 4 ? static_cast<std::int32_t>(load_le<std::uint32_t>(bytes + 4 * i))
                                                : static_cast<std::int64_t>(bytes[i] != 0));
            else
                c.ints.push_back(type == onnx::TensorProto::INT64 ? t.int64_data(static_cast<int>(i))
                                                                  : t.int32_data(static_cast<int>(i)));
        }
        for (std::int64_t v : c.ints) c.floats.push_back(static_cast<float>(v));
        return c;
    }
    c.floats.reserve(count);
    for (std::size_t i = 0; i < count; ++i) {
        std::optional<float> v;
        if (!raw.empty()) {
            v = stored_float(bytes, i, stored);
        } else {
            const int k = static_cast<int>(i);
            double d = type == onnx::TensorProto::FLOAT    ? static_cast<double>(t.float_data(k))
                       : type == onnx::TensorProto::DOUBLE ? t.double_data(k)
                       : type == onnx::TensorProto::FLOAT16
                           ? static_cast<double>(half_to_float(static_cast<std::uint16_t>(t.int32_data(k))))
                           : static_cast<double>(bfloat16_to_float(static_cast<std::uint16_t>(t.int32_data(k))));
            if (std::fabs(d) <= static_cast<double>(std::numeric_limits<float>::max()))
                v = static_cast<float>(d);
        }
        if (!v) {
            c.floats.clear();
            return unusable("has element " + std::to_string(i) +
                            " that is not a finite float32 number (NaN, infinite, or beyond +-3.4e38); every "
                            "weight must be finite");
        }
        c.floats.push_back(*v);
    }
    return c;
}

// The value of node i when every input it reads is a constant and brain knows how to compute it.
std::optional<OnnxConstant> OnnxGraph::evaluate(std::size_t i) const {
    const onnx::NodeProto& n = node(i);
    if (!n.domain().empty() && n.domain() != "ai.onnx") return std::nullopt;
    const std::string& op = n.op_type();
    if (op == "Constant") {
        for (const auto& a : n.attribute()) {
            if (a.name() == "value") return decode(a.t(), describe(i) + ": its value");
            if (a.name() == "value_float") return OnnxConstant{{}, {a.f()}, {}, false, {}};
            if (a.name() == "value_floats")
                return OnnxConstant{{a.floats_size()}, {a.floats().begin(), a.floats().end()}, {}, false, {}};
            if (a.name() == "value_int") return OnnxConstant{{}, {static_cast<float>(a.i())}, {a.i()}, true, {}};
            if (a.name() == "value_ints") {
                OnnxConstant c{{a.ints_size()}, {}, {a.ints().begin(), a.ints().end()}, true, {}};
                for (std::int64_t v : c.ints) c.floats.push_back(static_cast<float>(v));
                return c;
            }
        }
        fail(describe(i) + " holds no numeric value (value, value_float(s) or value_int(s)); brain reads "
                           "numeric constants only");
    }
    if (n.input_size() == 0) return std::nullopt;
    std::vector<const OnnxConstant*> in;
    for (const std::string& name : n.input()) {
        if (name.empty()) continue;
        const OnnxConstant* c = constant(name);
        if (!c) return std::nullopt;
        if (!c->unusable.empty()) {
            OnnxConstant broken;
            broken.unusable = c->unusable;
            return broken;
        }
        in.push_back(c);
    }
    if (op == "Identity" && in.size() == 1) return *in[0];
    if (op == "Cast" && in.size() == 1) {
        const auto to = int_attribute(i, "to").value_or(0);
        OnnxConstant c = *in[0];
        if (to == onnx::TensorProto::FLOAT || to == onnx::TensorProto::DOUBLE || to == onnx::TensorProto::FLOAT16 ||
            to == onnx::TensorProto::BFLOAT16) {
            c.integer = false;
            c.ints.clear();
            return c;
        }
        return std::nullopt;
    }
    if (op == "Transpose" && in.size() == 1 && in[0]->dims.size() == 2) {
        const OnnxConstant& a = *in[0];
        for (const auto& attr : n.attribute())
            if (attr.name() == "perm" && !(attr.ints_size() == 2 && attr.ints(0) == 1 && attr.ints(1) == 0))
                return std::nullopt;
        const auto rows = static_cast<std::size_t>(a.dims[0]), cols = static_cast<std::size_t>(a.dims[1]);
        OnnxConstant t{{a.dims[1], a.dims[0]}, {}, {}, a.integer, {}};
        for (std::size_t c = 0; c < cols; ++c)
            for (std::size_t r = 0; r < rows; ++r) {
                if (a.integer) t.ints.push_back(a.ints[r * cols + c]);
                t.floats.push_back(a.floats[r * cols + c]);
            }
        return t;
    }
    return std::nullopt;
}

void OnnxGraph::fold_constants() {
    for (const auto& t : m_graph.initializer())
        m_constants.emplace(t.name(), decode(t, "the initializer " + quote_excerpt(t.name())));
    // Nodes are folded in graph order, repeatedly, so a graph whose nodes are not sorted folds as well.
    for (bool changed = true; changed;) {
        changed = false;
        for (std::size_t i = 0; i < node_count(); ++i) {
            if (m_constant_node[i] || node(i).output_size() != 1 || node(i).output(0).empty()) continue;
            auto value = evaluate(i);
            if (!value) continue;
            m_constants[node(i).output(0)] = std::move(*value);
            m_constant_node[i] = true;
            changed = true;
        }
    }
}

} // namespace brain::detail
