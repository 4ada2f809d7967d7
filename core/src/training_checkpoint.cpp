// The resumable checkpoint file (docs/model-format.md, "Resumable checkpoints"): the model document, the optimizer
// state, the run's position, schedule, callbacks' states and history. Numbers are float32 JSON as in the model file
// (shortest text that reads back bit for bit), whole numbers are exact 64-bit integers.
#include "input_file.hpp"
#include "json_reader.hpp"

#include <bit>
#include <brain/error.hpp>
#include <brain/safe_file.hpp>
#include <brain/training_checkpoint.hpp>
#include <cmath>
#include <new>

namespace brain {

namespace {

using Json = detail::FloatJson;

constexpr const char* k_format = "brain-checkpoint";
constexpr std::uint64_t k_version = 1;

// Reads the checkpoint document; every error names the origin and the JSON pointer at fault.
class Reader : public detail::JsonReader {
public:
    explicit Reader(const std::string& origin) : JsonReader(origin, "a brain checkpoint") {}
};

Json floats_json(const std::vector<float>& values) {
    Json a = Json::array();
    for (float v : values) a.push_back(v);
    return a;
}

std::uint64_t fnv1a(const void* data, std::size_t size, std::uint64_t hash) {
    const auto* bytes = static_cast<const unsigned char*>(data);
    for (std::size_t i = 0; i < size; ++i) hash = (hash ^ bytes[i]) * 0x100000001b3ULL;
    return hash;
}

} // namespace

std::uint64_t data_fingerprint(const Dataset& data) {
    std::uint64_t hash = 0xcbf29ce484222325ULL;
    const std::uint64_t shape[3] = {data.size(), data.input_width(), data.target_width()};
    hash = fnv1a(shape, sizeof shape, hash);
    hash = fnv1a(data.features().data().data(), data.features().data().size() * sizeof(float), hash);
    return fnv1a(data.targets().data().data(), data.targets().data().size() * sizeof(float), hash);
}

TrainConfig TrainingCheckpoint::remaining() const {
    TrainConfig out = config;
    const std::uint64_t done = epochs_trained();
    const std::uint64_t left = run_epochs > done ? run_epochs - done : 0;
    out.epochs = static_cast<std::uint32_t>(std::min<std::uint64_t>(left, UINT32_MAX));
    return out;
}

std::string TrainingCheckpoint::to_json_string() const {
    const std::string model = network.to_json_string(); // validates the network and its names
    for (float v : network.optimizer_state())
        BRAIN_CHECK(std::isfinite(v), ErrorCode::NumericalError,
                    "TrainingCheckpoint: the optimizer state holds a non-finite value; the run diverged");
    Json schedule_json = nullptr;
    if (schedule) {
        BRAIN_CHECK_ARG(schedule->started(), "TrainingCheckpoint: the schedule ", schedule->to_string(),
                        " has not started; a checkpoint holds a schedule as a run left it");
        const ScheduleState& s = schedule->state();
        schedule_json = Json::object();
        schedule_json["spec"] = schedule->to_string();
        schedule_json["base_rate"] = s.base_rate;
        schedule_json["steps_per_epoch"] = s.steps_per_epoch;
        schedule_json["horizon_epochs"] = s.horizon_epochs;
        schedule_json["epochs_done"] = s.epochs_done;
        schedule_json["plateau_rate"] = s.plateau_rate;
        schedule_json["plateau_best"] = s.plateau_best;
        schedule_json["plateau_has_best"] = s.plateau_has_best;
        schedule_json["plateau_bad_epochs"] = s.plateau_bad_epochs;
        schedule_json["plateau_cooldown"] = s.plateau_cooldown;
    }
    Json callbacks_json = Json::object();
    for (const auto& [key, state] : callbacks) {
        Json integers = Json::object(), floats = Json::object();
        for (const auto& [name, value] : state.integers) integers[name] = value;
        for (const auto& [name, values] : state.floats) floats[name] = floats_json(values);
        callbacks_json[key] = Json{{"integers", integers}, {"floats", floats}};
    }
    Json notes_json = Json::object();
    for (const auto& [key, value] : notes) notes_json[key] = value;
    Json history = Json::object();
    history["loss"] = floats_json(losses);
    history["val_loss"] = floats_json(validation_losses);
    history["learning_rate"] = floats_json(learning_rates);

    std::string out = "{\n";
    auto field = [&out](const char* key, const Json& value) {
        out += "  " + detail::dump_json(Json(key)) + ": " + detail::dump_json(value) + ",\n";
    };
    field("format", k_format);
    field("version", k_version);
    field("epochs_trained", network.epochs_trained());
    field("run_epochs", run_epochs);
    field("batch_size", config.batch_size);
    field("shuffle", config.shuffle);
    field("seed", config.seed.value_or(network.seed()));
    field("data", Json{{"rows", data_rows}, {"fingerprint", data_fingerprint}});
    field("schedule", schedule_json);
    field("history", history);
    field("callbacks", callbacks_json);
    field("notes", notes_json);
    field("optimizer_step", network.optimizer_step());
    field("optimizer_state", floats_json(network.optimizer_state()));
    out += "  \"model\": " + model + "}\n";
    return out;
}

TrainingCheckpoint TrainingCheckpoint::from_json_string(const std::string& text, const std::string& origin) {
    Json doc;
    try {
        doc = detail::parse_json_unique_keys(text, origin);
    } catch (const Json::exception& e) {
        BRAIN_THROW(ErrorCode::InvalidModelFile, origin, ": not a readable JSON document (",
                    detail::json_error_text(e),
                    "); a brain checkpoint is the JSON written by TrainingCheckpoint::save (brain train "
                    "--checkpoint-every)");
    }
    const Reader rd(origin);
    if (!doc.is_object()) rd.fail("top level", "expected a JSON object, found " + Reader::describe(doc));
    const std::string& format = rd.string(rd.require(doc, "", "format"), "/format");
    if (format != k_format)
        rd.fail("/format", std::string("expected \"") + k_format + "\", found \"" + format + "\"" +
                               (format == "brain-model" ? "; this is a model file, which holds no optimizer state: "
                                                          "train from it without --resume, or resume from a "
                                                          "checkpoint written by --checkpoint-every"
                                                        : "; this is not a brain checkpoint"));
    const std::uint64_t version = rd.unsigned_integer(rd.require(doc, "", "version"), "/version");
    if (version != k_version)
        rd.fail("/version", "unsupported version " + std::to_string(version) +
                                "; supported versions: " + std::to_string(k_version));

    Network network =
        Network::from_json_string(detail::dump_json(rd.require(doc, "", "model")), origin + " (its /model)");
    Checkpoint state;
    state.parameters = network.parameters();
    state.optimizer_state = rd.floats(rd.require(doc, "", "optimizer_state"), "/optimizer_state");
    const std::size_t expected = network.optimizer_state().size();
    if (state.optimizer_state.size() != expected)
        rd.fail("/optimizer_state", "expected " + std::to_string(expected) + " numbers (" +
                                        std::string(to_string(network.optimizer().kind)) + " state of " +
                                        std::to_string(network.parameter_count()) + " parameters), found " +
                                        std::to_string(state.optimizer_state.size()));
    state.optimizer_step = rd.unsigned_integer(rd.require(doc, "", "optimizer_step"), "/optimizer_step");
    state.epochs_trained = network.epochs_trained();
    network.restore_checkpoint(state);

    TrainingCheckpoint out(std::move(network));
    const std::uint64_t batch = rd.unsigned_integer(rd.require(doc, "", "batch_size"), "/batch_size");
    if (batch == 0 || batch > UINT32_MAX) rd.fail("/batch_size", "expected a batch size in [1, 2^32-1]");
    out.config.batch_size = static_cast<std::uint32_t>(batch);
    out.config.shuffle = rd.boolean(rd.require(doc, "", "shuffle"), "/shuffle");
    out.config.seed = rd.unsigned_integer(rd.require(doc, "", "seed"), "/seed");
    out.run_epochs = rd.unsigned_integer(rd.require(doc, "", "run_epochs"), "/run_epochs");
    out.config.epochs = static_cast<std::uint32_t>(std::min<std::uint64_t>(out.run_epochs, UINT32_MAX));
    if (const Json* trained = rd.optional(doc, "epochs_trained"))
        if (rd.unsigned_integer(*trained, "/epochs_trained") != out.epochs_trained())
            rd.fail("/epochs_trained", "says " + detail::dump_json(*trained) +
                                           " but the model's epochs_trained is " +
                                           std::to_string(out.epochs_trained()) + "; the file is inconsistent");
    const Json& data = rd.require(doc, "", "data");
    out.data_rows = rd.unsigned_integer(rd.require(data, "/data", "rows"), "/data/rows");
    out.data_fingerprint = rd.unsigned_integer(rd.require(data, "/data", "fingerprint"), "/data/fingerprint");

    if (const Json* s = rd.optional(doc, "schedule"); s && !s->is_null()) {
        LearningRateSchedule schedule;
        try {
            schedule =
                LearningRateSchedule::parse(rd.string(rd.require(*s, "/schedule", "spec"), "/schedule/spec"));
        } catch (const Error& e) {
            if (e.code() == ErrorCode::InvalidModelFile) throw;
            rd.fail("/schedule/spec", e.what());
        }
        ScheduleState st;
        st.base_rate = rd.number(rd.require(*s, "/schedule", "base_rate"), "/schedule/base_rate");
        st.steps_per_epoch =
            rd.unsigned_integer(rd.require(*s, "/schedule", "steps_per_epoch"), "/schedule/steps_per_epoch");
        st.horizon_epochs =
            rd.unsigned_integer(rd.require(*s, "/schedule", "horizon_epochs"), "/schedule/horizon_epochs");
        st.epochs_done = rd.unsigned_integer(rd.require(*s, "/schedule", "epochs_done"), "/schedule/epochs_done");
        st.plateau_rate = rd.number(rd.require(*s, "/schedule", "plateau_rate"), "/schedule/plateau_rate");
        st.plateau_best = rd.number(rd.require(*s, "/schedule", "plateau_best"), "/schedule/plateau_best");
        st.plateau_has_best =
            rd.boolean(rd.require(*s, "/schedule", "plateau_has_best"), "/schedule/plateau_has_best");
        const std::uint64_t bad =
            rd.unsigned_integer(rd.require(*s, "/schedule", "plateau_bad_epochs"), "/schedule/plateau_bad_epochs");
        const std::uint64_t cool =
            rd.unsigned_integer(rd.require(*s, "/schedule", "plateau_cooldown"), "/schedule/plateau_cooldown");
        if (bad > UINT32_MAX || cool > UINT32_MAX) rd.fail("/schedule", "a plateau counter is out of range");
        st.plateau_bad_epochs = static_cast<std::uint32_t>(bad);
        st.plateau_cooldown = static_cast<std::uint32_t>(cool);
        try {
            schedule.restore(st);
        } catch (const Error& e) {
            rd.fail("/schedule", e.what());
        }
        out.schedule = std::move(schedule);
    }
    if (const Json* h = rd.optional(doc, "history")) {
        if (const Json* v = rd.optional(*h, "loss")) out.losses = rd.floats(*v, "/history/loss");
        if (const Json* v = rd.optional(*h, "val_loss")) out.validation_losses = rd.floats(*v, "/history/val_loss");
        if (const Json* v = rd.optional(*h, "learning_rate"))
            out.learning_rates = rd.floats(*v, "/history/learning_rate");
    }
    if (const Json* c = rd.optional(doc, "callbacks")) {
        if (!c->is_object()) rd.fail("/callbacks", "expected an object, found " + Reader::describe(*c));
        for (const auto& [key, value] : c->items()) {
            const std::string at = "/callbacks/" + key;
            CallbackState saved;
            if (const Json* ints = value.is_object() ? rd.optional(value, "integers") : nullptr) {
                if (!ints->is_object()) rd.fail(at + "/integers", "expected an object");
                for (const auto& [name, v] : ints->items())
                    saved.integers[name] = rd.unsigned_integer(v, at + "/integers/" + name);
            }
            if (const Json* fl = value.is_object() ? rd.optional(value, "floats") : nullptr) {
                if (!fl->is_object()) rd.fail(at + "/floats", "expected an object");
                for (const auto& [name, v] : fl->items()) saved.floats[name] = rd.floats(v, at + "/floats/" + name);
            }
            out.callbacks[key] = std::move(saved);
        }
    }
    if (const Json* n = rd.optional(doc, "notes")) {
        if (!n->is_object()) rd.fail("/notes", "expected an object of strings, found " + Reader::describe(*n));
        for (const auto& [key, value] : n->items()) out.notes[key] = rd.string(value, "/notes/" + key);
    }
    return out;
}

void TrainingCheckpoint::save(const std::filesystem::path& path,
                              const std::vector<std::filesystem::path>& inputs) const {
    write_file_safely(path, to_json_string(), inputs);
}

TrainingCheckpoint TrainingCheckpoint::load(const std::filesystem::path& path, const InputLimits& limits) {
    const std::string text =
        detail::read_input_file(path, "checkpoint file", limits.max_file_bytes, ErrorCode::InvalidModelFile);
    try {
        return from_json_string(text, path.string());
    } catch (const std::bad_alloc&) {
        BRAIN_THROW(ErrorCode::AllocationFailed, "not enough host memory to load the checkpoint '", path.string(),
                    "' (", text.size(), " bytes); free memory or raise the process's memory limit");
    }
}

} // namespace brain
