// The brain command under hostile and careless input: one table row per class of defect (the number is the
// defect's in docs/reliability.md, "Hostile input to the brain command"), each run as a real process in a
// temporary directory, asserting its exit status, its message and what it left on disk, and held to the bounds of
// support/hostile.hpp (the big-input rows under ulimit -v 2 GiB).
#include "support/hostile.hpp"

#include <brain/brain.hpp>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <tuple>
#include <unistd.h>
#include <vector>

namespace fs = std::filesystem;
using brain::test::ProcessResult;
using namespace brain::test::hostile;

namespace {

std::vector<Case> input_rows(const Fixture& f) {
    std::vector<Case> rows;
    // 4: one set of CSV rules for train and predict: UTF-8 only, a BOM skipped, no NUL, names non-empty and unique.
    rows.push_back({"4",
                    "a Latin-1 label is refused naming its line and column",
                    [](Fixture& fx) { fx.write("latin1.csv", "x,y\n1,tea\n2,caf\xe9\n3,caf\xe8\n"); },
                    "{brain} train --csv latin1.csv --target y --epochs 1 --out l.json",
                    2,
                    {"error: InvalidData: ", "latin1.csv:3: column 2 'y'", "not valid UTF-8", "0xE9"}});
    for (const char* command : {"{brain} train --csv latin1_header.csv --target y --epochs 1 --out l.json",
                                "{brain} predict --model m.json --csv latin1_header.csv"})
        rows.push_back(
            {"4",
             std::string("a Latin-1 header is refused alike by ") + (command[8] == 't' ? "train" : "predict"),
             [](Fixture& fx) { fx.write("latin1_header.csv", "tenure_m\xf6nths,y\n1,2\n"); },
             command,
             2,
             {"latin1_header.csv:1: column 1", "not valid UTF-8"}});
    rows.push_back({"4",
                    "a NUL byte is refused",
                    [](Fixture& fx) { fx.write("nul.csv", std::string("x,y\n1,a\0b\n2,c\n", 14)); },
                    "{brain} train --csv nul.csv --target y --epochs 1 --out n.json",
                    2,
                    {"nul.csv:2: column 2 'y'", "NUL byte"}});
    for (const char* command : {"{brain} train --csv dup.csv --target y --epochs 1 --out d.json",
                                "{brain} predict --model m.json --csv dup.csv"})
        rows.push_back(
            {"4",
             std::string("a repeated column name is refused alike by ") + (command[8] == 't' ? "train" : "predict"),
             [](Fixture& fx) { fx.write("dup.csv", "x,x,y\n1,2,3\n"); },
             command,
             2,
             {"dup.csv:1: the column name 'x' appears twice (columns 1 and 2)"}});
    rows.push_back({"4",
                    "an empty column name is refused",
                    [](Fixture& fx) { fx.write("empty_name.csv", "x,,y\n1,2,3\n"); },
                    "{brain} predict --model rm.json --csv empty_name.csv",
                    2,
                    {"header column 2 has no name"}});
    rows.push_back({"4",
                    "a UTF-8 BOM is skipped by train and predict, and the model stores the names as read",
                    [](Fixture& fx) { fx.write("bom.csv", "\xEF\xBB\xBF" + fx.read("c.csv")); },
                    "{brain} train --csv bom.csv --target churned --layers 4 --epochs 1 --out bom.json && "
                    "{brain} predict --model bom.json --csv bom.csv --compare churned",
                    0,
                    {"accuracy against 'churned'"},
                    [](Fixture& fx, const ProcessResult&) {
                        const auto model = brain::Network::load_json(fx / "bom.json");
                        CHECK(model.feature_names().front() == "tenure_months");
                        CHECK(model.class_labels() == std::vector<std::string>{"no", "yes"});
                    }});

    // 5: a label column of 30,000 distinct values.
    const auto many_labels = [](Fixture& fx) {
        std::string text = "x,y\n";
        for (int i = 0; i < 30000; ++i) text += std::to_string(i % 7) + ".5,label" + std::to_string(i) + "\n";
        fx.write("labels.csv", text);
    };
    rows.push_back({"5",
                    "30,000 distinct labels stop at the class limit at once",
                    many_labels,
                    "{brain} train --csv labels.csv --target y --epochs 1 --out l.json",
                    2,
                    {"error: InvalidData: ", "more than 1000 distinct class labels", "--max-classes"}});
    Case classes{
        "5",         "30,000 classes allowed: the data set is sized before it is allocated",
        many_labels, "{brain} train --csv labels.csv --target y --epochs 1 --max-classes 40000 --out l.json",
        2,           {"error: AllocationFailed: ", "host memory", "ulimit -v"}};
    classes.memory_limited = true;
    rows.push_back(classes);

    // 6: estimate from the shape alone.
    for (const std::uint64_t width : {30000ull, 100000ull}) {
        const std::vector<brain::LayerSpec> shape{{width, width, brain::Activation::Relu},
                                                  {width, 1, brain::Activation::Linear}};
        const auto mib = brain::estimate_tensor_memory(shape, 256).mib();
        rows.push_back({"6",
                        "estimate of a " + std::to_string(width) + "-wide network, without building it",
                        nullptr,
                        "{brain} estimate --inputs " + std::to_string(width) + " --layers " + std::to_string(width),
                        0,
                        {std::to_string(mib) + " MiB of tensors for batch 256"},
                        [](Fixture&, const ProcessResult& r) {
                            CHECK(r.seconds < 5.0);
                            CHECK(r.max_rss_kib < 200 * 1024);
                        }});
    }

    // 7: the network is sized before it is allocated, on the CPU too.
    Case wide{"7",
              "a 100,000,000-unit layer is refused before anything is allocated",
              nullptr,
              "{brain} train --csv c.csv --target churned --layers 100000000 --epochs 1 --out w.json",
              2,
              {"error: AllocationFailed: ", "training 8 -> 100000000 relu -> 2 softmax on cpu needs",
               "limited by the address-space limit, ulimit -v"}};
    wide.memory_limited = true;
    rows.push_back(wide);
    rows.push_back(
        {"7",
         "a network no machine can hold is refused on any machine",
         nullptr,
         "{brain} train --csv c.csv --target churned --layers 2000000000,2000000000 --epochs 1 --out w.json",
         2,
         {"error: AllocationFailed: ", "more than 16 EiB of host memory"}});

    // 8: a 100 MB cell is never echoed whole.
    const auto big_cell = [](Fixture& fx) {
        std::ofstream out(fx / "bigcell.csv", std::ios::binary);
        out << "x,y\n1,";
        const std::string block(1 << 20, 'a');
        for (int i = 0; i < 100; ++i) out << block;
        out << "\n2,3\n";
    };
    const auto short_output = [](Fixture&, const ProcessResult& r) { CHECK(r.output.size() < 1000); };
    rows.push_back({"8",
                    "a 100 MB cell stops at the cell limit, echoed in 80 bytes",
                    big_cell,
                    "{brain} train --csv bigcell.csv --target y --epochs 1 --out b.json",
                    2,
                    {"bigcell.csv:2: column 2 'y'", "longer than the limit of 65536 bytes", "--max-cell-bytes"},
                    short_output});
    rows.push_back({"8",
                    "a 100 MB cell under a raised limit is echoed in 80 bytes",
                    big_cell,
                    "{brain} train --csv bigcell.csv --target x --max-cell-bytes 200000000 --epochs 1 --out b.json",
                    2,
                    {"bigcell.csv:2: column 2 'y' (a feature): expected a number", "... (104857600 bytes)"},
                    short_output});

    // 9: input size is bounded before and while reading.
    rows.push_back({"9",
                    "/dev/zero as --csv is refused at once",
                    nullptr,
                    "{brain} train --csv /dev/zero --target y --out z.json",
                    2,
                    {"error: IoError: ", "'/dev/zero': it is a character device"}});
    rows.push_back({"9",
                    "/dev/zero as --model is refused at once",
                    nullptr,
                    "{brain} predict --model /dev/zero --csv c.csv",
                    2,
                    {"error: IoError: ", "'/dev/zero': it is a character device"}});
    rows.push_back(
        {"9",
         "a pipe longer than the input limit stops at the limit",
         nullptr,
         "yes y,z | head -c 3145728 | {brain} train --csv /dev/stdin --target y --max-input-mib 1 --out z.json",
         2,
         {"error: InvalidData: ", "goes on past the limit of 1.0 MiB", "--max-input-mib"}});
    const auto sparse = [](Fixture& fx) {
        write_file(fx / "huge.csv", "");
        REQUIRE(::truncate((fx / "huge.csv").c_str(), 5ll << 30) == 0);
    };
    rows.push_back({"9",
                    "a 5 GiB CSV is refused before it is read",
                    sparse,
                    "{brain} train --csv huge.csv --target y --out z.json",
                    2,
                    {"error: InvalidData: ", "'huge.csv' is 5.0 GiB, more than the limit of 1.0 GiB"}});
    rows.push_back({"9",
                    "a 5 GiB model file is refused before it is read",
                    sparse,
                    "{brain} predict --model huge.csv --csv c.csv",
                    2,
                    {"error: InvalidModelFile: ", "is 5.0 GiB, more than the limit of 1.0 GiB"}});

    // 11: estimate never overflows.
    rows.push_back({"11",
                    "estimate with the largest --batch says it exceeds 64-bit sizes",
                    nullptr,
                    "{brain} estimate --inputs 10 --batch 18446744073709551615",
                    0,
                    {"more than", "16 EiB"},
                    [](Fixture&, const ProcessResult& r) { CHECK_FALSE(contains(r.output, "\n0 MiB")); }});
    for (const char* budget : {"1", "64", "18446744073709551615"})
        rows.push_back({"11",
                        std::string("estimate's budget lines agree (budget ") + budget + " MiB)",
                        nullptr,
                        std::string("{brain} estimate --inputs 16 --layers 256,256 --batch 512 --budget ") + budget,
                        0,
                        {"MiB of tensors for batch 512"},
                        [](Fixture&, const ProcessResult& r) {
                            const auto at = r.output.find("largest batch within");
                            const bool fits = contains(r.output, "batch 512 fits");
                            if (at == std::string::npos) {
                                CHECK(contains(r.output, "no batch size fits"));
                                CHECK_FALSE(fits);
                                return;
                            }
                            const auto largest = std::stoull(r.output.substr(r.output.find(": ", at) + 2));
                            CHECK(fits == (largest >= 512));
                        }});

    // 12: predictions are never NaN silently; a damaged standardisation is refused at load.
    const auto extreme = [](Fixture& fx) {
        fx.write("extreme.csv", "x0,x1,x2,x3,x4,x5,y\n1,1,1,1,1,1,1\n3e38,-3e38,3e38,-3e38,3e38,-3e38,1\n");
    };
    rows.push_back({"12",
                    "a row whose prediction overflows is an error naming its line",
                    extreme,
                    "{brain} predict --model rm.json --csv extreme.csv --out e.csv",
                    2,
                    {"error: NumericalError: ", "extreme.csv:3:", "not finite"},
                    [](Fixture& fx, const ProcessResult&) { CHECK_FALSE(fs::exists(fx / "e.csv")); }});
    rows.push_back({"12",
                    "the same under --compare",
                    extreme,
                    "{brain} predict --model rm.json --csv extreme.csv --compare y",
                    2,
                    {"error: NumericalError: ", "extreme.csv:3:"}});
    rows.push_back({"12",
                    "the same through a backend's predictor",
                    extreme,
                    "{brain} predict --model rm.json --csv extreme.csv --backend cpu --out e.csv",
                    2,
                    {"error: NumericalError: ", "extreme.csv:3:", "not finite"},
                    [](Fixture& fx, const ProcessResult&) { CHECK_FALSE(fs::exists(fx / "e.csv")); }});
    rows.push_back({"12",
                    "a model whose standard deviation is 1e-45 is refused at load",
                    [](Fixture& fx) {
                        auto doc = nlohmann::json::parse(fx.read("rm.json"));
                        doc["standardization"]["stddev"][0] = 1e-45;
                        fx.write("subnormal.json", doc.dump());
                    },
                    "{brain} predict --model subnormal.json --csv r.csv",
                    2,
                    {"error: InvalidModelFile: ", "subnormal.json: /standardization/stddev/0", "normal float32"}});

    // 13: --budget is honoured by the CPU backend.
    rows.push_back(
        {"13",
         "a CPU session above --budget fails before it allocates",
         nullptr,
         "{brain} train --csv c.csv --target churned --layers 512,512 --epochs 1 --backend cpu --budget 1 "
         "--out bud.json",
         2,
         {"error: BudgetExceeded: ", "memory budget is 1048576 bytes"}});
    rows.push_back({"13",
                    "a CPU session within --budget runs under it",
                    nullptr,
                    "{brain} train --csv c.csv --target churned --layers 8 --epochs 1 --backend cpu --budget 64 "
                    "--out bud.json",
                    0,
                    {"on cpu (budget 64 MiB)", "budget_bytes: 67_108_864"}});

    // 14: BRAIN_LOG_LEVEL in any case; an unknown level is reported once.
    rows.push_back({"14",
                    "BRAIN_LOG_LEVEL=DEBUG turns debug logging on",
                    nullptr,
                    "BRAIN_LOG_LEVEL=DEBUG {brain} plugins",
                    0,
                    {"[brain debug] loaded cpu"}});
    rows.push_back(
        {"14",
         "an unknown BRAIN_LOG_LEVEL is one warning naming the accepted levels",
         nullptr,
         "BRAIN_LOG_LEVEL=loud {brain} plugins",
         0,
         {"[brain warning] BRAIN_LOG_LEVEL='loud' is not a log level; accepted (any case): trace, debug, "
          "info, warning, error, critical, off"},
         [](Fixture&, const ProcessResult& r) { CHECK(count(r.output, "BRAIN_LOG_LEVEL") == 1); }});

    // 15: brain plugins and train pick the same file, and say which.
    const std::string real_cpu = std::string(BRAIN_TEST_PLUGIN_DIR) + "/libbrain_cpu.so";
    const std::string dirs =
        "BRAIN_PLUGIN_PATH_ONLY=1 BRAIN_PLUGIN_PATH=" + (f / "pa").string() + ":" + (f / "pb").string() + " ";
    const auto shadowing = [real_cpu](std::string first_kind) {
        return [real_cpu, first_kind](Fixture& fx) {
            fs::remove_all(fx / "pa");
            fs::remove_all(fx / "pb");
            fs::create_directories(fx / "pa");
            fs::create_directories(fx / "pb");
            if (first_kind == "directory") fs::create_directory(fx / "pa" / "libbrain_cpu.so");
            if (first_kind == "loop") fs::create_symlink("libbrain_cpu.so", fx / "pa" / "libbrain_cpu.so");
            if (first_kind == "text") fx.write("pa/libbrain_cpu.so", "not a shared object\n");
            fs::create_symlink(real_cpu, fx / "pb" / "libbrain_cpu.so");
        };
    };
    for (const char* kind : {"directory", "loop"}) {
        rows.push_back({"15",
                        std::string("plugins shows a skipped ") + kind + " and the copy it uses",
                        shadowing(kind),
                        dirs + "{brain} plugins",
                        0,
                        {"cpu  [skipped]", (f / "pa" / "libbrain_cpu.so").string(),
                         "cpu  [ok]  (used for backend cpu)", (f / "pb" / "libbrain_cpu.so").string()}});
        rows.push_back({"15",
                        std::string("train uses the same copy past a ") + kind + " and says so",
                        shadowing(kind),
                        dirs + "{brain} train --csv c.csv --target churned --epochs 1 --out pl.json",
                        0,
                        {"plugin: " + (f / "pb" / "libbrain_cpu.so").string(), "skipped"}});
    }
    rows.push_back(
        {"15",
         "a broken first copy is the one used: plugins marks the later one not used",
         shadowing("text"),
         dirs + "{brain} plugins",
         0,
         {"cpu  [failed]  (used for backend cpu)", "cpu  [not used]", "comes first on the search path"}});
    rows.push_back({"15",
                    "a broken first copy fails train, naming the later one it did not try",
                    shadowing("text"),
                    dirs + "{brain} train --csv c.csv --target churned --epochs 1 --out pl.json",
                    2,
                    {"error: PluginLoadFailed: ", (f / "pa" / "libbrain_cpu.so").string(),
                     (f / "pb" / "libbrain_cpu.so").string() + " comes later and was not"}});

    // 16: a file without data rows.
    const auto header_only = [](Fixture& fx) {
        fx.write("hdr.csv", fx.read("c.csv").substr(0, fx.read("c.csv").find('\n') + 1));
    };
    rows.push_back({"16",
                    "predict --compare on a header-only CSV is an error",
                    header_only,
                    "{brain} predict --model m.json --csv hdr.csv --compare churned",
                    2,
                    {"error: InvalidData: ", "hdr.csv:1: the file has a header but no data rows"}});

    // 17: a directory as input says so.
    rows.push_back({"17",
                    "a directory as --csv is named a directory",
                    [](Fixture& fx) { fs::create_directories(fx / "adir"); },
                    "{brain} train --csv adir --target y --out z.json",
                    2,
                    {"error: IoError: ", "'adir': it is a directory"}});
    rows.push_back({"17",
                    "a directory as --model is named a directory",
                    [](Fixture& fx) { fs::create_directories(fx / "adir"); },
                    "{brain} predict --model adir --csv c.csv",
                    2,
                    {"error: IoError: ", "'adir': it is a directory"}});

    // 19: no standard-library text, even where the library throws its own exceptions (checked on every row).
    rows.push_back(
        {"19",
         "a run from a deleted working directory",
         nullptr,
         "mkdir gone && cd gone && rmdir ../gone && exec {brain} train --csv c.csv --target y --out m.json",
         2,
         {"error: IoError: "}});
    rows.push_back({"19",
                    "generate of 10^13 rows is bounded by the file-size limit, not memory",
                    nullptr,
                    "ulimit -f 64 && exec {brain} generate --rows 10000000000000 --out huge_gen.csv",
                    2,
                    {"error: IoError: ", "file-size limit"}});

    // 20: a one-class label column.
    rows.push_back({"20",
                    "a label column with one class says so",
                    [](Fixture& fx) { fx.write("one.csv", "x,y\n1,a\n2,a\n3,a\n"); },
                    "{brain} train --csv one.csv --target y --epochs 1 --out o.json",
                    2,
                    {"error: InvalidData: ", "target column 2 'y' holds only one class, 'a', in its 3 rows"}});

    // 21: every documented exit status.
    rows.push_back({"21",
                    "exit 0, and --help documents the statuses",
                    nullptr,
                    "{brain} --help",
                    0,
                    {"105 a value that is not valid", "106 a required option missing",
                     "110 an option given the wrong "
                     "number of values"}});
    rows.push_back({"21",
                    "exit 1: doctor's check failed (a CPU budget beyond the host)",
                    nullptr,
                    "{brain} doctor --backend cpu --budget 536870912",
                    1,
                    {"alloc:   false", "at least one check failed"}});
    rows.push_back({"21",
                    "exit 2: an error",
                    nullptr,
                    "{brain} train --csv nosuch.csv --target y --out z.json",
                    2,
                    {"error: IoError: cannot open the CSV file 'nosuch.csv': No such file or directory"}});
    for (const auto& [status, command] : std::vector<std::pair<int, std::string>>{
             {105, "{brain} train --csv c.csv --target churned --epochs abc --out z.json"},
             {105, "{brain} train --csv c.csv --target churned --epochs -1 --out z.json"},
             {105, "{brain} train --csv c.csv --target churned --lr 0 --out z.json"},
             {105, "{brain} train --csv c.csv --target churned --lr nan --out z.json"},
             {105, "{brain} estimate --inputs 3 --batch 99999999999999999999999"},
             {106, "{brain} train --csv c.csv --out z.json"},
             {106, "{brain}"},
             {107, "{brain} estimate --layers 3"},
             {108, "{brain} estimate --model m.json --inputs 3"},
             {109, "{brain} plugins --bogus"},
             {109, "{brain} plugins extra"},
             {110, "{brain} train --csv"},
         })
        rows.push_back({"21",
                        "exit " + std::to_string(status) + ": brain" + command.substr(7),
                        nullptr,
                        command,
                        status,
                        {"Run with --help for more information."}});
    // Each usage error names the option or word at fault in the style of the others, never CLI11's own
    // "Could not convert" or "A subcommand is required", and 0 is no count of epochs, rows or MiB.
    for (const auto& [status, command, says] : std::vector<std::tuple<int, std::string, std::string>>{
             {109, "{brain} trian --csv c.csv",
              "unknown command 'trian' (did you mean 'train'?); the commands are: "},
             {105, "{brain} train --csv c.csv --target churned --rank abc --out z.json",
              "--rank: expected a whole number, found 'abc'"},
             {105, "{brain} train --csv c.csv --target churned --validation abc --out z.json",
              "--validation: expected a fraction from 0 up to (not including) 1, found 'abc'"},
             {105, "{brain} train --csv c.csv --target churned --validation 1 --out z.json",
              "--validation: expected a fraction from 0 up to (not including) 1, found '1'"},
             {105, "{brain} train --csv c.csv --target churned --epochs 0 --out z.json",
              "--epochs: expected a whole number from 1 to 4294967295, found '0'"},
             {105, "{brain} train --csv c.csv --target churned --budget 0 --out z.json",
              "--budget: expected a whole number from 1 to"},
             {105, "{brain} generate --rows 0 --out g0.csv", "--rows: expected a whole number from 1 to"},
             {105, "{brain} train --csv c.csv --target churned --max-input-mib 16777217 --out z.json",
              "--max-input-mib: expected a whole number from 1 to 16777216, found '16777217'"},
             {105, "{brain} train --csv c.csv --target churned --layers 4,,4 --out z.json",
              "--layers: expected comma-separated values, none of them empty, found '4,,4'"},
             {105, "{brain} estimate --inputs 3 --layers=8,",
              "--layers: expected comma-separated values, none of them empty, found '8,'"},
             {105, "{brain} train --csv c.csv --target , --out z.json",
              "--target: expected comma-separated values, none of them empty, found ','"},
         })
        rows.push_back({"21",
                        "exit " + std::to_string(status) + " naming what is wrong: brain" + command.substr(7),
                        nullptr,
                        command,
                        status,
                        {says, "Run with --help for more information."},
                        [](Fixture& fx, const ProcessResult& r) {
                            CHECK_FALSE(contains(r.output, "Could not convert"));
                            CHECK_FALSE(contains(r.output, " AND "));
                            CHECK_FALSE(fs::exists(fx / "z.json"));
                            CHECK_FALSE(fs::exists(fx / "g0.csv"));
                        }});
    return rows;
}

} // namespace

TEST_CASE("hostile input to the brain command: one row per class of defect, each bounded", "[cli]") {
    Fixture f;
    run_rows(input_rows(f), f, "hostile input");
}
