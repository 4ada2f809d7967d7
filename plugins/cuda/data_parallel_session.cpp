// DataParallelSession: set-up (devices, budget, NCCL, rendezvous, replicas, communicators), the epoch with its
// bucketed all-reduces, failure handling and stats.
#include "data_parallel_session.hpp"

#include "cuda_device.hpp"
#include "cuda_plugin_log.hpp"
#include "rendezvous.hpp"

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <thread>

namespace brain::cuda {

namespace {

using Clock = std::chrono::steady_clock;
constexpr std::size_t sampled_batches = 256; // batches per epoch whose exposed all-reduce time is measured

std::uint64_t bucket_floats() {
    const char* text = std::getenv("BRAIN_CUDA_BUCKET_MIB");
    if (!text || !*text) return 25ull * 1024 * 1024 / 4; // 25 MiB, PyTorch DDP's default
    char* end = nullptr;
    const unsigned long long mib = std::strtoull(text, &end, 10);
    if (end == text || *end || mib > 1024 * 1024)
        sdk::fail(BRAIN_ERR_INVALID_ARGUMENT, "BRAIN_CUDA_BUCKET_MIB is \"", text,
                  "\"; expected a whole number of MiB (0: one bucket for the whole gradient)");
    return mib * 1024 * 1024 / 4;
}

// What every rank must agree on, so that ranks started with different data or settings stop at the rendezvous.
std::string fingerprint(const brain_session_desc& desc, const DevicePlan& plan) {
    std::uint64_t hash = 1469598103934665603ull; // FNV-1a over the initial parameters
    const auto* bytes = reinterpret_cast<const unsigned char*>(desc.parameters);
    for (std::uint64_t i = 0; i < 4ull * desc.parameter_count; ++i) hash = (hash ^ bytes[i]) * 1099511628211ull;
    return "rows " + std::to_string(plan.rows) + ", batch " + std::to_string(plan.config.batch_size) + ", seed " +
           std::to_string(plan.config.seed) + ", shuffle " + std::to_string(plan.config.shuffle) + ", parameters " +
           std::to_string(plan.parameter_count) + " (hash " + std::to_string(hash) + "), first epoch " +
           std::to_string(desc.first_epoch) + ", precision " + std::to_string(plan.precision) + ", budget " +
           std::to_string(plan.budget_bytes);
}

std::string join(const std::vector<int>& values) {
    std::string out;
    for (int v : values) {
        if (!out.empty()) out += ',';
        out += std::to_string(v);
    }
    return out;
}

} // namespace

std::vector<int> requested_devices(const brain_session_desc& desc) {
    if (!desc.devices || desc.device_list_count == 0) return {desc.device};
    return std::vector<int>(desc.devices, desc.devices + desc.device_list_count);
}

bool fused_shape(const DevicePlan& plan) {
    return plan.precision == BRAIN_PRECISION_FLOAT32 && plan.layers.size() <= BRAIN_FUSED_MAX_LAYERS &&
           plan.config.batch_size <= BRAIN_FUSED_MAX_BATCH && fused_epoch_pays(plan);
}

DataParallelSession::DataParallelSession(const brain_session_desc& desc, const std::vector<int>& devices) {
    const auto start = Clock::now();
    m_rank = desc.rank;
    m_world = desc.world_size > 1 ? desc.world_size : 1;
    if (m_rank < 0 || m_rank >= m_world)
        fail(BRAIN_ERR_INVALID_ARGUMENT, "rank " + std::to_string(m_rank) + " is outside the world of " +
                                             std::to_string(m_world) +
                                             " process(es); expected 0 <= rank < world size");
    if (devices.empty()) fail(BRAIN_ERR_INVALID_ARGUMENT, "the device list is empty; expected e.g. cuda:0,1");
    // NCCL first: where it is missing, that is the one thing to fix, whatever the devices.
    const std::string wanted =
        "training on " + std::to_string(devices.size()) + " device(s) (" + join(devices) + ")" +
        (m_world > 1 ? " as rank " + std::to_string(m_rank) + " of " + std::to_string(m_world) : std::string());
    m_nccl = &load_nccl(wanted);
    const int visible = device_count();
    for (std::size_t i = 0; i < devices.size(); ++i) {
        if (devices[i] < 0 || devices[i] >= visible)
            fail(BRAIN_ERR_DEVICE_NOT_FOUND, "device " + std::to_string(devices[i]) + " of the list " +
                                                 join(devices) + " does not exist: this process sees " +
                                                 std::to_string(visible) + " CUDA device(s), 0.." +
                                                 std::to_string(visible - 1));
        if (std::count(devices.begin(), devices.end(), devices[i]) > 1)
            fail(BRAIN_ERR_INVALID_ARGUMENT,
                 "device " + std::to_string(devices[i]) + " appears twice in the list " + join(devices));
    }
    DevicePlan plan = make_device_plan(desc);
    if (plan.mixed())
        fail(BRAIN_ERR_UNSUPPORTED, "data-parallel training runs float32 and tf32 products; bf16 mixed precision "
                                    "trains on one device (use --precision float32 or tf32, or one device)");

    // The rendezvous: every rank's device count and fingerprint, and rank 0's unique id.
    nccl::UniqueId id{};
    std::vector<int> counts{static_cast<int>(devices.size())};
    if (m_rank == 0) m_nccl->check(m_nccl->get_unique_id(&id), "ncclGetUniqueId");
    if (m_world > 1) {
        if (!desc.rendezvous || !*desc.rendezvous)
            fail(BRAIN_ERR_INVALID_ARGUMENT,
                 "world size " + std::to_string(m_world) +
                     " needs a rendezvous; give --rendezvous file:<path> or tcp:<host>:<port>");
        const std::string mine = fingerprint(desc, plan);
        std::string record = std::to_string(devices.size()) + "\n" + mine + "\n";
        if (m_rank == 0) record += std::string(id.internal, sizeof id.internal);
        const auto records =
            rendezvous_all_gather(parse_rendezvous(desc.rendezvous), m_rank, m_world, record, rendezvous_timeout());
        counts.assign(static_cast<std::size_t>(m_world), 0);
        for (int r = 0; r < m_world; ++r) {
            const std::string& rec = records[r];
            const auto first = rec.find('\n'), second = rec.find('\n', first + 1);
            if (first == std::string::npos || second == std::string::npos)
                fail(BRAIN_ERR_INVALID_DATA, "rank " + std::to_string(r) + "'s rendezvous record is malformed");
            counts[r] = std::atoi(rec.substr(0, first).c_str());
            if (counts[r] < 1 || counts[r] > static_cast<int>(max_data_parallel_devices))
                fail(BRAIN_ERR_INVALID_DATA, "rank " + std::to_string(r) + " reported " + rec.substr(0, first) +
                                                 " devices at the rendezvous; expected 1 to " +
                                                 std::to_string(max_data_parallel_devices));
            const std::string theirs = rec.substr(first + 1, second - first - 1);
            if (theirs != mine)
                fail(BRAIN_ERR_INVALID_ARGUMENT,
                     "rank " + std::to_string(r) + " opened a different session (" + theirs + ") than rank " +
                         std::to_string(m_rank) + " (" + mine +
                         "); start every rank with the same data, network and settings");
            if (r == 0) {
                if (rec.size() != second + 1 + sizeof id.internal)
                    fail(BRAIN_ERR_INVALID_DATA, "rank 0's rendezvous record carries no NCCL unique id");
                std::memcpy(id.internal, rec.data() + second + 1, sizeof id.internal);
            }
        }
    }
    int base = 0;
    m_global_devices = 0;
    for (int r = 0; r < static_cast<int>(counts.size()); ++r) {
        if (r < m_rank) base += counts[r];
        m_global_devices += counts[r];
    }

    // The batch shares of every device among all ranks', and the buckets.
    m_global_batch = plan.config.batch_size;
    m_batches = plan.batch_count();
    m_last_rows = plan.rows - (m_batches - 1) * m_global_batch;
    const auto full = split_rows(m_global_batch, static_cast<std::uint32_t>(m_global_devices));
    const auto last = split_rows(m_last_rows, static_cast<std::uint32_t>(m_global_devices));
    m_share_rows = std::max<std::uint64_t>(1, full.front().rows);

    // The budget of every device, before anything is allocated: each replica holds the same tensors, sized for the
    // largest share of a batch, and the whole data set, so one check answers for all (every rank makes the same).
    plan.batch_rows = std::min<std::size_t>(plan.batch_rows, m_share_rows);
    MemoryLayout layout;
    try {
        layout = plan_memory(plan);
    } catch (const sdk::Failure& f) {
        if (f.code() != BRAIN_ERR_BUDGET_EXCEEDED) throw;
        fail(BRAIN_ERR_BUDGET_EXCEEDED,
             "each of the " + std::to_string(m_global_devices) + " devices trains a share of up to " +
                 std::to_string(m_share_rows) + " rows of the batch of " + std::to_string(m_global_batch) +
                 ", under its own budget: " + f.what() + " (per device: the batch can be up to " +
                 std::to_string(m_global_devices) + " times that)");
    }
    if (!layout.resident)
        fail(
            BRAIN_ERR_BUDGET_EXCEEDED,
            "data-parallel training keeps the data set resident on every device, and " + mib(plan.dataset_bytes()) +
                " of data does not fit the budget of " + mib(plan.budget_bytes) +
                " per device beside the tensors; raise the budget, or train on one device (which stages the data)");
    std::vector<ParameterRange> ranges;
    for (std::size_t l = 0; l < plan.layers.size(); ++l) {
        const std::size_t end =
            l + 1 < plan.layers.size() ? plan.layers[l + 1].weight_offset : plan.parameter_count;
        ranges.push_back({plan.layers[l].weight_offset, end - plan.layers[l].weight_offset});
    }
    m_buckets = plan_buckets(ranges, bucket_floats());
    m_timing_stride = std::max<std::size_t>(1, (m_batches + sampled_batches - 1) / sampled_batches);

    // The communicators first: a rank that fails after joining them aborts them, which its peers see as an error
    // instead of waiting for it.
    m_devices.resize(devices.size());
    for (std::size_t i = 0; i < devices.size(); ++i) {
        Device& d = m_devices[i];
        d.device = devices[i];
        d.global_index = base + static_cast<int>(i);
        d.full_share = full[d.global_index];
        d.last_share = last[d.global_index];
        check_cuda(cudaSetDevice(devices[i]), "cudaSetDevice");
        d.comm_stream = create_stream();
        d.ready = create_event();
        d.reduced = create_event();
    }
    open_communicators(id);
    try {
        // One replica per device; each checks the same budget again on its own allocator.
        brain_session_desc replica_desc = desc;
        replica_desc.devices = nullptr;
        replica_desc.device_list_count = 0;
        replica_desc.rank = 0;
        replica_desc.world_size = 1;
        replica_desc.rendezvous = nullptr;
        for (Device& d : m_devices) {
            replica_desc.device = d.device;
            d.session = std::make_unique<CudaSession>(replica_desc, static_cast<std::size_t>(m_share_rows));
        }
    } catch (...) {
        abort_communicators();
        throw;
    }
    log_message(1, "cuda data-parallel session: " + std::to_string(devices.size()) + " device(s) (" +
                       join(devices) + ") of " + std::to_string(m_global_devices) + " in all, rank " +
                       std::to_string(m_rank) + " of " + std::to_string(m_world) + ", NCCL " +
                       std::to_string(m_nccl->version) + " (" + m_nccl->path + "), " +
                       std::to_string(m_buckets.size()) + " gradient bucket(s), batch " +
                       std::to_string(m_global_batch) + " split " + std::to_string(full.front().rows) + ".." +
                       std::to_string(full.back().rows) + " rows per device");
    m_counters.add_time(sdk::SessionCounters::Phase::Setup, Clock::now() - start);
}

void DataParallelSession::open_communicators(const nccl::UniqueId& id) {
    // One process with several devices creates their communicators in one group (NCCL's rule for a thread that
    // drives several devices).
    m_nccl->check(m_nccl->group_start(), "ncclGroupStart");
    nccl::Result status = nccl::success;
    for (Device& d : m_devices) {
        check_cuda(cudaSetDevice(d.device), "cudaSetDevice");
        const nccl::Result s = m_nccl->comm_init_rank(&d.comm, m_global_devices, id, d.global_index);
        if (s != nccl::success && status == nccl::success) status = s;
    }
    const nccl::Result end = m_nccl->group_end();
    m_nccl->check(status != nccl::success ? status : end,
                  "ncclCommInitRank (joining the communicator of every device; all ranks must reach it)");
    const double batch = static_cast<double>(m_global_batch), last = static_cast<double>(m_last_rows);
    for (Device& d : m_devices) {
        if (m_global_devices == 1) continue; // one device: a plain sum, which leaves the gradient exact
        // A share's gradient is its mean; weighted by its rows over the batch's, the sum is the batch's mean.
        float full_scale = static_cast<float>(static_cast<double>(d.full_share.rows) / batch);
        float last_scale = static_cast<float>(static_cast<double>(d.last_share.rows) / last);
        m_nccl->check(m_nccl->red_op_create_pre_mul_sum(&d.full_op, &full_scale, nccl::float32,
                                                        nccl::scalar_host_immediate, d.comm),
                      "ncclRedOpCreatePreMulSum");
        d.full_op_created = true;
        m_nccl->check(m_nccl->red_op_create_pre_mul_sum(&d.last_op, &last_scale, nccl::float32,
                                                        nccl::scalar_host_immediate, d.comm),
                      "ncclRedOpCreatePreMulSum");
        d.last_op_created = true;
    }
}

DataParallelSession::~DataParallelSession() {
    for (Device& d : m_devices) {
        if (!d.comm) continue;
        (void)cudaSetDevice(d.device);
        if (d.session) (void)cudaStreamSynchronize(d.session->replica_stream());
        if (d.comm_stream) (void)cudaStreamSynchronize(d.comm_stream.get());
        if (d.full_op_created) (void)m_nccl->red_op_destroy(d.full_op, d.comm);
        if (d.last_op_created) (void)m_nccl->red_op_destroy(d.last_op, d.comm);
        (void)m_nccl->comm_destroy(d.comm);
    }
}

void DataParallelSession::require_usable(const char* operation) const {
    if (!m_failure.empty())
        fail(BRAIN_ERR_INVALID_STATE, std::string("cannot ") + operation + ": this data-parallel session failed (" +
                                          m_failure + "); open a new session from the last checkpoint");
}

void DataParallelSession::enqueue_epoch(Device& d) {
    CudaSession& s = *d.session;
    cudaStream_t main = s.replica_stream(), comm = d.comm_stream.get();
    float* grads = s.replica_gradient_buffer();
    s.replica_begin_epoch();
    if (d.timing.empty()) {
        for (std::size_t i = 0; i < 2 * ((m_batches + m_timing_stride - 1) / m_timing_stride); ++i) {
            cudaEvent_t event = nullptr;
            check_cuda(cudaEventCreate(&event), "cudaEventCreate");
            d.timing.emplace_back(event);
        }
    }
    for (std::size_t b = 0; b < m_batches; ++b) {
        const bool last = b + 1 == m_batches && m_last_rows != m_global_batch;
        const RowShare share = last ? d.last_share : d.full_share;
        const nccl::RedOp op = last ? d.last_op : d.full_op;
        std::size_t next = 0;
        const std::function<void(std::size_t)> layer_done = [&](std::size_t layer) {
            for (; next < m_buckets.size() && m_buckets[next].first_layer == layer; ++next) {
                const GradientBucket& bucket = m_buckets[next];
                check_cuda(cudaEventRecord(d.ready.get(), main), "cudaEventRecord");
                check_cuda(cudaStreamWaitEvent(comm, d.ready.get(), 0), "cudaStreamWaitEvent");
                m_nccl->check(m_nccl->all_reduce(grads + bucket.offset, grads + bucket.offset, bucket.count,
                                                 nccl::float32, op, d.comm, comm),
                              "ncclAllReduce (the gradient)");
                d.allreduce_bytes += 4ull * bucket.count;
            }
        };
        s.replica_gradients(b * m_global_batch + share.first, static_cast<unsigned>(share.rows), layer_done);
        const bool timed = b % m_timing_stride == 0;
        if (timed) check_cuda(cudaEventRecord(d.timing[2 * (b / m_timing_stride)].get(), main), "cudaEventRecord");
        check_cuda(cudaEventRecord(d.reduced.get(), comm), "cudaEventRecord");
        if (timed)
            check_cuda(cudaEventRecord(d.timing[2 * (b / m_timing_stride) + 1].get(), comm), "cudaEventRecord");
        check_cuda(cudaStreamWaitEvent(main, d.reduced.get(), 0), "cudaStreamWaitEvent");
        s.replica_step(static_cast<unsigned>(share.rows), static_cast<int>(b));
    }
    // The epoch's loss: every device's share summed, so that every rank reports the whole epoch's mean.
    float* loss = s.replica_finish_epoch();
    m_nccl->check(m_nccl->all_reduce(loss, loss, 1, nccl::float32, nccl::sum, d.comm, main),
                  "ncclAllReduce (the loss)");
    s.replica_read_loss();
}

bool DataParallelSession::poll(Device& d) {
    check_cuda(cudaSetDevice(d.session->device()), "cudaSetDevice");
    const cudaError_t status = cudaStreamQuery(d.session->replica_stream());
    if (status == cudaSuccess) {
        check_cuda(cudaStreamSynchronize(d.comm_stream.get()), "the gradient's all-reduce");
        return true;
    }
    if (status != cudaErrorNotReady) check_cuda(status, "the epoch");
    nccl::Result async = nccl::success;
    m_nccl->check(m_nccl->comm_get_async_error(d.comm, &async), "ncclCommGetAsyncError");
    if (async != nccl::success && async != nccl::in_progress)
        m_nccl->check(async, "the gradient's all-reduce (a device or rank of this session failed)");
    return false;
}

void DataParallelSession::abort_communicators() noexcept {
    for (Device& d : m_devices) {
        if (!d.comm) continue;
        (void)cudaSetDevice(d.device);
        (void)m_nccl->comm_abort(d.comm);
        d.comm = nullptr;
        d.full_op_created = d.last_op_created = false;
    }
}

void DataParallelSession::fail_device(const Device& d, brain_status code, const std::string& what) {
    abort_communicators();
    const std::uint64_t epoch = d.session->stats().epochs; // epochs completed by this session
    m_failure = "device " + std::to_string(d.session->device()) + " (rank " + std::to_string(m_rank) + " of " +
                std::to_string(m_world) + ", device " + std::to_string(d.global_index) + " of " +
                std::to_string(m_global_devices) + " in all) failed in this session's epoch " +
                std::to_string(epoch) + ": " + what;
    for (Device& other : m_devices) other.session->replica_failed(m_failure);
    fail(code, m_failure + "; every rank stops, and the weights of the last checkpoint are kept");
}

float DataParallelSession::train_epoch() {
    require_usable("train an epoch");
    const auto start = Clock::now();
    // One host thread per device enqueues its epoch: each calls NCCL for its own communicator only.
    std::vector<std::exception_ptr> errors(m_devices.size());
    auto run = [&](std::size_t i) {
        try {
            check_cuda(cudaSetDevice(m_devices[i].session->device()), "cudaSetDevice");
            enqueue_epoch(m_devices[i]);
        } catch (...) {
            errors[i] = std::current_exception();
        }
    };
    if (m_devices.size() == 1) {
        run(0);
    } else {
        std::vector<std::thread> threads;
        for (std::size_t i = 0; i < m_devices.size(); ++i) threads.emplace_back(run, i);
        for (auto& t : threads) t.join();
    }
    auto fail_with = [this](std::size_t i, const std::exception_ptr& error) {
        try {
            std::rethrow_exception(error);
        } catch (const sdk::Failure& f) {
            fail_device(m_devices[i], f.code(), f.what());
        } catch (const std::exception& e) {
            fail_device(m_devices[i], BRAIN_ERR_PLUGIN_FAILURE, e.what());
        }
    };
    // A device whose epoch could not be enqueued stops the session at once: its peers would wait for it forever.
    for (std::size_t i = 0; i < m_devices.size(); ++i)
        if (errors[i]) fail_with(i, errors[i]);
    // Every device is polled in turn, so that whichever fails first (or a peer rank's failure, through NCCL's
    // asynchronous error) ends the wait, rather than a wait on a device that waits for it.
    std::vector<bool> done(m_devices.size(), false);
    for (std::size_t pending = m_devices.size(); pending > 0;) {
        for (std::size_t i = 0; i < m_devices.size(); ++i) {
            if (done[i]) continue;
            try {
                if (poll(m_devices[i])) done[i] = true, --pending;
            } catch (...) {
                fail_with(i, std::current_exception());
            }
        }
        if (pending) std::this_thread::sleep_for(std::chrono::microseconds(50));
    }
    const auto elapsed = Clock::now() - start;
    float loss = 0.0f; // the same sum on every device
    for (Device& d : m_devices) {
        // The sampled batches' time from the end of the backward pass to the end of the sums: what the overlap
        // did not hide.
        double exposed = 0;
        for (std::size_t i = 0; i + 1 < d.timing.size(); i += 2) {
            float ms = 0;
            if (cudaEventElapsedTime(&ms, d.timing[i].get(), d.timing[i + 1].get()) == cudaSuccess && ms > 0)
                exposed += ms * 1e6;
        }
        d.exposed_ns += exposed * static_cast<double>(m_batches) / static_cast<double>(d.timing.size() / 2);
        d.session->replica_count_epoch(m_batches, elapsed);
        try {
            loss = d.session->replica_epoch_loss();
        } catch (const sdk::Failure& f) {
            m_failure = f.what();
            abort_communicators();
            throw;
        }
    }
    m_counters.add_time(sdk::SessionCounters::Phase::Training, elapsed);
    m_counters.count_batches(m_batches);
    m_counters.count_epoch();
    return loss;
}

void DataParallelSession::set_learning_rate(float learning_rate) {
    for (Device& d : m_devices) d.session->set_learning_rate(learning_rate);
}

void DataParallelSession::set_step_learning_rates(const float* rates, std::uint64_t count) {
    // Every device takes the same steps (its share of each global batch), so each gets the same rates.
    for (Device& d : m_devices) d.session->set_step_learning_rates(rates, count);
}

void DataParallelSession::checkpoint(float* parameters, std::uint64_t parameter_count, float* optimizer_state,
                                     std::uint64_t optimizer_state_count, std::uint64_t* out_step) {
    require_usable("take a checkpoint");
    // Every device took the same steps from the same weights: the first holds what all hold.
    m_devices.front().session->checkpoint(parameters, parameter_count, optimizer_state, optimizer_state_count,
                                          out_step);
}

brain_session_stats DataParallelSession::device_stats(std::uint32_t index) const {
    if (index >= m_devices.size())
        fail(BRAIN_ERR_INVALID_ARGUMENT, "device index " + std::to_string(index) + " is outside this session's " +
                                             std::to_string(m_devices.size()) + " device(s)");
    const Device& d = m_devices[index];
    brain_session_stats out = d.session->stats();
    out.devices = 1;
    out.allreduce_bytes = d.allreduce_bytes;
    out.allreduce_time_ns = static_cast<std::uint64_t>(d.exposed_ns);
    return out;
}

brain_session_stats DataParallelSession::stats() const noexcept {
    // Transfers and all-reduce bytes add up over this process's devices; memory figures are the largest device's
    // (each device has its own budget); times are the session's wall-clock time.
    brain_session_stats out = m_devices.front().session->stats();
    out.struct_size = sizeof out;
    out.host_to_device_bytes = out.device_to_host_bytes = out.allreduce_bytes = 0;
    double exposed = 0;
    for (const Device& d : m_devices) {
        const brain_session_stats s = d.session->stats();
        out.peak_allocated_bytes = std::max(out.peak_allocated_bytes, s.peak_allocated_bytes);
        out.host_to_device_bytes += s.host_to_device_bytes;
        out.device_to_host_bytes += s.device_to_host_bytes;
        out.allreduce_bytes += d.allreduce_bytes;
        exposed = std::max(exposed, d.exposed_ns);
    }
    const brain_session_stats own = m_counters.stats(sdk::SessionFacts{});
    out.setup_time_ns = own.setup_time_ns;
    out.training_time_ns = own.training_time_ns;
    out.epochs = own.epochs;
    out.batches = own.batches;
    out.devices = static_cast<std::uint32_t>(m_devices.size());
    out.allreduce_time_ns = static_cast<std::uint64_t>(exposed);
    std::snprintf(out.arithmetic, sizeof out.arithmetic, "%s, data parallel x%d",
                  std::string(m_devices.front().session->stats().arithmetic).c_str(), m_global_devices);
    return out;
}

} // namespace brain::cuda
