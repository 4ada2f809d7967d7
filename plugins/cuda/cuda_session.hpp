// brain::cuda::CudaSession: one training session on one GPU. Everything it needs is planned against the budget
// before anything is allocated (device_plan.hpp); the parameters, gradients, optimizer state and (when it fits) the
// data set stay on the device; an epoch's only transfer back is its mean loss. Its jobs live in one file each:
// set-up and the epoch's dispatch (cuda_session.cpp), the data set on the device or staged (session_data.cpp), the
// fused epoch kernel (fused_epoch.cpp), the cuBLAS path captured as a CUDA graph (graph_epoch.cpp), its mixed-
// precision form for precision bf16 (mixed_epoch.cpp), and checkpoint, stats and divergence
// (checkpoint_and_stats.cpp).
#pragma once

#include "cuda_handles.hpp"
#include "device_allocator.hpp"
#include "device_plan.hpp"
#include "device_scalars.h"
#include "kernel_module.hpp"
#include "lt_matmul.hpp"
#include "session_base.hpp"

#include <brain/plugin_abi.h>
#include <brain/session_counters.hpp>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace brain::cuda {

// Whether the fused epoch kernel is expected to beat the cuBLAS path for this plan (fused_epoch.cpp).
bool fused_epoch_pays(const sdk::SessionPlan& plan);

// What a resident epoch leaves behind it, copied on the device from the scalar block (its check flags and loss, in
// brain_cuda_scalars's order) into the block's own allocation, past the scalars and inside the bytes the allocator
// charges for them anyway: the epochs queued in one train_epochs call each keep their own.
struct EpochRecord {
    int32_t bad_loss_batch;
    int32_t bad_weight_batch;
    float result;
};
static_assert(offsetof(brain_cuda_scalars, result) - offsetof(brain_cuda_scalars, bad_loss_batch) ==
                  offsetof(EpochRecord, result),
              "an epoch's record is copied from the scalar block in one piece");
// Epochs queued between two waits of the host, and the scalar block's allocation that holds their records.
inline constexpr std::size_t epoch_records =
    (allocation_granularity - sizeof(brain_cuda_scalars)) / sizeof(EpochRecord);
inline constexpr std::size_t scalar_block_bytes = sizeof(brain_cuda_scalars) + epoch_records * sizeof(EpochRecord);
static_assert(epoch_records >= 8 && scalar_block_bytes <= allocation_granularity, "records fit the block's charge");

// A CUDA training session. Not thread-safe (the ABI serialises calls on one session).
class CudaSession final : public SessionBase {
public:
    // replica_rows > 0: one device's part of a data-parallel session (data_parallel_session.hpp), whose share of a
    // batch is at most replica_rows rows: the cuBLAS path, epochs driven batch by batch by the replica_* calls below.
    explicit CudaSession(const brain_session_desc& desc, std::size_t replica_rows = 0);
    ~CudaSession() override;

    // Only the epoch's mean loss is read back.
    float train_epoch() override;
    // Resident epochs queued back to back, up to epoch_records of them per wait of the host; each one's loss is the
    // only value read back (staged epochs run one train_epoch after another: their host work fills each batch).
    void train_epochs(std::uint64_t count, float* losses, std::uint64_t& trained) override;
    // Every entry of the device's rate array: every epoch path reads each step's rate there, so nothing is
    // re-captured or re-launched differently.
    void set_learning_rate(float learning_rate) override;
    // Copied to the device's rate array before the epoch's launch.
    void set_step_learning_rates(const float* rates, std::uint64_t count) override;
    // The only copy of the weights back.
    void checkpoint(float* parameters, std::uint64_t parameter_count, float* optimizer_state,
                    std::uint64_t optimizer_state_count, std::uint64_t* out_step) override;
    // One device's figures.
    brain_session_stats stats() const noexcept override;

    // A replica's epoch (data_parallel_replica.cpp), enqueued on its stream without waiting: the batch order, then
    // per batch its share's gradient (layer_done(l) runs as layer l's gradient is enqueued, so the caller can sum
    // it across devices while the layers below are still computed) and, once the sum is in, the optimizer step.
    void replica_begin_epoch();
    void replica_gradients(std::uint64_t position, unsigned rows,
                           const std::function<void(std::size_t)>& layer_done);
    void replica_step(unsigned rows, int batch);
    float* replica_finish_epoch(); // the device float holding this replica's share of the epoch's mean loss
    void replica_read_loss();      // that float (once summed across devices) read back asynchronously
    float replica_epoch_loss();    // the value read, once the stream is done; NUMERICAL if a check tripped
    void replica_count_epoch(std::uint64_t batches, std::chrono::steady_clock::duration time);
    void replica_failed(const std::string& why) { m_failure = why; }
    float* replica_gradient_buffer() noexcept { return m_grads.floats(); }
    cudaStream_t replica_stream() const noexcept { return m_stream.get(); }
    int device() const noexcept { return m_device; }
    const DevicePlan& plan() const noexcept { return m_plan; }

private:
    using Clock = std::chrono::steady_clock;
    using Phase = sdk::SessionCounters::Phase;

    // cuda_session.cpp
    void require_usable(const char* operation) const;
    void allocate_tensors(std::uint64_t cublas_workspace);
    void upload_state(const brain_session_desc& desc);
    void upload_rates(); // m_host_rates to m_rates, on the stream
    // session_data.cpp
    void upload_data_set(const brain_session_desc& desc);
    // A second device slot for staged batches and the copy stream, when the budget's spare bytes hold them.
    void prepare_staging(std::uint64_t spare_bytes);
    void run_staged_epoch();
    // The rows at positions [start, start + rows) of epoch `epoch`'s order into host x and t: gathered from the
    // host copy, or fetched from the core's batch source.
    void host_rows(std::uint64_t epoch, std::size_t start, std::size_t rows, float* x, float* t);
    // fused_epoch.cpp
    bool choose_fused_epoch(std::uint64_t spare_bytes); // spare_bytes: what the budget leaves for workspace
    bool choose_cluster_epoch(const std::string& mode, std::uint64_t spare_bytes); // sets m_cluster_*
    void prepare_fused_epoch(std::uint64_t spare_bytes); // spare_bytes: what the budget leaves for its workspace
    void run_fused_epoch();
    // graph_epoch.cpp
    void run_graph_epoch();
    void enqueue_resident_epoch();
    void enqueue_batch(const float* x, const float* t, unsigned rows, int batch);
    void enqueue_gradients(const float* x, const float* t, unsigned rows); // forward and backward of a batch
    void enqueue_optimizer(unsigned rows, int batch); // the batch's loss and step count, then the optimizer
    void gemm(cublasOperation_t ta, cublasOperation_t tb, int m, int n, int k, const float* a, int lda,
              const float* b, int ldb, float* c, int ldc, const char* what);
    unsigned elementwise_blocks(std::uint64_t count) const noexcept;
    // mixed_epoch.cpp (precision bf16)
    void allocate_mixed_tensors(std::uint64_t cublas_workspace);
    void upload_mixed_state(const brain_session_desc& desc);
    void plan_mixed_products();
    void enqueue_mixed_gather(std::size_t start, unsigned rows);
    void enqueue_mixed_batch(unsigned rows, int batch);
    void stage_mixed_batch(std::size_t slot, std::uint64_t epoch, std::size_t start, std::size_t rows);
    void copy_mixed_checkpoint(float* parameters, float* optimizer_state);
    // checkpoint_and_stats.cpp
    // NUMERICAL naming the first batch that tripped a check: from `record` where given (a queued epoch's own),
    // else from the scalar block.
    [[noreturn]] void fail_numerical(float loss, const EpochRecord* record = nullptr);
    std::string arithmetic() const;

    DevicePlan m_plan;
    int m_device = 0;
    int m_sm_count = 1;
    const KernelModule* m_kernels = nullptr;
    DeviceAllocator m_allocator;
    Stream m_stream; // created only once the budget check has passed
    CublasHandle m_cublas;
    cublasComputeType_t m_compute = CUBLAS_COMPUTE_32F;
    DeviceBuffer m_params, m_grads, m_state, m_scalars;
    DeviceBuffer m_x, m_t; // the batch's inputs and targets (gathered or staged)
    std::vector<DeviceBuffer> m_z, m_a, m_delta;
    DeviceBuffer m_row_loss, m_workspace;               // kernel scratch and the cuBLAS workspace
    DeviceBuffer m_rates;                               // the epoch's learning rate per step (batch)
    std::vector<float> m_host_rates;                    // what m_rates holds
    bool m_rates_uniform = true;                        // every step of m_host_rates has the same rate
    bool m_rates_fresh = false;                         // set for the next epoch only (set_step_learning_rates)
    DeviceBuffer m_features, m_targets, m_perm;         // the resident data set
    std::vector<float> m_host_features, m_host_targets; // the staged data set
    PinnedBuffer m_result;                              // the epochs' losses read back (epoch_records floats)
    PinnedBuffer m_stage[2];                            // double-buffered staging of batches
    Event m_stage_done[2];                              // each staging buffer's last copy
    // Overlapped staging: batch b's copy runs on m_copy_stream into device slot b % 2 while the compute stream
    // trains batch b - 1 from the other slot (slot 1 is m_x2/m_t2). Empty when the budget leaves no room.
    Stream m_copy_stream;
    DeviceBuffer m_x2, m_t2;
    Event m_slot_consumed[2];                     // the compute stream's last batch from each device slot is done
    const brain_batch_source* m_source = nullptr; // the core's rows (ABI 1.2 batch source); null: host copy
    std::vector<float> m_fetch_x, m_fetch_t;      // fetched rows before their bf16 conversion (mixed, streamed)
    GraphExec m_graph;
    bool m_resident = false;
    bool m_fused = false;      // epochs run as one cooperative launch of the fused epoch kernel
    unsigned m_fused_grid = 0; // its blocks: one per SM
    unsigned m_cluster_blocks = 0;          // ... or on a cluster of this many blocks (kernels/cluster_epoch.cu)
    unsigned m_cluster_count = 0;           // on this many clusters
    std::uint64_t m_cluster_global_grad_floats = 0; // its gradient shares in global memory (m_cluster_grads),
                                                    // the floats of each; 0: in shared memory
    unsigned m_cluster_threads = 0;         // its threads per block
    std::size_t m_cluster_shared_bytes = 0; // its dynamic shared memory per block
    brain_fused_epoch_args m_fused_args{};
    DeviceBuffer m_cluster_grads;                // the blocks' gradient shares, where in global memory
    DeviceBuffer m_cluster_workspace;            // several clusters' exchange (m_cluster_exchange's pointers)
    brain_cluster_exchange m_cluster_exchange{}; // the cluster epoch kernel's argument
    DeviceBuffer m_fused_profile; // test builds' BRAIN_CUDA_FUSED_PROFILE only
    DeviceBuffer m_fused_head;    // the blocks' shares of a narrow head's gradient (brain_fused_epoch_args)
    DeviceBuffer m_fused_shares;  // row shares of hidden layers' weight gradients (brain_fused_epoch_args)
    Kernel m_fused_kernel = Kernel::FusedEpoch; // or the variant the session takes (prepare_fused_epoch)
    bool m_use_graphs = true;
    std::uint64_t m_first_epoch = 0;
    // The mixed-precision path (precision bf16; mixed_epoch.cpp).
    struct MixedLayer {
        LtMatmul forward;             // z (bf16, or float32 for the output layer) = input W^T, with its epilogue
        bool bias_in_forward = false; // the product's epilogue adds the bias
        bool activation_in_forward = false;    // ... and applies ReLU
        LtMatmul weight_gradient;              // dW (float32) = delta^T input
        bool bias_gradient_in_product = false; // ... with db summed in its epilogue
        LtMatmul input_gradient;               // delta of the layer below (bf16) = delta W
    };
    LtHandle m_lt;
    DeviceBuffer m_params16, m_x16;         // the bf16 copy of the parameters, the batch's bf16 inputs
    std::vector<DeviceBuffer> m_a16, m_z16; // hidden layers' bf16 activations and kept pre-activations
    DeviceBuffer m_delta16[2];              // bf16 deltas, alternating by layer
    std::vector<MixedLayer> m_mixed_full;   // the products of a full batch
    std::vector<MixedLayer> m_mixed_last;   // those of the epoch's shorter last batch, when it has one
    std::uint64_t m_workspace_bytes = 0;    // the cuBLAS (or cuBLASLt) workspace's size
    std::string m_mixed_fusion;             // which epilogues cuBLASLt fused, for the log
    sdk::SessionCounters m_counters;
    std::string m_failure; // why the session became unusable; empty while usable
    const std::function<void(std::size_t)>* m_layer_done = nullptr; // a replica's hook (replica_gradients)
};

} // namespace brain::cuda
