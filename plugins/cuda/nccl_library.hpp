// NCCL, opened at run time: the plugin loads and trains on one device where libnccl.so.2 is absent, and only a
// session over several devices or processes needs it. The few entry points used are declared here with NCCL's C
// types (stable since NCCL 2.0), so building needs no nccl.h either.
#pragma once

#include <cstddef>
#include <string>

namespace brain::cuda {

namespace nccl {
using Result = int; // ncclResult_t; 0 is ncclSuccess
constexpr Result success = 0;
constexpr Result in_progress = 7; // ncclInProgress
using Comm = struct ncclComm*;    // ncclComm_t
struct UniqueId {                 // ncclUniqueId
    char internal[128];
};
using RedOp = int;                       // ncclRedOp_t
constexpr RedOp sum = 0;                 // ncclSum
constexpr int float32 = 7;               // ncclFloat32
constexpr int scalar_host_immediate = 1; // ncclScalarHostImmediate
using Stream = void*;                    // cudaStream_t
} // namespace nccl

// The loaded library's entry points. Thread-safe once loaded; never unloaded.
struct NcclLibrary {
    std::string path; // what dlopen opened
    int version = 0;  // ncclGetVersion, e.g. 22809
    const char* (*get_error_string)(nccl::Result) = nullptr;
    nccl::Result (*get_unique_id)(nccl::UniqueId*) = nullptr;
    nccl::Result (*comm_init_rank)(nccl::Comm*, int, nccl::UniqueId, int) = nullptr;
    nccl::Result (*comm_destroy)(nccl::Comm) = nullptr;
    nccl::Result (*comm_abort)(nccl::Comm) = nullptr;
    nccl::Result (*comm_get_async_error)(nccl::Comm, nccl::Result*) = nullptr;
    nccl::Result (*group_start)() = nullptr;
    nccl::Result (*group_end)() = nullptr;
    nccl::Result (*all_reduce)(const void*, void*, std::size_t, int, nccl::RedOp, nccl::Comm,
                               nccl::Stream) = nullptr;
    nccl::Result (*red_op_create_pre_mul_sum)(nccl::RedOp*, void*, int, int, nccl::Comm) = nullptr;
    nccl::Result (*red_op_destroy)(nccl::RedOp, nccl::Comm) = nullptr;

    // Throw unless status is ncclSuccess: DEVICE_FAILURE naming the call and NCCL's own text.
    void check(nccl::Result status, const char* what) const;
};

// The library's file name, as dlopen is asked for it.
inline constexpr const char* nccl_library_name = "libnccl.so.2";

// Open libnccl.so.2 once (later calls return the same library). FEATURE_DISABLED naming the library, why it could
// not be opened and how to install it, when it is absent or lacks an entry point. `wanted` says what needs it, e.g.
// "training on devices 0,1".
const NcclLibrary& load_nccl(const std::string& wanted);

} // namespace brain::cuda
