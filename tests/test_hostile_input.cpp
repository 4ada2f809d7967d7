// The brain command under hostile and careless input: one table row per class of defect (the number is the
// defect's in docs/reliability.md, "Hostile input to the brain command"). Every row runs the real command in a
// temporary directory and asserts its exit status, its message and what it left on disk; every row is also held
// to the suite's bounds: under 30 s, under 2 GiB of memory, no standard-library text, no temporary file left. The
// big-input rows run under an address-space limit of 2 GiB (ulimit -v), except in an AddressSanitizer build.
#include "support/catch.hpp"
#include "support/process.hpp"

#include <algorithm>
#include <atomic>
#include <brain/brain.hpp>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iostream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/un.h>
#include <vector>

namespace fs = std::filesystem;
using brain::test::ProcessResult;

namespace {

constexpr std::uint64_t k_memory_bound = std::uint64_t{2} << 30; // bytes, every row
constexpr double k_time_bound = 30.0;                            // seconds, every row

// Texts of the standard library (or of its exceptions) that must never reach a user.
const char* const k_library_texts[] = {"std::",     "basic_string",         "_M_create",        "filesystem error",
                                       "bad_alloc", "bad_array_new_length", "terminate called", "what():"};

bool contains(const std::string& haystack, const std::string& needle) {
    return haystack.find(needle) != std::string::npos;
}

std::size_t count(const std::string& haystack, const std::string& needle) {
    std::size_t n = 0;
    for (auto at = haystack.find(needle); at != std::string::npos; at = haystack.find(needle, at + 1)) ++n;
    return n;
}

std::string read_file(const fs::path& path) {
    std::ifstream in(path, std::ios::binary);
    std::ostringstream out;
    out << in.rdbuf();
    return out.str();
}

void write_file(const fs::path& path, const std::string& text) {
    std::ofstream out(path, std::ios::binary | std::ios::trunc);
    out << text;
}

// The directory every row runs in, with a small data set and a model of each kind.
class Fixture {
public:
    Fixture() {
        static std::atomic<int> counter{0};
        m_dir = fs::temp_directory_path() /
                ("brain_hostile_" + std::to_string(::getpid()) + "_" + std::to_string(counter++));
        fs::remove_all(m_dir);
        fs::create_directories(m_dir);
        brain = brain::test::shell_quote(std::string(BRAIN_TEST_BIN_DIR) + "/brain");
        const auto setup = [this](const std::string& command) {
            const auto r = brain::test::run_process(command, m_dir.string());
            INFO(command << "\n" << r.output);
            REQUIRE(r.status == 0);
        };
        setup(brain + " generate --kind churn --rows 300 --seed 1 --out c.csv");
        setup(brain + " generate --kind regression --rows 200 --seed 2 --out r.csv");
        setup(brain + " train --csv c.csv --target churned --layers 8 --epochs 2 --out m.json");
        setup(brain + " train --csv r.csv --target y --layers 8 --epochs 2 --out rm.json");
        // A character device of our own (/dev/null's numbers) where we may: replacing it would harm nothing.
        // Without the right to make one, /dev/null itself only where this process cannot replace it anyway.
        if (::mknod((m_dir / "device").c_str(), S_IFCHR | 0666, makedev(1, 3)) == 0)
            device = "device";
        else if (::geteuid() != 0 && ::access("/dev", W_OK) != 0)
            device = "/dev/null";
    }
    ~Fixture() {
        std::error_code ec;
        fs::remove_all(m_dir, ec);
    }
    Fixture(const Fixture&) = delete;
    Fixture& operator=(const Fixture&) = delete;

    fs::path operator/(const std::string& name) const { return m_dir / name; }
    const fs::path& dir() const { return m_dir; }
    void write(const std::string& name, const std::string& text) const { write_file(m_dir / name, text); }
    std::string read(const std::string& name) const { return read_file(m_dir / name); }

    // Temporary files a write left behind (".<name>.tmp-XXXXXX"), anywhere under the directory.
    std::vector<std::string> leftovers() const {
        std::vector<std::string> found;
        std::error_code ec;
        for (auto it = fs::recursive_directory_iterator(m_dir, ec); !ec && it != fs::recursive_directory_iterator();
             it.increment(ec))
            if (contains(it->path().filename().string(), ".tmp-")) found.push_back(it->path().string());
        return found;
    }

    std::string brain;  // the brain command, quoted
    std::string device; // a character device safe to aim at, or empty

private:
    fs::path m_dir;
};

struct Case {
    using Setup = std::function<void(Fixture&)>;
    using After = std::function<void(Fixture&, const ProcessResult&)>;
    Case() = default;
    Case(std::string defect_, std::string name_, Setup setup_, std::string command_, int status_,
         std::vector<std::string> says_, After after_ = {})
        : defect(std::move(defect_)), name(std::move(name_)), setup(std::move(setup_)),
          command(std::move(command_)), status(status_), says(std::move(says_)), after(std::move(after_)) {}

    std::string defect; // the defect's number in docs/reliability.md
    std::string name;
    Setup setup;         // optional
    std::string command; // /bin/sh, in the fixture's directory; {brain} is the command
    int status = 2;
    std::vector<std::string> says; // fragments the output must hold
    After after;                   // optional checks of what is on disk
    bool memory_limited = false;   // run under ulimit -v 2 GiB
};

std::string expand(std::string command, const Fixture& f) {
    for (auto at = command.find("{brain}"); at != std::string::npos; at = command.find("{brain}"))
        command.replace(at, 7, f.brain);
    return command;
}

// A Unix socket bound at `path` (it stays there after the descriptor is closed).
bool make_socket(const fs::path& path) {
    const int fd = ::socket(AF_UNIX, SOCK_STREAM, 0);
    if (fd < 0) return false;
    sockaddr_un address{};
    address.sun_family = AF_UNIX;
    const std::string p = path.string();
    if (p.size() >= sizeof address.sun_path) {
        ::close(fd);
        return false;
    }
    std::copy(p.begin(), p.end(), address.sun_path);
    const bool ok = ::bind(fd, reinterpret_cast<const sockaddr*>(&address), sizeof address) == 0;
    ::close(fd);
    return ok;
}

struct stat lstat_of(const fs::path& path) {
    struct stat st {};
    ::lstat(path.c_str(), &st);
    return st;
}

// The rows for one kind of existing thing at --out, for every command that writes a file.
void add_output_kind_rows(std::vector<Case>& rows, const Fixture& f, const std::string& kind) {
    const std::vector<std::pair<std::string, std::string>> writers = {
        {"train", "{brain} train --csv c.csv --target churned --layers 4 --epochs 1 --out "},
        {"predict", "{brain} predict --model m.json --csv c.csv --out "},
        {"generate", "{brain} generate --rows 10 --out "},
    };
    for (const auto& [writer, command] : writers) {
        const std::string target = kind == "device" ? f.device : "target_" + kind + "_" + writer;
        Case c;
        c.defect = kind == "directory" ? "1, 18" : "1";
        c.name = writer + " --out naming a " + kind + " is refused and the " + kind + " is intact";
        c.command = command + brain::test::shell_quote(target);
        if (kind == "symbolic link") {
            c.setup = [target](Fixture& fx) {
                fx.write("victim_" + target, "precious\n");
                fs::create_symlink("victim_" + target, fx / target);
            };
            c.says = {"error: IoError: ", "it is a symbolic link"};
            c.after = [target](Fixture& fx, const ProcessResult&) {
                CHECK(fs::is_symlink(fx / target));
                CHECK(fx.read("victim_" + target) == "precious\n");
            };
        } else if (kind == "FIFO") {
            c.setup = [target](Fixture& fx) { REQUIRE(::mkfifo((fx / target).c_str(), 0644) == 0); };
            c.says = {"error: IoError: ", "it is a FIFO"};
            c.after = [target](Fixture& fx, const ProcessResult&) {
                CHECK(S_ISFIFO(lstat_of(fx / target).st_mode));
            };
        } else if (kind == "socket") {
            c.setup = [target](Fixture& fx) { REQUIRE(make_socket(fx / target)); };
            c.says = {"error: IoError: ", "it is a socket"};
            c.after = [target](Fixture& fx, const ProcessResult&) {
                CHECK(S_ISSOCK(lstat_of(fx / target).st_mode));
            };
        } else if (kind == "device") {
            c.says = {"error: IoError: ", "it is a character device"};
            c.after = [target](Fixture& fx, const ProcessResult&) {
                const fs::path path = target.front() == '/' ? fs::path(target) : fx / target;
                const auto st = lstat_of(path);
                CHECK(S_ISCHR(st.st_mode));
                CHECK(st.st_rdev == makedev(1, 3));
            };
        } else { // directory
            c.setup = [target](Fixture& fx) { fs::create_directory(fx / target); };
            c.says = {"error: IoError: ", "it is a directory"};
            c.after = [target](Fixture& fx, const ProcessResult& r) {
                CHECK(fs::is_directory(fx / target));
                CHECK(fs::is_empty(fx / target));
                CHECK_FALSE(contains(r.output, "epoch")); // found before the run, not after it
            };
        }
        rows.push_back(std::move(c));
    }
}

std::vector<Case> hostile_rows(const Fixture& f) {
    std::vector<Case> rows;
    for (const char* kind : {"symbolic link", "FIFO", "socket", "directory"}) add_output_kind_rows(rows, f, kind);
    if (!f.device.empty())
        add_output_kind_rows(rows, f, "device");
    else
        WARN("skipped the character-device rows: mknod is not permitted here, and this process could replace "
             "/dev/null, so no device is safe to aim at");

    const auto unchanged = [](std::string name) {
        return [name](Fixture& fx, const ProcessResult&) {
            // The fixture's files are the generator's output; a destroyed input would not parse.
            CHECK(fx.read(name).size() > 100);
            CHECK(fx.read(name) == fx.read("pristine_" + name));
        };
    };
    const auto keep = [](std::string name) {
        return [name](Fixture& fx) {
            fs::copy_file(fx / name, fx / ("pristine_" + name), fs::copy_options::overwrite_existing);
        };
    };

    // 2: an output that is one of the inputs, however it is spelled.
    rows.push_back({"2",
                    "train --out naming its --csv",
                    keep("c.csv"),
                    "{brain} train --csv c.csv --target churned --epochs 1 --out c.csv",
                    2,
                    {"error: IoError: ", "same file as the input 'c.csv'"},
                    unchanged("c.csv")});
    rows.push_back({"2",
                    "train --out naming its --csv by another path",
                    keep("c.csv"),
                    "{brain} train --csv c.csv --target churned --epochs 1 --out ./c.csv",
                    2,
                    {"same file as the input"},
                    unchanged("c.csv")});
    rows.push_back({"2",
                    "train --out naming a hard link to its --csv",
                    [](Fixture& fx) {
                        fs::copy_file(fx / "c.csv", fx / "pristine_c.csv", fs::copy_options::overwrite_existing);
                        fs::create_hard_link(fx / "c.csv", fx / "hard.csv");
                    },
                    "{brain} train --csv c.csv --target churned --epochs 1 --out hard.csv",
                    2,
                    {"same file as the input"},
                    unchanged("c.csv")});
    rows.push_back({"2",
                    "predict --out naming its --model",
                    keep("m.json"),
                    "{brain} predict --model m.json --csv c.csv --out m.json",
                    2,
                    {"same file as the input 'm.json'"},
                    unchanged("m.json")});
    rows.push_back({"2",
                    "predict --out naming its --csv",
                    keep("c.csv"),
                    "{brain} predict --model m.json --csv c.csv --out c.csv",
                    2,
                    {"same file as the input 'c.csv'"},
                    unchanged("c.csv")});

    // 3: every check runs before anything is written.
    rows.push_back({"3",
                    "predict --compare with a missing column writes nothing",
                    [](Fixture& fx) { fx.write("p.csv", "previous\n"); },
                    "{brain} predict --model m.json --csv c.csv --out p.csv --compare MISSING",
                    2,
                    {"error: InvalidData: ", "no column 'MISSING'"},
                    [](Fixture& fx, const ProcessResult&) { CHECK(fx.read("p.csv") == "previous\n"); }});

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
         "head -c 3145728 /dev/zero | {brain} train --csv /dev/stdin --target y --max-input-mib 1 --out z.json",
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

    // 10: a short write is an error, and leaves nothing behind.
    rows.push_back({"10",
                    "generate under ulimit -f fails with a message and no partial file",
                    nullptr,
                    "ulimit -f 16 && exec {brain} generate --rows 200000 --out g.csv",
                    2,
                    {"error: IoError: ", "cannot write 'g.csv'", "file-size limit (ulimit -f)"},
                    [](Fixture& fx, const ProcessResult&) { CHECK_FALSE(fs::exists(fx / "g.csv")); }});
    rows.push_back({"10",
                    "predict --out under ulimit -f keeps the previous file",
                    [](Fixture& fx) { fx.write("p10.csv", "previous\n"); },
                    "ulimit -f 1 && exec {brain} predict --model m.json --csv c.csv --out p10.csv",
                    2,
                    {"error: IoError: ", "file-size limit"},
                    [](Fixture& fx, const ProcessResult&) { CHECK(fx.read("p10.csv") == "previous\n"); }});
    rows.push_back({"10",
                    "standard output that cannot be written is an error",
                    nullptr,
                    "{brain} predict --model m.json --csv c.csv > /dev/full",
                    2,
                    {"error: IoError: ", "writing to standard output failed"}});

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
    return rows;
}

} // namespace

TEST_CASE("hostile input to the brain command: one row per class of defect, each bounded", "[cli]") {
    Fixture f;
    const auto rows = hostile_rows(f);
    double slowest = 0.0;
    std::uint64_t largest_kib = 0;
    std::size_t limited = 0, skipped = 0;
    for (const auto& row : rows) {
        INFO("defect " << row.defect << ": " << row.name);
        if (row.memory_limited && brain::test::k_asan) {
            WARN("skipped under AddressSanitizer (its shadow memory needs terabytes of address space, so ulimit -v "
                 "cannot apply): "
                 << row.name);
            ++skipped;
            continue;
        }
        if (row.setup) row.setup(f);
        brain::test::ProcessLimits limits;
        if (row.memory_limited) {
            limits.address_space_bytes = k_memory_bound;
            ++limited;
        }
        const std::string command = expand(row.command, f);
        const ProcessResult r = brain::test::run_process(
            "OPENBLAS_NUM_THREADS=1; export OPENBLAS_NUM_THREADS; " + command, f.dir().string(), limits);
        INFO("command: " << command << "\noutput:\n" << r.output);
        CHECK_FALSE(r.timed_out);
        CHECK(r.signal == 0);
        CHECK(r.status == row.status);
        for (const auto& fragment : row.says) {
            INFO("expected: " << fragment);
            CHECK(contains(r.output, fragment));
        }
        for (const char* text : k_library_texts) {
            INFO("standard-library text: " << text);
            CHECK_FALSE(contains(r.output, text));
        }
        if (row.status == 2) CHECK(count(r.output, "error: ") == 1);
        CHECK(r.seconds < k_time_bound);
        CHECK(r.max_rss_kib * 1024 < k_memory_bound);
        CHECK(f.leftovers().empty());
        if (row.after) row.after(f, r);
        slowest = std::max(slowest, r.seconds);
        largest_kib = std::max(largest_kib, r.max_rss_kib);
    }
    std::cout << "hostile input: " << rows.size() - skipped << " rows (" << limited << " under ulimit -v 2 GiB, "
              << skipped << " skipped), slowest " << slowest << " s, largest peak RSS " << largest_kib / 1024
              << " MiB\n";
}
