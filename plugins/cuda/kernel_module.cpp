#include "kernel_module.hpp"

#include "cuda_plugin_log.hpp"
#include "kernel_compiler.hpp"

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <future>
#include <iterator>
#include <map>
#include <memory>
#include <mutex>
#include <nvrtc.h>
#include <unistd.h>
#include <vector>

namespace brain::cuda {

namespace {

// ---------------------------------------------------------------------------------------------------------------
// On-disk cache of NVRTC output, so a warm process skips the compile. An entry is keyed by everything that
// changes the image (the kernel text, options, target, NVRTC and driver versions) and carries its size and
// checksum: a torn or corrupt file is ignored and rewritten. Writers go through a unique temporary file and
// rename(), so concurrent writers and readers only ever see whole entries. The cache is an optimisation: any
// failure in it means compiling, never an error.

std::uint64_t fnv1a(const void* data, std::size_t size, std::uint64_t hash = 0xcbf29ce484222325ULL) {
    const auto* bytes = static_cast<const unsigned char*>(data);
    for (std::size_t i = 0; i < size; ++i) hash = (hash ^ bytes[i]) * 0x100000001b3ULL;
    return hash;
}

constexpr char cache_magic[8] = {'B', 'R', 'N', 'C', 'U', 'B', 'N', '1'};

// BRAIN_CUDA_CACHE_DIR (empty or "off": no cache), else $XDG_CACHE_HOME/brain/cuda, else ~/.cache/brain/cuda.
std::filesystem::path cache_directory() {
    if (const char* dir = std::getenv("BRAIN_CUDA_CACHE_DIR")) {
        if (!*dir || std::strcmp(dir, "off") == 0) return {};
        return dir;
    }
    if (const char* xdg = std::getenv("XDG_CACHE_HOME"); xdg && *xdg)
        return std::filesystem::path(xdg) / "brain" / "cuda";
    if (const char* home = std::getenv("HOME"); home && *home)
        return std::filesystem::path(home) / ".cache" / "brain" / "cuda";
    return {};
}

std::filesystem::path cache_file(const std::string& source, const Target& target) {
    const std::filesystem::path dir = cache_directory();
    if (dir.empty()) return {};
    int nvrtc_major = 0, nvrtc_minor = 0, driver = 0;
    (void)nvrtcVersion(&nvrtc_major, &nvrtc_minor);
    (void)cudaDriverGetVersion(&driver);
    const std::string key = kernel_text(source) + '\0' + target.option + '\0' + std::to_string(nvrtc_major) + "." +
                            std::to_string(nvrtc_minor) + '\0' + std::to_string(driver);
    char name[64];
    std::snprintf(name, sizeof name, "kernels-%s-%016llx.bin", target.label.c_str(),
                  static_cast<unsigned long long>(fnv1a(key.data(), key.size())));
    return dir / name;
}

std::vector<char> read_cache(const std::filesystem::path& file) {
    std::ifstream in(file, std::ios::binary);
    if (!in) return {};
    std::vector<char> bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    constexpr std::size_t header = sizeof cache_magic + 2 * sizeof(std::uint64_t);
    std::uint64_t size = 0, sum = 0;
    if (bytes.size() < header || std::memcmp(bytes.data(), cache_magic, sizeof cache_magic) != 0) return {};
    std::memcpy(&size, bytes.data() + sizeof cache_magic, sizeof size);
    std::memcpy(&sum, bytes.data() + sizeof cache_magic + sizeof size, sizeof sum);
    if (size != bytes.size() - header || fnv1a(bytes.data() + header, size) != sum) {
        log_message(3, "cuda plugin: ignoring the corrupt kernel cache entry " + file.string());
        return {};
    }
    return std::vector<char>(bytes.begin() + static_cast<std::ptrdiff_t>(header), bytes.end());
}

void write_cache(const std::filesystem::path& file, const std::vector<char>& image) {
    static std::atomic<unsigned> counter{0};
    std::error_code ec;
    std::filesystem::create_directories(file.parent_path(), ec);
    const std::filesystem::path temp =
        file.string() + ".tmp." + std::to_string(getpid()) + "." + std::to_string(counter.fetch_add(1));
    {
        std::ofstream out(temp, std::ios::binary | std::ios::trunc);
        const std::uint64_t size = image.size(), sum = fnv1a(image.data(), image.size());
        out.write(cache_magic, sizeof cache_magic);
        out.write(reinterpret_cast<const char*>(&size), sizeof size);
        out.write(reinterpret_cast<const char*>(&sum), sizeof sum);
        out.write(image.data(), static_cast<std::streamsize>(image.size()));
        out.flush();
        if (!out) {
            std::filesystem::remove(temp, ec);
            log_message(2, "cuda plugin: could not write the kernel cache entry " + file.string());
            return;
        }
    }
    std::filesystem::rename(temp, file, ec);
    if (ec) {
        std::filesystem::remove(temp, ec);
        log_message(2, "cuda plugin: could not publish the kernel cache entry " + file.string());
    }
}

cudaError_t load_library(const std::vector<char>& image, cudaLibrary_t& library) {
    return cudaLibraryLoadData(&library, image.data(), nullptr, nullptr, 0, nullptr, nullptr, 0);
}

// NVRTC's image, written to the cache entry `cached` (none when empty) for the next process.
KernelImage compile_and_cache(const std::string& source, const Target& target,
                              const std::filesystem::path& cached) {
    KernelImage image{compile(source, target), false};
    if (!cached.empty()) write_cache(cached, image.bytes);
    return image;
}

KernelImage produce_image(const std::string& source, const Target& target) {
    const std::filesystem::path cached = cache_file(source, target);
    if (!cached.empty()) {
        std::vector<char> bytes = read_cache(cached);
        if (!bytes.empty()) return {std::move(bytes), true};
    }
    return compile_and_cache(source, target, cached);
}

// The process's kernels: loaded modules by (architecture, source), intentionally leaked (see build_module), and
// images being produced ahead of their load by a KernelPrefetch.
struct Registry {
    std::mutex mutex;
    std::map<std::pair<int, std::string>, std::unique_ptr<KernelModule>> modules;
    std::map<std::pair<std::string, std::string>, std::shared_future<KernelImage>> pending;
};

Registry& registry() {
    static auto* instance = new Registry();
    return *instance;
}

void compute_capability(int device, int& major, int& minor) {
    check_cuda(cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, device), "cudaDeviceGetAttribute");
    check_cuda(cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, device), "cudaDeviceGetAttribute");
}

// Called with the registry locked.
std::unique_ptr<KernelModule> build_module(Registry& reg, int major, int minor, const std::string& source) {
    const Target target = choose_target(major, minor);
    KernelImage image;
    if (auto it = reg.pending.find({target.option, source}); it != reg.pending.end()) {
        const std::shared_future<KernelImage> future = it->second;
        reg.pending.erase(it);
        image = future.get(); // rethrows the compile's failure
    } else {
        image = produce_image(source, target);
    }
    cudaLibrary_t library = nullptr;
    if (image.from_cache && load_library(image.bytes, library) != cudaSuccess) {
        (void)cudaGetLastError();
        library = nullptr;
        log_message(3, "cuda plugin: the cached kernels for " + target.label + " did not load; recompiling");
        image = compile_and_cache(source, target, cache_file(source, target));
    }
    if (!library)
        check_cuda(load_library(image.bytes, library), "cudaLibraryLoadData (the NVRTC-compiled kernels)");
    // The library is deliberately never unloaded: kernels may be referenced by captured graphs until the
    // process exits, and unloading during static destruction races the runtime's own teardown.
    auto module = std::make_unique<KernelModule>();
    module->architecture = target.label;
    for (std::size_t k = 0; k < kernel_count; ++k)
        check_cuda(cudaLibraryGetKernel(&module->kernels[k], library, kernel_names[k]), kernel_names[k]);
    return module;
}

} // namespace

const KernelModule& kernels_for_current_device(KernelForm form) {
    int device = 0, major = 0, minor = 0;
    check_cuda(cudaGetDevice(&device), "cudaGetDevice");
    compute_capability(device, major, minor);
    // Keyed by architecture and source (the form and test builds' kernel text hooks change the source).
    const std::string source = kernel_source(form);
    Registry& reg = registry();
    std::lock_guard<std::mutex> lock(reg.mutex);
    auto& slot = reg.modules[{major * 10 + minor, source}];
    if (!slot) slot = build_module(reg, major, minor, source);
    return *slot;
}

KernelPrefetch::KernelPrefetch(int device, KernelForm form) noexcept {
    try {
        // Unchecked calls: the test builds' fault injection counts checked ones, and a prefetch must not consume
        // them.
        int major = 0, minor = 0;
        if (cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, device) != cudaSuccess ||
            cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, device) != cudaSuccess) {
            (void)cudaGetLastError();
            return;
        }
        const Target target = choose_target(major, minor);
        const std::string source = kernel_source(form);
        Registry& reg = registry();
        std::lock_guard<std::mutex> lock(reg.mutex);
        if (reg.modules.count({major * 10 + minor, source}) || reg.pending.count({target.option, source})) return;
        m_image =
            std::async(std::launch::async, [source, target] { return produce_image(source, target); }).share();
        reg.pending[{target.option, source}] = m_image;
    } catch (...) {
        // Only an optimisation: kernels_for_current_device() compiles and reports any failure itself.
    }
}

KernelPrefetch::~KernelPrefetch() {
    if (m_image.valid()) m_image.wait();
}

} // namespace brain::cuda
