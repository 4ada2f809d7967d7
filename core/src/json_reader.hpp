// The float-typed JSON of brain's own documents (the model file, resumable checkpoints) and one reader for them:
// every error is InvalidModelFile naming the file and the JSON pointer at fault.
#pragma once

#include <brain/error.hpp>
#include <cmath>
#include <cstdint>
#include <limits>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <vector>

namespace brain::detail {

// Float-typed JSON: dumps the shortest text that reads back as the same float, and parses with strtof.
using FloatJson =
    nlohmann::basic_json<nlohmann::ordered_map, std::vector, std::string, bool, std::int64_t, std::uint64_t, float>;

// Compact text; invalid UTF-8 replaced rather than thrown.
inline std::string dump_json(const FloatJson& j) {
    return j.dump(-1, ' ', false, FloatJson::error_handler_t::replace);
}

// nlohmann's message without its "[json.exception.parse_error.101] " id, which tells a user nothing: "parse
// error at line 1, column 501: syntax error while parsing ...".
inline std::string json_error_text(const nlohmann::json::exception& e) {
    std::string what = e.what();
    if (what.starts_with("[json.exception"))
        if (const auto pos = what.find("] "); pos != std::string::npos) what.erase(0, pos + 2);
    return what;
}

// `text` as FloatJson, refusing an object that repeats a key: parsers disagree about which one wins, so what the
// writer meant is unknown (InvalidModelFile "<origin>: the key 'seed' appears twice in one object ..."). Other
// failures throw nlohmann's exceptions, as FloatJson::parse does.
inline FloatJson parse_json_unique_keys(const std::string& text, const std::string& origin) {
    std::vector<std::set<std::string>> keys; // one set per object open on the way down
    const FloatJson::parser_callback_t check = [&](int, FloatJson::parse_event_t event, FloatJson& parsed) {
        if (event == FloatJson::parse_event_t::object_start) {
            keys.emplace_back();
        } else if (event == FloatJson::parse_event_t::object_end) {
            if (!keys.empty()) keys.pop_back();
        } else if (event == FloatJson::parse_event_t::key && !keys.empty() &&
                   !keys.back().insert(parsed.get<std::string>()).second) {
            BRAIN_THROW(ErrorCode::InvalidModelFile, origin, ": the key ", quote_excerpt(parsed.get<std::string>()),
                        " appears twice in one object; JSON readers disagree about which one counts, so the file "
                        "is refused: keep one of them");
        }
        return true;
    };
    return FloatJson::parse(text, check);
}

// Reads one document; `document` names it in "missing" messages ("a brain model file").
class JsonReader {
public:
    JsonReader(const std::string& origin, const char* document) : m_origin(origin), m_document(document) {}

    [[noreturn]] void fail(const std::string& path, const std::string& message) const {
        BRAIN_THROW(ErrorCode::InvalidModelFile, m_origin, ": ", path, ": ", message);
    }

    const FloatJson& require(const FloatJson& object, const std::string& path, const char* key) const {
        if (!object.is_object()) fail(path, "expected an object, found " + describe(object));
        const auto it = object.find(key);
        if (it == object.end()) fail(path + "/" + key, std::string("missing; ") + m_document + " must have it");
        return *it;
    }

    const FloatJson* optional(const FloatJson& object, const char* key) const {
        const auto it = object.find(key);
        return it == object.end() ? nullptr : &*it;
    }

    std::uint64_t unsigned_integer(const FloatJson& j, const std::string& path) const {
        if (!j.is_number_integer() || (!j.is_number_unsigned() && j.get<std::int64_t>() < 0))
            fail(path, "expected a non-negative integer, found " + describe(j));
        return j.get<std::uint64_t>();
    }

    std::size_t width(const FloatJson& j, const std::string& path) const {
        const std::uint64_t v = unsigned_integer(j, path);
        if (v == 0 || v > std::numeric_limits<std::uint32_t>::max())
            fail(path, "expected a width in [1, " + std::to_string(std::numeric_limits<std::uint32_t>::max()) +
                           "], found " + std::to_string(v));
        return static_cast<std::size_t>(v);
    }

    float number(const FloatJson& j, const std::string& path) const {
        if (!j.is_number()) fail(path, "expected a number, found " + describe(j));
        const float v = j.get<float>();
        if (!std::isfinite(v))
            fail(path, "non-finite number: the value is outside the float32 range (+-3.4e38) and reads as " +
                           std::string(std::isnan(v) ? "nan" : (v > 0 ? "inf" : "-inf")) +
                           "; every number must be finite");
        return v;
    }

    bool boolean(const FloatJson& j, const std::string& path) const {
        if (!j.is_boolean()) fail(path, "expected true or false, found " + describe(j));
        return j.get<bool>();
    }

    const std::string& string(const FloatJson& j, const std::string& path) const {
        if (!j.is_string()) fail(path, "expected a string, found " + describe(j));
        return j.get_ref<const std::string&>();
    }

    // An array of numbers of any length.
    std::vector<float> floats(const FloatJson& j, const std::string& path) const {
        if (!j.is_array()) fail(path, "expected an array of numbers, found " + describe(j));
        std::vector<float> out;
        out.reserve(j.size());
        for (std::size_t i = 0; i < j.size(); ++i) out.push_back(number(j[i], path + "/" + std::to_string(i)));
        return out;
    }

    // An array of exactly `expected` numbers.
    std::vector<float> floats(const FloatJson& j, const std::string& path, std::size_t expected) const {
        if (!j.is_array())
            fail(path, "expected an array of " + std::to_string(expected) + " numbers, found " + describe(j));
        if (j.size() != expected)
            fail(path, "expected " + std::to_string(expected) + " numbers, found " + std::to_string(j.size()));
        return floats(j, path);
    }

    std::vector<std::string> strings(const FloatJson& j, const std::string& path) const {
        if (!j.is_array()) fail(path, "expected an array of strings, found " + describe(j));
        std::vector<std::string> out;
        for (std::size_t i = 0; i < j.size(); ++i) out.push_back(string(j[i], path + "/" + std::to_string(i)));
        return out;
    }

    // "the string \"abc\"", "an array of 3", ... for messages.
    static std::string describe(const FloatJson& j) {
        if (j.is_array()) return "an array of " + std::to_string(j.size());
        if (j.is_object()) return "an object";
        if (j.is_string()) {
            std::string s = dump_json(j);
            if (s.size() > 40) s = s.substr(0, 37) + "...";
            return "the string " + s;
        }
        if (j.is_null()) return "null";
        return std::string(j.type_name()) + " " + dump_json(j);
    }

private:
    const std::string& m_origin;
    const char* m_document;
};

} // namespace brain::detail
