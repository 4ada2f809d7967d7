// brain::cuda::DataParallelSession: one training session over several GPUs of this process and, through a
// rendezvous, of other processes. Each device holds the whole model, its optimizer state and the data set; each
// batch of the seeded order is split among all devices (split_rows), each computes its share's gradient, NCCL sums
// the gradients bucket by bucket while the backward pass continues, and every device takes the same optimizer step.
#pragma once

#include "cuda_handles.hpp"
#include "cuda_session.hpp"
#include "data_parallel_plan.hpp"
#include "nccl_library.hpp"
#include "session_base.hpp"

#include <brain/plugin_abi.h>
#include <brain/session_counters.hpp>
#include <memory>
#include <string>
#include <vector>

namespace brain::cuda {

// The devices a descriptor asks for: desc.devices when given, else desc.device.
std::vector<int> requested_devices(const brain_session_desc& desc);

// Whether the network and batch are what the fused epoch kernel runs (float32, at most 16 layers, batch <= 1024,
// narrow layers): data parallelism does not pay for them.
bool fused_shape(const DevicePlan& plan);

class DataParallelSession final : public SessionBase {
public:
    // Checks the devices, the budget on every device (before anything is allocated), loads NCCL, meets the other
    // ranks at desc.rendezvous when world_size > 1, then opens one replica per device and the communicators.
    DataParallelSession(const brain_session_desc& desc, const std::vector<int>& devices);
    ~DataParallelSession() override;

    // Every device trains its share of each batch; the gradients are summed before each step.
    float train_epoch() override;
    void set_learning_rate(float learning_rate) override;
    void set_step_learning_rates(const float* rates, std::uint64_t count) override;
    // The first device's copy: every device holds the same weights.
    void checkpoint(float* parameters, std::uint64_t parameter_count, float* optimizer_state,
                    std::uint64_t optimizer_state_count, std::uint64_t* out_step) override;
    // Transfers added up over the devices, memory the largest device's, times the session's.
    brain_session_stats stats() const noexcept override;
    brain_session_stats device_stats(std::uint32_t index) const override;

private:
    struct Device {
        int device = 0; // the CUDA device index
        std::unique_ptr<CudaSession> session;
        nccl::Comm comm = nullptr;
        Stream comm_stream;        // the all-reduces, overlapping the backward pass on the session's stream
        Event ready;               // a bucket's gradient is complete on the session's stream
        Event reduced;             // the batch's all-reduces are done
        std::vector<Event> timing; // pairs (backward done, sums done) of the sampled batches
        nccl::RedOp full_op = nccl::sum, last_op = nccl::sum; // weight this device's share by its rows
        bool full_op_created = false, last_op_created = false;
        int global_index = 0;
        RowShare full_share, last_share;
        std::uint64_t allreduce_bytes = 0;
        double exposed_ns = 0;
    };

    void open_communicators(const nccl::UniqueId& id);
    void enqueue_epoch(Device& device);
    bool poll(Device& device); // whether its epoch is done; the failure if it failed
    [[noreturn]] void fail_device(const Device& device, brain_status code, const std::string& what);
    void require_usable(const char* operation) const;
    void abort_communicators() noexcept;

    const NcclLibrary* m_nccl = nullptr;
    std::vector<Device> m_devices;
    std::vector<GradientBucket> m_buckets;
    std::uint64_t m_global_batch = 0, m_last_rows = 0, m_batches = 0;
    std::uint64_t m_share_rows = 1; // the most rows of a batch one device trains
    int m_rank = 0, m_world = 1, m_global_devices = 1;
    std::size_t m_timing_stride = 1;
    sdk::SessionCounters m_counters;
    std::string m_failure;
};

} // namespace brain::cuda
