// libFuzzer target: the core's validation of what a plugin hands it — the function table (sizes, versions, null
// entries, names), device reports and session stats — from arbitrary bytes. Function pointers are never called
// by validation; they are set to a dummy or null from the input. Every outcome must be a value or brain::Error.
#include "plugin_validation.hpp"

#include <brain/error.hpp>

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <vector>

namespace {
void dummy() {}
} // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    if (size < 2) return 0;
    const std::uint8_t mode = data[0];
    data += 1;
    size -= 1;
    try {
        if (mode % 3 == 0) {
            // The table as raw bytes, at least as large as the core's struct so reads stay in bounds, with each
            // pointer slot replaced by a valid dummy or null (bit i of the input decides), and strings pointed at
            // a NUL-terminated copy of the tail.
            std::vector<std::uint8_t> bytes(sizeof(brain_plugin_api) + 64, 0);
            std::memcpy(bytes.data(), data, std::min(size, bytes.size()));
            brain_plugin_api table;
            std::memcpy(&table, bytes.data(), sizeof(table));
            table.struct_size %= sizeof(brain_plugin_api) + 64;
            std::string name(reinterpret_cast<const char*>(data), std::min<std::size_t>(size, 8));
            table.name = (bytes[8] & 1) ? name.c_str() : ((bytes[8] & 2) ? "cpu" : nullptr);
            table.version = (bytes[9] & 1) ? name.c_str() : nullptr;
            table.description = nullptr;
            void (*fn)() = &dummy;
            const std::size_t first = offsetof(brain_plugin_api, error_code);
            for (std::size_t off = first, i = 0; off + sizeof(void*) <= sizeof(table); off += sizeof(void*), ++i) {
                void* value = (bytes[10 + (i % 16)] >> (i % 8)) & 1 ? reinterpret_cast<void*>(fn) : nullptr;
                std::memcpy(reinterpret_cast<char*>(&table) + off, &value, sizeof(value));
            }
            brain::PluginRecord record;
            (void)brain::detail::validate_plugin_table(&table, "cpu", "fuzz", record);
        } else if (mode % 3 == 1) {
            brain_device_report report{};
            std::memcpy(&report, data, std::min(size, sizeof(report)));
            (void)brain::detail::report_from_plugin(report, "fuzz:0", "fuzz");
        } else {
            brain_session_stats stats{};
            std::memcpy(&stats, data, std::min(size, sizeof(stats)));
            (void)brain::detail::stats_from_plugin(stats, "fuzz", 8);
        }
    } catch (const brain::Error&) {
    }
    return 0;
}
