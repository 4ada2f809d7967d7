// CudaSession's fused epochs: whether a session takes the cluster epoch kernel (kernels/cluster_epoch.cu), the
// fused epoch kernel (kernels/fused_epoch.cu) or neither, their arguments and workspace, and their launch.
#include "cuda_plugin_log.hpp"
#include "cuda_session.hpp"
#include "row_share_plan.hpp"
#include "test_hooks.hpp"
#include "tile_height_plan.hpp"

#include <algorithm>
#include <cstdlib>

namespace brain::cuda {

namespace {

constexpr unsigned fused_threads = 256; // BRAIN_FUSED_THREADS in kernels/fused_gemm.cuh
// The auto choice of the fused epoch (fused_epoch_pays): no layer wider than this, and at most this many
// multiply-adds per optimizer step.
constexpr std::size_t fused_max_width = 1024;
constexpr double fused_max_multiply_adds = 3.0e8;
// The cluster epoch's slices: at most this many batch rows per block, on as many clusters as that takes; and, on
// several clusters, at most this many (the most clusters an H200 holds at once give batches of 1,024 rows slices
// of 10).
constexpr std::size_t cluster_max_slice = 8;
constexpr std::size_t clusters_max_slice = 10;
// Several clusters take networks whose layers have at most this many inputs on average (biases counted): a block
// walks each layer's inputs in one chain per output, a chain the fused kernel splits over four thread groups, so
// with slices of 8 to 10 rows the cluster kernel wins where a layer's chain is short against a grid barrier
// (docs/performance-grid.md).
constexpr std::size_t clusters_max_mean_inputs = 64;
// With the gradient shares in global memory (networks a block holds once but not twice), each step writes and
// reads every block's share through L2: that pays only against the fused kernel's many grid barriers of deep
// networks, on one cluster with short slices and layers of short chains (docs/performance-grid.md).
constexpr std::size_t global_grads_min_layers = 7;
constexpr std::size_t global_grads_max_slice = 4;
constexpr std::size_t global_grads_max_outputs = 64;

// The clusters of `blocks` blocks that give a batch of `batch` rows slices of at most cluster_max_slice rows.
unsigned clusters_for(unsigned batch, unsigned blocks) {
    return (batch + blocks * cluster_max_slice - 1) / (blocks * cluster_max_slice);
}

// Whether the cluster epoch kernel, on `clusters` clusters of `blocks`, is expected to beat the fused epoch kernel
// for this plan (BRAIN_CUDA_FUSED unset). A cluster pays two cluster barriers per step (and, on several clusters,
// one barrier of a rank's blocks with the clusters' sums through L2) instead of a grid barrier per layer and phase,
// and no round trip through L2 between layers, but each block takes its slice of the batch through every layer at
// one SM's rate: it wins while the slices are short (docs/performance-grid.md). `global_grads`: the
// gradient shares live in global memory.
bool cluster_epoch_pays(const sdk::SessionPlan& plan, std::size_t blocks, std::size_t clusters, bool global_grads) {
    const std::size_t all = blocks * clusters, slice = (plan.batch_rows + all - 1) / all;
    if (global_grads) {
        std::size_t widest = 0;
        for (const LayerPlan& layer : plan.layers) widest = std::max(widest, layer.outputs);
        return clusters == 1 && slice <= global_grads_max_slice && plan.layers.size() >= global_grads_min_layers &&
               widest <= global_grads_max_outputs;
    }
    if (clusters == 1) return slice <= cluster_max_slice;
    std::size_t inputs = 0;
    for (const LayerPlan& layer : plan.layers) inputs += layer.inputs + 1;
    return slice <= clusters_max_slice && inputs <= clusters_max_mean_inputs * plan.layers.size();
}

// The bytes of the blocks' gradient shares in global memory (brain_cluster_exchange::grads): `floats` for each of
// `blocks` blocks of `clusters` clusters.
std::uint64_t global_grads_bytes(unsigned clusters, unsigned blocks, std::uint64_t floats) {
    return 4ull * clusters * blocks * floats;
}

// The clusters' exchange (brain_cluster_exchange) as one allocation for `clusters` clusters and `params`
// parameters: the barrier words, then the clusters' losses, then two sets of the clusters' gradient sums (offsets
// and size in bytes).
struct ExchangeLayout {
    std::uint64_t losses, sums, bytes;
    ExchangeLayout(unsigned clusters, std::uint64_t params)
        : losses(4ull * BRAIN_CLUSTER_MAX_BLOCKS), sums(losses + 8ull * clusters),
          bytes(sums + 4ull * 2 * clusters * params) {}
};

} // namespace

// Whether the fused epoch kernel is expected to beat the cuBLAS path for this plan (BRAIN_CUDA_FUSED unset).
bool fused_epoch_pays(const sdk::SessionPlan& plan) {
    // The fused kernel multiplies with plain FP32 FMAs from shared memory, several times slower than cuBLAS per
    // FLOP, but saves a launch gap per operation. It pays while a step's arithmetic is small: x1024 (2.5e8
    // multiply-adds per step) is the largest measured config it wins (docs/performance.md); wide (6.5e10) is far on
    // cuBLAS's side and excluded by its width anyway.
    std::size_t widest = 0;
    double multiply_adds = 0.0;
    for (const LayerPlan& layer : plan.layers) {
        widest = std::max({widest, layer.inputs, layer.outputs});
        multiply_adds += 3.0 * static_cast<double>(layer.inputs) * static_cast<double>(layer.outputs);
    }
    multiply_adds *= static_cast<double>(plan.batch_rows);
    return widest <= fused_max_width && multiply_adds <= fused_max_multiply_adds;
}

namespace {

// The launch of `clusters` clusters of `blocks` blocks of `threads` threads, each with `shared` bytes of dynamic
// shared memory, cooperative where there are several, whose blocks wait for each other (the configuration points
// at its own attributes, so it is neither copied nor moved).
struct ClusterLaunch {
    cudaLaunchAttribute attributes[2]{};
    cudaLaunchConfig_t config{};
    ClusterLaunch(unsigned blocks, unsigned clusters, unsigned threads, std::size_t shared, cudaStream_t stream) {
        attributes[0].id = cudaLaunchAttributeClusterDimension;
        attributes[0].val.clusterDim.x = blocks;
        attributes[0].val.clusterDim.y = 1;
        attributes[0].val.clusterDim.z = 1;
        attributes[1].id = cudaLaunchAttributeCooperative;
        attributes[1].val.cooperative = 1;
        config.gridDim = dim3(blocks * clusters);
        config.blockDim = dim3(threads);
        config.dynamicSmemBytes = shared;
        config.stream = stream;
        config.attrs = attributes;
        config.numAttrs = clusters > 1 ? 2 : 1;
    }
    ClusterLaunch(const ClusterLaunch&) = delete;
    ClusterLaunch& operator=(const ClusterLaunch&) = delete;
};

// How many clusters of `blocks` blocks of `threads` threads, each with `shared` bytes of dynamic shared memory, the
// device holds at once (0 where it holds none or cannot say).
unsigned resident_clusters(const void* kernel, unsigned blocks, unsigned threads, std::size_t shared) {
    const ClusterLaunch probe(blocks, 1, threads, shared, nullptr);
    int resident = 0;
    if (cudaOccupancyMaxActiveClusters(&resident, kernel, &probe.config) != cudaSuccess) {
        (void)cudaGetLastError();
        return 0;
    }
    return resident > 0 ? static_cast<unsigned>(resident) : 0u;
}

// Whether a kernel can run cooperatively at one block of fused_threads per SM on this device.
bool cooperative_fits(cudaKernel_t kernel, const char* what) {
    int per_sm = 0;
    check_cuda(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, reinterpret_cast<const void*>(kernel),
                                                             fused_threads, 0),
               what);
    return per_sm >= 1;
}

} // namespace

bool CudaSession::choose_fused_epoch(std::uint64_t spare_bytes) {
    const DevicePlan& plan = m_plan;
    const char* setting = std::getenv("BRAIN_CUDA_FUSED");
    const std::string mode = setting ? setting : "auto";
    if (mode == "0") return false;
    if (plan.layers.size() > BRAIN_FUSED_MAX_LAYERS || plan.config.batch_size > BRAIN_FUSED_MAX_BATCH) return false;
    // TF32 and BF16 are tensor-core precisions, which only the cuBLAS path has: the path changes, never the
    // arithmetic, and the log says so where the fused kernel would have run.
    if (plan.precision != BRAIN_PRECISION_FLOAT32) {
        if (mode != "auto" || fused_epoch_pays(plan))
            log_message(1, std::string("cuda session: precision ") +
                               (plan.precision == BRAIN_PRECISION_TF32 ? "tf32" : "bf16") +
                               " runs on the tensor cores through cuBLAS; the fused epoch kernel computes "
                               "in float32 only, so this session takes the cuBLAS path");
        return false;
    }
    if (choose_cluster_epoch(mode, spare_bytes)) return true;
    int cooperative = 0;
    check_cuda(cudaDeviceGetAttribute(&cooperative, cudaDevAttrCooperativeLaunch, m_device),
               "cudaDeviceGetAttribute");
    const bool fits =
        cooperative && cooperative_fits((*m_kernels)[Kernel::FusedEpoch],
                                        "cudaOccupancyMaxActiveBlocksPerMultiprocessor (the fused epoch)");
    if (!fits) {
        log_message(2, "cuda session: the fused epoch kernel cannot run on this device (cooperative launch " +
                           std::string(cooperative ? "supported, but not one block per SM" : "unsupported") +
                           "); using the cuBLAS path");
        return false;
    }
    // One block per SM: more blocks make the barriers dearer and the steps slower (docs/performance.md).
    m_fused_grid = static_cast<unsigned>(m_sm_count);
    if (const unsigned asked = test_fused_grid(); asked != 0) m_fused_grid = std::min(asked, m_fused_grid);
    // BRAIN_CUDA_FUSED=1 forces the fused epoch kernel; unset, it is taken where it is expected to be the faster.
    return mode == "1" || fused_epoch_pays(plan);
}

// BRAIN_CUDA_FUSED=cluster asks for the cluster epoch kernel wherever a cluster can hold the network and a batch;
// unset, it is taken where it is expected to be the faster (cluster_epoch_pays). The cluster is as large as the
// device runs one of (16 blocks on an H100 or H200, else 8 or 4), and no larger than the batch; batches longer
// than clusters_for's run on as many clusters as give slices of at most cluster_max_slice rows, where the device
// holds them all at once and the budget their exchange (as many as it holds when BRAIN_CUDA_FUSED=cluster).
bool CudaSession::choose_cluster_epoch(const std::string& mode, std::uint64_t spare_bytes) {
    const DevicePlan& plan = m_plan;
    if (mode != "cluster" && (mode != "auto" || test_withhold_cluster_epoch())) return false;
    const auto refuse = [&](const std::string& why) {
        if (mode == "cluster")
            log_message(2, "cuda session: BRAIN_CUDA_FUSED=cluster, but " + why + "; choosing as when it is unset");
        return false;
    };
    int major = 0, cluster_launch = 0;
    check_cuda(cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, m_device),
               "cudaDeviceGetAttribute");
    check_cuda(cudaDeviceGetAttribute(&cluster_launch, cudaDevAttrClusterLaunch, m_device),
               "cudaDeviceGetAttribute");
    if (major < 9 || !cluster_launch)
        return refuse("the cluster epoch kernel needs thread-block clusters (compute capability 9.0 or newer), "
                      "which this device has not");
    brain_fused_layer layers[BRAIN_FUSED_MAX_LAYERS] = {};
    for (std::size_t l = 0; l < plan.layers.size(); ++l) {
        layers[l].inputs = static_cast<uint32_t>(plan.layers[l].inputs);
        layers[l].outputs = static_cast<uint32_t>(plan.layers[l].outputs);
        layers[l].activation = plan.layers[l].activation;
    }
    const auto kernel = reinterpret_cast<const void*>((*m_kernels)[Kernel::ClusterEpoch]);
    int optin = 0;
    check_cuda(cudaDeviceGetAttribute(&optin, cudaDevAttrMaxSharedMemoryPerBlockOptin, m_device),
               "cudaDeviceGetAttribute");
    cudaFuncAttributes attributes{};
    check_cuda(cudaFuncGetAttributes(&attributes, kernel), "cudaFuncGetAttributes (the cluster epoch)");
    check_cuda(cudaFuncSetAttribute(kernel, cudaFuncAttributeNonPortableClusterSizeAllowed, 1),
               "cudaFuncSetAttribute (the cluster epoch's cluster size)");
    const unsigned batch = static_cast<unsigned>(plan.config.batch_size);
    const unsigned asked = test_cluster_blocks(), most = test_max_clusters();
    const bool only_global = test_cluster_global_grads();
    const auto layer_count = static_cast<uint32_t>(plan.layers.size());
    // The gradient shares go to shared memory where the layout fits with them, else to global memory (a block then
    // holds about twice the parameters).
    for (unsigned blocks : {16u, 8u, 4u}) {
        if (asked && blocks != asked) continue;
        for (const bool global : {false, true}) {
            if (only_global && !global) continue;
            const unsigned used = std::min(blocks, batch);
            brain_cluster_layout layout;
            brain_cluster_plan(layers, layer_count, batch, used, 1, global, &layout);
            const std::uint64_t grad_floats = layout.grad_floats;
            // The workspace: the exchange between clusters, and the gradient shares kept in global memory.
            const auto workspace = [&](unsigned count) {
                return (count > 1 ? ExchangeLayout(count, plan.parameter_count).bytes : 0) +
                       (global ? global_grads_bytes(count, used, grad_floats) : 0);
            };
            unsigned clusters = clusters_for(batch, used);
            if (most) clusters = std::min(clusters, most);
            while (clusters > 1 && charged_bytes(workspace(clusters)) > spare_bytes) --clusters;
            if (charged_bytes(workspace(clusters)) > spare_bytes) continue;
            // The device must hold every cluster at once (the launch is cooperative): fewer clusters until it
            // does, each count with its own layout (fewer clusters, longer slices, more shared memory per block);
            // none where a block's shared memory holds no layout.
            std::uint64_t bytes = 0;
            while (clusters > 0) {
                bytes = 4 * brain_cluster_plan(layers, layer_count, batch, used, clusters, global, &layout);
                if (bytes + attributes.sharedSizeBytes > static_cast<std::uint64_t>(optin)) {
                    clusters = 0;
                    break;
                }
                check_cuda(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                                static_cast<int>(bytes)),
                           "cudaFuncSetAttribute (the cluster epoch's shared memory)");
                const unsigned resident =
                    resident_clusters(kernel, used, static_cast<unsigned>(attributes.maxThreadsPerBlock), bytes);
                if (resident >= clusters) break;
                clusters = resident;
            }
            if (clusters == 0) continue;
            if (mode == "auto" && !cluster_epoch_pays(plan, used, clusters, global)) continue;
            m_cluster_blocks = used;
            m_cluster_count = clusters;
            m_cluster_global_grad_floats = global ? grad_floats : 0;
            m_cluster_threads = static_cast<unsigned>(attributes.maxThreadsPerBlock); // BRAIN_CLUSTER_THREADS
            m_cluster_shared_bytes = bytes;
            log_message(1, "cuda session: the cluster epoch kernel, " + std::to_string(clusters) +
                               (clusters == 1 ? " cluster" : " clusters") + " of " + std::to_string(used) +
                               " blocks of " + std::to_string(bytes + attributes.sharedSizeBytes) +
                               " bytes of shared memory" +
                               (global ? ", the gradient shares in global memory" : ""));
            return true;
        }
    }
    return refuse(
        "no cluster of 4 to 16 blocks holds this network and a slice of its batch in shared memory (a block "
        "has at most " +
        std::to_string(optin) + " bytes)");
}

void CudaSession::prepare_fused_epoch(std::uint64_t spare_bytes) {
    const DevicePlan& plan = m_plan;
    brain_fused_epoch_args& a = m_fused_args;
    a = brain_fused_epoch_args{};
    for (std::size_t l = 0; l < plan.layers.size(); ++l) {
        const LayerPlan& layer = plan.layers[l];
        brain_fused_layer& f = a.layers[l];
        f.z = m_z[l].floats();
        f.a = m_a[l].get() ? m_a[l].floats() : f.z;
        f.delta = m_delta[l].floats();
        f.weight_offset = layer.weight_offset;
        f.bias_offset = layer.bias_offset;
        f.inputs = static_cast<uint32_t>(layer.inputs);
        f.outputs = static_cast<uint32_t>(layer.outputs);
        f.activation = layer.activation;
        f.param = layer.param;
    }
    a.params = m_params.floats();
    a.grads = m_grads.floats();
    a.state_m = m_state.floats();
    a.state_v = plan.optimizer.kind == BRAIN_OPT_SGD ? nullptr : m_state.floats() + plan.parameter_count;
    a.features = m_features.floats();
    a.targets = m_targets.floats();
    a.perm = plan.config.shuffle ? static_cast<uint32_t*>(m_perm.get()) : nullptr;
    a.row_loss = m_row_loss.floats();
    a.scalars = static_cast<brain_cuda_scalars*>(m_scalars.get());
    a.rows = plan.rows;
    a.seed = plan.config.seed;
    a.parameter_count = plan.parameter_count;
    a.layer_count = static_cast<uint32_t>(plan.layers.size());
    a.batch_size = static_cast<uint32_t>(plan.config.batch_size);
    a.loss = plan.loss;
    a.optimizer = plan.optimizer.kind;
    a.beta1 = plan.optimizer.beta1;
    a.beta2 = plan.optimizer.beta2;
    a.epsilon = plan.optimizer.epsilon;
    a.weight_decay = plan.optimizer.weight_decay;
    a.momentum = plan.optimizer.momentum;
    a.rates = m_rates.floats(); // the epoch's rate per step (set_learning_rate and set_step_learning_rates fill it)
    if (test_fused_profile_requested() && plan.batch_count() > 1) {
        constexpr std::uint64_t bytes = 8ull * BRAIN_FUSED_PROFILE_SLOTS;
        m_fused_profile = m_allocator.allocate(bytes, MemoryKind::Workspace, "the fused epoch's profile");
        check_cuda(cudaMemsetAsync(m_fused_profile.get(), 0, bytes, m_stream.get()), "cudaMemsetAsync");
        a.profile = static_cast<uint64_t*>(m_fused_profile.get());
    }
    if (m_cluster_blocks) {
        // The blocks' gradient shares where they live in global memory, and the exchange through which several
        // clusters add up their gradients (choose_cluster_epoch left room for both).
        m_cluster_exchange = brain_cluster_exchange{};
        m_cluster_exchange.clusters = m_cluster_count;
        if (m_cluster_global_grad_floats) {
            m_cluster_grads = m_allocator.allocate(
                global_grads_bytes(m_cluster_count, m_cluster_blocks, m_cluster_global_grad_floats),
                MemoryKind::Workspace, "the cluster epoch's gradient shares");
            m_cluster_exchange.grads = m_cluster_grads.floats();
        }
        if (m_cluster_count > 1) {
            const ExchangeLayout layout(m_cluster_count, plan.parameter_count);
            m_cluster_workspace = m_allocator.allocate(layout.bytes, MemoryKind::Workspace,
                                                       "the cluster epoch's exchange between clusters");
            // On the session's stream, which does not wait for the legacy default stream's work.
            check_cuda(cudaMemsetAsync(m_cluster_workspace.get(), 0, layout.losses, m_stream.get()),
                       "cudaMemsetAsync");
            auto* base = static_cast<unsigned char*>(m_cluster_workspace.get());
            m_cluster_exchange.words = reinterpret_cast<uint32_t*>(base);
            m_cluster_exchange.losses = reinterpret_cast<double*>(base + layout.losses);
            m_cluster_exchange.sums = reinterpret_cast<float*>(base + layout.sums);
        }
        return; // the rest is the fused epoch kernel's
    }
    // The head's workspace (each block's share of its gradient; a folded head's dot products and gradient slices),
    // taken only where the budget has room for it.
    const LayerPlan& head = plan.layers.back();
    const std::uint64_t head_floats = head.outputs * (head.inputs + 1);
    const std::uint64_t head_bytes = 4ull * m_fused_grid * head_floats;
    const bool head_room = plan.layers.size() >= 2 && head.outputs <= BRAIN_FUSED_HEAD_WIDTH &&
                           charged_bytes(head_bytes) <= spare_bytes && !test_withhold_head_shares();
    // A one-output head that the kernel folds into the phases beside it, on the first step's rows as on every full
    // batch's (brain_fused_head_folds): the kernel with the fold's code. A kernel of its own, so that the other
    // sessions' kernel is not rescheduled by it.
    const auto first_rows = static_cast<uint32_t>(std::min<std::uint64_t>(plan.config.batch_size, plan.rows));
    const bool folds =
        head_room && head_floats <= BRAIN_FUSED_HEAD_SLICE &&
        brain_fused_head_folds(static_cast<uint32_t>(plan.layers.size()), static_cast<uint32_t>(head.outputs),
                               head.activation, plan.loss,
                               static_cast<uint32_t>(plan.layers[plan.layers.size() - 2].outputs), first_rows,
                               m_fused_grid, fused_threads / 32) &&
        cooperative_fits((*m_kernels)[Kernel::FusedEpochFolded],
                         "cudaOccupancyMaxActiveBlocksPerMultiprocessor (the fused epoch with a folded head)");
    // A narrow head on batches no longer than the grid: the kernel whose loss phase gives each block a batch row
    // (brain_fused_epoch_head_rows), its warps on the row's outputs at once, where a warp per row would walk every
    // output of its row in turn. A kernel of its own, so that the other sessions' kernel is not rescheduled. A
    // folded head has no loss phase.
    const bool head_rows =
        !folds && head.outputs <= BRAIN_FUSED_HEAD_WIDTH && plan.config.batch_size <= m_fused_grid &&
        !test_withhold_head_rows() &&
        cooperative_fits((*m_kernels)[Kernel::FusedEpochHeadRows],
                         "cudaOccupancyMaxActiveBlocksPerMultiprocessor (the fused epoch with a row per block)");
    // A narrow head whose gradient fits a warp's slice of shared memory, or any narrow head where blocks take the
    // rows: the loss phase also does the head's backward pass, given room for each block's share of the head's
    // gradient (kernel: fused_output_and_loss), which saves a phase and its grid barrier per step. Without the
    // workspace the kernel runs the head's backward phase of its own.
    if (head_room && (head_floats <= BRAIN_FUSED_HEAD_SLICE || head_rows)) {
        m_fused_head =
            m_allocator.allocate(head_bytes, MemoryKind::Workspace, "the fused epoch's head gradient shares");
        a.head_partial = m_fused_head.floats();
        spare_bytes -= charged_bytes(head_bytes);
    }
    m_fused_kernel = Kernel::FusedEpoch;
    if (folds) {
        m_fused_kernel = Kernel::FusedEpochFolded;
        log_message(1, "cuda session: the fused epoch kernel folds the one-output head into the phases beside it");
    } else if (head_rows) {
        m_fused_kernel = Kernel::FusedEpochHeadRows;
        log_message(1, "cuda session: the fused epoch kernel's loss phase takes a batch row per block");
    }
    // Layers whose weight gradient sums many rows go to row shares (row_share_plan.hpp) in the kernel built for
    // them, given room for the workspace: two buffers of shares, one written by a phase while the next reads the
    // other. Their batches (256 rows or more) are longer than the grids that take the rows-per-block kernel.
    const RowSharePlan shares =
        head_rows ? RowSharePlan{}
                  : plan_row_shares(plan.layers, plan.config.batch_size, a.head_partial != nullptr);
    if (shares.layers != 0 && charged_bytes(shares.bytes) <= spare_bytes &&
        cooperative_fits((*m_kernels)[folds ? Kernel::FusedEpochFoldedShares : Kernel::FusedEpochShares],
                         "cudaOccupancyMaxActiveBlocksPerMultiprocessor (the fused epoch with row shares)")) {
        m_fused_kernel = folds ? Kernel::FusedEpochFoldedShares : Kernel::FusedEpochShares;
        m_fused_shares = m_allocator.allocate(shares.bytes, MemoryKind::Workspace,
                                              "the fused epoch's weight gradient row shares");
        a.row_shares = m_fused_shares.floats();
        a.row_share_layers = shares.layers;
        a.row_share_width = static_cast<uint32_t>(shares.width);
        std::string layers;
        for (std::size_t l = 0; l < plan.layers.size(); ++l)
            if ((shares.layers >> l) & 1u) layers += (layers.empty() ? "" : ", ") + std::to_string(l);
        log_message(1, "cuda session: the fused epoch kernel sums the weight gradients of layers " + layers +
                           " in row shares");
    }
    // Each backward phase's tile heights, where its two products are better apart (tile_height_plan.hpp); a layer
    // in row shares keeps the rule of its own.
    if (!test_withhold_tile_heights()) {
        const TileHeightPlan heights = plan_tile_heights(plan.layers, plan.config.batch_size, m_fused_grid);
        a.tile_flip_dw = heights.flip_dw & ~a.row_share_layers;
        a.tile_flip_dx = heights.flip_dx & ~a.row_share_layers;
        a.tile_flip_bias = heights.flip_bias & ~a.row_share_layers;
    }
}

void CudaSession::run_fused_epoch() {
    brain_fused_epoch_args args = m_fused_args;
    void* params[] = {&args};
    if (m_cluster_blocks) {
        unsigned blocks = m_cluster_blocks;
        brain_cluster_exchange exchange = m_cluster_exchange;
        void* cluster_params[] = {&args, &blocks, &exchange};
        const ClusterLaunch launch(blocks, m_cluster_count, m_cluster_threads, m_cluster_shared_bytes,
                                   m_stream.get());
        check_cuda(cudaLaunchKernelExC(&launch.config,
                                       reinterpret_cast<const void*>((*m_kernels)[Kernel::ClusterEpoch]),
                                       cluster_params),
                   "cudaLaunchKernelExC (the cluster epoch)");
    } else {
        check_cuda(cudaLaunchCooperativeKernel(reinterpret_cast<const void*>((*m_kernels)[m_fused_kernel]),
                                               dim3(m_fused_grid), dim3(fused_threads), params, 0, m_stream.get()),
                   "cudaLaunchCooperativeKernel (the fused epoch)");
    }
    if (m_fused_profile.get()) {
        check_cuda(cudaStreamSynchronize(m_stream.get()), "the epoch");
        std::uint64_t stamps[BRAIN_FUSED_PROFILE_SLOTS];
        if (cudaMemcpy(stamps, m_fused_profile.get(), sizeof stamps, cudaMemcpyDeviceToHost) == cudaSuccess)
            log_message(1, m_cluster_blocks ? cluster_profile_text(stamps)
                                            : fused_profile_text(stamps, m_plan.layers.size()));
    }
}

} // namespace brain::cuda
