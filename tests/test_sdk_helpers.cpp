// The SDK's header-only helpers, called the way the core calls a plugin: the function table built from a backend
// class (guards, null checks, versions, optional entries), the session counters behind session_stats, and the
// budget bisection.
#include "support/catch.hpp"

#include <brain/accelerator.hpp>
#include <brain/backend_capabilities.hpp>
#include <brain/host_probe.hpp>
#include <brain/plugin_abi.h>
#include <brain/plugin_sdk.hpp>
#include <brain/plugin_table.hpp>
#include <brain/session_budget.hpp>
#include <brain/session_counters.hpp>
#include <brain/session_descriptor.hpp>
#include <brain/session_plan.hpp>
#include <chrono>
#include <cstring>
#include <new>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

namespace {

using brain::sdk::Failure;
using Phase = brain::sdk::SessionCounters::Phase;

// What a test session does, chosen by the descriptor's seed.
enum class Behaviour : std::uint64_t { Train = 0, RefuseOpen = 1, ThrowStd = 2, ThrowBadAlloc = 3 };

Behaviour behaviour_of(const brain_session_desc& desc) {
    return static_cast<Behaviour>(brain::sdk::read_struct(desc.config).seed);
}

// A session with one parameter that each epoch moves by the learning rate.
class CountingSession {
public:
    explicit CountingSession(const brain_session_desc& desc) : m_behaviour(behaviour_of(desc)) {
        const auto timer = m_counters.time(Phase::Setup);
        if (m_behaviour == Behaviour::RefuseOpen)
            brain::sdk::fail(BRAIN_ERR_BUDGET_EXCEEDED, "no room for ", 7, " rows");
        m_counters.allocated(64);
        m_parameter = desc.parameters ? desc.parameters[0] : 0.0f;
    }
    float train_epoch() {
        const auto timer = m_counters.time(Phase::Training);
        if (m_behaviour == Behaviour::ThrowStd) throw std::runtime_error("disk on fire");
        if (m_behaviour == Behaviour::ThrowBadAlloc) throw std::bad_alloc();
        m_parameter -= m_rate;
        m_counters.count_batches(3);
        m_counters.count_epoch();
        return m_parameter;
    }
    void checkpoint(float* parameters, std::uint64_t count, float*, std::uint64_t, std::uint64_t* step) {
        if (count != 1) brain::sdk::fail(BRAIN_ERR_INVALID_ARGUMENT, "expected 1 parameter, got ", count);
        parameters[0] = m_parameter;
        *step = m_counters.epochs();
        m_counters.moved_to_host(sizeof(float));
    }
    brain_session_stats stats() const noexcept {
        brain::sdk::SessionFacts facts;
        facts.budget_bytes = 1024;
        return m_counters.stats(facts);
    }

protected:
    float m_rate = 0.5f;

private:
    Behaviour m_behaviour;
    brain::sdk::SessionCounters m_counters;
    float m_parameter = 0.0f;
};

// The same session with the optional learning-rate entry.
class SchedulableSession : public CountingSession {
public:
    using CountingSession::CountingSession;
    void set_learning_rate(float rate) { m_rate = rate; }
};

std::vector<std::string> g_logged;
int g_description_calls = 0;

struct SchedulableBackend {
    static constexpr const char* name = "schedulable";
    static constexpr const char* version = "2.3.4";
    static std::string description() {
        ++g_description_calls;
        return "built at run time";
    }
    using Session = SchedulableSession;
    static void initialize(const brain_host_api&) { brain::sdk::log(2, "ready"); }
    static std::int32_t device_count() { return 2; }
    static brain_device_report probe(std::int32_t device, std::uint64_t budget) {
        if (device >= 2) brain::sdk::fail(BRAIN_ERR_DEVICE_NOT_FOUND, "no device ", device);
        brain_device_report report{};
        brain::sdk::copy_string(report.name, "test device");
        report.total_memory_mib = static_cast<std::int64_t>(budget >> 20);
        return report;
    }
};

struct FixedBackend {
    static constexpr const char* name = "fixed";
    static constexpr const char* version = "1.0";
    static constexpr const char* description = "a fixed learning rate";
    using Session = CountingSession;
    static std::int32_t device_count() { throw Failure(BRAIN_ERR_DRIVER_UNAVAILABLE, "no driver here"); }
    static brain_device_report probe(std::int32_t, std::uint64_t) { return {}; }
};

// A session that trains several epochs a call (ABI 1.4) and fails NUMERICAL on the epoch that takes its parameter
// below -1, as a diverging device session would.
class MultiEpochSession : public CountingSession {
public:
    using CountingSession::CountingSession;
    void train_epochs(std::uint64_t count, float* losses, std::uint64_t& trained) {
        while (trained < count) {
            const float loss = train_epoch();
            if (loss < -1.0f) brain::sdk::fail(BRAIN_ERR_NUMERICAL, "epoch ", trained, " diverged");
            losses[trained++] = loss;
        }
    }
};

struct MultiEpochBackend {
    static constexpr const char* name = "multi";
    static constexpr const char* version = "1.4";
    static constexpr const char* description = "several epochs a call";
    using Session = MultiEpochSession;
    static std::int32_t device_count() { return 1; }
    static brain_device_report probe(std::int32_t, std::uint64_t) { return {}; }
};

void host_log(int32_t, const char* message) {
    g_logged.emplace_back(message);
}

const brain_host_api k_host{sizeof(brain_host_api), BRAIN_ABI_VERSION_MAJOR, BRAIN_ABI_VERSION_MINOR, &host_log};

// The code and message of a plugin error, released as the core releases it.
struct Outcome {
    int32_t code = BRAIN_OK;
    std::string message;
};

Outcome take(const brain_plugin_api& api, brain_error* error) {
    Outcome out;
    if (!error) return out;
    out.code = api.error_code(error);
    out.message = api.error_message(error);
    api.error_destroy(error);
    return out;
}

// A complete descriptor of one parameter; `behaviour` travels in the config's seed.
struct Desc {
    float parameter = 2.0f;
    brain_train_config config{sizeof(brain_train_config), 1, 1, 0, 0};
    brain_session_desc desc{};
    explicit Desc(Behaviour behaviour) {
        config.seed = static_cast<std::uint64_t>(behaviour);
        desc.struct_size = sizeof(desc);
        desc.config = &config;
        desc.parameters = &parameter;
        desc.parameter_count = 1;
    }
};

} // namespace

TEST_CASE("plugin_table fills every entry and the versions and strings from the backend class", "[core]") {
    const brain_plugin_api* table = brain::sdk::plugin_table<SchedulableBackend>();
    REQUIRE(table != nullptr);
    CHECK(table == brain::sdk::plugin_table<SchedulableBackend>()); // one static table
    CHECK(g_description_calls == 1);
    CHECK(table->struct_size == sizeof(brain_plugin_api));
    CHECK(table->abi_major == BRAIN_ABI_VERSION_MAJOR);
    CHECK(table->abi_minor == BRAIN_ABI_VERSION_MINOR);
    CHECK(std::string(table->name) == "schedulable");
    CHECK(std::string(table->version) == "2.3.4");
    CHECK(std::string(table->description) == "built at run time");
    for (const void* entry :
         {reinterpret_cast<const void*>(table->error_code), reinterpret_cast<const void*>(table->error_message),
          reinterpret_cast<const void*>(table->error_destroy), reinterpret_cast<const void*>(table->initialize),
          reinterpret_cast<const void*>(table->device_count), reinterpret_cast<const void*>(table->probe),
          reinterpret_cast<const void*>(table->session_open),
          reinterpret_cast<const void*>(table->session_train_epoch),
          reinterpret_cast<const void*>(table->session_checkpoint),
          reinterpret_cast<const void*>(table->session_stats), reinterpret_cast<const void*>(table->session_close),
          reinterpret_cast<const void*>(table->session_set_learning_rate)})
        CHECK(entry != nullptr);
}

TEST_CASE("plugin_table leaves an optional entry null when the session does not provide it", "[core]") {
    const brain_plugin_api* table = brain::sdk::plugin_table<FixedBackend>();
    REQUIRE(table != nullptr);
    CHECK(std::string(table->description) == "a fixed learning rate");
    CHECK(table->session_set_learning_rate == nullptr);
    CHECK(table->session_train_epoch != nullptr);
}

TEST_CASE("plugin_table's session_train_epochs reports the epochs trained, also when one fails", "[core]") {
    CHECK(brain::sdk::plugin_table<FixedBackend>()->session_train_epochs == nullptr);
    CHECK(brain::sdk::plugin_table<SchedulableBackend>()->session_train_epochs == nullptr);
    const brain_plugin_api& api = *brain::sdk::plugin_table<MultiEpochBackend>();
    REQUIRE(api.session_train_epochs != nullptr);
    Desc d(Behaviour::Train);
    brain_session* session = nullptr;
    REQUIRE(take(api, api.session_open(&d.desc, &session)).code == BRAIN_OK);
    float losses[8] = {};
    std::uint64_t trained = 99;
    // The parameter starts at 2 and each epoch takes 0.5 off: 1.5, 1, 0.5, then 0, -0.5, -1, -1.5 (diverged).
    REQUIRE(take(api, api.session_train_epochs(session, 3, losses, &trained)).code == BRAIN_OK);
    CHECK(trained == 3);
    CHECK(losses[0] == 1.5f);
    CHECK(losses[1] == 1.0f);
    CHECK(losses[2] == 0.5f);
    const Outcome none = take(api, api.session_train_epochs(session, 0, losses, &trained));
    CHECK(none.code == BRAIN_ERR_INVALID_ARGUMENT);
    CHECK(none.message.find("0 epochs") != std::string::npos);
    CHECK(trained == 0);
    CHECK(take(api, api.session_train_epochs(session, 1, losses, nullptr)).code == BRAIN_ERR_INVALID_ARGUMENT);
    CHECK(take(api, api.session_train_epochs(session, 1, nullptr, &trained)).code == BRAIN_ERR_INVALID_ARGUMENT);
    const Outcome diverged = take(api, api.session_train_epochs(session, 8, losses, &trained));
    CHECK(diverged.code == BRAIN_ERR_NUMERICAL);
    CHECK(diverged.message == "epoch 3 diverged");
    CHECK(trained == 3); // 0, -0.5 and -1 were trained and written; -1.5 failed
    CHECK(losses[0] == 0.0f);
    CHECK(losses[1] == -0.5f);
    CHECK(losses[2] == -1.0f);
    api.session_close(session);
}

TEST_CASE("plugin_table's entries forward to the backend and its sessions", "[core]") {
    const brain_plugin_api& api = *brain::sdk::plugin_table<SchedulableBackend>();
    g_logged.clear();
    REQUIRE(take(api, api.initialize(&k_host)).code == BRAIN_OK);
    CHECK(g_logged == std::vector<std::string>{"ready"});
    CHECK(brain::sdk::host() == &k_host);

    int32_t count = -1;
    REQUIRE(take(api, api.device_count(&count)).code == BRAIN_OK);
    CHECK(count == 2);

    brain_device_report report{};
    report.struct_size = sizeof(report);
    REQUIRE(take(api, api.probe(1, 64ull << 20, &report)).code == BRAIN_OK);
    CHECK(std::string(report.name) == "test device");
    CHECK(report.total_memory_mib == 64);
    CHECK(report.struct_size == sizeof(report));
    const Outcome missing = take(api, api.probe(5, 0, &report));
    CHECK(missing.code == BRAIN_ERR_DEVICE_NOT_FOUND);
    CHECK(missing.message == "no device 5");

    Desc d(Behaviour::Train);
    brain_session* session = nullptr;
    REQUIRE(take(api, api.session_open(&d.desc, &session)).code == BRAIN_OK);
    REQUIRE(session != nullptr);
    float loss = 0.0f;
    REQUIRE(take(api, api.session_train_epoch(session, &loss)).code == BRAIN_OK);
    CHECK(loss == 1.5f);
    REQUIRE(take(api, api.session_set_learning_rate(session, 1.0f)).code == BRAIN_OK);
    REQUIRE(take(api, api.session_train_epoch(session, &loss)).code == BRAIN_OK);
    CHECK(loss == 0.5f);
    float parameter = 0.0f;
    std::uint64_t step = 0;
    REQUIRE(take(api, api.session_checkpoint(session, &parameter, 1, nullptr, 0, &step)).code == BRAIN_OK);
    CHECK(parameter == 0.5f);
    CHECK(step == 2);
    const Outcome wrong = take(api, api.session_checkpoint(session, &parameter, 2, nullptr, 0, &step));
    CHECK(wrong.code == BRAIN_ERR_INVALID_ARGUMENT);
    CHECK(wrong.message == "expected 1 parameter, got 2");

    brain_session_stats stats{};
    stats.struct_size = sizeof(stats);
    REQUIRE(take(api, api.session_stats(session, &stats)).code == BRAIN_OK);
    CHECK(stats.epochs == 2);
    CHECK(stats.batches == 6);
    CHECK(stats.peak_allocated_bytes == 64);
    CHECK(stats.device_to_host_bytes == sizeof(float));
    CHECK(stats.budget_bytes == 1024);
    CHECK(stats.dataset_resident == 1);
    CHECK(stats.setup_time_ns > 0);
    CHECK(stats.training_time_ns > 0);
    api.session_close(session);
}

TEST_CASE("plugin_table's entries turn every exception into an error with its code", "[core]") {
    const brain_plugin_api& api = *brain::sdk::plugin_table<SchedulableBackend>();
    int unrelated = 0;
    brain_session* session = reinterpret_cast<brain_session*>(&unrelated); // must be overwritten with null
    Desc refused(Behaviour::RefuseOpen);
    const Outcome open = take(api, api.session_open(&refused.desc, &session));
    CHECK(open.code == BRAIN_ERR_BUDGET_EXCEEDED);
    CHECK(open.message == "no room for 7 rows");
    CHECK(session == nullptr);

    float loss = 0.0f;
    Desc std_error(Behaviour::ThrowStd);
    REQUIRE(take(api, api.session_open(&std_error.desc, &session)).code == BRAIN_OK);
    const Outcome failure = take(api, api.session_train_epoch(session, &loss));
    CHECK(failure.code == BRAIN_ERR_PLUGIN_FAILURE);
    CHECK(failure.message == "unexpected plugin failure: disk on fire");
    api.session_close(session);

    Desc no_memory(Behaviour::ThrowBadAlloc);
    REQUIRE(take(api, api.session_open(&no_memory.desc, &session)).code == BRAIN_OK);
    CHECK(take(api, api.session_train_epoch(session, &loss)).code == BRAIN_ERR_ALLOCATION_FAILED);
    api.session_close(session);

    const brain_plugin_api& fixed = *brain::sdk::plugin_table<FixedBackend>();
    int32_t count = 7;
    const Outcome none = take(fixed, fixed.device_count(&count));
    CHECK(none.code == BRAIN_ERR_DRIVER_UNAVAILABLE);
    CHECK(count == 0); // the ABI's "no devices", whatever the caller's variable held
}

TEST_CASE("plugin_table's entries refuse null pointers with InvalidArgument naming the entry", "[core]") {
    const brain_plugin_api& api = *brain::sdk::plugin_table<SchedulableBackend>();
    float loss = 0.0f;
    const Outcome no_session = take(api, api.session_train_epoch(nullptr, &loss));
    CHECK(no_session.code == BRAIN_ERR_INVALID_ARGUMENT);
    CHECK(no_session.message == "session_train_epoch was given a null session");
    CHECK(take(api, api.device_count(nullptr)).message == "device_count was given a null output pointer");
    CHECK(take(api, api.initialize(nullptr)).code == BRAIN_ERR_INVALID_ARGUMENT);
    CHECK(take(api, api.session_open(nullptr, nullptr)).code == BRAIN_ERR_INVALID_ARGUMENT);
    brain_session* session = nullptr;
    CHECK(take(api, api.session_open(nullptr, &session)).code == BRAIN_ERR_INVALID_ARGUMENT);
    CHECK(take(api, api.session_stats(nullptr, nullptr)).code == BRAIN_ERR_INVALID_ARGUMENT);
    CHECK(take(api, api.session_set_learning_rate(nullptr, 0.1f)).code == BRAIN_ERR_INVALID_ARGUMENT);
    api.session_close(nullptr); // the ABI's no-op
}

TEST_CASE("SessionCounters time phases and count work and keep the peak", "[core]") {
    brain::sdk::SessionCounters counters;
    try {
        const auto timer = counters.time(Phase::Checkpoint);
        std::this_thread::sleep_for(std::chrono::milliseconds(2));
        throw std::runtime_error("interrupted");
    } catch (const std::runtime_error&) {
    }
    counters.add_time(Phase::Setup, std::chrono::nanoseconds(123));
    counters.allocated(100);
    counters.allocated(50);
    counters.released(120);
    counters.allocated(60);  // 90 now, below the peak
    counters.released(1000); // never below zero
    counters.observe_peak(140);
    counters.count_epoch();
    counters.count_batches(4);
    counters.moved_to_device(10);
    counters.moved_to_host(3);

    brain::sdk::SessionFacts facts;
    facts.dataset_resident = false;
    facts.precision = BRAIN_PRECISION_TF32;
    facts.dataset_bytes = 11;
    facts.workspace_bytes = 12;
    facts.budget_bytes = 13;
    const brain_session_stats s = counters.stats(facts);
    CHECK(s.struct_size == sizeof(s));
    CHECK(s.checkpoint_time_ns >= 2'000'000); // the exception did not lose the time
    CHECK(s.setup_time_ns == 123);
    CHECK(s.training_time_ns == 0);
    CHECK(s.peak_allocated_bytes == 150);
    CHECK(s.epochs == 1);
    CHECK(s.batches == 4);
    CHECK(s.host_to_device_bytes == 10);
    CHECK(s.device_to_host_bytes == 3);
    CHECK(s.dataset_resident == 0);
    CHECK(s.precision == BRAIN_PRECISION_TF32);
    CHECK(s.dataset_bytes == 11);
    CHECK(s.workspace_bytes == 12);
    CHECK(s.budget_bytes == 13);
}

TEST_CASE("largest_batch_within finds the largest batch whose bytes fit the budget", "[core]") {
    const auto bytes = [](std::size_t rows) { return std::uint64_t{1000} + 24 * rows; };
    CHECK(brain::sdk::largest_batch_within(1000 + 24 * 37, 256, bytes) == 37);
    CHECK(brain::sdk::largest_batch_within(1000 + 24 * 37 + 23, 256, bytes) == 37);
    CHECK(brain::sdk::largest_batch_within(1 << 20, 256, bytes) == 256); // capped by the largest batch
    CHECK(brain::sdk::largest_batch_within(1023, 256, bytes) == 0);      // not even one row
}

TEST_CASE("plugin_table describes a backend without capabilities() by the ABI 1.0 set", "[core]") {
    const brain_plugin_api* table = brain::sdk::plugin_table<FixedBackend>();
    REQUIRE(table->capabilities != nullptr);
    brain_capabilities caps{};
    caps.struct_size = sizeof(caps);
    REQUIRE(take(*table, table->capabilities(&caps)).code == BRAIN_OK);
    CHECK(caps.activations == brain::sdk::abi_1_0_activations);
    CHECK(caps.losses == brain::sdk::abi_1_0_losses);
    CHECK(caps.optimizers == brain::sdk::abi_1_0_optimizers);
    CHECK(caps.precisions == brain::sdk::capability_bit(BRAIN_PRECISION_FLOAT32));
    CHECK(caps.features == 0);
    CHECK(caps.max_devices == 1);
    // A caller with an older, smaller struct gets only what it knows.
    brain_capabilities small{};
    small.struct_size = offsetof(brain_capabilities, optimizers);
    REQUIRE(take(*table, table->capabilities(&small)).code == BRAIN_OK);
    CHECK(small.losses == brain::sdk::abi_1_0_losses);
    CHECK(small.optimizers == 0);
}

TEST_CASE("refuse_undeclared names the first feature outside the capabilities", "[core]") {
    brain::sdk::SessionPlan plan;
    brain::sdk::LayerPlan hidden, output;
    hidden.activation = BRAIN_ACT_GELU;
    output.activation = BRAIN_ACT_SOFTMAX;
    plan.layers = {hidden, output};
    plan.loss = BRAIN_LOSS_CATEGORICAL_CROSS_ENTROPY;
    plan.optimizer.kind = BRAIN_OPT_ADAMW;
    plan.precision = BRAIN_PRECISION_BF16;
    brain_capabilities caps = brain::sdk::abi_1_0_capabilities();
    CHECK_NOTHROW([&] {
        caps.precisions = brain::sdk::all_precisions;
        brain::sdk::refuse_undeclared(caps, plan, "the test backend");
    }());
    const auto refusal = [&]() -> std::string {
        try {
            brain::sdk::refuse_undeclared(caps, plan, "the test backend");
        } catch (const Failure& f) {
            CHECK(f.code() == BRAIN_ERR_UNSUPPORTED);
            return f.what();
        }
        return "accepted";
    };
    caps.precisions = brain::sdk::abi_1_0_precisions;
    CHECK(refusal().find("the test backend does not compute in bf16") == 0);
    caps.optimizers &= ~brain::sdk::capability_bit(BRAIN_OPT_ADAMW);
    CHECK(refusal().find("does not run the adamw optimizer") != std::string::npos);
    caps.activations &= ~brain::sdk::capability_bit(BRAIN_ACT_GELU);
    brain::sdk::copy_string(caps.notes, "no erf here");
    CHECK(refusal() == "the test backend does not run the gelu activation (layer 0) (no erf here); use another "
                       "activation, or a backend whose capabilities list gelu");
}

TEST_CASE("the SDK's memory estimate is the core's, byte for byte", "[core]") {
    const brain::Dataset data(brain::Matrix(40, 6, 0.25f), brain::Matrix(40, 3, 1.0f / 3.0f)); // softmax targets
    const brain::Network networks[] = {
        brain::Network::builder().input_size(6).dense(3, brain::Activation::Linear).build(),
        brain::Network::builder()
            .input_size(6)
            .dense(33, brain::Activation::Gelu)
            .dense(17, brain::Activation::Tanh)
            .dense(3, brain::Activation::Softmax)
            .optimizer(brain::Optimizer::sgd(0.1f, 0.9f))
            .build(),
    };
    for (const auto& network : networks) {
        for (std::uint32_t batch : {1u, 7u, 40u}) {
            const brain::SessionDescriptor desc(network, data, brain::TrainConfig{1, batch, true, 1},
                                                brain::TrainingBackend::plugin("any", 0, 1));
            const brain::sdk::SessionPlan plan = brain::sdk::plan_session(desc.desc());
            CHECK(brain::sdk::estimate_tensor_bytes(plan, batch) ==
                  brain::estimate_tensor_memory_bytes(network, batch));
            // 4 bytes x (4 x parameters + B x (inputs + outputs + 3 x layer widths)) + 64 KiB, as documented.
            std::uint64_t widths = 0;
            for (const auto& layer : network.layers()) widths += layer.outputs;
            CHECK(brain::sdk::estimate_tensor_bytes(plan, batch) ==
                  4 * (4 * network.parameter_count() + batch * (6 + 3 + 3 * widths)) + 65536);
        }
        const brain::SessionDescriptor desc(network, data, brain::TrainConfig{1, 8, true, 1},
                                            brain::TrainingBackend::plugin("any", 0, 1));
        const brain::sdk::SessionPlan plan = brain::sdk::plan_session(desc.desc());
        for (std::uint64_t budget : {0ull, 65536ull, 70000ull, 1ull << 20, 1ull << 30})
            CHECK(brain::sdk::estimate_largest_batch(plan, budget) == brain::largest_batch_within(network, budget));
    }
}

TEST_CASE("plan_budget applies the residency rule: the data set only where the tensors leave room", "[core]") {
    const brain::Network network = brain::Network::builder()
                                       .input_size(16)
                                       .dense(16, brain::Activation::Relu)
                                       .dense(2, brain::Activation::Linear)
                                       .build();
    const brain::Dataset data(brain::Matrix(1000, 16, 0.5f), brain::Matrix(1000, 2, 0.5f));
    const auto plan_under = [&](std::uint64_t budget_mib) {
        const brain::SessionDescriptor desc(network, data, brain::TrainConfig{1, 100, true, 1},
                                            brain::TrainingBackend::plugin("any", 0, budget_mib));
        return brain::sdk::plan_session(desc.desc());
    };
    const std::uint64_t data_bytes = 4ull * 1000 * (16 + 2);
    auto plan = plan_under(0); // no budget: everything resident
    auto budget = brain::sdk::plan_budget(plan);
    CHECK(budget.fits);
    CHECK(budget.dataset_resident);
    CHECK(budget.dataset_bytes == data_bytes);
    CHECK(budget.tensor_bytes == brain::estimate_tensor_memory_bytes(network, 100));
    plan = plan_under(1); // 1 MiB holds the tensors (~100 KiB) and the data set (72 KB)
    budget = brain::sdk::plan_budget(plan);
    CHECK(budget.fits);
    CHECK(budget.dataset_resident);
    CHECK(budget.largest_batch == brain::largest_batch_within(network, 1 << 20));
    // What the tensors leave decides, not the data set alone.
    CHECK_FALSE(
        brain::sdk::dataset_resident_within(budget.tensor_bytes + data_bytes - 1, budget.tensor_bytes, data_bytes));
    CHECK(brain::sdk::dataset_resident_within(budget.tensor_bytes + data_bytes, budget.tensor_bytes, data_bytes));
}

TEST_CASE("a host backend's probe allocates a small block, never the whole budget", "[core]") {
    CHECK(brain::sdk::host_allocation_bytes(8192ull << 20) == 64ull << 20);
    CHECK(brain::sdk::host_allocation_bytes(16ull << 20) == 16ull << 20);
    CHECK(brain::sdk::host_allocation_label(8192ull << 20) == "64 MiB of host memory, not the whole budget");
    CHECK(brain::sdk::host_allocation_label(16ull << 20) == "16 MiB of host memory (the budget)");
    std::string notes;
    CHECK(brain::sdk::host_allocation_test(1ull << 20, -1, notes));
    CHECK(notes.empty());
    // A budget beyond the available memory fails without allocating, saying why.
    CHECK_FALSE(brain::sdk::host_allocation_test(8192ull << 20, 100, notes));
    CHECK(notes.find("exceeds the 100 MiB of available host memory") != std::string::npos);
}
