#include "plugin_validation.hpp"

#include "plugin_name.hpp"
#include "plugin_text.hpp"

#include <algorithm>
#include <brain/error.hpp>
#include <cstddef>
#include <cstring>

namespace brain::detail {

namespace {

// The functions every plugin must provide, by name, with their offsets in the table.
struct RequiredFunction {
    const char* name;
    std::size_t offset;
};
#define BRAIN_REQUIRED(field) RequiredFunction{#field, offsetof(brain_plugin_api, field)}
constexpr RequiredFunction k_required[] = {
    BRAIN_REQUIRED(error_code),   BRAIN_REQUIRED(error_message),       BRAIN_REQUIRED(error_destroy),
    BRAIN_REQUIRED(initialize),   BRAIN_REQUIRED(device_count),        BRAIN_REQUIRED(probe),
    BRAIN_REQUIRED(session_open), BRAIN_REQUIRED(session_train_epoch), BRAIN_REQUIRED(session_checkpoint),
    BRAIN_REQUIRED(session_stats), BRAIN_REQUIRED(session_close),
};
#undef BRAIN_REQUIRED

// Largest table a plugin may claim: a corrupt struct_size must not make the core read far past the table.
constexpr std::size_t k_max_table_size = 64 * 1024;

[[noreturn]] void fail(PluginRecord& record, ErrorCode code, const std::string& message) {
    record.stage = PluginStage::Abi;
    record.ok = false;
    record.error_code = static_cast<int>(code);
    record.message = message;
    throw Error(code, message);
}

// A function rather than an inline comparison: with the oldest minor at 0 the latter is a constant warning.
constexpr bool minor_too_old(std::uint32_t minor, std::uint32_t oldest) noexcept { return minor < oldest; }

} // namespace

brain_plugin_api validate_plugin_table(const brain_plugin_api* table, const std::string& requested_name,
                                       const std::string& where, PluginRecord& record) {
    const std::string stage = where + " failed to load at stage abi: ";
    if (!table) fail(record, ErrorCode::PluginLoadFailed, stage + BRAIN_PLUGIN_ENTRY_SYMBOL " returned NULL");
    const std::size_t version_end = offsetof(brain_plugin_api, abi_minor) + sizeof(uint32_t);
    if (table->struct_size < version_end || table->struct_size > k_max_table_size)
        fail(record, ErrorCode::PluginAbiMismatch,
             stage + "its function table claims " + std::to_string(table->struct_size) +
                 " bytes, which cannot be a brain_plugin_api (expected " + std::to_string(version_end) + " to " +
                 std::to_string(k_max_table_size) + ")");
    record.abi_major = table->abi_major;
    record.abi_minor = table->abi_minor;
    if (table->abi_major != BRAIN_ABI_VERSION_MAJOR ||
        minor_too_old(table->abi_minor, BRAIN_ABI_MIN_SUPPORTED_MINOR))
        fail(record, ErrorCode::PluginAbiMismatch,
             stage + "the plugin was built against ABI " + std::to_string(table->abi_major) + "." +
                 std::to_string(table->abi_minor) + ", this core speaks ABI " +
                 std::to_string(BRAIN_ABI_VERSION_MAJOR) + "." + std::to_string(BRAIN_ABI_VERSION_MINOR) +
                 " and accepts " + std::to_string(BRAIN_ABI_VERSION_MAJOR) + "." +
                 std::to_string(BRAIN_ABI_MIN_SUPPORTED_MINOR) +
                 " or newer of the same major; rebuild the plugin against this brain SDK");

    // Read only what both sides know; fields a plugin of an older minor lacks stay null.
    brain_plugin_api api{};
    std::memcpy(&api, table, std::min<std::size_t>(table->struct_size, sizeof(api)));
    api.struct_size = sizeof(api);
    for (const auto& required : k_required) {
        void* fn = nullptr;
        if (required.offset + sizeof(fn) > table->struct_size)
            fail(record, ErrorCode::PluginAbiMismatch,
                 stage + "its function table is too short: its struct_size " + std::to_string(table->struct_size) +
                     " ends before the required field " + required.name + " (which ends at byte " +
                     std::to_string(required.offset + sizeof(fn)) +
                     "); a table has at least every entry of ABI 1.0: rebuild the plugin against this brain SDK");
        std::memcpy(&fn, reinterpret_cast<const char*>(&api) + required.offset, sizeof(fn));
        if (!fn)
            fail(record, ErrorCode::PluginAbiMismatch,
                 stage + "required function " + required.name + " is missing (null) in its table");
    }
    // The predictor's three entries (ABI 1.2) only work together: a table with some of them is malformed.
    const bool open = api.predictor_open != nullptr, run = api.predictor_run != nullptr,
               close = api.predictor_close != nullptr;
    if ((open || run || close) && !(open && run && close))
        fail(record, ErrorCode::PluginAbiMismatch,
             stage + "its table has only some of the predictor entries (predictor_open " + (open ? "set" : "null") +
                 ", predictor_run " + (run ? "set" : "null") + ", predictor_close " + (close ? "set" : "null") +
                 "); a plugin provides all three or none");
    // Pinned memory is released only through the entry that pinned it (ABI 1.3): one without the other is
    // malformed.
    if ((api.host_memory_pin != nullptr) != (api.host_memory_unpin != nullptr))
        fail(record, ErrorCode::PluginAbiMismatch,
             stage + "its table has host_memory_" + (api.host_memory_pin ? "pin" : "unpin") +
                 " without host_memory_" + (api.host_memory_pin ? "unpin" : "pin") +
                 "; a plugin provides both or neither");
    const std::size_t name_end = offsetof(brain_plugin_api, name) + sizeof(const char*);
    // One byte past the longest backend name, so that a longer declared name does not compare equal when cut.
    const std::string declared =
        (table->struct_size >= name_end && api.name) ? plugin_text(api.name, k_max_plugin_name_bytes + 1) : "";
    if (declared != requested_name)
        fail(record, ErrorCode::PluginLoadFailed,
             stage + "the file is named for backend \"" + requested_name + "\" but the plugin calls itself \"" +
                 declared + "\"");
    record.version = plugin_text(api.version, 256);
    record.description = plugin_text(api.description, 1024);
    return api;
}

AcceleratorReport report_from_plugin(const brain_device_report& raw, const std::string& backend,
                                     const std::string& plugin) {
    const auto impossible = [&](const char* field, long long value) {
        BRAIN_THROW(ErrorCode::PluginFailure, "plugin \"", plugin, "\" returned an impossible device report: ",
                    field, " = ", value, "; report it to the plugin's authors");
    };
    if (raw.total_memory_mib < -1) impossible("total_memory_mib", raw.total_memory_mib);
    if (raw.free_memory_mib < -1) impossible("free_memory_mib", raw.free_memory_mib);
    if (raw.total_memory_mib > k_max_report_memory_mib)
        impossible("total_memory_mib (above 1 PiB)", raw.total_memory_mib);
    if (raw.free_memory_mib > k_max_report_memory_mib)
        impossible("free_memory_mib (above 1 PiB)", raw.free_memory_mib);
    if (raw.total_memory_mib >= 0 && raw.free_memory_mib > raw.total_memory_mib)
        impossible("free_memory_mib (above total_memory_mib)", raw.free_memory_mib);
    AcceleratorReport report;
    report.backend = backend;
    report.name = plugin_array_text(raw.name);
    report.revision = plugin_array_text(raw.revision);
    report.total_memory_mib = raw.total_memory_mib;
    if (raw.free_memory_mib >= 0) report.free_memory_mib = raw.free_memory_mib;
    report.gemm_available = raw.gemm_available != 0;
    report.kernel_available = raw.kernel_available != 0;
    report.allocation_test = raw.allocation_test != 0;
    report.notes = plugin_array_text(raw.notes);
    report.gemm_check = plugin_array_text(raw.gemm_check);
    report.kernel_check = plugin_array_text(raw.kernel_check);
    report.allocation_check = plugin_array_text(raw.allocation_check);
    return report;
}

AcceleratorStats stats_from_plugin(const brain_session_stats& raw, const std::string& plugin,
                                   std::uint32_t session_devices) {
    if (raw.precision < BRAIN_PRECISION_FLOAT32 || raw.precision > BRAIN_PRECISION_BF16)
        BRAIN_THROW(ErrorCode::PluginFailure, "plugin \"", plugin, "\" returned session stats with precision ",
                    raw.precision, ", which is not a brain_precision (0 to 2); report it to the plugin's authors");
    // The core asks for one entry of per-device stats per device reported: more than the session has is refused
    // before that loop.
    if (raw.devices > session_devices)
        BRAIN_THROW(ErrorCode::PluginFailure, "plugin \"", plugin, "\" returned session stats for ", raw.devices,
                    " devices, but the session trains on ", session_devices,
                    " in this process; report it to the plugin's authors");
    AcceleratorStats s;
    s.peak_allocated_bytes = raw.peak_allocated_bytes;
    s.setup_time = std::chrono::nanoseconds(static_cast<std::int64_t>(std::min<std::uint64_t>(raw.setup_time_ns, INT64_MAX)));
    s.training_time = std::chrono::nanoseconds(static_cast<std::int64_t>(std::min<std::uint64_t>(raw.training_time_ns, INT64_MAX)));
    s.checkpoint_time =
        std::chrono::nanoseconds(static_cast<std::int64_t>(std::min<std::uint64_t>(raw.checkpoint_time_ns, INT64_MAX)));
    s.epochs = raw.epochs;
    s.batches = raw.batches;
    s.host_to_device_bytes = raw.host_to_device_bytes;
    s.device_to_host_bytes = raw.device_to_host_bytes;
    s.dataset_resident = raw.dataset_resident != 0;
    s.precision = static_cast<Precision>(raw.precision);
    s.dataset_bytes = raw.dataset_bytes;
    s.workspace_bytes = raw.workspace_bytes;
    s.budget_bytes = raw.budget_bytes;
    s.devices = raw.devices == 0 ? 1 : raw.devices; // 0: a plugin before ABI 1.2
    s.allreduce_bytes = raw.allreduce_bytes;
    s.allreduce_time = std::chrono::nanoseconds(
        static_cast<std::int64_t>(std::min<std::uint64_t>(raw.allreduce_time_ns, INT64_MAX)));
    // Printable ASCII only: the text reaches JSON and terminals, and a plugin's bytes are not trusted to be UTF-8.
    s.arithmetic.assign(raw.arithmetic, strnlen(raw.arithmetic, sizeof(raw.arithmetic)));
    for (char& c : s.arithmetic)
        if (c < 0x20 || c > 0x7e) c = '?';
    return s;
}

} // namespace brain::detail
