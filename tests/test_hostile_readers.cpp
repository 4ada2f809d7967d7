// The brain command's readers under hostile input (docs/reliability.md, "Hostile input to the brain command",
// classes 25 to 29): .npz archives whose headers claim more than they hold or whose names a model could not keep,
// CSV records through a pipe that never end, FIFOs opened before their writer, truncated checkpoints. Each row is
// a real process held to the bounds of support/hostile.hpp; the rows about memory also to a far smaller one.
#include "support/hostile.hpp"
#include "support/npy_bytes.hpp"

#include <algorithm>
#include <cstdint>
#include <string>
#include <sys/stat.h>
#include <tuple>
#include <vector>

using brain::test::ProcessResult;
using namespace brain::test::hostile;

namespace {

// What a refused input may cost: its bytes, not its claims. AddressSanitizer's own memory and the shadow of what is
// reserved add a few hundred MiB, so its builds are held to a looser bound.
constexpr std::uint64_t k_small_rss_kib = (brain::test::k_asan ? 512 : 64) * 1024;

// A C-order .npy array: `descr` and `shape` as NumPy writes them ("'<f4'", "(2, 3)"), then its raw bytes.
std::string npy(const std::string& descr, const std::string& shape, const std::string& data) {
    return brain::test::npy_file_bytes("{'descr': " + descr + ", 'fortran_order': False, 'shape': " + shape + ", }",
                                       data);
}

std::string floats(std::initializer_list<float> values) {
    std::string out;
    for (const float v : values) out.append(reinterpret_cast<const char*>(&v), sizeof v);
    return out;
}

// A 1-D '<U' array of ASCII texts (UTF-32 little-endian, as numpy.array(['a', 'b']) is saved).
std::string texts(const std::vector<std::string>& values) {
    std::size_t width = 1;
    for (const auto& v : values) width = std::max(width, v.size());
    std::string data;
    for (const auto& v : values)
        for (std::size_t i = 0; i < width; ++i) data += std::string{i < v.size() ? v[i] : '\0', '\0', '\0', '\0'};
    return npy("'<U" + std::to_string(width) + "'", "(" + std::to_string(values.size()) + ",)", data);
}

void put(std::string& out, std::uint64_t v, int bytes) {
    for (int b = 0; b < bytes; ++b) out += static_cast<char>((v >> (8 * b)) & 0xff);
}

std::uint32_t crc32(const std::string& bytes) {
    std::uint32_t crc = 0xffffffffu;
    for (const char c : bytes) {
        crc ^= static_cast<unsigned char>(c);
        for (int k = 0; k < 8; ++k) crc = (crc >> 1) ^ (0xedb88320u & (0u - (crc & 1u)));
    }
    return ~crc;
}

// `data` as deflate's stored blocks (BTYPE 00): a valid deflate stream that unpacks to exactly `data`.
std::string stored_deflate(const std::string& data) {
    std::string out;
    std::size_t at = 0;
    do {
        const std::size_t n = std::min<std::size_t>(data.size() - at, 65535);
        out += static_cast<char>(at + n == data.size() ? 1 : 0);
        put(out, n, 2);
        put(out, 0xffff ^ n, 2);
        out += data.substr(at, n);
        at += n;
    } while (at < data.size());
    return out;
}

// One member of a hand-made zip archive: its bytes as written, and the unpacked size its headers claim.
struct Member {
    std::string name;
    std::string data;      // unpacked (what the checksum covers when it is honest)
    std::uint64_t claimed; // the unpacked size the headers state
    bool deflated;
};

Member honest(const std::string& name, const std::string& data) {
    return {name, data, data.size(), false};
}

// A zip archive written by hand, so that its headers can lie (numpy and libzip write only honest ones).
std::string zip(const std::vector<Member>& members) {
    std::string out, directory;
    for (const Member& m : members) {
        const std::string packed = m.deflated ? stored_deflate(m.data) : m.data;
        std::string fields;
        put(fields, 20, 2);                 // version needed
        put(fields, 0, 2);                  // flags
        put(fields, m.deflated ? 8 : 0, 2); // method
        put(fields, 0, 2);                  // time
        put(fields, (1u << 5) | 1u, 2);     // date: 1980-01-01
        put(fields, crc32(m.data), 4);      // checksum of what it holds
        put(fields, packed.size(), 4);      // packed size
        put(fields, m.claimed, 4);          // unpacked size, as claimed
        put(fields, m.name.size(), 2);
        put(fields, 0, 2); // extra field
        const std::uint64_t offset = out.size();
        put(out, 0x04034b50, 4);
        out += fields + m.name + packed;
        put(directory, 0x02014b50, 4);
        put(directory, 20, 2); // made by
        directory += fields;
        put(directory, 0, 2); // comment
        put(directory, 0, 2); // disk
        put(directory, 0, 2); // internal attributes
        put(directory, 0, 4); // external attributes
        put(directory, offset, 4);
        directory += m.name;
    }
    const std::uint64_t directory_offset = out.size();
    out += directory;
    put(out, 0x06054b50, 4);
    put(out, 0, 4); // disks
    put(out, members.size(), 2);
    put(out, members.size(), 2);
    put(out, directory.size(), 4);
    put(out, directory_offset, 4);
    put(out, 0, 2); // comment
    return out;
}

const std::string k_features = npy("'<f4'", "(2, 2)", floats({1, 2, 3, 4}));

// A data set archive whose names and labels are given: two rows, two features, a class-label target of two.
std::string named_archive(const std::vector<std::string>& names, const std::vector<std::string>& labels) {
    return zip({honest("features.npy", k_features),
                honest("targets.npy", npy("'<f4'", "(2, 2)", floats({1, 0, 0, 1}))),
                honest("feature_names.npy", texts(names)), honest("class_labels.npy", texts(labels))});
}

void small_memory(Fixture&, const ProcessResult& r) {
    CHECK(r.max_rss_kib < k_small_rss_kib);
}

std::vector<Case> reader_rows() {
    std::vector<Case> rows;
    // 25: an .npz member's claimed size set memory aside before a byte of it was read.
    rows.push_back(
        {"25",
         "a .npz of under 400 bytes claiming a (1e9, 1) uint8 array is refused before anything is allocated",
         [](Fixture& fx) {
             const std::string head = npy("'|u1'", "(1000000000, 1)", "");
             const std::string archive = zip({{"features.npy", head, head.size() + 1000000000ull, true}});
             REQUIRE(archive.size() < 400);
             fx.write("bomb.npz", archive);
         },
         "{brain} train --npz bomb.npz --layers 2 --epochs 1 --out o.json",
         2,
         {"error: InvalidData: ", "bomb.npz:features.npy: the array is said to be 1000000128 bytes",
          "deflate packs at most 1032:1", "the archive is damaged or forged"},
         small_memory});
    const auto ends_early = [](const std::string& array) {
        return [array](Fixture& fx) {
            // 300 KB of real data, claiming 300 MB: within what deflate can pack, so only reading finds the lie.
            const std::string descr = array == "features" ? "'|u1'" : "'<U1'";
            const std::string head = npy(descr, array == "features" ? "(300000000, 1)" : "(75000000,)", "");
            const Member claim{array + ".npy", head + std::string(300000, '\x01'), head.size() + 300000000ull,
                               true};
            std::vector<Member> members{claim};
            if (array != "features") members.insert(members.begin(), honest("features.npy", k_features));
            members.push_back(honest("targets.npy", npy("'<f4'", "(2, 1)", floats({0, 1}))));
            fx.write("short.npz", zip(members));
        };
    };
    rows.push_back({"25",
                    "an .npz array claiming 300 MB that holds 300 KB takes memory for what it holds",
                    ends_early("features"),
                    "{brain} train --npz short.npz --layers 2 --epochs 1 --out o.json",
                    2,
                    {"error: InvalidData: ", "short.npz:features.npy", "the archive is damaged"},
                    small_memory});
    rows.push_back({"25",
                    "feature names claiming 300 MB that hold 300 KB take memory for what they hold",
                    ends_early("feature_names"),
                    "{brain} train --npz short.npz --layers 2 --epochs 1 --out o.json",
                    2,
                    {"error: InvalidData: ", "short.npz:feature_names.npy", "the archive is damaged"},
                    small_memory});

    // 26: a CSV record through a pipe was buffered whole before the cell limit was checked.
    const std::string endless = "yes 1 | tr -d '\\n' | head -c 900000000";
    const std::vector<std::string> cell_limit{"error: InvalidData: ", "/dev/stdin:2: column 1 'x0'",
                                              "longer than the limit of 65536 bytes", "--max-cell-bytes"};
    for (const char* command : {"{brain} predict --model rm.json --csv /dev/stdin --out p.csv",
                                "{brain} predict --model rm.json --csv /dev/stdin",
                                "{brain} train --csv /dev/stdin --target x5 --epochs 1 --out t.json"})
        rows.push_back({"26", std::string("a 900 MB line through a pipe stops at the cell limit: ") + (command + 8),
                        nullptr, "(printf 'x0,x1,x2,x3,x4,x5\\n'; " + endless + ") | " + command, 2, cell_limit,
                        small_memory});
    rows.push_back({"26",
                    "a 900 MB line of short cells stops once it is longer than a row can be",
                    nullptr,
                    "(printf 'x0,x1,x2,x3,x4,x5\\n1,2,3,4,5,6\\n'; yes 1, | tr -d '\\n' | head -c 900000000) | "
                    "{brain} predict --model rm.json --csv /dev/stdin --out p.csv",
                    2,
                    {"error: InvalidData: ", "/dev/stdin:3: expected 6 fields (as in the header), found at least",
                     "every row needs one value per header column"},
                    small_memory});
    rows.push_back({"26",
                    "a quoted cell of 900 MB of line breaks stops at the cell limit",
                    nullptr,
                    "(printf 'x0,x1,x2,x3,x4,x5,y\\n1,2,\"'; yes | head -c 900000000) | "
                    "{brain} train --csv /dev/stdin --target y --epochs 1 --out t.json",
                    2,
                    {"/dev/stdin:2: column 3 'x2'", "longer than the limit of 65536 bytes"},
                    small_memory});
    rows.push_back(
        {"26",
         "a 900 MB header line stops at the cell limit",
         nullptr,
         "(printf 'x0,'; " + endless + ") | {brain} train --csv /dev/stdin --target y --epochs 1 --out t.json",
         2,
         {"/dev/stdin:1: column 2: the cell is longer than the limit of 65536 bytes"},
         small_memory});

    rows.push_back(
        {"26",
         "a pipe of zeros is refused at its first NUL byte, not read to the input limit",
         nullptr,
         "head -c 900000000 /dev/zero | {brain} train --csv /dev/stdin --target y --epochs 1 --out t.json",
         2,
         {"/dev/stdin:1: column 1: the cell holds a NUL byte"},
         small_memory});

    // 27: a FIFO opened before its writer read as an empty file. The writer gives up after 10 s, so that a
    // reader which never comes cannot hang the row.
    const auto later = [](const std::string& source, const std::string& fifo) {
        return "(sleep 0.5; exec timeout 10 sh -c 'cat " + source + " > " + fifo + "') >/dev/null 2>&1 & ";
    };
    const auto make_fifo = [](const std::string& name) {
        return [name](Fixture& fx) {
            std::filesystem::remove(fx / name);
            REQUIRE(::mkfifo((fx / name).c_str(), 0600) == 0);
        };
    };
    rows.push_back({"27",
                    "a FIFO as --csv waits for its writer",
                    make_fifo("csv.fifo"),
                    later("r.csv", "csv.fifo") + "{brain} predict --model rm.json --csv csv.fifo --out pf.csv",
                    0,
                    {"wrote 200 predictions to pf.csv"},
                    [](Fixture& fx, const ProcessResult& r) {
                        CHECK(r.seconds >= 0.4);
                        CHECK(fx.read("pf.csv").size() > 200);
                    }});
    rows.push_back({"27",
                    "a FIFO as --model waits for its writer",
                    make_fifo("model.fifo"),
                    later("rm.json", "model.fifo") + "{brain} predict --model model.fifo --csv r.csv --out pm.csv",
                    0,
                    {"wrote 200 predictions to pm.csv"}});
    rows.push_back({"27",
                    "a FIFO as --npz is still refused at once, without waiting for a writer",
                    make_fifo("npz.fifo"),
                    "{brain} train --npz npz.fifo --layers 2 --epochs 1 --out o.json",
                    2,
                    {"error: IoError: ", "'npz.fifo': it is not a regular file of known size"},
                    [](Fixture&, const ProcessResult& r) { CHECK(r.seconds < 5.0); }});

    // 28: a truncated checkpoint's message carried the JSON library's exception id.
    rows.push_back({"28",
                    "a truncated checkpoint says where its JSON breaks off, in brain's words",
                    nullptr,
                    "{brain} train --csv r.csv --target y --layers 4 --epochs 1 --checkpoint-every 1 "
                    "--checkpoint-dir ck --out ck.json >/dev/null && head -c 500 ck/epoch-1.json > trunc.json && "
                    "{brain} train --resume trunc.json --out r.json",
                    2,
                    {"error: InvalidModelFile: ", "trunc.json: not a readable JSON document (parse error at line"},
                    [](Fixture&, const ProcessResult& r) { CHECK_FALSE(contains(r.output, "json.exception")); }});

    // 29: names and labels a model cannot keep were found only when the trained model was saved.
    const std::vector<std::tuple<std::string, std::vector<std::string>, std::vector<std::string>, std::string>>
        bad_names{
            {"a repeated feature name", {"a", "a"}, {"p", "q"}, "feature_names.npy: entry 1 ('a') repeats entry 0"},
            {"an empty feature name", {"", "b"}, {"p", "q"}, "feature_names.npy: entry 0 is empty"},
            {"a repeated class label", {"a", "b"}, {"p", "p"}, "class_labels.npy: entry 1 ('p') repeats entry 0"},
            {"an empty class label", {"a", "b"}, {"", "q"}, "class_labels.npy: entry 0 is empty"},
        };
    for (const auto& [what, names, labels, says] : bad_names)
        rows.push_back(
            {"29",
             what + " in an .npz is refused when it is read, before training",
             [names = names, labels = labels](Fixture& fx) { fx.write("names.npz", named_archive(names, labels)); },
             "{brain} train --npz names.npz --layers 2 --epochs 1 --out n.json",
             2,
             {"error: InvalidData: ", "names.npz:" + says, "must be non-empty and unique"},
             [](Fixture&, const ProcessResult& r) { CHECK_FALSE(contains(r.output, "epoch")); }});
    rows.push_back({"29",
                    "the same archive with good names trains",
                    [](Fixture& fx) {
                        fx.write("names.npz", named_archive({"a", "b"}, {"p", "q"}));
                    },
                    "{brain} train --npz names.npz --layers 2 --epochs 1 --out n.json",
                    0,
                    {"saved model to n.json"}});
    return rows;
}

} // namespace

TEST_CASE("hostile input to the brain command's readers: lying archives, endless records, FIFOs", "[cli]") {
    Fixture f;
    run_rows(reader_rows(), f, "hostile readers");
}
