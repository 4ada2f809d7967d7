// libbrain_pinlog.so: a test plugin that pins host memory (ABI 1.3) and predicts linear networks, refusing rows
// that are not inside memory pinned through it and, as it declares (BRAIN_FEATURE_PREDICT_CHECKS_INPUTS), rows
// with a NaN or infinity. It appends each pin, unpin and run to the file named by
// BRAIN_PINLOG_FILE, so that the tests see which rows the core handed over and that every pin was undone.
#include <brain/backend_capabilities.hpp>
#include <brain/plugin_sdk.hpp>
#include <brain/plugin_table.hpp>
#include <brain/session_plan.hpp>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <mutex>
#include <vector>

namespace {

std::mutex g_mutex;
std::map<const char*, std::uint64_t> g_pins; // address -> bytes, one entry per pin (counted pins are not needed)

void log_line(const char* what, const void* address, std::uint64_t value) {
    const char* path = std::getenv("BRAIN_PINLOG_FILE");
    if (!path) return;
    if (std::FILE* file = std::fopen(path, "a")) {
        std::fprintf(file, "%s %p %llu\n", what, address, static_cast<unsigned long long>(value));
        std::fclose(file);
    }
}

bool pinned(const void* memory, std::uint64_t bytes) {
    const auto* p = static_cast<const char*>(memory);
    for (const auto& [begin, size] : g_pins)
        if (p >= begin && bytes <= size && static_cast<std::uint64_t>(p - begin) <= size - bytes) return true;
    return false;
}

struct Session {
    explicit Session(const brain_session_desc&) {
        throw brain::sdk::Failure(BRAIN_ERR_UNSUPPORTED, "the pinlog test plugin does not train");
    }
    float train_epoch() { return 0.0f; }
    void checkpoint(float*, std::uint64_t, float*, std::uint64_t, std::uint64_t*) {}
    brain_session_stats stats() const { return {}; }
};

class Predictor {
public:
    explicit Predictor(const brain_predictor_desc& desc) : m_plan(brain::sdk::plan_predictor(desc)) {
        for (const brain::sdk::LayerPlan& layer : m_plan.layers)
            if (layer.activation != BRAIN_ACT_LINEAR)
                throw brain::sdk::Failure(BRAIN_ERR_UNSUPPORTED,
                                          "the pinlog test plugin predicts linear layers only");
        m_parameters.assign(desc.parameters, desc.parameters + m_plan.parameter_count);
    }

    void run(const float* inputs, std::uint64_t rows, float* outputs) {
        {
            const std::lock_guard<std::mutex> lock(g_mutex);
            log_line("run", inputs, rows);
            if (!pinned(inputs, rows * m_plan.input_width * sizeof(float)))
                throw brain::sdk::Failure(BRAIN_ERR_INVALID_ARGUMENT,
                                          "pinlog: predictor_run was given rows outside pinned memory");
        }
        for (std::uint64_t i = 0; i < rows * m_plan.input_width; ++i)
            if (!std::isfinite(inputs[i]))
                throw brain::sdk::Failure(BRAIN_ERR_INVALID_DATA, "pinlog: an input is not finite");
        std::vector<double> x, y;
        for (std::uint64_t r = 0; r < rows; ++r) {
            x.assign(inputs + r * m_plan.input_width, inputs + (r + 1) * m_plan.input_width);
            for (const brain::sdk::LayerPlan& layer : m_plan.layers) {
                y.assign(layer.outputs, 0.0);
                for (std::size_t o = 0; o < layer.outputs; ++o) {
                    double sum = m_parameters[layer.bias_offset + o];
                    for (std::size_t i = 0; i < layer.inputs; ++i)
                        sum += static_cast<double>(m_parameters[layer.weight_offset + o * layer.inputs + i]) * x[i];
                    y[o] = sum;
                }
                x.swap(y);
            }
            for (std::size_t o = 0; o < m_plan.output_width; ++o)
                outputs[r * m_plan.output_width + o] = static_cast<float>(x[o]);
        }
    }

private:
    brain::sdk::PredictorPlan m_plan;
    std::vector<float> m_parameters;
};

struct PinLogBackend {
    static constexpr const char* name = "pinlog";
    static constexpr const char* version = "0.0.0-test";
    static constexpr const char* description = "test plugin: pins host memory and predicts linear networks";
    using Session = ::Session;
    using Predictor = ::Predictor;

    static brain_capabilities capabilities() {
        brain_capabilities caps = brain::sdk::abi_1_0_capabilities();
        caps.features |= BRAIN_FEATURE_PREDICT_CHECKS_INPUTS;
        return caps;
    }
    static std::int32_t device_count() { return 1; }
    static brain_device_report probe(std::int32_t, std::uint64_t) {
        throw brain::sdk::Failure(BRAIN_ERR_UNSUPPORTED, "the pinlog test plugin does not probe");
    }
    static void pin_host_memory(void* memory, std::uint64_t bytes) {
        const std::lock_guard<std::mutex> lock(g_mutex);
        g_pins.emplace(static_cast<const char*>(memory), bytes);
        log_line("pin", memory, bytes);
    }
    static void unpin_host_memory(void* memory) noexcept {
        const std::lock_guard<std::mutex> lock(g_mutex);
        const auto found = g_pins.find(static_cast<const char*>(memory));
        if (found == g_pins.end()) return;
        g_pins.erase(found);
        log_line("unpin", memory, 0);
    }
};

} // namespace

extern "C" BRAIN_PLUGIN_EXPORT const brain_plugin_api* brain_plugin_get_api(void) {
    return brain::sdk::plugin_table<PinLogBackend>();
}
