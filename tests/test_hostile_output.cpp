// The brain command's output paths under hostile and careless use: one table row per class of defect (the number
// is the defect's in docs/reliability.md, "Hostile input to the brain command"), each run as a real process and
// held to the bounds of support/hostile.hpp. Targets that must survive a refused write are made in the test's
// directory (a FIFO, a bound socket, a symlink, a character device made with mknod), never a real device.
#include "support/hostile.hpp"

#include <brain/brain.hpp>
#include <filesystem>
#include <string>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/un.h>
#include <vector>

namespace fs = std::filesystem;
using brain::test::ProcessResult;
using namespace brain::test::hostile;

namespace {

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

std::vector<Case> output_rows(const Fixture& f) {
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

    // 30: standard output that fails before the output file is committed leaves the previous file; a closed pipe
    // is an error with a message, not a silent SIGPIPE.
    const std::vector<std::pair<std::string, std::string>> writers = {
        {"train", "{brain} train --csv c.csv --target churned --layers 4 --epochs 1 --out t30.json"},
        {"predict", "{brain} predict --model m.json --csv c.csv --out t30.csv"},
        {"generate", "{brain} generate --rows 10 --out t30.csv"},
        {"convert", "{brain} convert c.csv --target churned t30.npz"},
        {"export", "{brain} export --model m.json --onnx t30.onnx"},
        {"import", "{brain} import --onnx m30.onnx --out t30.json"},
    };
    for (const auto& [writer, command] : writers) {
        const std::string target = command.substr(command.rfind("t30."));
        rows.push_back({"30",
                        writer + " into a full standard output keeps the previous " + target,
                        [target](Fixture& fx) {
                            fx.write(target, "previous\n");
                            if (!fs::exists(fx / "m30.onnx"))
                                REQUIRE(brain::test::run_process(
                                            fx.brain + " export --model m.json --onnx m30.onnx", fx.dir().string())
                                            .status == 0);
                        },
                        command + " > /dev/full",
                        2,
                        {"error: IoError: writing to standard output failed", "left as"},
                        [target](Fixture& fx, const ProcessResult&) { CHECK(fx.read(target) == "previous\n"); }});
    }
    // Its output is larger than a pipe holds, so that it is still writing when the reader has gone.
    rows.push_back({"30",
                    "predict into a pipe closed early is an error, not a silent SIGPIPE",
                    nullptr,
                    "{brain} generate --kind churn --rows 20000 --out big30.csv > /dev/null && "
                    "({brain} predict --model m.json --csv big30.csv; echo $? > status30) | head -c 1 > /dev/null; "
                    "exit $(cat status30)",
                    2,
                    {"error: IoError: writing to standard output failed"}});

    // 32: the checkpoint a run resumes from is an input: a checkpoint the run writes may not replace it.
    rows.push_back({"32",
                    "train --resume writing a checkpoint over the one it resumes from is refused",
                    [](Fixture& fx) {
                        REQUIRE(brain::test::run_process(fx.brain +
                                                             " train --csv c.csv --target churned --layers 4 "
                                                             "--epochs 2 --checkpoint-every 1 --checkpoint-dir "
                                                             "ck32 --out m32.json",
                                                         fx.dir().string())
                                    .status == 0);
                        fs::create_directories(fx / "ck32x");
                        fs::copy_file(fx / "ck32/epoch-1.json", fx / "ck32x/epoch-2.json",
                                      fs::copy_options::overwrite_existing);
                    },
                    "{brain} train --resume ck32x/epoch-2.json --checkpoint-dir ck32x --epochs 2 --out e32.json",
                    2,
                    {"error: IoError: cannot write 'ck32x/epoch-2.json': it is the same file as the input"},
                    [](Fixture& fx, const ProcessResult&) {
                        CHECK(fx.read("ck32x/epoch-2.json") == fx.read("ck32/epoch-1.json"));
                        CHECK_FALSE(fs::exists(fx / "e32.json"));
                    }});

    // 24: an empty --out (an unset variable) is not "no file".
    rows.push_back({"24",
                    "predict --out '' is refused, not printed to standard output",
                    nullptr,
                    "{brain} predict --model m.json --csv c.csv --out ''",
                    105,
                    {"--out: expected a file name, found an empty string"},
                    [](Fixture&, const ProcessResult& r) { CHECK_FALSE(contains(r.output, "label")); }});

    return rows;
}

} // namespace

TEST_CASE("hostile output paths given to the brain command: one row per class of defect, each bounded", "[cli]") {
    Fixture f;
    run_rows(output_rows(f), f, "hostile output paths");
}
