// brain export, brain import and brain train --init, run as a user runs them: real processes in a scratch
// directory, asserting exit statuses, the sentences printed and the files left behind.
#include "support/catch.hpp"
#include "support/interop.hpp"
#include "support/process.hpp"

#include <brain/brain.hpp>
#include <string>
#include <sys/stat.h>

namespace {

// Single-quoted for /bin/sh.
std::string quoted(const std::string& s) {
    std::string out = "'";
    for (char c : s) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
    return out + "'";
}

struct Brain {
    brain::test::ScratchDir dir{"interop_cli"};
    brain::test::ProcessResult run(const std::string& args) const {
        return brain::test::run_process(quoted(std::string(BRAIN_TEST_BIN_DIR) + "/brain") + " " + args,
                                        dir.path.string());
    }
    std::string path(const std::string& name) const { return (dir / name).string(); }
};

std::string fixture(const std::string& name) {
    return quoted(brain::test::interop_data("patterns/" + name).string());
}

} // namespace

TEST_CASE("brain export and brain import round-trip a trained model through ONNX and safetensors", "[cli]") {
    const Brain b;
    REQUIRE(b.run("generate --kind xor --rows 300 --seed 4 --out xor.csv").status == 0);
    REQUIRE(b.run("train --csv xor.csv --target y --layers 8 --activation tanh --output-activation sigmoid "
                  "--epochs 5 --out m.json")
                .status == 0);
    const auto exported = b.run("export --model m.json --onnx m.onnx --safetensors m.safetensors");
    INFO(exported.output);
    REQUIRE(exported.status == 0);
    CHECK(exported.output.find("wrote m.onnx: ONNX opset 17, input \"input\" [batch, 2] -> output \"output\" "
                               "[batch, 1], the standardisation included") != std::string::npos);
    CHECK(exported.output.find("0.weight [8, 2], 0.bias [8], 2.weight [1, 8], 2.bias [1]") != std::string::npos);

    const auto from_onnx = b.run("import --onnx m.onnx --out onnx.json");
    INFO(from_onnx.output);
    REQUIRE(from_onnx.status == 0);
    CHECK(from_onnx.output.find("imported 2 -> 8 tanh -> 1 sigmoid (binary_cross_entropy) from m.onnx") !=
          std::string::npos);
    const auto from_st = b.run("import --safetensors m.safetensors --model m.json --out st.json");
    INFO(from_st.output);
    REQUIRE(from_st.status == 0);
    // Every copy predicts what the original does, digit for digit.
    const auto original = b.run("predict --model m.json --csv xor.csv");
    REQUIRE(original.status == 0);
    CHECK(b.run("predict --model onnx.json --csv xor.csv").output == original.output);
    CHECK(b.run("predict --model st.json --csv xor.csv").output == original.output);
    // The file records its activations; the widths can be checked with --layers.
    REQUIRE(b.run("import --safetensors m.safetensors --layers 8 --out recorded.json").status == 0);
    const auto wrong = b.run("import --safetensors m.safetensors --layers 16 --out x.json");
    CHECK(wrong.status == 2);
    CHECK(
        wrong.output.find("error: InvalidModelFile: m.safetensors: the file's hidden layers are 8 units wide, but "
                          "--layers says 16") != std::string::npos);
    CHECK_FALSE(std::filesystem::exists(b.dir / "x.json"));
    // Read once: through a pipe as well as from a file, with the activations given or recorded.
    REQUIRE(::mkfifo(b.path("pipe.safetensors").c_str(), 0600) == 0);
    const auto piped = brain::test::run_process(
        "cat m.safetensors > pipe.safetensors & " + quoted(std::string(BRAIN_TEST_BIN_DIR) + "/brain") +
            " import --safetensors pipe.safetensors --activation tanh --output-activation sigmoid --out piped.json",
        b.dir.path.string());
    INFO(piped.output);
    REQUIRE(piped.status == 0);
    CHECK(piped.output.find("imported 2 -> 8 tanh -> 1 sigmoid") != std::string::npos);
}

TEST_CASE("brain import refuses what it cannot represent in one line, and writes nothing", "[cli]") {
    const Brain b;
    const auto conv = b.run("import --onnx " + fixture("bad_conv.onnx") + " --out m.json");
    CHECK(conv.status == 2);
    CHECK(conv.output.find("error: InvalidModelFile: ") == 0);
    CHECK(conv.output.find("bad_conv.onnx: node 0 'conv0' (Conv): it is not a dense layer; brain imports") !=
          std::string::npos);
    CHECK(std::count(conv.output.begin(), conv.output.end(), '\n') == 1);
    CHECK(b.dir.entries() == 0);

    CHECK(b.run("import --onnx a.onnx --safetensors a.safetensors --out m.json").status == 108);
    CHECK(b.run("import --safetensors a.safetensors --model m.json --layers 3 --out m.json").status == 108);
    CHECK(b.run("import --onnx a.onnx --layers 3 --out m.json").status == 107);
    const auto none = b.run("export --model m.json");
    CHECK(none.status == 2);
    CHECK(none.output.find("brain export needs --onnx <file>, --safetensors <file> or both") != std::string::npos);

    // A file of another format given where a model file or safetensors is read is named, with how to read it.
    const auto onnx_as_model = b.run("predict --model " + fixture("gelu_operator.onnx") + " --csv none.csv");
    CHECK(onnx_as_model.status == 2);
    CHECK(onnx_as_model.output.find("(it looks like an ONNX file: import it with brain import --onnx") !=
          std::string::npos);
    const auto onnx_as_safetensors =
        b.run("import --safetensors " + fixture("gelu_operator.onnx") + " --out m.json");
    CHECK(onnx_as_safetensors.status == 2);
    CHECK(onnx_as_safetensors.output.find("(it looks like an ONNX file") != std::string::npos);
    brain::test::write_bytes(b.dir / "model.pt", std::string("PK\x03\x04", 4) + std::string(60, 'x'));
    const auto zip = b.run("import --safetensors model.pt --out m.json");
    CHECK(zip.status == 2);
    CHECK(zip.output.find("(it is a ZIP archive, such as a PyTorch .pt") != std::string::npos);
    CHECK_FALSE(std::filesystem::exists(b.dir / "m.json"));

    // Parameters without recorded activations need them stated.
    const std::string header = R"({"0.weight":{"dtype":"F32","shape":[1,2],"data_offsets":[0,8]}})";
    std::string length;
    for (int i = 0; i < 8; ++i) length.push_back(static_cast<char>((header.size() >> (8 * i)) & 0xFF));
    brain::test::write_bytes(b.dir / "torch.safetensors", length + header + std::string(8, '\0'));
    const auto silent = b.run("import --safetensors torch.safetensors --out m.json");
    CHECK(silent.status == 2);
    CHECK(silent.output.find("does not record its activations") != std::string::npos);
    const auto stated = b.run("import --safetensors torch.safetensors --output-activation sigmoid --out m.json");
    INFO(stated.output);
    CHECK(stated.status == 0);
    CHECK(stated.output.find("imported 2 -> 1 sigmoid") != std::string::npos);
}

TEST_CASE("brain train --init continues an imported model, which then exports back", "[cli]") {
    const Brain b;
    REQUIRE(b.run("import --onnx " + fixture("torch_legacy_relu_sigmoid.onnx") + " --out imported.json").status == 0);
    // Data the imported model (5 inputs, one sigmoid output) was not trained on, with the model's own labels.
    const brain::Network net = brain::Network::load_json(b.dir / "imported.json");
    brain::Random rng(21);
    brain::Matrix x(200, 5);
    for (float& v : x.data()) v = static_cast<float>(rng.uniform(-2.0, 2.0));
    const auto classes = net.predict_classes(x);
    std::string csv = "a,b,c,d,e,y\n";
    for (std::size_t r = 0; r < x.rows(); ++r) {
        for (std::size_t c = 0; c < 5; ++c) csv += std::to_string(x(r, c)) + ",";
        csv += std::to_string(classes[r]) + "\n";
    }
    brain::test::write_bytes(b.dir / "data.csv", csv);

    const auto tuned = b.run("train --csv data.csv --target y --init imported.json --epochs 4 --lr 0.003 --out tuned.json");
    INFO(tuned.output);
    REQUIRE(tuned.status == 0);
    CHECK(tuned.output.find("continuing imported.json (0 epochs trained before)") != std::string::npos);
    CHECK(tuned.output.find("Training 5 -> 8 relu -> 1 sigmoid (binary_cross_entropy, adam lr 0.003)") !=
          std::string::npos);
    CHECK(tuned.output.find("standardized") == std::string::npos); // the model had no standardisation; none added
    const brain::Network after = brain::Network::load_json(b.dir / "tuned.json");
    CHECK(after.epochs_trained() == 4);
    CHECK(after.feature_names() == std::vector<std::string>{"a", "b", "c", "d", "e"});
    CHECK(*after.evaluate(brain::Dataset(x, [&] {
                              brain::Matrix y(200, 1);
                              for (std::size_t r = 0; r < 200; ++r) y(r, 0) = static_cast<float>(classes[r]);
                              return y;
                          }()))
               .accuracy >= 0.95f);
    REQUIRE(b.run("export --model tuned.json --onnx tuned.onnx").status == 0);
    REQUIRE(b.run("import --onnx tuned.onnx --out again.json").status == 0);
    CHECK(b.run("predict --model again.json --csv data.csv").output ==
          b.run("predict --model tuned.json --csv data.csv").output);

    CHECK(b.run("train --csv data.csv --target y --init imported.json --layers 4 --out x.json").status == 108);
    brain::test::write_bytes(b.dir / "narrow.csv", "a,b,y\n1,2,0\n3,4,1\n");
    const auto narrow = b.run("train --csv narrow.csv --target y --init imported.json --out x.json");
    CHECK(narrow.status == 2);
    CHECK(narrow.output.find("narrow.csv has 2 feature columns (a, b), but the model imported.json takes 5 inputs") !=
          std::string::npos);
    const auto renamed = b.run("train --csv narrow.csv --target y --init tuned.json --out x.json");
    CHECK(renamed.status == 2);
    CHECK_FALSE(std::filesystem::exists(b.dir / "x.json"));
}
