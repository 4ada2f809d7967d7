// brain train's training-library flags, run as a user runs them: classes from numbers (--classes), the
// learning-rate schedule and its progress column, early stopping's last line, resumable checkpoints continued in a
// fresh process bit for bit, brain evaluate's table and JSON, and the digits data set against scikit-learn.
#include "support/catch.hpp"
#include "support/cli.hpp"
#include "support/npz.hpp"
#include "support/numeric.hpp"
#include "support/process.hpp"
#include "support/tempdir.hpp"

#include <brain/brain.hpp>
#include <cmath>
#include <fstream>
#include <initializer_list>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>
#include <string>

namespace fs = std::filesystem;
using brain::test::bin;
using brain::test::contains;
using brain::test::shell_quote;
using brain::test::succeeded;
using brain::test::TempDir;

namespace {

brain::test::ProcessResult run(const std::string& command, int timeout = 120) {
    return brain::test::run_process(command, "", brain::test::ProcessLimits{0, timeout});
}

std::vector<std::string> lines(const std::string& text) {
    std::vector<std::string> out;
    std::istringstream in(text);
    for (std::string line; std::getline(in, line);) out.push_back(line);
    return out;
}

// Three blobs in four features, labelled with the integers 3, 7 and 11 (not 0..K-1, and not in text order).
void write_blobs(const fs::path& path, std::size_t rows, std::uint64_t seed) {
    brain::Random rng(seed);
    std::ofstream out(path);
    out << "a,b,c,d,kind\n";
    const int labels[3] = {3, 7, 11};
    for (std::size_t r = 0; r < rows; ++r) {
        const std::size_t k = r % 3;
        for (int c = 0; c < 4; ++c)
            out << (c ? "," : "")
                << static_cast<double>(k == static_cast<std::size_t>(c % 3) ? 1.5 : -0.5) + rng.uniform(-0.6, 0.6);
        out << "," << labels[k] << "\n";
    }
}

// A usage error: exit `status` (105-110), every one of `parts` and CLI11's hint in the output, and no training.
void check_usage_error(const brain::test::ProcessResult& r, int status, std::initializer_list<const char*> parts) {
    INFO(r.output);
    CHECK(r.status == status);
    for (const char* part : parts) {
        INFO("expected in the output: " << part);
        CHECK(contains(r.output, part));
    }
    CHECK(contains(r.output, "Run with --help for more information."));
    CHECK_FALSE(contains(r.output, "epoch "));
}

} // namespace

TEST_CASE("brain train --classes trains on an integer column and predict and evaluate speak its labels", "[cli]") {
    TempDir dir;
    write_blobs(dir / "train.csv", 300, 1);
    write_blobs(dir / "test.csv", 90, 2);
    const std::string train =
        succeeded(run(bin("brain") + " train --csv " + dir.q("train.csv") +
                      " --classes kind --layers 8 --epochs 30 --batch 32 --lr 0.01 --out " + dir.q("m.json")));
    CHECK(contains(train, "(classes: 3 7 11)"));
    const auto model = brain::Network::load_json(dir / "m.json");
    CHECK(model.class_labels() == std::vector<std::string>{"3", "7", "11"});
    CHECK(model.layers().back().activation == brain::Activation::Softmax);

    const std::string predicted = succeeded(run(bin("brain") + " predict --model " + dir.q("m.json") + " --csv " +
                                                dir.q("test.csv") + " --compare kind"));
    const auto out = lines(predicted);
    CHECK(out[0] == "label,p_3,p_7,p_11");
    std::set<std::string> seen;
    for (std::size_t r = 1; r <= 90; ++r) seen.insert(out[r].substr(0, out[r].find(',')));
    CHECK(seen == std::set<std::string>{"3", "7", "11"});
    CHECK(contains(predicted, "accuracy against 'kind': "));
    CHECK(contains(predicted, "macro avg"));

    const std::string table =
        succeeded(run(bin("brain") + " evaluate --model " + dir.q("m.json") + " --csv " + dir.q("test.csv")));
    CHECK(contains(table, "softmax classifier, 3 classes"));
    CHECK(contains(table, "confusion matrix (rows: true class, columns: predicted class)"));
    const auto json =
        run(bin("brain") + " evaluate --json --model " + dir.q("m.json") + " --csv " + dir.q("test.csv"));
    REQUIRE(json.status == 0);
    const auto doc = nlohmann::json::parse(json.output);
    // The command's figures are the library's.
    brain::CsvOptions options;
    options.target_columns = {"kind"};
    options.class_columns = {"kind"};
    const auto test = brain::Dataset::from_csv(dir / "test.csv", options);
    const auto e = model.evaluate(test);
    CHECK(brain::test::close(doc["accuracy"].get<double>(), *e.accuracy, 1e-6, 0.0));
    CHECK(doc["classes"][2]["label"] == "11");
    CHECK(brain::test::close(doc["classes"][2]["f1"].get<double>(), e.classification->per_class[2].f1, 1e-6, 0.0));
    CHECK(doc["confusion_matrix"][1][1].get<std::uint64_t>() == e.classification->confusion[1][1]);
    CHECK(brain::test::close(doc["macro_avg"]["recall"].get<double>(), e.classification->macro.recall, 1e-6, 0.0));
}

TEST_CASE("softmax on a numeric column names --classes; evaluate refuses an unknown label", "[cli]") {
    TempDir dir;
    write_blobs(dir / "train.csv", 60, 1);
    const auto r = run(bin("brain") + " train --csv " + dir.q("train.csv") +
                       " --target kind --output-activation softmax --epochs 1 --out " + dir.q("m.json"));
    INFO(r.output);
    CHECK(r.status == 2);
    CHECK(contains(r.output, "--output-activation softmax needs a class column"));
    CHECK(contains(r.output, "use --classes kind"));
    CHECK_FALSE(fs::exists(dir / "m.json"));

    REQUIRE(run(bin("brain") + " train --csv " + dir.q("train.csv") + " --classes kind --epochs 1 --out " +
                dir.q("m.json"))
                .status == 0);
    std::ofstream(dir / "odd.csv") << "a,b,c,d,kind\n1,0,0,0,3\n0,1,0,0,5\n";
    const auto odd = run(bin("brain") + " evaluate --model " + dir.q("m.json") + " --csv " + dir.q("odd.csv"));
    CHECK(odd.status == 2);
    CHECK(contains(odd.output,
                   "odd.csv:3: column 5 'kind' holds '5', which is none of the model's classes (3, 7, 11)"));
}

TEST_CASE("brain train shows the learning rate per epoch and ends naming the epoch early stopping restored",
          "[cli]") {
    TempDir dir;
    REQUIRE(run(bin("brain") + " generate --kind regression --rows 400 --seed 2 --out " + dir.q("r.csv")).status ==
            0);
    const std::string output =
        succeeded(run(bin("brain") + " train --csv " + dir.q("r.csv") +
                      " --target y --layers 32 --optimizer sgd --lr 0.05 --momentum 0.9 --epochs 60 --batch 16"
                      " --lr-schedule step:every=2,gamma=0.5 --early-stopping 1 --validation 0.25 --out " +
                      dir.q("m.json")));
    CHECK(contains(output, "learning-rate schedule: step:every=2,gamma=0.5"));
    CHECK(contains(output, "epoch  1/60  loss "));
    CHECK(contains(output, "lr 0.05  "));
    CHECK(contains(output, "lr 0.025  "));
    CHECK(contains(output, "early stopping: patience 1 on val_loss"));
    const auto out = lines(output);
    REQUIRE(contains(output, "stopped after epoch "));
    CHECK(out.back().rfind("best epoch ", 0) == 0);
    CHECK(contains(out.back(), "(val_loss "));
    CHECK(contains(out.back(), "): early stopping restored its weights"));
    // The restored epoch is the one with the lowest validation loss printed.
    double best = 1e300;
    std::string best_epoch;
    for (const auto& line : out)
        if (line.rfind("epoch ", 0) == 0 && contains(line, "val_loss ")) {
            const double v = std::stod(line.substr(line.find("val_loss ") + 9));
            if (v < best) {
                best = v;
                best_epoch = line.substr(6, line.find('/') - 6);
            }
        }
    best_epoch.erase(0, best_epoch.find_first_not_of(' '));
    CHECK(out.back().rfind("best epoch " + best_epoch + " ", 0) == 0);
}

TEST_CASE("10 epochs in one process equal 5, a checkpoint and --resume in another, bit for bit (CPU)", "[cli]") {
    TempDir dir;
    REQUIRE(run(bin("brain") + " generate --kind regression --rows 500 --seed 3 --out " + dir.q("r.csv")).status ==
            0);
    const std::string common = " --csv " + dir.q("r.csv") +
                               " --target y --layers 24,12 --batch 40 --validation 0.2 --optimizer adamw"
                               " --lr-schedule cosine:warmup=1,min=1e-5,epochs=10 --early-stopping 50";
    const auto whole = run(bin("brain") + " train" + common + " --epochs 10 --out " + dir.q("whole.json"));
    INFO(whole.output);
    REQUIRE(whole.status == 0);
    const auto first = run(bin("brain") + " train" + common + " --epochs 5 --checkpoint-every 5 --checkpoint-dir " +
                           dir.q("ck") + " --out " + dir.q("half.json"));
    INFO(first.output);
    REQUIRE(first.status == 0);
    REQUIRE(fs::exists(dir / "ck" / "epoch-5.json"));
    // The data file is recorded absolute: --resume finds it from any working directory.
    CHECK(fs::path(brain::TrainingCheckpoint::load(dir / "ck" / "epoch-5.json").notes.at("csv")).is_absolute());
    const auto second = run(bin("brain") + " train --resume " + dir.q("ck/epoch-5.json") + " --epochs 10 --out " +
                            dir.q("resumed.json"));
    INFO(second.output);
    REQUIRE(second.status == 0);
    CHECK(contains(second.output, "resuming: epoch 5 of 10 done"));
    CHECK(contains(second.output, "epoch  6/10"));
    CHECK_FALSE(contains(second.output, "epoch  5/10"));
    const auto a = brain::Network::load_json(dir / "whole.json");
    const auto b = brain::Network::load_json(dir / "resumed.json");
    CHECK(a.parameters() == b.parameters());
    CHECK(b.epochs_trained() == 10);
    // The resumed run kept the first run's checkpoint cadence and directory.
    CHECK(fs::exists(dir / "ck" / "epoch-10.json"));

    const auto fixed =
        run(bin("brain") + " train --resume " + dir.q("ck/epoch-5.json") + " --layers 8 --out " + dir.q("x.json"));
    CHECK(fixed.status == 2);
    CHECK(contains(fixed.output, "--layers cannot change them"));
    const auto done =
        run(bin("brain") + " train --resume " + dir.q("ck/epoch-10.json") + " --out " + dir.q("x.json"));
    CHECK(done.status == 2);
    CHECK(contains(done.output, "has trained 10 epochs"));
    const auto model_file =
        run(bin("brain") + " train --resume " + dir.q("whole.json") + " --out " + dir.q("x.json"));
    CHECK(model_file.status == 2);
    CHECK(contains(model_file.output, "this is a model file, which holds no optimizer state"));

    // A resumed run whose --out is one of its own later checkpoints, or whose later checkpoint is its input: both
    // refused before the first epoch, nothing written.
    const auto over_checkpoint = run(bin("brain") + " train --resume " + dir.q("ck/epoch-5.json") +
                                     " --epochs 10 --out " + dir.q("ck/epoch-10.json"));
    CHECK(over_checkpoint.status == 2);
    CHECK(contains(over_checkpoint.output, "is also a checkpoint this run writes"));
    CHECK_FALSE(contains(over_checkpoint.output, "epoch  6/10"));
    fs::copy_file(dir / "half.json", dir / "ck" / "epoch-8.json");
    const auto over_input =
        run(bin("brain") + " train --csv " + dir.q("r.csv") + " --target y --init " + dir.q("ck/epoch-8.json") +
            " --epochs 5 --checkpoint-every 1 --checkpoint-dir " + dir.q("ck") + " --out " + dir.q("x.json"));
    CHECK(over_input.status == 2);
    CHECK(contains(over_input.output, "epoch-8.json': it is the same file as the input"));
    CHECK_FALSE(contains(over_input.output, "epoch  6/"));
    CHECK_FALSE(fs::exists(dir / "x.json"));
}

TEST_CASE("brain train --init keeps the model's optimizer, changing only the settings given", "[cli]") {
    TempDir dir;
    REQUIRE(run(bin("brain") + " generate --kind regression --rows 120 --seed 3 --out " + dir.q("r.csv")).status ==
            0);
    const std::string data = " --csv " + dir.q("r.csv") + " --target y --epochs 1";
    const auto sgd = run(bin("brain") + " train" + data +
                         " --layers 4 --optimizer sgd --lr 0.01 --momentum 0.5 --out " + dir.q("sgd.json"));
    INFO(sgd.output);
    REQUIRE(sgd.status == 0);
    CHECK(contains(sgd.output, "sgd lr 0.01 momentum 0.5"));
    const auto rate = run(bin("brain") + " train" + data + " --init " + dir.q("sgd.json") + " --lr 0.05 --out " +
                          dir.q("rate.json"));
    INFO(rate.output);
    REQUIRE(rate.status == 0);
    CHECK(contains(rate.output, "epoch 2/2")); // the model's first epoch was before: 2 of 2, not 2 of 1
    const auto kept = brain::Network::load_json(dir / "rate.json").optimizer();
    CHECK(kept.kind == brain::Optimizer::Kind::Sgd);
    CHECK(kept.learning_rate == 0.05f);
    CHECK(kept.momentum == 0.5f);
    // Naming the model's own kind is no new optimizer: its momentum stays.
    const auto same = run(bin("brain") + " train" + data + " --init " + dir.q("sgd.json") +
                          " --optimizer sgd --out " + dir.q("same.json"));
    INFO(same.output);
    REQUIRE(same.status == 0);
    CHECK(contains(same.output, "sgd lr 0.01 momentum 0.5"));
    CHECK(brain::Network::load_json(dir / "same.json").optimizer().momentum == 0.5f);
    const auto kind = run(bin("brain") + " train" + data + " --init " + dir.q("sgd.json") +
                          " --optimizer adamw --out " + dir.q("adamw.json"));
    REQUIRE(kind.status == 0);
    const auto adamw = brain::Network::load_json(dir / "adamw.json").optimizer();
    CHECK(adamw.kind == brain::Optimizer::Kind::AdamW);
    CHECK(adamw.learning_rate == 0.01f); // the model's rate
    CHECK(adamw.weight_decay == 0.01f);
    // A setting of another optimizer is refused, not silently unused.
    const auto stray = run(bin("brain") + " train" + data + " --init " + dir.q("sgd.json") +
                           " --weight-decay 0.1 --out " + dir.q("x.json"));
    CHECK(stray.status == 2);
    CHECK(contains(stray.output, "--weight-decay is AdamW's, but the optimizer is sgd (the model's)"));
    const auto fresh = run(bin("brain") + " train" + data + " --layers 4 --momentum 0.9 --out " + dir.q("x.json"));
    CHECK(fresh.status == 2);
    CHECK(contains(fresh.output, "--momentum is SGD's, but the optimizer is adam (the default)"));
    CHECK_FALSE(fs::exists(dir / "x.json"));
}

TEST_CASE("brain train --classes on scikit-learn's digits reaches MLPClassifier's accuracy", "[cli]") {
    if (!fs::exists("/usr/bin/python3")) BRAIN_SKIP("no /usr/bin/python3 (Debian's python with scikit-learn)");
    if (run("/usr/bin/python3 -c 'import sklearn'").status != 0)
        BRAIN_SKIP("scikit-learn is not installed for /usr/bin/python3 (Debian's python3-sklearn)");
    TempDir dir;
    // The same split for both, five seeds each: the mean test accuracy of the library and of scikit-learn's
    // MLPClassifier with the same hidden layer (docs/guide.md states the figures and the commands).
    const std::string script = shell_quote(std::string(BRAIN_TEST_SOURCE_DIR) + "/tools/data/digits.py");
    const auto sklearn = run("/usr/bin/python3 " + script + " " + dir.q("") + " --hidden 64 --seeds 5", 300);
    INFO(sklearn.output);
    REQUIRE(sklearn.status == 0);
    const auto at = sklearn.output.find("mean_accuracy=");
    REQUIRE(at != std::string::npos);
    const double reference = std::stod(sklearn.output.substr(at + 14));
    double total = 0.0;
    for (int seed = 1; seed <= 5; ++seed) {
        const auto train = run(bin("brain") + " train --csv " + dir.q("digits_train.csv") +
                               " --classes digit --layers 64 --epochs 150 --batch 32 --lr 0.003 --optimizer adamw"
                               " --weight-decay 0.05 --lr-schedule cosine:warmup=5 --seed " +
                               std::to_string(seed) + " --out " + dir.q("digits.json"));
        REQUIRE(train.status == 0);
        const auto e = run(bin("brain") + " evaluate --json --model " + dir.q("digits.json") + " --csv " +
                           dir.q("digits_test.csv"));
        REQUIRE(e.status == 0);
        total += nlohmann::json::parse(e.output)["accuracy"].get<double>();
    }
    const double mean = total / 5.0;
    INFO("brain mean accuracy " << mean << ", scikit-learn's " << reference);
    CHECK(mean >= reference);
}

TEST_CASE("brain train refuses an option that nothing in the run uses and names what to add or leave out",
          "[cli]") {
    TempDir dir;
    REQUIRE(run(bin("brain") + " generate --kind regression --rows 60 --seed 4 --out " + dir.q("r.csv")).status ==
            0);
    const std::string train = bin("brain") + " train --csv " + dir.q("r.csv") +
                              " --target y --layers 4 --epochs 1 --out " + dir.q("m.json");
    // A usage error like CLI11's own "requires" (exit 107), before anything is read or trained.
    auto refused = [](const brain::test::ProcessResult& r, std::initializer_list<const char*> parts) {
        check_usage_error(r, 107, parts);
    };

    SECTION("--min-delta without --early-stopping") {
        refused(run(train + " --min-delta 0.01"),
                {"--min-delta sets how much early stopping's monitored value must improve, but early stopping is "
                 "off (no --early-stopping); add --early-stopping PATIENCE or leave --min-delta out"});
    }
    SECTION("--monitor without --early-stopping or a plateau schedule") {
        const char* message = "--monitor names what early stopping and a plateau schedule watch, but this run has "
                              "neither (no --early-stopping, and no --lr-schedule plateau); add --early-stopping "
                              "PATIENCE or --lr-schedule plateau, or leave --monitor out";
        refused(run(train + " --monitor loss"), {message});
        refused(run(train + " --monitor loss --lr-schedule cosine"), {message});
    }
    SECTION("--checkpoint-dir without --checkpoint-every") {
        refused(
            run(train + " --checkpoint-dir " + dir.q("ck")),
            {"--checkpoint-dir names where --checkpoint-every writes its checkpoints, but --checkpoint-every is "
             "not given, so nothing would be written there; add --checkpoint-every N or leave --checkpoint-dir "
             "out"});
        CHECK_FALSE(fs::exists(dir / "ck"));
    }
    SECTION("--stream-chunk-rows and --stream-window without --stream") {
        for (const char* tuning : {"--stream-chunk-rows", "--stream-window"}) {
            const std::string message = std::string(tuning) +
                                        " tunes how --stream reads rows from disk, but --stream is not given (the "
                                        "data is loaded into memory); add --stream (with --npy-features and "
                                        "--npy-targets) or leave " +
                                        tuning + " out";
            refused(run(train + " " + tuning + " 4"), {message.c_str()});
        }
    }
    SECTION("a learning-rate schedule key given twice") {
        // As every other fault of --lr-schedule's text (the library's parser): exit 2, InvalidArgument.
        const auto r = run(train + " --lr-schedule step:every=2,every=3");
        INFO(r.output);
        CHECK(r.status == 2);
        CHECK(contains(r.output,
                       "error: InvalidArgument: learning-rate schedule 'step:every=2,every=3': 'every' is "
                       "given twice (every='2', then every='3'); expected each parameter at most once: keep "
                       "the one you mean"));
        CHECK_FALSE(contains(r.output, "epoch "));
    }
    CHECK_FALSE(fs::exists(dir / "m.json"));
}

TEST_CASE("brain train takes each option with the one that makes it act", "[cli]") {
    TempDir dir;
    REQUIRE(run(bin("brain") + " generate --kind regression --rows 60 --seed 4 --out " + dir.q("r.csv")).status ==
            0);
    const std::string train = bin("brain") + " train --csv " + dir.q("r.csv") + " --target y --layers 4 --epochs 2";

    SECTION("--min-delta and --monitor with --early-stopping") {
        const std::string output =
            succeeded(run(train + " --early-stopping 3 --monitor loss --min-delta 0.001 --out " + dir.q("m.json")));
        CHECK(contains(output, "early stopping: patience 3 on loss"));
    }
    SECTION("--monitor with a plateau schedule alone") {
        const std::string output =
            succeeded(run(train + " --lr-schedule plateau:patience=1 --monitor loss --out " + dir.q("m.json")));
        CHECK(contains(output, "learning-rate schedule: plateau:"));
        CHECK(contains(output, "monitor=loss"));
    }
    SECTION("--stream-chunk-rows and --stream-window with --stream") {
        succeeded(run(bin("brain") + " convert " + dir.q("r.csv") + " " + dir.q("x.npy") + " " + dir.q("y.npy") +
                      " --target y"));
        const std::string output = succeeded(
            run(bin("brain") + " train --npy-features " + dir.q("x.npy") + " --npy-targets " + dir.q("y.npy") +
                " --layers 4 --epochs 2 --stream --stream-chunk-rows 16 --stream-window 2"
                " --out " +
                dir.q("m.json")));
        CHECK(contains(output, "streamed from disk in chunks of 16 rows, shuffled in windows of 2 chunks"));
    }
    SECTION("--checkpoint-dir with --checkpoint-every") {
        succeeded(
            run(train + " --checkpoint-every 2 --checkpoint-dir " + dir.q("ck") + " --out " + dir.q("m.json")));
        CHECK(fs::exists(dir / "ck" / "epoch-2.json"));
    }
    CHECK(fs::exists(dir / "m.json"));
}

TEST_CASE("brain train --resume takes the early-stopping and checkpoint options when the run uses them", "[cli]") {
    TempDir dir;
    REQUIRE(run(bin("brain") + " generate --kind regression --rows 60 --seed 4 --out " + dir.q("r.csv")).status ==
            0);
    const std::string train = bin("brain") + " train --csv " + dir.q("r.csv") +
                              " --target y --layers 4 --epochs 1 --checkpoint-every 1 --out " + dir.q("m.json");
    succeeded(run(train + " --checkpoint-dir " + dir.q("plain")));
    succeeded(run(train + " --early-stopping 5 --checkpoint-dir " + dir.q("early")));
    const std::string plain = bin("brain") + " train --resume " + dir.q("plain/epoch-1.json") + " --epochs 2";
    const std::string early = bin("brain") + " train --resume " + dir.q("early/epoch-1.json") + " --epochs 2";

    for (const char* option : {"--min-delta 0.01", "--monitor loss"}) {
        const std::string name = std::string(option).substr(0, std::string(option).find(' '));
        const std::string is_whose = name + " is early stopping's, but the run saved in ";
        const std::string what_to_do =
            "has no early stopping and --early-stopping is not given; add --early-stopping PATIENCE or leave " +
            name + " out";
        check_usage_error(run(plain + " " + option + " --out " + dir.q("x.json")), 107,
                          {is_whose.c_str(), what_to_do.c_str()});
        CHECK_FALSE(fs::exists(dir / "x.json"));
        // Valid: early stopping from the checkpoint, or given now.
        succeeded(run(early + " " + option + " --out " + dir.q("a.json")));
        succeeded(run(plain + " --early-stopping 3 " + option + " --out " + dir.q("b.json")));
    }
    // What a resumed run does not use: another model, another data source, streaming.
    for (const char* option :
         {"--init", "--npz", "--npy-features", "--npy-targets", "--stream", "--stream-window"}) {
        const bool flag = std::string(option) == "--stream";
        const auto r = run(plain + " " + option + (flag ? "" : " 2") + " --out " + dir.q("x.json"));
        INFO(r.output);
        CHECK(r.status == 2);
        CHECK(contains(r.output,
                       std::string(option) +
                           (std::string(option) == "--init" ? " cannot change them: " : " does not apply: ") +
                           "leave it out"));
        CHECK_FALSE(fs::exists(dir / "x.json"));
    }
    // The checkpoint's --checkpoint-every writes into the --checkpoint-dir given now.
    succeeded(run(plain + " --checkpoint-dir " + dir.q("moved") + " --out " + dir.q("c.json")));
    CHECK(fs::exists(dir / "moved" / "epoch-2.json"));
}

TEST_CASE("evaluate --json stays JSON when the loss overflows; predict quotes a label's whole header field",
          "[cli]") {
    TempDir dir;
    REQUIRE(run(bin("brain") + " generate --kind regression --rows 60 --seed 4 --out " + dir.q("r.csv")).status ==
            0);
    REQUIRE(run(bin("brain") + " train --csv " + dir.q("r.csv") + " --target y --layers 4 --epochs 1 --out " +
                dir.q("m.json"))
                .status == 0);
    {
        std::ofstream far(dir / "far.csv");
        far << "x0,x1,x2,x3,x4,x5,y\n3e38,3e38,3e38,3e38,3e38,3e38,1\n1,1,1,1,1,1,1\n";
    }
    const auto json =
        run(bin("brain") + " evaluate --json --model " + dir.q("m.json") + " --csv " + dir.q("far.csv"));
    INFO(json.output);
    REQUIRE(json.status == 0);
    const auto doc = nlohmann::json::parse(json.output); // throws on "inf"
    CHECK(doc["loss"].is_null());
    CHECK(doc["outputs"][0]["rmse"].is_number());

    // Labels that need quoting: the header field is "p_<label>", quoted whole, and brain reads it back.
    {
        std::ofstream labels(dir / "l.csv");
        labels << "x,lab\n1,\"a,b\"\n2,\"say \"\"hi\"\"\"\n3,\"a,b\"\n4,\"say \"\"hi\"\"\"\n";
    }
    REQUIRE(run(bin("brain") + " train --csv " + dir.q("l.csv") + " --target lab --layers 2 --epochs 1 --out " +
                dir.q("l.json"))
                .status == 0);
    REQUIRE(run(bin("brain") + " predict --model " + dir.q("l.json") + " --csv " + dir.q("l.csv") + " --out " +
                dir.q("p.csv"))
                .status == 0);
    const auto header = brain::CsvTable::read_header(dir / "p.csv");
    REQUIRE(header.size() == 3);
    CHECK(header[1] == "p_a,b");
    CHECK(header[2] == "p_say \"hi\"");
    CHECK(brain::CsvTable::read(dir / "p.csv").columns() == 3); // every row as wide as the header
    const auto accuracy =
        run(bin("brain") + " evaluate --json --model " + dir.q("l.json") + " --csv " + dir.q("l.csv"));
    REQUIRE(accuracy.status == 0);
    // The shortest text of the float32 value: 0.5 or 0.75, never 0.750000000.
    const std::string text = accuracy.output.substr(accuracy.output.find("\"accuracy\":") + 11, 12);
    CHECK((text.rfind("0.5,", 0) == 0 || text.rfind("0.75,", 0) == 0 || text.rfind("0.25,", 0) == 0 ||
           text.rfind("1,", 0) == 0 || text.rfind("0,", 0) == 0));
}

TEST_CASE("brain train --classes needs a CSV column; a checkpoint of an --npz run says how it resumes", "[cli]") {
    REQUIRE_NPZ();
    TempDir dir;
    {
        std::ofstream csv(dir / "num.csv");
        csv << "a,b,digit\n1,2,3\n2,3,1\n3,4,3\n4,5,10\n5,6,1\n6,7,2\n";
    }
    REQUIRE(run(bin("brain") + " convert " + dir.q("num.csv") + " " + dir.q("num.npz")).status == 0);
    const auto classes = run(bin("brain") + " train --npz " + dir.q("num.npz") +
                             " --classes digit --layers 4 --epochs 1 --out " + dir.q("n.json"));
    INFO(classes.output);
    CHECK(classes.status == 2);
    CHECK(contains(classes.output, "--classes 'digit' reads a CSV column's values as class labels, but the data "
                                   "comes from --npz"));
    CHECK_FALSE(fs::exists(dir / "n.json"));

    REQUIRE(run(bin("brain") + " convert " + dir.q("num.csv") + " " + dir.q("t.npz") + " --target digit").status ==
            0);
    REQUIRE(run(bin("brain") + " train --npz " + dir.q("t.npz") + " --layers 4 --epochs 2 --checkpoint-every 1 " +
                "--checkpoint-dir " + dir.q("ck") + " --out " + dir.q("t.json"))
                .status == 0);
    const auto resumed =
        run(bin("brain") + " train --resume " + dir.q("ck/epoch-1.json") + " --out " + dir.q("r.json"));
    INFO(resumed.output);
    CHECK(resumed.status == 2);
    CHECK(contains(resumed.output, "the run trained on --npz "));
    CHECK(contains(resumed.output, "resume it with the library on the same rows (FitOptions::resume"));
    CHECK_FALSE(fs::exists(dir / "r.json"));
}

TEST_CASE("--target names a column whose name holds a comma as '\\,'; an empty name is refused", "[cli]") {
    TempDir dir;
    {
        std::ofstream csv(dir / "comma.csv");
        csv << "\"width, cm\",b,\"y, z\",w\\v\n";
        for (int r = 0; r < 40; ++r)
            csv << r * 0.1 << "," << (r % 5) * 0.2 << "," << r * 0.05 << "," << r % 2 << "\n";
    }
    const std::string train = bin("brain") + " train --csv " + dir.q("comma.csv") + " --layers 4 --epochs 1 ";
    // One target, a comma in its name, then two at once: one escaped, one with a backslash of its own.
    const auto one = run(train + "--target 'y\\, z' --out " + dir.q("one.json"));
    INFO(one.output);
    REQUIRE(one.status == 0);
    const brain::Network model = brain::Network::load_json(dir / "one.json");
    CHECK(model.target_names() == std::vector<std::string>{"y, z"});
    CHECK(model.feature_names() == std::vector<std::string>{"width, cm", "b", "w\\v"});
    const auto two = run(train + "--target 'y\\, z,w\\\\v' --out " + dir.q("two.json"));
    INFO(two.output);
    REQUIRE(two.status == 0);
    CHECK(brain::Network::load_json(dir / "two.json").target_names() == std::vector<std::string>{"y, z", "w\\v"});
    const auto evaluate = run(bin("brain") + " evaluate --model " + dir.q("one.json") + " --csv " +
                              dir.q("comma.csv") + " --target 'y\\, z' --json");
    INFO(evaluate.output);
    CHECK(evaluate.status == 0);
    CHECK(contains(evaluate.output, "\"loss\""));
    REQUIRE(run(bin("brain") + " convert " + dir.q("comma.csv") + " " + dir.q("x.npy") + " " + dir.q("y.npy") +
                " --target 'y\\, z'")
                .status == 0);
    CHECK(brain::load_npy(dir / "y.npy").cols() == 1);
    // Unescaped, the comma splits: the error names the half that is not a column.
    const auto split = run(train + "--target 'y, z' --out " + dir.q("split.json"));
    CHECK(split.status != 0);
    CHECK(contains(split.output, "target column 'y' is not in the header"));
    CHECK(contains(split.output, "joined by commas, the names 'y' to ' z' make the column 'y, z'"));
    check_usage_error(run(train + "--target 'y\\, z,' --out " + dir.q("e.json")), 105,
                      {"--target: expected comma-separated values, none of them empty, found 'y\\, z,'",
                       "a comma inside a column's name is written \\,"});
    CHECK_FALSE(fs::exists(dir / "e.json"));
}
