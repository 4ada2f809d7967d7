// Compiled only with BRAIN_TEST_HOOKS=ON (test_hooks.hpp).
#include "test_hooks.hpp"

#include "device_scalars.h"

#include <algorithm>
#include <brain/plugin_sdk.hpp>
#include <cctype>
#include <cstdlib>
#include <cstring>
#include <mutex>

namespace brain::cuda {

namespace {

bool variable_is(const char* name, const char* value) noexcept {
    const char* set = std::getenv(name);
    return set && std::strcmp(set, value) == 0;
}

// The whole count 1 to `most` that variable `name` holds; 0 when it is unset or holds anything else.
unsigned count_variable(const char* name, unsigned long most) noexcept {
    const char* value = std::getenv(name);
    if (!value) return 0;
    char* end = nullptr;
    const unsigned long n = std::strtoul(value, &end, 10);
    return end != value && *end == '\0' && n >= 1 && n <= most ? static_cast<unsigned>(n) : 0u;
}

bool is_identifier(const std::string& name) {
    return !name.empty() && !std::isdigit(static_cast<unsigned char>(name[0])) &&
           std::all_of(name.begin(), name.end(),
                       [](char ch) { return std::isalnum(static_cast<unsigned char>(ch)) || ch == '_'; });
}

} // namespace

bool inject_fault(Fault fault) noexcept {
    const char* spec = std::getenv("BRAIN_CUDA_TEST_FAULT");
    if (!spec || !*spec) return false;
    static std::mutex mutex;
    static std::string last;
    static unsigned long counts[3] = {0, 0, 0};
    std::lock_guard lock(mutex);
    try {
        if (last != spec) {
            last = spec;
            counts[0] = counts[1] = counts[2] = 0;
        }
    } catch (...) {
        return false;
    }
    static const char* const names[3] = {"alloc:", "gemm:", "device:"};
    const char* name = names[static_cast<int>(fault)];
    if (std::strncmp(spec, name, std::strlen(name)) != 0) return false;
    const unsigned long wanted = std::strtoul(spec + std::strlen(name), nullptr, 10);
    return ++counts[static_cast<int>(fault)] == wanted;
}

std::string test_kernel_defines() {
    const char* defines = std::getenv("BRAIN_CUDA_KERNEL_DEFINES");
    if (!defines) return {};
    const std::string list = defines;
    std::string lines;
    for (std::size_t at = 0; at <= list.size();) {
        const std::size_t end = std::min(list.find(',', at), list.size());
        const std::string item = list.substr(at, end - at);
        at = end + 1;
        if (item.empty()) continue;
        const std::size_t eq = item.find('=');
        const std::string name = item.substr(0, eq);
        if (!is_identifier(name) || item.find('\n') != std::string::npos)
            throw sdk::Failure(BRAIN_ERR_INVALID_ARGUMENT, "BRAIN_CUDA_KERNEL_DEFINES: expected NAME=VALUE items "
                                                           "separated by commas, found '" +
                                                               item + "'; unset it or fix that item");
        lines += "#define ";
        lines += name;
        if (eq != std::string::npos) {
            lines += ' ';
            lines.append(item, eq + 1, std::string::npos);
        }
        lines += '\n';
    }
    return lines;
}

std::string test_kernel_suffix() {
    const char* suffix = std::getenv("BRAIN_CUDA_TEST_KERNEL_SUFFIX");
    std::string text;
    if (suffix) {
        text += '\n';
        text += suffix;
        text += '\n';
    }
    return text;
}

bool test_withhold_head_shares() noexcept {
    return variable_is("BRAIN_CUDA_TEST_HEAD_SHARES", "0");
}

bool test_withhold_head_rows() noexcept {
    return variable_is("BRAIN_CUDA_TEST_HEAD_ROWS", "0");
}

bool test_withhold_tile_heights() noexcept {
    return variable_is("BRAIN_CUDA_TEST_TILE_HEIGHTS", "0");
}

bool test_withhold_cluster_epoch() noexcept {
    return variable_is("BRAIN_CUDA_TEST_CLUSTER_EPOCH", "0");
}

unsigned test_cluster_blocks() noexcept {
    const char* value = std::getenv("BRAIN_CUDA_TEST_CLUSTER_BLOCKS");
    if (!value) return 0;
    const std::string text = value;
    return text == "4" ? 4u : text == "8" ? 8u : text == "16" ? 16u : 0u;
}

unsigned test_max_clusters() noexcept {
    return count_variable("BRAIN_CUDA_TEST_CLUSTERS", 64);
}

bool test_cluster_global_grads() noexcept {
    return variable_is("BRAIN_CUDA_TEST_CLUSTER_GRADS", "global");
}

unsigned test_fused_grid() noexcept {
    return count_variable("BRAIN_CUDA_TEST_FUSED_GRID", 1024);
}

unsigned test_predict_parts() noexcept {
    const char* value = std::getenv("BRAIN_CUDA_TEST_PREDICT_PARTS");
    if (!value || value[0] < '1' || value[0] > '8' || value[1] != '\0') return 0;
    return static_cast<unsigned>(value[0] - '0');
}

bool test_predict_untuned() noexcept {
    return variable_is("BRAIN_CUDA_TEST_PREDICT_TUNE", "0");
}

bool test_predict_timeline() noexcept {
    return variable_is("BRAIN_CUDA_TEST_PREDICT_TIMELINE", "1");
}

bool test_fused_profile_requested() noexcept {
    return variable_is("BRAIN_CUDA_FUSED_PROFILE", "1");
}

std::string fused_profile_text(const std::uint64_t* stamps, std::size_t layers) {
    // Stamps 0..2 frame two empty barriers; then one per phase: each layer forward, the loss, each layer backward.
    const auto us = [stamps](std::size_t slot) {
        return std::to_string((stamps[slot + 1] - stamps[slot]) / 1000.0);
    };
    std::string text =
        "fused epoch profile (microseconds, step 2): barrier " + std::to_string((stamps[2] - stamps[0]) / 2000.0);
    std::size_t slot = 2;
    for (std::size_t l = 0; l < layers; ++l, ++slot) text += ", forward " + std::to_string(l) + " " + us(slot);
    text += ", loss " + us(slot);
    ++slot;
    for (std::size_t l = layers; l-- > 0; ++slot) text += ", backward " + std::to_string(l) + " " + us(slot);
    text += "; step " + std::to_string((stamps[slot] - stamps[2]) / 1000.0);
    // The loss phase's parts where the kernel stamps them (BRAIN_FUSED_LOSS_STAMPS): µs from the phase's start (the
    // stamp after the barrier before it) to the end of each part, the SM's cycles scaled by the global timer, and
    // the SM's clock that scale implies.
    // Likewise the parts of a forward tile where the kernel stamps them (BRAIN_FUSED_TILE_STAMPS, whose last slot
    // holds 1000 + the stamped layer): µs from the start of that layer's forward phase.
    const std::uint64_t* timer = stamps + BRAIN_FUSED_LOSS_STAMP_SLOT; // at the phase's entry and exit (ns)
    const std::uint64_t* clock = timer + 2;                            // at the end of each part (cycles)
    const std::uint64_t tile_mark = stamps[BRAIN_FUSED_PROFILE_SLOTS - 1];
    const bool tile = tile_mark >= 1000 && tile_mark < 1000 + layers;
    const std::size_t parts = tile ? 7 : BRAIN_FUSED_PROFILE_SLOTS - BRAIN_FUSED_LOSS_STAMP_SLOT - 2;
    const std::size_t exit_part = tile ? 6 : 7;
    const std::string name = tile ? ", in-tile " : ", in-loss ";
    if (timer[0] != 0 && timer[1] > timer[0] && clock[exit_part] > clock[0] && layers > 0) {
        const double ns_per_cycle = double(timer[1] - timer[0]) / double(clock[exit_part] - clock[0]);
        const std::uint64_t start = stamps[2 + (tile ? tile_mark - 1000 : layers - 1)];
        const double entry = (double(timer[0]) - double(start)) / 1000.0;
        for (std::size_t part = 0; part < parts; ++part)
            if (clock[part] != 0)
                text += name + std::to_string(part) + " " +
                        std::to_string(entry + double(clock[part] - clock[0]) * ns_per_cycle / 1000.0);
        text += name + "MHz " + std::to_string(1000.0 / ns_per_cycle);
    }
    return text;
}

std::string cluster_profile_text(const std::uint64_t* stamps) {
    // One stamp at the step's start, then after each part of it.
    const char* parts[] = {"forward", "loss", "backward", "barrier", "parameters", "barrier"};
    std::string text = "cluster epoch profile (microseconds, step 2):";
    for (std::size_t i = 0; i < 6; ++i)
        text += std::string(i ? ", " : " ") + parts[i] + " " + std::to_string((stamps[i + 1] - stamps[i]) / 1000.0);
    return text + "; step " + std::to_string((stamps[6] - stamps[0]) / 1000.0);
}

} // namespace brain::cuda
