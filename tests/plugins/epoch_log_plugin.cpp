// libbrain_epochlog.so: a test plugin that trains several epochs a call (ABI 1.4 session_train_epochs). Each epoch
// takes the learning rate off every parameter and reports as its loss the epoch's number (over the model's life)
// plus one, so that the tests can tell which epochs ran and at which rate. It appends each call to the file named
// by BRAIN_EPOCHLOG_FILE ("epoch" or "epochs N"), and misbehaves on request, at the epoch number given:
//   BRAIN_EPOCHLOG_FAIL_AT    NUMERICAL from that epoch (session_train_epochs: the epochs before it trained)
//   BRAIN_EPOCHLOG_NAN_AT     a NaN loss for that epoch and no error, as a plugin may report divergence
//   BRAIN_EPOCHLOG_SHORT=1    session_train_epochs trains one epoch fewer than asked and reports no error
#include <brain/plugin_sdk.hpp>
#include <brain/plugin_table.hpp>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <limits>
#include <string>
#include <vector>

namespace {

void log_call(const std::string& line) {
    const char* path = std::getenv("BRAIN_EPOCHLOG_FILE");
    if (!path) return;
    if (std::FILE* file = std::fopen(path, "a")) {
        std::fprintf(file, "%s\n", line.c_str());
        std::fclose(file);
    }
}

// The epoch number a BRAIN_EPOCHLOG_* variable names, or none.
std::uint64_t epoch_of(const char* variable) {
    const char* value = std::getenv(variable);
    return value ? std::strtoull(value, nullptr, 10) : std::numeric_limits<std::uint64_t>::max();
}

class Session {
public:
    explicit Session(const brain_session_desc& desc)
        : m_parameters(desc.parameters, desc.parameters + desc.parameter_count),
          m_state(desc.optimizer_state, desc.optimizer_state + desc.optimizer_state_count),
          m_step(desc.optimizer_step), m_epoch(desc.first_epoch),
          m_batches((desc.dataset->rows + desc.config->batch_size - 1) / desc.config->batch_size),
          m_rate(desc.optimizer->learning_rate) {}

    float train_epoch() {
        log_call("epoch");
        return next_epoch();
    }
    void train_epochs(std::uint64_t count, float* losses, std::uint64_t& trained) {
        log_call("epochs " + std::to_string(count));
        const bool short_by_one = std::getenv("BRAIN_EPOCHLOG_SHORT") != nullptr;
        while (trained + (short_by_one ? 1 : 0) < count) {
            const float loss = next_epoch();
            losses[trained++] = loss;
            if (!std::isfinite(loss)) return; // the last epoch trained, as a failing session_train_epoch would be
        }
    }
    void set_learning_rate(float rate) { m_rate = rate; }
    void checkpoint(float* parameters, std::uint64_t parameter_count, float* state, std::uint64_t state_count,
                    std::uint64_t* step) {
        if (parameter_count != m_parameters.size() || state_count != m_state.size())
            brain::sdk::fail(BRAIN_ERR_INVALID_ARGUMENT, "epochlog: checkpoint sizes differ");
        std::copy(m_parameters.begin(), m_parameters.end(), parameters);
        std::copy(m_state.begin(), m_state.end(), state);
        *step = m_step;
    }
    brain_session_stats stats() const noexcept {
        brain_session_stats s{};
        s.epochs = m_epochs;
        s.batches = m_epochs * m_batches;
        return s;
    }

private:
    float next_epoch() {
        if (m_epoch == epoch_of("BRAIN_EPOCHLOG_FAIL_AT"))
            brain::sdk::fail(BRAIN_ERR_NUMERICAL, "epochlog: epoch ", m_epoch, " diverged");
        for (float& p : m_parameters) p -= m_rate;
        m_step += m_batches;
        ++m_epochs;
        const std::uint64_t epoch = m_epoch++;
        return epoch == epoch_of("BRAIN_EPOCHLOG_NAN_AT") ? std::nanf("") : static_cast<float>(epoch + 1);
    }

    std::vector<float> m_parameters, m_state;
    std::uint64_t m_step, m_epoch, m_batches, m_epochs = 0;
    float m_rate;
};

struct EpochLogBackend {
    static constexpr const char* name = "epochlog";
    static constexpr const char* version = "0.0.0-test";
    static constexpr const char* description = "test plugin: several epochs a call, logged";
    using Session = ::Session;
    static std::int32_t device_count() { return 1; }
    static brain_device_report probe(std::int32_t, std::uint64_t) { return {}; }
};

} // namespace

extern "C" BRAIN_PLUGIN_EXPORT const brain_plugin_api* brain_plugin_get_api(void) {
    return brain::sdk::plugin_table<EpochLogBackend>();
}
