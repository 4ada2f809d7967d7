#include "plugin_registry.hpp"

#include "capability_checks.hpp"
#include "elf_check.hpp"
#include "plugin_name.hpp"
#include "plugin_text.hpp"
#include "plugin_validation.hpp"

#include <algorithm>
#include <boost/dll/runtime_symbol_info.hpp>
#include <boost/dll/shared_library.hpp>
#include <cctype>
#include <cstddef>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <optional>
#include <set>
#include <spdlog/sinks/stdout_sinks.h>
#include <spdlog/spdlog.h>
#include <sstream>
#include <sys/stat.h>
#include <typeinfo>

namespace brain {

namespace {

constexpr const char* k_plugin_prefix = "libbrain_";
constexpr const char* k_plugin_suffix = ".so";

} // namespace

std::string_view to_string(PluginStage stage) noexcept {
    switch (stage) {
    case PluginStage::Search:
        return "search";
    case PluginStage::Open:
        return "open";
    case PluginStage::Symbol:
        return "symbol";
    case PluginStage::Abi:
        return "abi";
    case PluginStage::Initialize:
        return "initialize";
    case PluginStage::Devices:
        return "devices";
    case PluginStage::Ready:
        return "ready";
    }
    return "unknown";
}

std::string plugin_name_from_file(const std::filesystem::path& file) {
    const std::string base = file.filename().string();
    const std::size_t p = std::strlen(k_plugin_prefix), s = std::strlen(k_plugin_suffix);
    if (base.size() <= p + s || base.compare(0, p, k_plugin_prefix) != 0 ||
        base.compare(base.size() - s, s, k_plugin_suffix) != 0)
        return {};
    return base.substr(p, base.size() - p - s);
}

namespace detail {

namespace {

// libbrain_<anything>.so, also with nothing between (libbrain_.so), which discovery reports as misnamed.
bool is_plugin_file_name(const std::string& base) {
    const std::size_t p = std::strlen(k_plugin_prefix), s = std::strlen(k_plugin_suffix);
    return base.size() >= p + s && base.compare(0, p, k_plugin_prefix) == 0 &&
           base.compare(base.size() - s, s, k_plugin_suffix) == 0;
}

// BRAIN_LOG_LEVEL in any case; an unknown value is reported once and leaves the default (warning) in place,
// rather than turning logging off as spdlog's own parser does.
spdlog::level::level_enum log_level_from_environment() {
    const char* text = std::getenv("BRAIN_LOG_LEVEL");
    if (!text || !*text) return spdlog::level::warn;
    std::string key;
    for (const char* c = text; *c; ++c)
        key.push_back(static_cast<char>(std::tolower(static_cast<unsigned char>(*c))));
    static const std::pair<const char*, spdlog::level::level_enum> names[] = {
        {"trace", spdlog::level::trace}, {"debug", spdlog::level::debug},       {"info", spdlog::level::info},
        {"warn", spdlog::level::warn},   {"warning", spdlog::level::warn},      {"error", spdlog::level::err},
        {"err", spdlog::level::err},     {"critical", spdlog::level::critical}, {"off", spdlog::level::off},
    };
    for (const auto& [name, level] : names)
        if (key == name) return level;
    std::fprintf(stderr,
                 "[brain warning] BRAIN_LOG_LEVEL=%s is not a log level; accepted (any case): trace, debug, info, "
                 "warning, error, critical, off; using warning\n",
                 quote_excerpt(text).c_str());
    return spdlog::level::warn;
}

std::shared_ptr<spdlog::logger> logger() {
    static std::shared_ptr<spdlog::logger> instance = [] {
        auto l = std::make_shared<spdlog::logger>("brain", std::make_shared<spdlog::sinks::stderr_sink_mt>());
        l->set_pattern("[brain %l] %v");
        l->set_level(log_level_from_environment());
        return l;
    }();
    return instance;
}

// Called by plugins: nothing may be thrown back across the ABI, and their text is not trusted to be printable.
void host_log(int32_t level, const char* message) noexcept {
    if (!message) return;
    try {
        const auto clamped = static_cast<spdlog::level::level_enum>(level < 0 ? 0 : (level > 5 ? 5 : level));
        logger()->log(clamped, "{}", plugin_text(message, k_plugin_message_bytes));
    } catch (...) {
        // Losing one log line is better than unwinding into a plugin.
    }
}

// "std::runtime_error" for the exception in flight, or "an unknown type" where the runtime cannot say.
std::string escaped_type_name() {
    const std::type_info* type = abi::__cxa_current_exception_type();
    if (!type) return "an unknown type";
    int status = 0;
    std::unique_ptr<char, decltype(&std::free)> demangled(
        abi::__cxa_demangle(type->name(), nullptr, nullptr, &status), &std::free);
    return status == 0 && demangled ? demangled.get() : type->name();
}

// What the exception in flight says about itself: its type and, for a std::exception, its text.
std::string describe_escaped_exception() {
    std::string out = escaped_type_name();
    try {
        throw;
    } catch (const std::exception& e) {
        out += ", saying " + quote_excerpt(plugin_text(e.what(), k_plugin_message_bytes), 200);
    } catch (...) {
    }
    return out;
}

const brain_host_api k_host_api = {sizeof(brain_host_api), BRAIN_ABI_VERSION_MAJOR, BRAIN_ABI_VERSION_MINOR,
                                   &host_log};

std::string join_paths(const std::vector<std::filesystem::path>& dirs) {
    std::string out;
    for (const auto& d : dirs) {
        if (!out.empty()) out += ", ";
        out += d.string();
    }
    return out.empty() ? "(no directories)" : out;
}

// Boost.DLL's message is "boost::dll::shared_library::load() failed (dlerror system message: TEXT)"; keep TEXT.
std::string loader_text(const std::string& what) {
    const std::string marker = "(dlerror system message: ";
    const auto at = what.find(marker);
    if (at == std::string::npos) return what;
    std::string text = what.substr(at + marker.size());
    // std::system_error appends ": <error_code message>" (a meaningless "Bad file descriptor") after the ')'.
    const auto close = text.rfind(')');
    return close == std::string::npos ? text : text.substr(0, close);
}

[[noreturn]] void fail(PluginRecord& record, PluginStage stage, ErrorCode code, const std::string& message) {
    record.stage = stage;
    record.ok = false;
    record.error_code = static_cast<int>(code);
    record.message = message;
    throw Error(code, message);
}

std::string build_hint(const std::string& name) {
    if (name == "cuda")
        return "Build it with the CUDA toolkit installed (cmake -DBRAIN_BUILD_CUDA_PLUGIN=ON), install the "
               "brain-cuda package, or point BRAIN_PLUGIN_PATH at the directory that holds it";
    if (name == "cpu" || name == "metal")
        return "Build it (cmake -DBRAIN_BUILD_" + std::string(name == "cpu" ? "CPU" : "METAL") +
               "_PLUGIN=ON) or point BRAIN_PLUGIN_PATH at the directory that holds it";
    return "Install the plugin or point BRAIN_PLUGIN_PATH at the directory that holds it";
}

// One entry named libbrain_<name>.so on the search path.
struct Candidate {
    std::filesystem::path path;
    std::string problem; // empty for a regular file (the only kind that is loaded)
};

// Every entry named `file` in `dirs`, in search order, each file once (two spellings of one directory, or links
// to one file, count once). The first without a problem is the one used.
std::vector<Candidate> candidates(const std::string& file, const std::vector<std::filesystem::path>& dirs) {
    std::vector<Candidate> out;
    std::set<std::pair<dev_t, ino_t>> seen;
    for (const auto& dir : dirs) {
        Candidate c{dir / file, {}};
        struct stat st {};
        if (::lstat(c.path.c_str(), &st) != 0) continue; // nothing there
        const bool link = S_ISLNK(st.st_mode);
        if (::stat(c.path.c_str(), &st) != 0) {
            c.problem = std::string("a symbolic link that cannot be followed (") + std::strerror(errno) + ")";
        } else if (!S_ISREG(st.st_mode)) {
            c.problem = std::string(link ? "a symbolic link to " : "") +
                        (S_ISDIR(st.st_mode) ? "a directory" : "something other than a regular file");
        } else if (!seen.insert({st.st_dev, st.st_ino}).second) {
            continue; // the same file again
        }
        out.push_back(std::move(c));
    }
    return out;
}

const Candidate* chosen(const std::vector<Candidate>& list) {
    for (const auto& c : list)
        if (c.problem.empty()) return &c;
    return nullptr;
}

} // namespace

void throw_escaped_exception(const std::string& plugin, const char* entry) {
    throw Error(ErrorCode::PluginFailure, "plugin \"" + plugin + "\" let an exception (" +
                                              describe_escaped_exception() + ") escape from its " + entry +
                                              " call; a plugin must catch everything and return a brain_error "
                                              "(brain::sdk::guard does this for C++ plugins). Report it to the "
                                              "plugin's authors");
}

void log_escaped_exception(const std::string& plugin, const char* entry) noexcept {
    try {
        logger()->warn("plugin \"{}\" let an exception ({}) escape from its {} call, which never fails; it was "
                       "ignored. Report it to the plugin's authors",
                       plugin, describe_escaped_exception(), entry);
    } catch (...) {
    }
}

void throw_plugin_error(const brain_plugin_api& api, const std::string& plugin, brain_error* error) {
    if (!error) return;
    // The error is released whatever reading it did, so that a plugin throwing from error_message leaks nothing.
    int32_t raw = 0;
    std::string message;
    std::optional<Error> escaped;
    try {
        raw = guarded_call(plugin, "error_code", [&] { return api.error_code(error); });
        message = plugin_text(guarded_call(plugin, "error_message", [&] { return api.error_message(error); }),
                              k_plugin_message_bytes);
    } catch (const Error& e) {
        escaped = e;
    }
    try {
        guarded_call(plugin, "error_destroy", [&] { api.error_destroy(error); });
    } catch (const Error& e) {
        if (!escaped) escaped = e;
    }
    if (escaped) throw *escaped;
    if (message.empty()) message = "(the plugin gave no message)";
    std::size_t count = 0;
    const ErrorCode* codes = all_error_codes(&count);
    for (std::size_t i = 0; i < count; ++i)
        if (static_cast<int32_t>(codes[i]) == raw) throw Error(codes[i], message);
    throw Error(ErrorCode::PluginFailure, "plugin \"" + plugin + "\" returned unknown error code " +
                                              std::to_string(raw) + " with message: " + message);
}

Plugin::Plugin(const brain_plugin_api& api, PluginRecord record) : m_api(api), m_record(std::move(record)) {}

int Plugin::device_count() const {
    std::int32_t count = 0;
    call("device_count", m_api.device_count, &count);
    // Refused before anything is sized by it: a count of 2^31 would make the core build a list that large.
    BRAIN_CHECK(count >= 0 && count <= k_max_plugin_devices, ErrorCode::PluginFailure, "plugin \"", m_record.name,
                "\" reported ", count, " devices from device_count, which is impossible: a plugin sees 0 to ",
                k_max_plugin_devices,
                " devices (0, or an error saying why, when it has none). Report it to the "
                "plugin's authors");
    return count;
}

PluginRegistry& PluginRegistry::instance() {
    // Deliberately leaked: plugins must stay loaded while static destructors of other objects run.
    static PluginRegistry* registry = new PluginRegistry();
    return *registry;
}

std::shared_ptr<Plugin> PluginRegistry::get(const std::string& name) {
    const std::string problem = plugin_name_problem(name);
    BRAIN_CHECK_ARG(problem.empty(), "backend name ", quote_excerpt(name), " cannot name a plugin: ", problem, "; ",
                    k_plugin_name_rule, " (the x of libbrain_x.so)");
    const auto dirs = plugin_search_paths();
    const std::string file = k_plugin_prefix + name + k_plugin_suffix;
    const auto list = candidates(file, dirs);
    const Candidate* use = chosen(list);
    std::string skipped;
    for (const auto& c : list) {
        if (&c == use) break;
        skipped += (skipped.empty() ? "" : "; ") + c.path.string() + " is " + c.problem;
    }
    if (!use)
        BRAIN_THROW(ErrorCode::PluginNotFound, "backend \"", name, "\" is not available: ", file,
                    " was not found in any plugin directory (searched: ", join_paths(dirs), ")",
                    skipped.empty() ? std::string() : " (skipped: " + skipped + ")", ". ", build_hint(name), ".");
    std::lock_guard lock(m_mutex);
    // Once per process: one command may ask for the same backend several times.
    if (!skipped.empty() && m_warned.insert(skipped).second)
        logger()->warn("skipped {} (not a plugin file); using {}", skipped, use->path.string());
    try {
        return load_locked(name, use->path);
    } catch (const Error& e) {
        // Only the first file is tried: a later copy would hide the failure behind a plugin the user did not pick.
        for (const Candidate* later = use + 1; later < list.data() + list.size(); ++later)
            if (later->problem.empty())
                throw Error(e.code(), std::string(e.what()) + " (only the first " + file +
                                          " on the search path is "
                                          "tried; " +
                                          later->path.string() +
                                          " comes later and was not: fix or remove "
                                          "the first one)");
        throw;
    }
}

std::shared_ptr<Plugin> PluginRegistry::get_file(const std::filesystem::path& path) {
    std::error_code ec;
    if (!std::filesystem::is_regular_file(path, ec))
        BRAIN_THROW(ErrorCode::PluginNotFound, "plugin file ", path.string(), " does not exist or is not a file");
    std::string name = plugin_name_from_file(path);
    BRAIN_CHECK(!name.empty(), ErrorCode::PluginLoadFailed, "plugin file ", path.string(),
                " is not named libbrain_<name>.so; rename it so its backend name is known");
    const std::string problem = plugin_name_problem(name);
    BRAIN_CHECK(problem.empty(), ErrorCode::PluginLoadFailed, "plugin file ", path.string(),
                " does not name a backend: its name ", quote_excerpt(name), " is not one (", problem, "); ",
                k_plugin_name_rule, ", so rename the file");
    std::lock_guard lock(m_mutex);
    return load_locked(name, path);
}

std::shared_ptr<Plugin> PluginRegistry::loaded(const std::filesystem::path& path) {
    std::lock_guard lock(m_mutex);
    const auto it = m_by_path.find(key_of(path));
    return it == m_by_path.end() ? nullptr : it->second;
}

std::string PluginRegistry::key_of(const std::filesystem::path& path) {
    std::error_code ec;
    auto canonical = std::filesystem::weakly_canonical(path, ec);
    return (ec ? path : canonical).string();
}

std::shared_ptr<Plugin> PluginRegistry::load_locked(const std::string& name, const std::filesystem::path& path) {
    const std::string key = key_of(path);
    if (auto it = m_by_path.find(key); it != m_by_path.end()) return it->second;
    // A plugin whose library was loaded is never loaded or initialised again: its entry point and initialize have
    // run (initialize is called once), so its recorded failure stands for the rest of the process. A file that
    // could not be opened (stage open) was never loaded; it is tried again, so that installing a missing dependency
    // or fixing a permission takes effect without a restart.
    if (auto it = m_failures.find(key); it != m_failures.end() && it->second.stage != PluginStage::Open)
        throw Error(static_cast<ErrorCode>(it->second.error_code), it->second.message);
    PluginRecord record;
    record.name = name;
    record.path = path;
    try {
        auto plugin = open_locked(name, path, record);
        m_failures.erase(key);
        m_by_path.emplace(key, plugin);
        return plugin;
    } catch (const Error&) {
        m_failures[key] = record;
        throw;
    }
}

std::shared_ptr<Plugin> PluginRegistry::open_locked(const std::string& name, const std::filesystem::path& path,
                                                    PluginRecord& record) {
    const std::string where = "plugin \"" + name + "\" (" + path.string() + ")";

    // rtld_now surfaces a missing dependency (say libcublas.so.13) here, with the loader's own words, instead
    // of at the first call; rtld_local keeps one plugin's symbols from satisfying another's.
    if (auto reason = check_shared_object(path))
        fail(record, PluginStage::Open, ErrorCode::PluginLoadFailed,
             where + " failed to load at stage open: " + *reason);
    auto library = std::make_shared<boost::dll::shared_library>();
    try {
        library->load(path, boost::dll::load_mode::rtld_now | boost::dll::load_mode::rtld_local);
    } catch (const std::exception& e) {
        fail(record, PluginStage::Open, ErrorCode::PluginLoadFailed,
             where + " failed to load at stage open: " + loader_text(e.what()));
    }
    if (!library->has(BRAIN_PLUGIN_ENTRY_SYMBOL))
        fail(record, PluginStage::Symbol, ErrorCode::PluginLoadFailed,
             where + " failed to load at stage symbol: it does not export " BRAIN_PLUGIN_ENTRY_SYMBOL
                     "; it is not a brain plugin, or it was built without BRAIN_PLUGIN_EXPORT on its entry point");
    // The library stays loaded from here on, even if rejected: its initialisers may have registered exit
    // handlers (the CUDA runtime does), and unloading under them crashes at exit.
    static auto* keep_loaded = new std::vector<std::shared_ptr<boost::dll::shared_library>>();
    keep_loaded->push_back(library);

    const auto entry = library->get<const brain_plugin_api*()>(BRAIN_PLUGIN_ENTRY_SYMBOL);
    const brain_plugin_api* table = nullptr;
    try {
        table = guarded_call(name, BRAIN_PLUGIN_ENTRY_SYMBOL, entry);
    } catch (const Error& e) {
        fail(record, PluginStage::Abi, e.code(), where + " failed to load at stage abi: " + e.what());
    }
    const brain_plugin_api api = validate_plugin_table(table, name, where, record);
    try {
        throw_plugin_error(api, name,
                           guarded_call(name, "initialize", [&] { return api.initialize(&k_host_api); }));
    } catch (const Error& e) {
        fail(record, PluginStage::Initialize, e.code(), where + " failed to initialise: " + e.what());
    }
    try {
        record.capabilities = read_capabilities(api, name);
    } catch (const Error& e) {
        fail(record, PluginStage::Initialize, e.code(),
             where + " failed to initialise: its capabilities entry failed: " + e.what());
    }
    record.stage = PluginStage::Ready;
    record.ok = true;
    auto plugin = std::make_shared<Plugin>(api, record);
    logger()->debug("loaded {} {} from {}", name, record.version, path.string());
    return plugin;
}

std::vector<PluginRecord> PluginRegistry::discover() {
    const auto dirs = plugin_search_paths();
    // Backend names in the order they are first met (each directory's entries sorted).
    std::vector<std::string> names;
    std::set<std::string> seen;
    // Files named libbrain_*.so whose name no backend can have: listed as skipped, never loaded.
    std::vector<std::filesystem::path> misnamed;
    for (const auto& dir : dirs) {
        std::error_code ec;
        std::vector<std::string> here;
        std::vector<std::filesystem::path> misnamed_here;
        for (auto it = std::filesystem::directory_iterator(dir, ec);
             !ec && it != std::filesystem::directory_iterator(); it.increment(ec)) {
            if (!is_plugin_file_name(it->path().filename().string())) continue;
            auto name = plugin_name_from_file(it->path());
            if (plugin_name_problem(name).empty())
                here.push_back(std::move(name));
            else
                misnamed_here.push_back(it->path());
        }
        std::sort(here.begin(), here.end());
        for (auto& name : here)
            if (seen.insert(name).second) names.push_back(std::move(name));
        std::sort(misnamed_here.begin(), misnamed_here.end());
        misnamed.insert(misnamed.end(), misnamed_here.begin(), misnamed_here.end());
    }
    std::vector<PluginRecord> out;
    for (const auto& name : names) {
        const auto list = candidates(k_plugin_prefix + name + k_plugin_suffix, dirs);
        const Candidate* use = chosen(list);
        for (const auto& c : list) {
            PluginRecord record;
            record.name = name;
            record.path = c.path;
            if (&c != use) {
                record.error_code = static_cast<int>(ErrorCode::PluginNotFound);
                record.selection =
                    c.problem.empty() ? PluginRecord::Selection::Shadowed : PluginRecord::Selection::Skipped;
                record.message = c.problem.empty()
                                     ? "not loaded: " + use->path.string() + " comes first on the search path"
                                     : "not a plugin file: it is " + c.problem + "; the search goes on past it";
                out.push_back(std::move(record));
                continue;
            }
            try {
                std::shared_ptr<Plugin> plugin;
                {
                    std::lock_guard lock(m_mutex);
                    plugin = load_locked(name, c.path);
                }
                record = plugin->record();
                try {
                    record.device_count = plugin->device_count();
                } catch (const Error& e) {
                    record.stage = PluginStage::Devices;
                    record.device_count = 0;
                    record.error_code = static_cast<int>(e.code());
                    record.device_status = std::string(to_string(e.code())) + ": " + e.what();
                }
            } catch (const Error& e) {
                std::lock_guard lock(m_mutex);
                if (auto it = m_failures.find(key_of(c.path)); it != m_failures.end()) record = it->second;
                record.ok = false;
                record.error_code = static_cast<int>(e.code());
                record.message = e.what();
            }
            record.selection = PluginRecord::Selection::Used;
            out.push_back(std::move(record));
        }
    }
    for (const auto& path : misnamed) {
        const std::string name = plugin_name_from_file(path);
        PluginRecord record;
        record.name = printable_plugin_text(name);
        record.path = path;
        record.error_code = static_cast<int>(ErrorCode::PluginNotFound);
        record.selection = PluginRecord::Selection::Skipped;
        record.message = "not a plugin file: its name gives the backend name " + quote_excerpt(name) +
                         ", which no backend can have (" + plugin_name_problem(name) + "); " + k_plugin_name_rule +
                         ", so rename the file if it is a plugin";
        out.push_back(std::move(record));
    }
    return out;
}

} // namespace detail

std::vector<std::filesystem::path> plugin_search_paths() {
    std::vector<std::filesystem::path> dirs;
    const auto add = [&dirs](const std::filesystem::path& p) {
        if (p.empty()) return;
        for (const auto& d : dirs)
            if (d == p) return;
        dirs.push_back(p);
    };
    if (const char* env = std::getenv("BRAIN_PLUGIN_PATH")) {
        std::stringstream list(env);
        std::string item;
        while (std::getline(list, item, ':'))
            if (!item.empty()) add(std::filesystem::path(item));
    }
    // For hermetic deployments and tests: search BRAIN_PLUGIN_PATH alone.
    if (const char* only = std::getenv("BRAIN_PLUGIN_PATH_ONLY"); only && std::string(only) == "1") return dirs;
    try {
        // Beside the installed (or built) core: <libdir>/brain/plugins.
        const auto core_dir = boost::dll::this_line_location().parent_path().lexically_normal();
        add(core_dir / "brain" / "plugins");
        // The build tree's plugin directory, for a core that runs from the build tree only: an installed or
        // packaged core must never pick up plugins from wherever it happened to be built.
        std::error_code ec;
        if (std::filesystem::equivalent(core_dir, std::filesystem::path(BRAIN_BUILD_LIB_DIR), ec))
            add(std::filesystem::path(BRAIN_BUILD_PLUGIN_DIR));
    } catch (const std::exception&) {
        // The core's own location is unknown only on exotic loaders; BRAIN_PLUGIN_PATH still applies.
    }
    return dirs;
}

std::vector<PluginRecord> discover_plugins() {
    return detail::PluginRegistry::instance().discover();
}

PluginRecord load_plugin(const std::string& name) {
    return detail::PluginRegistry::instance().get(name)->record();
}

PluginRecord load_plugin_file(const std::filesystem::path& path) {
    return detail::PluginRegistry::instance().get_file(path)->record();
}

const brain_plugin_api& plugin_api(const PluginRecord& record) {
    const auto plugin = detail::PluginRegistry::instance().loaded(record.path);
    BRAIN_CHECK(plugin, ErrorCode::PluginNotFound, "no plugin was loaded from ", record.path.string(),
                "; load it with load_plugin or load_plugin_file first");
    return plugin->api(); // the registry never unloads a plugin, so the reference stays valid
}

} // namespace brain
