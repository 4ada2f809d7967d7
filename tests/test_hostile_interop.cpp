// Hostile ONNX and safetensors files given to brain import (defect class 22 of docs/reliability.md): files that lie
// about their sizes, nest without end or are not files at all, each refused naming what is wrong, within the
// hostile suites' bounds (30 s, 2 GiB, one error line, nothing left behind).
#include "support/catch.hpp"
#include "support/hostile.hpp"

#include <onnx/onnx_pb.h>
#include <string>
#include <vector>

using namespace brain::test::hostile;

namespace {

std::string le64(std::uint64_t v) {
    std::string s;
    for (int i = 0; i < 8; ++i) s.push_back(static_cast<char>((v >> (8 * i)) & 0xFF));
    return s;
}

std::string varint(std::uint64_t v) {
    std::string s;
    for (; v >= 0x80; v >>= 7) s.push_back(static_cast<char>((v & 0x7F) | 0x80));
    s.push_back(static_cast<char>(v));
    return s;
}

// The tag and length that open a length-delimited protobuf field of `length` bytes.
std::string opening(int number, std::uint64_t length) {
    return varint(static_cast<std::uint64_t>(number) << 3 | 2) + varint(length);
}

// model.graph.node.attribute.g.node.attribute.g... `depth` times: protobuf's recursion limit, not the stack. Each
// level only opens fields, so the file is the openings, outermost first.
std::string deeply_nested_onnx(int depth) {
    std::vector<std::string> levels;
    std::uint64_t inner = 0;
    for (int i = 0; i < depth; ++i) {
        std::string level;
        for (int number : {6, 5, 1}) { // attribute.g, node.attribute, graph.node
            const std::string open = opening(number, inner);
            inner += open.size();
            level = open + level;
        }
        levels.push_back(level);
    }
    std::string out = opening(7, inner);
    for (auto it = levels.rbegin(); it != levels.rend(); ++it) out += *it;
    return out;
}

std::vector<Case> interop_rows(Fixture& f) {
    std::vector<Case> rows;
    const auto exported = [](Fixture& fx) {
        const auto r = brain::test::run_process(fx.brain + " export --model m.json --onnx m.onnx", fx.dir().string());
        REQUIRE(r.status == 0);
    };
    Case huge_shape{"22", "a safetensors tensor of 16 GiB in a 200-byte file",
                    [](Fixture& fx) {
                        const std::string header =
                            R"({"0.weight":{"dtype":"F32","shape":[65536,65536],"data_offsets":[0,17179869184]}})";
                        fx.write("huge.safetensors", le64(header.size()) + header + std::string(64, '\0'));
                    },
                    "{brain} import --safetensors huge.safetensors --output-activation sigmoid --out x.json",
                    2,
                    {"error: InvalidModelFile: huge.safetensors: the header places '0.weight' (bytes 0 to 17179869184) "
                     "past the end of the data, which holds 64 bytes"}};
    huge_shape.memory_limited = true;
    rows.push_back(huge_shape);
    rows.push_back({"22", "a safetensors header length of 2^63",
                    [](Fixture& fx) { fx.write("len.safetensors", le64(std::uint64_t{1} << 63) + "{}"); },
                    "{brain} import --safetensors len.safetensors --out x.json", 2,
                    {"says 9223372036854775808 bytes, more than safetensors' limit of 100000000"}});
    Case huge_dims{"22", "an ONNX initializer of [65536, 65536] holding no data",
                   [exported](Fixture& fx) {
                       exported(fx);
                       onnx::ModelProto m;
                       REQUIRE(m.ParseFromString(fx.read("m.onnx")));
                       auto* t = m.mutable_graph()->mutable_initializer(0);
                       t->clear_dims();
                       t->add_dims(65536);
                       t->add_dims(65536);
                       t->clear_raw_data();
                       fx.write("dims.onnx", m.SerializeAsString());
                   },
                   "{brain} import --onnx dims.onnx --out x.json",
                   2,
                   {"has dimensions [65536, 65536] (4294967296 elements) but holds 0 values; the file is damaged"}};
    huge_dims.memory_limited = true;
    rows.push_back(huge_dims);
    rows.push_back({"22", "an ONNX graph nested 100000 levels deep",
                    [](Fixture& fx) { fx.write("deep.onnx", deeply_nested_onnx(100000)); },
                    "{brain} import --onnx deep.onnx --out x.json", 2,
                    {"error: InvalidModelFile: deep.onnx: not a readable ONNX model", "nest more than 64 levels deep"}});
    rows.push_back({"22", "a 5 GiB sparse ONNX file",
                    [](Fixture& fx) {
                        fx.write("big.onnx", "");
                        std::filesystem::resize_file(fx / "big.onnx", std::uint64_t{5} << 30);
                    },
                    "{brain} import --onnx big.onnx --out x.json", 2,
                    {"error: InvalidModelFile: the ONNX file 'big.onnx' is 5.0 GiB, more than the limit of 1.0 GiB",
                     "--max-input-mib"}});
    // Past protobuf's 2 GiB with a limit that allows it: refused before it is read, as the limit is, not after.
    auto past_protobuf =
        Case{"22",
             "a 5 GiB sparse ONNX file under --max-input-mib 8192",
             [](Fixture& fx) {
                 if (std::filesystem::exists(fx / "big.onnx")) return;
                 fx.write("big.onnx", "");
                 std::filesystem::resize_file(fx / "big.onnx", std::uint64_t{5} << 30);
             },
             "{brain} import --onnx big.onnx --max-input-mib 8192 --out x.json",
             2,
             {"error: InvalidModelFile: the ONNX file 'big.onnx' is 5.0 GiB, more than 2.0 GiB: an "
              "ONNX file is one protobuf message of at most 2 GiB"}};
    past_protobuf.memory_limited = true;
    rows.push_back(past_protobuf);
    rows.push_back({"22", "/dev/zero as an ONNX file", {}, "{brain} import --onnx /dev/zero --out x.json", 2,
                    {"error: IoError: cannot read the ONNX file '/dev/zero': it is a character device"}});
    rows.push_back({"22", "an export over the model it reads", {}, "{brain} export --model m.json --onnx m.json", 2,
                    {"error: IoError: ", "m.json"},
                    [](Fixture& fx, const brain::test::ProcessResult&) {
                        CHECK(contains(fx.read("m.json"), "brain-model")); // the input survives
                    }});
    rows.push_back({"23",
                    "convert's two .npy files as one file, spelled through '..'",
                    [](Fixture& fx) { std::filesystem::create_directory(fx / "sub"); },
                    "{brain} convert r.csv sub/../x.npy x.npy --target y",
                    2,
                    {"error: IoError: cannot write 'x.npy': it is the same file as 'sub/../x.npy'"},
                    [](Fixture& fx, const brain::test::ProcessResult&) {
                        CHECK_FALSE(std::filesystem::exists(fx / "x.npy"));
                    }});
    rows.push_back({"23",
                    "ONNX and safetensors to one file through a linked folder",
                    [](Fixture& fx) {
                        std::filesystem::create_directory(fx / "d");
                        std::filesystem::create_directory_symlink(fx / "d", fx / "dl");
                    },
                    "{brain} export --model m.json --onnx d/a.onnx --safetensors dl/a.onnx",
                    2,
                    {"error: IoError: cannot write 'dl/a.onnx': it is the same file as 'd/a.onnx'"},
                    [](Fixture& fx, const brain::test::ProcessResult&) {
                        CHECK_FALSE(std::filesystem::exists(fx / "d" / "a.onnx"));
                    }});
    for (auto& row : rows)
        if (row.status == 2 && !row.after)
            row.after = [](Fixture& fx, const brain::test::ProcessResult&) {
                CHECK_FALSE(std::filesystem::exists(fx / "x.json"));
            };
    return rows;
}

} // namespace

TEST_CASE("hostile ONNX and safetensors files to brain import: one row each, bounded", "[cli]") {
    Fixture f;
    run_rows(interop_rows(f), f, "hostile interop input");
}
