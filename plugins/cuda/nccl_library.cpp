// dlopen of libnccl.so.2 and the lookup of the entry points the data-parallel session uses.
#include "nccl_library.hpp"

#include <brain/plugin_sdk.hpp>
#include <cstdlib>
#include <dlfcn.h>
#include <mutex>

namespace brain::cuda {

namespace {

// The file to open: libnccl.so.2, or in test builds BRAIN_CUDA_TEST_NCCL_LIBRARY (to test the absent library).
std::string library_file() {
#if BRAIN_TEST_HOOKS
    if (const char* name = std::getenv("BRAIN_CUDA_TEST_NCCL_LIBRARY"); name && *name) return name;
#endif
    return nccl_library_name;
}

const char* const install_hint =
    "; install NCCL 2 (on Debian or Ubuntu with NVIDIA's CUDA repository: apt install libnccl2; it also ships with "
    "the CUDA toolkit under its lib directory, which then must be on the loader's path, e.g. LD_LIBRARY_PATH), or "
    "train on one device";

template <class Fn>
void bind(void* handle, const char* symbol, Fn& out, const std::string& file, const std::string& wanted) {
    void* address = dlsym(handle, symbol);
    if (!address)
        sdk::fail(BRAIN_ERR_FEATURE_DISABLED, wanted, " needs NCCL (", nccl_library_name, "), but ", file,
                  " has no entry point ", symbol, " (NCCL older than 2.11?)", install_hint);
    out = reinterpret_cast<Fn>(address);
}

} // namespace

void NcclLibrary::check(nccl::Result status, const char* what) const {
    if (status == nccl::success) return;
    const char* text = get_error_string ? get_error_string(status) : nullptr;
    sdk::fail(BRAIN_ERR_DEVICE_FAILURE, what, " failed: NCCL error ", status, " (", text ? text : "no description",
              "); NCCL_DEBUG=WARN in the environment makes NCCL say more");
}

const NcclLibrary& load_nccl(const std::string& wanted) {
    static std::mutex mutex;
    static NcclLibrary library;
    static bool loaded = false;
    std::lock_guard lock(mutex);
    if (loaded) return library;
    const std::string file = library_file();
    dlerror();
    void* handle = dlopen(file.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (!handle) {
        const char* why = dlerror();
        sdk::fail(BRAIN_ERR_FEATURE_DISABLED, wanted, " needs NCCL (", nccl_library_name, "), and ", file,
                  " could not be opened (", why ? why : "not found", ")", install_hint);
    }
    NcclLibrary out;
    out.path = file;
    nccl::Result (*get_version)(int*) = nullptr;
    bind(handle, "ncclGetVersion", get_version, file, wanted);
    bind(handle, "ncclGetErrorString", out.get_error_string, file, wanted);
    bind(handle, "ncclGetUniqueId", out.get_unique_id, file, wanted);
    bind(handle, "ncclCommInitRank", out.comm_init_rank, file, wanted);
    bind(handle, "ncclCommDestroy", out.comm_destroy, file, wanted);
    bind(handle, "ncclCommAbort", out.comm_abort, file, wanted);
    bind(handle, "ncclCommGetAsyncError", out.comm_get_async_error, file, wanted);
    bind(handle, "ncclGroupStart", out.group_start, file, wanted);
    bind(handle, "ncclGroupEnd", out.group_end, file, wanted);
    bind(handle, "ncclAllReduce", out.all_reduce, file, wanted);
    bind(handle, "ncclRedOpCreatePreMulSum", out.red_op_create_pre_mul_sum, file, wanted);
    bind(handle, "ncclRedOpDestroy", out.red_op_destroy, file, wanted);
    out.check(get_version(&out.version), "ncclGetVersion");
    // The handle stays open for the life of the process: communicators may outlive any one session's bookkeeping.
    library = out;
    loaded = true;
    return library;
}

} // namespace brain::cuda
