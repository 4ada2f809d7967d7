// safetensors: parameters written and read in PyTorch's nn.Sequential naming, float16/bfloat16/float64 converted
// once, and a strict header: every lie about sizes, offsets or names refused precisely.
#include "support/catch.hpp"
#include "support/error_match.hpp"
#include "support/interop.hpp"
#include "support/networks.hpp"

#include <bit>
#include <brain/brain.hpp>
#include <cstdint>
#include <string>
#include <vector>

using brain::Activation;
using brain::ErrorCode;
using brain::Network;
using brain::test::require_error;

namespace {

std::string le64(std::uint64_t v) {
    std::string s;
    for (int i = 0; i < 8; ++i) s.push_back(static_cast<char>((v >> (8 * i)) & 0xFF));
    return s;
}

// A safetensors file from its header text and data bytes.
std::string file(const std::string& header, const std::string& data) {
    return le64(header.size()) + header + data;
}

std::string f32(std::initializer_list<float> values) {
    std::string s;
    for (float v : values) {
        const auto u = std::bit_cast<std::uint32_t>(v);
        for (int i = 0; i < 4; ++i) s.push_back(static_cast<char>((u >> (8 * i)) & 0xFF));
    }
    return s;
}

// A Linear(2, 1) as "0.weight" and "0.bias" in float32.
std::string one_layer(const std::string& extra_header = "", const std::string& extra_data = "") {
    return file(R"({"0.weight":{"dtype":"F32","shape":[1,2],"data_offsets":[0,8]},)"
                R"("0.bias":{"dtype":"F32","shape":[1],"data_offsets":[8,12]})" + extra_header + "}",
                f32({0.5f, -1.5f, 0.25f}) + extra_data);
}

} // namespace

TEST_CASE("safetensors: written in nn.Sequential naming, aligned, and read back exactly", "[core]") {
    brain::test::ScratchDir dir("safetensors_write");
    // nn.Sequential(Linear(3, 5), Tanh(), Linear(5, 4), Linear(4, 2), Sigmoid()): a linear hidden layer takes no
    // index for an activation, so the Linear modules are 0, 2 and 3.
    const Network net = brain::test::dense_network(
        {{5, Activation::Tanh}, {4, Activation::Linear}, {2, Activation::Sigmoid}}, 3, 8);
    net.save_safetensors(dir / "w.safetensors");
    const std::string bytes = brain::test::read_bytes(dir / "w.safetensors");
    std::uint64_t length = 0;
    for (int i = 7; i >= 0; --i) length = (length << 8) | static_cast<unsigned char>(bytes[static_cast<std::size_t>(i)]);
    CHECK((8 + length) % 8 == 0);
    const auto header = nlohmann::json::parse(bytes.substr(8, length));
    CHECK(header["__metadata__"]["format"] == "pt");
    CHECK(header["__metadata__"]["brain.activations"] == "tanh,linear,sigmoid");
    CHECK(header["0.weight"]["shape"] == nlohmann::json::array({5, 3}));
    CHECK(header["0.bias"]["shape"] == nlohmann::json::array({5}));
    CHECK(header["2.weight"]["shape"] == nlohmann::json::array({4, 5}));
    CHECK(header["3.weight"]["shape"] == nlohmann::json::array({2, 4}));
    CHECK(header["3.bias"]["dtype"] == "F32");
    CHECK(bytes.size() == 8 + length + 4 * net.parameter_count());

    const Network from_metadata = Network::load_safetensors(dir / "w.safetensors", std::vector<Activation>{});
    CHECK(from_metadata.parameters() == net.parameters());
    CHECK(from_metadata.layers().back().activation == Activation::Sigmoid);
    const Network from_architecture = Network::load_safetensors(dir / "w.safetensors", net);
    CHECK(from_architecture.parameters() == net.parameters());
    const Network other = brain::test::dense_network(
        {{5, Activation::Tanh}, {4, Activation::Linear}, {2, Activation::Sigmoid}}, 3, 99);
    CHECK(Network::load_safetensors(dir / "w.safetensors", other).parameters() == net.parameters());
    // Activations chosen from the file's widths, in one read: the chooser sees 5, 4, 2 (all linear).
    std::vector<std::size_t> seen;
    const Network chosen = Network::load_safetensors_with(dir / "w.safetensors", [&](const auto& layers) {
        for (const auto& l : layers) seen.push_back(l.outputs);
        return std::vector<Activation>{Activation::Relu, Activation::Linear, Activation::Softmax};
    });
    CHECK(seen == std::vector<std::size_t>{5, 4, 2});
    CHECK(chosen.parameters() == net.parameters());
    CHECK(chosen.layers()[0].activation == Activation::Relu);
    require_error(
        [&] {
            Network::load_safetensors_with(dir / "w.safetensors", [](const auto&) -> std::vector<Activation> {
                BRAIN_THROW(ErrorCode::InvalidArgument, "the chooser refuses");
            });
        },
        ErrorCode::InvalidArgument, {"the chooser refuses"});
    require_error([&] { net.save_safetensors(dir.path); }, ErrorCode::IoError, {"directory"});
}

TEST_CASE("safetensors: PyTorch's layouts read: gaps (Dropout), a Linear without bias, half and double precision",
          "[core]") {
    brain::test::ScratchDir dir("safetensors_read");
    const auto path = dir / "w.safetensors";
    // nn.Sequential(Linear(2, 1, bias=False), ...) as index 0, then Linear(1, 1) at index 3 (ReLU, Dropout between).
    brain::test::write_bytes(path, file(R"({"0.weight":{"dtype":"F32","shape":[1,2],"data_offsets":[0,8]},)"
                                        R"("3.weight":{"dtype":"F32","shape":[1,1],"data_offsets":[8,12]},)"
                                        R"("3.bias":{"dtype":"F32","shape":[1],"data_offsets":[12,16]}})",
                                        f32({1.0f, 2.0f, 3.0f, 0.5f})));
    const Network net = Network::load_safetensors(path, {Activation::Relu, Activation::Linear});
    CHECK(net.parameters() == std::vector<float>{1.0f, 2.0f, 0.0f, 3.0f, 0.5f});
    CHECK(net.predict(brain::Matrix{{1.0f, 1.0f}})(0, 0) == 9.5f);

    // The same Linear(2, 1) in F16, BF16 and F64: converted exactly.
    const std::string f16 = std::string("\x00\x38\x00\xbe", 4) + std::string("\x00\x34", 2); // 0.5, -1.5, 0.25
    brain::test::write_bytes(path, file(R"({"0.weight":{"dtype":"F16","shape":[1,2],"data_offsets":[0,4]},)"
                                        R"("0.bias":{"dtype":"F16","shape":[1],"data_offsets":[4,6]}})", f16));
    CHECK(Network::load_safetensors(path, {Activation::Linear}).parameters() == std::vector<float>{0.5f, -1.5f, 0.25f});
    const std::string bf16 = std::string("\x00\x3f\xc0\xbf", 4) + std::string("\x80\x3e", 2);
    brain::test::write_bytes(path, file(R"({"0.weight":{"dtype":"BF16","shape":[1,2],"data_offsets":[0,4]},)"
                                        R"("0.bias":{"dtype":"BF16","shape":[1],"data_offsets":[4,6]}})", bf16));
    CHECK(Network::load_safetensors(path, {Activation::Linear}).parameters() == std::vector<float>{0.5f, -1.5f, 0.25f});
    std::string f64;
    for (double d : {0.5, -1.5, 0.25}) {
        const auto u = std::bit_cast<std::uint64_t>(d);
        for (int i = 0; i < 8; ++i) f64.push_back(static_cast<char>((u >> (8 * i)) & 0xFF));
    }
    brain::test::write_bytes(path, file(R"({"0.weight":{"dtype":"F64","shape":[1,2],"data_offsets":[0,16]},)"
                                        R"("0.bias":{"dtype":"F64","shape":[1],"data_offsets":[16,24]}})", f64));
    CHECK(Network::load_safetensors(path, {Activation::Linear}).parameters() == std::vector<float>{0.5f, -1.5f, 0.25f});
}

TEST_CASE("safetensors: a header that lies is refused naming what is wrong", "[core]") {
    brain::test::ScratchDir dir("safetensors_bad");
    const auto path = dir / "w.safetensors";
    const auto refused = [&](const std::string& bytes, std::initializer_list<std::string> fragments) {
        brain::test::write_bytes(path, bytes);
        require_error([&] { Network::load_safetensors(path, {Activation::Linear}); }, ErrorCode::InvalidModelFile,
                      fragments);
        CHECK(brain::test::expect_error(ErrorCode::InvalidModelFile, [&] {
                  Network::load_safetensors(path, {Activation::Linear});
              }).rfind(path.string() + ": ", 0) == 0);
    };
    const std::string good = one_layer();
    brain::test::write_bytes(path, good);
    CHECK(Network::load_safetensors(path, {Activation::Linear}).parameters() == std::vector<float>{0.5f, -1.5f, 0.25f});

    refused("abc", {"3 bytes, fewer than the 8 of the header length"});
    refused(le64(1'000'000'000) + "{}", {"says 1000000000 bytes, more than safetensors' limit of 100000000"});
    refused(le64(500) + "{}", {"says 500 bytes, but only 2 follow it", "truncated"});
    refused(good.substr(0, good.size() - 2), {"'0.bias' (bytes 8 to 12) past the end of the data, which holds 10 bytes"});
    refused(good + "xyz", {"the last 3 bytes of the file belong to no tensor"});
    refused(file("[1,2]", ""), {"does not start with '{'"});
    refused(file("{\"a\":", ""), {"the header is not valid JSON", "parse error"});
    refused(file(R"({"0.weight":{"dtype":"F32","shape":[1,2],"data_offsets":[0,8]},"0.weight":{"dtype":"F32","shape":[1,2],"data_offsets":[0,8]}})",
                 f32({1, 2})),
            {"repeats the key '0.weight'"});
    refused(file(R"({"0.weight":{"dtype":"Q4","shape":[1,2],"data_offsets":[0,8]}})", f32({1, 2})),
            {"the header entry '0.weight': unknown dtype 'Q4'"});
    refused(file(R"({"0.weight":{"dtype":"F32","shape":[1,3],"data_offsets":[0,8]}})", f32({1, 2})),
            {"a F32 tensor of shape [1, 3] takes 12 bytes, but data_offsets [0, 8] hold 8"});
    refused(file(R"({"0.weight":{"dtype":"F32","shape":[4294967296,4294967296,16],"data_offsets":[0,8]}})", f32({1, 2})),
            {"the shape '[4294967296,4294967296,16]' overflows a byte count"});
    refused(file(R"({"0.weight":{"dtype":"F32","shape":[1,-2],"data_offsets":[0,8]}})", f32({1, 2})),
            {"shape[1] is -2, not a whole number >= 0"});
    refused(file(R"({"0.weight":{"dtype":"F32","shape":[1,2],"data_offsets":[8,0]}})", f32({1, 2})),
            {"data_offsets [8, 0] end before they begin"});
    refused(file(R"({"0.weight":{"dtype":"F32","shape":[1,2],"data_offsets":[0,8]},)"
                 R"("0.bias":{"dtype":"F32","shape":[1],"data_offsets":[4,8]}})",
                 f32({1, 2})),
            {"'0.weight' (bytes 0 to 8) and '0.bias' (bytes 4 to 8) overlap"});
    refused(file(R"({"0.weight":{"dtype":"F32","shape":[1,2],"data_offsets":[4,12]}})", f32({0, 1, 2})),
            {"bytes 0 to 4 of the data belong to no tensor (before '0.weight')"});
    refused(file(R"({"0.weight":{"dtype":"F32","shape":[1,2],"data_offsets":[0,8],"extra":1}})", f32({1, 2})),
            {"has the unknown field 'extra'"});
    refused(file(R"({"__metadata__":{"n":3},"0.weight":{"dtype":"F32","shape":[1,2],"data_offsets":[0,8]}})", f32({1, 2})),
            {"__metadata__ entry 'n' is not a string"});
    refused(file(R"({"0.weight":{"dtype":"F32","shape":[[[[1]]]],"data_offsets":[0,8]}})", f32({1, 2})),
            {"nests deeper"});
    refused(file(R"({"model.0.weight":{"dtype":"F32","shape":[1,2],"data_offsets":[0,8]}})", f32({1, 2})),
            {"the tensor 'model.0.weight' is not named as nn.Sequential names"});
    refused(file(R"({"0.bias":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}})", f32({1, 2})),
            {"the tensor '0.bias' has no '0.weight' beside it"});
    refused(file(R"({"0.weight":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}})", f32({1, 2})),
            {"'0.weight' has shape [2]; a Linear layer's weight is [outputs, inputs]"});
    refused(one_layer(R"(,"2.weight":{"dtype":"F32","shape":[1,3],"data_offsets":[12,24]})", f32({1, 2, 3})),
            {"'2.weight' has shape [1, 3]: it takes 3 inputs, but the layer before it has 1 outputs"});
    refused(file(R"({"0.weight":{"dtype":"I64","shape":[1,1],"data_offsets":[0,8]}})", std::string(8, '\0')),
            {"the tensor '0.weight' holds I64; brain reads F32, F16, BF16 and F64"});
    refused(file(R"({"0.weight":{"dtype":"F32","shape":[1,1],"data_offsets":[0,4]}})", f32({INFINITY})),
            {"the tensor '0.weight': element 0 is not a finite float32 number"});
    refused(file(R"({"0.weight":{"dtype":"F64","shape":[1,1],"data_offsets":[0,8]}})", le64(0x7FE0000000000000ull)),
            {"element 0 is not a finite float32 number", "beyond +-3.4e38"});
    refused(file("{}", ""), {"the file holds no tensors"});
}

TEST_CASE("safetensors: the architecture and activations must agree with the file", "[core]") {
    brain::test::ScratchDir dir("safetensors_arch");
    const auto path = dir / "w.safetensors";
    brain::test::write_bytes(path, one_layer(R"(,"1.weight":{"dtype":"F32","shape":[1,1],"data_offsets":[12,16]})",
                                             f32({2.0f})));
    // "0" and "1" are adjacent: no activation between them in PyTorch.
    require_error([&] { Network::load_safetensors(path, {Activation::Relu, Activation::Linear}); },
                  ErrorCode::InvalidModelFile,
                  {"the Linear layers 0 and 1 are adjacent", "layer 0's activation is relu"});
    CHECK(Network::load_safetensors(path, {Activation::Linear, Activation::Sigmoid}).layers().size() == 2);
    require_error([&] { Network::load_safetensors(path, {Activation::Linear}); }, ErrorCode::InvalidModelFile,
                  {"the file holds 2 layers (2 -> 1 linear -> 1 linear), but 1 activation was given"});
    require_error([&] { Network::load_safetensors(path, std::vector<Activation>{}); }, ErrorCode::InvalidModelFile,
                  {"does not record its activations", "--activation"});
    const Network wrong = brain::test::dense_network({{3, Activation::Linear}, {1, Activation::Linear}}, 2, 1);
    require_error([&] { Network::load_safetensors(path, wrong); }, ErrorCode::InvalidModelFile,
                  {"do not match the architecture's (2 -> 3 linear -> 1 linear)"});
    require_error([&] { Network::load_safetensors(path, {Activation::Softmax, Activation::Linear}); },
                  ErrorCode::InvalidModelFile, {"adjacent"});
    brain::test::write_bytes(path, one_layer());
    require_error([&] { Network::load_safetensors(path, {Activation::Softmax}); }, ErrorCode::InvalidModelFile,
                  {"softmax output layer needs >= 2 units"});
}
