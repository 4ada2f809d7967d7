// brain_gemm_rate: the rate cuBLAS alone reaches on exactly the GEMMs one training step of brain_bench's
// workloads performs: the reference for wide and huge, whose training step should reach at least 90% of the
// float32 GEMM rate the same machine measures with cuBLAS. tools/perf/gemm-rate-compare divides its GEMM time per step
// by brain's whole step time. For the small configs (seed16 ... x1024), which brain trains in its fused epoch
// kernel, the same figures bound the step from the other side: what the step's products alone cost as the vendor's
// library runs them, one after another and as one CUDA graph, and (--once, under Nsight Compute) each product's
// kernels alone. The shape grid's points (bench_grid.hpp: g00, g01, ... or grid, drawn by --grid-points and
// --grid-seed as brain_bench draws them) are measured the same way: tools/perf/grid-compare --floors sets the step
// time of PyTorch's CUDA-graph loop on each point against the floor its products alone set.
//
// It links only the CUDA runtime and cuBLAS, never brain::core, so the reference cannot inherit brain's overheads
// (or its bugs). The calls mirror plugins/cuda/cuda_session.cpp (same transposes, leading dimensions, compute type,
// 32 MiB workspace), so cuBLAS picks the same kernels it picks for brain.
//
// One JSON line per config on stdout. Exit status: 0 measured; 2 bad usage or no usable GPU (one line on stderr
// says which); 1 a CUDA or cuBLAS call failed (one line names the call and its status).
#include "bench_grid.hpp"

#include <CLI/CLI.hpp>
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cublas_v2.h>
#include <cuda_profiler_api.h>
#include <cuda_runtime_api.h>
#include <dlfcn.h>
#include <iostream>
#include <map>
#include <nvtx3/nvToolsExt.h>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

namespace {

// A call that failed; main prints what() as the single error line and exits 1.
class Failure : public std::runtime_error {
public:
    using std::runtime_error::runtime_error;
};

void check(cudaError_t status, const std::string& what) {
    if (status == cudaSuccess) return;
    throw Failure(what + " failed: " + cudaGetErrorName(status) + " (" + cudaGetErrorString(status) + ")");
}

void check(cublasStatus_t status, const std::string& what) {
    if (status == CUBLAS_STATUS_SUCCESS) return;
    throw Failure(what + " failed: " + cublasGetStatusName(status) + " (" + cublasGetStatusString(status) + ")");
}

// The MLPs of bench/brain_bench.cpp's named workloads (bench/torch_mlp.py's) and of the shape grid's points: layer
// widths input..output, and the batch.
struct Mlp {
    std::vector<int> widths;
    int batch;
};

const std::map<std::string, Mlp>& mlps() {
    static const std::map<std::string, Mlp> m = {
        {"seed16", {{16, 256, 256, 1}, 256}},     {"x64", {{64, 256, 256, 1}, 256}},
        {"x256", {{256, 256, 256, 1}, 256}},      {"x1024", {{1024, 256, 256, 1}, 256}},
        {"wide", {{1024, 4096, 4096, 16}, 1024}}, {"huge", {{4096, 8192, 8192, 8192, 16}, 4096}},
    };
    return m;
}

// A grid point's MLP: inputs, the hidden widths, outputs; its batch.
Mlp grid_mlp(const bench::Workload& w) {
    Mlp mlp{{static_cast<int>(w.inputs)}, static_cast<int>(w.batch)};
    for (std::size_t h : w.hidden) mlp.widths.push_back(static_cast<int>(h));
    mlp.widths.push_back(static_cast<int>(w.outputs));
    return mlp;
}

// One cublasGemmEx call in column-major terms, plus the row-major result it stands for (rows x cols, inner k).
struct Gemm {
    std::string op;
    int layer;
    cublasOperation_t ta, tb;
    int m, n, k, lda, ldb, ldc;
    int rows, cols;

    std::uint64_t flops() const { return 2ull * static_cast<std::uint64_t>(m) * n * k; }
    // Elements each operand spans in column-major storage, to size the shared buffers.
    std::size_t a_elements() const { return static_cast<std::size_t>(lda) * (ta == CUBLAS_OP_N ? k : m); }
    std::size_t b_elements() const { return static_cast<std::size_t>(ldb) * (tb == CUBLAS_OP_N ? n : k); }
    std::size_t c_elements() const { return static_cast<std::size_t>(ldc) * n; }
};

// Every GEMM of one step, in brain's order and with brain's arguments (see the comment above
// CudaSession::enqueue_batch): row-major tensors seen by column-major cuBLAS as their transposes.
std::vector<Gemm> step_gemms(const Mlp& mlp) {
    std::vector<Gemm> gemms;
    const int b = mlp.batch;
    const int layers = static_cast<int>(mlp.widths.size()) - 1;
    for (int l = 0; l < layers; ++l) {
        const int in = mlp.widths[l], out = mlp.widths[l + 1];
        // Z (B x out) = A W^T, K = in.
        gemms.push_back({"forward", l, CUBLAS_OP_T, CUBLAS_OP_N, out, b, in, in, in, out, b, out});
    }
    for (int l = layers; l-- > 0;) {
        const int in = mlp.widths[l], out = mlp.widths[l + 1];
        // dW (out x in) = delta^T A, K = B.
        gemms.push_back({"weight_gradient", l, CUBLAS_OP_N, CUBLAS_OP_T, in, out, b, in, out, in, out, in});
        // dA (B x in) = delta W, K = out; the first layer's inputs are data and need no gradient.
        if (l > 0) gemms.push_back({"input_gradient", l, CUBLAS_OP_N, CUBLAS_OP_N, in, b, out, in, out, in, b, in});
    }
    return gemms;
}

// The machine's "peak" float32 rate: one large square SGEMM, big enough that cuBLAS runs at its best.
constexpr int square_size = 8192;

Gemm square_gemm() {
    const int s = square_size;
    return {"square", -1, CUBLAS_OP_N, CUBLAS_OP_N, s, s, s, s, s, s, s, s};
}

class DeviceBuffer {
public:
    DeviceBuffer(std::size_t bytes, const char* what) {
        check(cudaMalloc(&m_ptr, bytes),
              std::string("cudaMalloc(") + std::to_string(bytes >> 20) + " MiB for " + what + ")");
    }
    ~DeviceBuffer() {
        if (m_ptr) (void)cudaFree(m_ptr);
    }
    DeviceBuffer(const DeviceBuffer&) = delete;
    DeviceBuffer& operator=(const DeviceBuffer&) = delete;
    float* floats() const { return static_cast<float*>(m_ptr); }

private:
    void* m_ptr = nullptr;
};

// Owns one CUDA runtime or cuBLAS handle: made by Create(&handle) (checked), released by Destroy(handle).
template <class T, auto Create, auto Destroy>
class Handle {
public:
    Handle() { check(Create(&m_handle), "creating a CUDA event or stream, or a cuBLAS handle"); }
    ~Handle() { (void)Destroy(m_handle); }
    Handle(const Handle&) = delete;
    Handle& operator=(const Handle&) = delete;
    T get() const { return m_handle; }

private:
    T m_handle{};
};

cudaError_t create_stream(cudaStream_t* stream) {
    return cudaStreamCreateWithFlags(stream, cudaStreamNonBlocking);
}

using Event = Handle<cudaEvent_t, cudaEventCreate, cudaEventDestroy>;
using Stream = Handle<cudaStream_t, create_stream, cudaStreamDestroy>;
using Cublas = Handle<cublasHandle_t, cublasCreate, cublasDestroy>;

// A CUDA graph captured from a stream, and its executable instance; owns both.
class Graph {
public:
    // Captures every call `record` makes on `stream` (which must be idle and not the legacy default stream).
    template <class Record>
    Graph(cudaStream_t stream, Record&& record, const std::string& what) {
        check(cudaStreamBeginCapture(stream, cudaStreamCaptureModeThreadLocal),
              "cudaStreamBeginCapture (" + what + ")");
        try {
            record();
        } catch (...) {
            (void)cudaStreamEndCapture(stream, &m_graph); // leaves the stream usable; the graph is freed below
            destroy();
            throw;
        }
        check(cudaStreamEndCapture(stream, &m_graph), "cudaStreamEndCapture (" + what + ")");
        const cudaError_t status = cudaGraphInstantiate(&m_exec, m_graph, 0);
        if (status != cudaSuccess) destroy();
        check(status, "cudaGraphInstantiate (" + what + ")");
    }
    ~Graph() { destroy(); }
    Graph(const Graph&) = delete;
    Graph& operator=(const Graph&) = delete;
    cudaGraphExec_t get() const { return m_exec; }

private:
    void destroy() noexcept {
        if (m_exec) (void)cudaGraphExecDestroy(m_exec);
        if (m_graph) (void)cudaGraphDestroy(m_graph);
        m_exec = nullptr;
        m_graph = nullptr;
    }
    cudaGraph_t m_graph = nullptr;
    cudaGraphExec_t m_exec = nullptr;
};

// The median of a non-empty sample.
double median(std::vector<double> samples) {
    std::sort(samples.begin(), samples.end());
    const std::size_t mid = samples.size() / 2;
    return samples.size() % 2 ? samples[mid] : 0.5 * (samples[mid - 1] + samples[mid]);
}

class Timer {
public:
    // `calls`: calls (or graph replays) per timed run; 0 works out enough to last about 2 ms.
    Timer(cublasHandle_t handle, cudaStream_t stream, cublasComputeType_t compute, const float* a, const float* b,
          float* c, int calls)
        : m_handle(handle), m_stream(stream), m_compute(compute), m_a(a), m_b(b), m_c(c), m_calls(calls) {}

    // Median seconds per call over `repeats` timed runs. Each run queues enough back-to-back calls to last about
    // 2 ms, so small GEMMs (a few microseconds) are timed at the GPU's throughput, as inside brain's CUDA graph,
    // and not at the event timer's resolution or the host's launch latency. Repeating one call keeps its operands
    // warm in L2, which can only flatter cuBLAS: the reference errs on the strict side.
    double seconds_per_call(const Gemm& g, int repeats) {
        const std::string what = "cublasGemmEx (" + g.op + " " + std::to_string(g.m) + "x" + std::to_string(g.n) +
                                 "x" + std::to_string(g.k) + ")";
        return median_seconds([&] { call(g, what); }, what, repeats);
    }

    // Median seconds per step of `gemms` captured once, in order, into one CUDA graph and replayed back to back:
    // the step's products alone, launched as PyTorch's graph variant and brain's graph path launch theirs.
    double seconds_per_graph(const std::vector<Gemm>& gemms, const std::string& what, int repeats) {
        for (const Gemm& g : gemms) warm_up(g, what); // kernel choice and module loads stay out of the capture
        const Graph graph(
            m_stream,
            [&] {
                for (const Gemm& g : gemms) call(g, what);
            },
            what);
        return median_seconds(
            [&] { check(cudaGraphLaunch(graph.get(), m_stream), "cudaGraphLaunch (" + what + ")"); }, what,
            repeats);
    }

    // One call of each of `gemms` (warmed up first, outside the profiled range) between cudaProfilerStart and
    // cudaProfilerStop, each in an NVTX range named names[i], so that Nsight Compute (--profile-from-start off
    // --nvtx --print-nvtx-rename kernel) reports every kernel a product launches under the product's name.
    void profile_once(const std::vector<Gemm>& gemms, const std::vector<std::string>& names) {
        for (std::size_t i = 0; i < gemms.size(); ++i) warm_up(gemms[i], names[i]);
        check(cudaProfilerStart(), "cudaProfilerStart");
        for (std::size_t i = 0; i < gemms.size(); ++i) {
            nvtxRangePushA(names[i].c_str());
            call(gemms[i], names[i]);
            check(cudaStreamSynchronize(m_stream), names[i]);
            nvtxRangePop();
        }
        check(cudaProfilerStop(), "cudaProfilerStop");
    }

private:
    // Three runs, then the median seconds per run over `repeats` timed runs of `calls` runs each (m_calls, or
    // enough to last about 2 ms by a first estimate).
    template <class Run>
    double median_seconds(const Run& run, const std::string& what, int repeats) {
        for (int i = 0; i < 3; ++i) run();
        check(cudaStreamSynchronize(m_stream), what + " warm-up");
        const double estimate = time_runs(run, what, 10) / 10.0;
        const int calls =
            m_calls > 0 ? m_calls
                        : static_cast<int>(std::clamp(std::ceil(2e-3 / std::max(estimate, 1e-9)), 1.0, 10000.0));
        std::vector<double> samples;
        for (int r = 0; r < repeats; ++r) samples.push_back(time_runs(run, what, calls) / calls);
        return median(samples);
    }

    // The first calls choose the kernel and load its module.
    void warm_up(const Gemm& g, const std::string& what) {
        for (int i = 0; i < 3; ++i) call(g, what);
        check(cudaStreamSynchronize(m_stream), what + " warm-up");
    }

    void call(const Gemm& g, const std::string& what) {
        const float one = 1.0f, zero = 0.0f;
        check(cublasGemmEx(m_handle, g.ta, g.tb, g.m, g.n, g.k, &one, m_a, CUDA_R_32F, g.lda, m_b, CUDA_R_32F,
                           g.ldb, &zero, m_c, CUDA_R_32F, g.ldc, m_compute, CUBLAS_GEMM_DEFAULT),
              what);
    }

    template <class Run>
    double time_runs(const Run& run, const std::string& what, int calls) {
        check(cudaEventRecord(m_start.get(), m_stream), "cudaEventRecord");
        for (int i = 0; i < calls; ++i) run();
        check(cudaEventRecord(m_stop.get(), m_stream), "cudaEventRecord");
        check(cudaEventSynchronize(m_stop.get()), what + " (waiting for the timed calls)");
        float ms = 0.0f;
        check(cudaEventElapsedTime(&ms, m_start.get(), m_stop.get()), "cudaEventElapsedTime");
        return ms * 1e-3;
    }

    cublasHandle_t m_handle;
    cudaStream_t m_stream;
    cublasComputeType_t m_compute;
    const float* m_a;
    const float* m_b;
    float* m_c;
    int m_calls;
    Event m_start, m_stop;
};

// Why cudaGetDeviceCount found nothing. The runtime answers cudaErrorInsufficientDriver both for an old driver
// and for none at all, so loading libcuda.so.1 ourselves tells the two apart (as the CUDA plugin does).
std::string no_gpu_reason(cudaError_t status) {
    if (status == cudaSuccess) return "cudaGetDeviceCount found 0 devices";
    const std::string runtime = std::string("cudaGetDeviceCount returned ") + cudaGetErrorName(status) + " (" +
                                cudaGetErrorString(status) + ")";
    void* driver = dlopen("libcuda.so.1", RTLD_LAZY | RTLD_LOCAL);
    if (!driver) {
        const char* why = dlerror();
        return std::string("no CUDA driver, libcuda.so.1 could not be loaded (") +
               (why ? why : "unknown loader error") + "; " + runtime + ")";
    }
    dlclose(driver);
    if (status == cudaErrorNoDevice) return "the CUDA driver is loaded but reports no GPU (" + runtime + ")";
    return "the CUDA driver is present but unusable (" + runtime + ")";
}

std::string json_string(const std::string& s) {
    std::string out = "\"";
    for (char c : s) {
        if (c == '"' || c == '\\') out += '\\';
        if (static_cast<unsigned char>(c) >= 0x20) out += c;
    }
    return out + "\"";
}

} // namespace

int main(int argc, char** argv) {
    CLI::App app{"Time with cuBLAS alone the GEMMs of one training step of brain_bench's workloads"};
    std::string configs = "wide,huge";
    bool tf32 = false;
    bool once = false;
    int repeats = 10;
    int calls = 0;
    std::string known;
    for (const auto& [name, mlp] : mlps()) known += (known.empty() ? "" : ", ") + name;
    // brain_bench's defaults, so that a point's name means the same shape in both tools.
    std::size_t grid_points = 48;
    std::uint64_t grid_seed = 1;
    app.add_option("--configs", configs,
                   "comma-separated, of: " + known + ", grid points g00,g01,... or grid (all of them)")
        ->capture_default_str();
    app.add_option("--grid-points", grid_points, "points of the shape grid (bench_grid.hpp), as brain_bench's")
        ->capture_default_str();
    app.add_option("--grid-seed", grid_seed, "seed of the shape grid, as brain_bench's")->capture_default_str();
    app.add_flag("--tf32", tf32, "use CUBLAS_COMPUTE_32F_FAST_TF32 (brain_bench --precision tf32) instead of 32F");
    app.add_option("--repeats", repeats, "timed runs per shape; the median is reported")
        ->capture_default_str()
        ->check(CLI::Range(1, 1000));
    app.add_option("--calls", calls, "calls (graph replays) per timed run; 0: enough for about 2 ms")
        ->capture_default_str()
        ->check(CLI::Range(0, 100000));
    app.add_flag("--once", once,
                 "time nothing: run each product once inside cudaProfilerStart/Stop and an NVTX range named "
                 "config/op/layer, for Nsight Compute (tools/perf/gemm-kernel-times)");
    CLI11_PARSE(app, argc, argv);

    // The grid's work per point sets only its epochs, never a shape: brain_bench's default stands in.
    const auto points = bench::grid(grid_points, grid_seed, 30'000'000'000ull);
    const std::string accepted =
        known + " (the workloads of brain_bench), grid or " +
        (points.empty() ? std::string("no grid point") : "g00.." + points.back().first) + " (--grid-points " +
        std::to_string(grid_points) + ")";
    std::vector<std::string> names;
    std::vector<Mlp> chosen;
    std::stringstream list(configs);
    for (std::string name; std::getline(list, name, ',');) {
        if (name == "grid") {
            for (const auto& [point, w] : points) {
                names.push_back(point);
                chosen.push_back(grid_mlp(w));
            }
            continue;
        }
        if (const auto it = mlps().find(name); it != mlps().end()) {
            names.push_back(name);
            chosen.push_back(it->second);
            continue;
        }
        const auto point =
            std::find_if(points.begin(), points.end(), [&](const auto& p) { return p.first == name; });
        if (point == points.end()) {
            std::cerr << "error: unknown config \"" << name << "\"; expected one of " << accepted << "\n";
            return 2;
        }
        names.push_back(name);
        chosen.push_back(grid_mlp(point->second));
    }
    if (names.empty()) {
        std::cerr << "error: --configs names no config; expected a comma-separated list of " << accepted << "\n";
        return 2;
    }

    int devices = 0;
    const cudaError_t probe = cudaGetDeviceCount(&devices);
    if (probe != cudaSuccess || devices == 0) {
        std::cerr << "error: no usable CUDA GPU: " << no_gpu_reason(probe)
                  << "; brain_gemm_rate times cuBLAS on a GPU: run it on a machine with an NVIDIA GPU and driver\n";
        return 2;
    }

    try {
        check(cudaSetDevice(0), "cudaSetDevice(0)");
        cudaDeviceProp prop{};
        check(cudaGetDeviceProperties(&prop, 0), "cudaGetDeviceProperties(0)");

        // One set of buffers, sized for the largest operand of any GEMM measured, serves every call.
        std::vector<std::vector<Gemm>> plans;
        std::size_t elements = square_gemm().c_elements();
        for (const Mlp& mlp : chosen) {
            plans.push_back(step_gemms(mlp));
            for (const Gemm& g : plans.back())
                elements = std::max({elements, g.a_elements(), g.b_elements(), g.c_elements()});
        }
        DeviceBuffer a(elements * sizeof(float), "operand A");
        DeviceBuffer b(elements * sizeof(float), "operand B");
        DeviceBuffer c(elements * sizeof(float), "the result");
        // Random values in [-1, 1), not zeros: a GPU multiplying zeros draws less power and can clock higher.
        {
            std::vector<float> host(elements);
            std::uint32_t state = 12345u;
            for (float& v : host) {
                state = state * 1664525u + 1013904223u;
                v = static_cast<float>(state >> 8) / 8388608.0f - 1.0f;
            }
            check(cudaMemcpy(a.floats(), host.data(), elements * sizeof(float), cudaMemcpyHostToDevice),
                  "cudaMemcpy (operand A)");
            check(cudaMemcpy(b.floats(), host.data(), elements * sizeof(float), cudaMemcpyHostToDevice),
                  "cudaMemcpy (operand B)");
        }

        // As brain does: the stream first (cublasSetStream resets the workspace), then a 32 MiB workspace,
        // cuBLAS's recommendation on Hopper; the kernel heuristics depend on the workspace available. Declared
        // before the handle, so it outlives it.
        constexpr std::size_t workspace_bytes = 32ull << 20;
        DeviceBuffer workspace(workspace_bytes, "the cuBLAS workspace");
        Stream stream;
        Cublas cublas;
        check(cublasSetStream(cublas.get(), stream.get()), "cublasSetStream");
        check(cublasSetWorkspace(cublas.get(), workspace.floats(), workspace_bytes), "cublasSetWorkspace");
        const cublasComputeType_t compute = tf32 ? CUBLAS_COMPUTE_32F_FAST_TF32 : CUBLAS_COMPUTE_32F;
        Timer timer(cublas.get(), stream.get(), compute, a.floats(), b.floats(), c.floats(), calls);

        if (once) {
            for (std::size_t i = 0; i < names.size(); ++i) {
                std::vector<std::string> ranges;
                std::ostringstream list_json;
                for (const Gemm& g : plans[i]) {
                    ranges.push_back(names[i] + "/" + g.op + "/" + std::to_string(g.layer));
                    list_json << (list_json.tellp() > 0 ? "," : "") << json_string(ranges.back());
                }
                timer.profile_once(plans[i], ranges);
                std::cout << "{\"cfg\":\"" << names[i] << "\",\"precision\":\"" << (tf32 ? "tf32" : "float32")
                          << "\",\"profiled\":[" << list_json.str() << "]}" << std::endl;
            }
            return 0;
        }

        const Gemm square = square_gemm();
        const double peak_tflops =
            static_cast<double>(square.flops()) / timer.seconds_per_call(square, repeats) / 1e12;

        for (std::size_t i = 0; i < names.size(); ++i) {
            const Mlp& mlp = chosen[i];
            std::uint64_t flops = 0;
            double seconds = 0.0;
            std::ostringstream shapes;
            shapes.precision(6);
            for (const Gemm& g : plans[i]) {
                const double s = timer.seconds_per_call(g, repeats);
                flops += g.flops();
                seconds += s;
                shapes << (shapes.tellp() > 0 ? "," : "") << "{\"op\":\"" << g.op << "\",\"layer\":" << g.layer
                       << ",\"rows\":" << g.rows << ",\"cols\":" << g.cols << ",\"k\":" << g.k
                       << ",\"flops\":" << g.flops() << ",\"seconds\":" << s
                       << ",\"tflops\":" << static_cast<double>(g.flops()) / s / 1e12 << "}";
            }
            const double graph_seconds = timer.seconds_per_graph(plans[i], names[i] + " step graph", repeats);
            std::ostringstream widths;
            for (std::size_t w = 0; w < mlp.widths.size(); ++w) widths << (w ? "," : "") << mlp.widths[w];
            std::ostringstream line;
            line.precision(6);
            line << "{\"cfg\":\"" << names[i] << "\",\"precision\":\"" << (tf32 ? "tf32" : "float32")
                 << "\",\"device\":" << json_string(prop.name) << ",\"batch\":" << mlp.batch << ",\"widths\":["
                 << widths.str() << "],\"repeats\":" << repeats << ",\"gemm_flops_per_step\":" << flops
                 << ",\"gemm_seconds_per_step\":" << seconds << ",\"graph_seconds_per_step\":" << graph_seconds
                 << ",\"gemm_tflops\":" << static_cast<double>(flops) / seconds / 1e12
                 << ",\"peak_square_tflops\":" << peak_tflops << ",\"square_size\":" << square_size
                 << ",\"shapes\":[" << shapes.str() << "]}";
            std::cout << line.str() << std::endl;
        }
    } catch (const Failure& e) {
        std::cerr << "error: " << e.what() << "\n";
        return 1;
    } catch (const std::bad_alloc&) {
        std::cerr << "error: out of host memory while preparing the operands; close other programs or measure "
                  << "fewer configs at once\n";
        return 1;
    }
    return 0;
}
