// The CUDA plugin's test hooks (plugins/cuda/test_hooks.hpp), which need no GPU: in a test build, the fault
// injection's counting, the kernel text taken from the environment and the phase profile's log line; in any other
// build, that the plugin reads none of those variables. Built into brain_tests only when the CUDA plugin is built.
#include "cuda/hooks.hpp"
#include "support/catch.hpp"
#include "support/env.hpp"

#include <brain/plugin_sdk.hpp>
#include <cstdint>
#include <device_scalars.h>
#include <initializer_list>
#include <kernel_compiler.hpp>
#include <string>
#include <test_hooks.hpp>

using brain::cuda::Fault;
using brain::cuda::inject_fault;
using brain::test::ScopedEnv;

TEST_CASE("CUDA test hooks are compiled exactly into test builds", "[plugin][hooks]") {
    CHECK(brain::cuda::test_hooks_enabled == static_cast<bool>(BRAIN_TEST_HOOKS));
    if (BRAIN_TEST_HOOKS) return;
    // A packaged plugin compiles the same kernel text whatever the environment says, and injects no fault.
    const std::string plain = brain::cuda::kernel_source();
    ScopedEnv defines("BRAIN_CUDA_KERNEL_DEFINES", std::string("BRAIN_FUSED_FOLDED_HEAD=0,3BAD"));
    ScopedEnv suffix("BRAIN_CUDA_TEST_KERNEL_SUFFIX", std::string("this_is_not_cuda x;"));
    ScopedEnv fault("BRAIN_CUDA_TEST_FAULT", std::string("alloc:1"));
    CHECK(brain::cuda::kernel_source() == plain);
    CHECK_FALSE(inject_fault(Fault::Alloc));
#if !BRAIN_TEST_HOOKS
    static_assert(!inject_fault(Fault::Alloc) && !brain::cuda::test_withhold_head_shares() &&
                      !brain::cuda::test_withhold_head_rows(),
                  "without test hooks the fault and head hooks are constants that fold away");
#endif
}

TEST_CASE("CUDA fault injection fails the N-th call of its kind and restarts with a new value", "[plugin][hooks]") {
    REQUIRE_TEST_HOOKS();
    {
        ScopedEnv fault("BRAIN_CUDA_TEST_FAULT", std::string("gemm:2"));
        CHECK_FALSE(inject_fault(Fault::Gemm));
        CHECK_FALSE(inject_fault(Fault::Alloc)); // another kind neither fails nor counts
        CHECK(inject_fault(Fault::Gemm));
        CHECK_FALSE(inject_fault(Fault::Gemm)); // only the N-th
    }
    {
        ScopedEnv fault("BRAIN_CUDA_TEST_FAULT", std::string("device:1"));
        CHECK(inject_fault(Fault::Device));
        CHECK_FALSE(inject_fault(Fault::Device));
    }
    {
        ScopedEnv fault("BRAIN_CUDA_TEST_FAULT", std::string("gemm:2")); // the same value again counts afresh
        CHECK_FALSE(inject_fault(Fault::Gemm));
        CHECK(inject_fault(Fault::Gemm));
    }
    ScopedEnv none("BRAIN_CUDA_TEST_FAULT", std::nullopt);
    for (const Fault kind : {Fault::Alloc, Fault::Gemm, Fault::Device}) CHECK_FALSE(inject_fault(kind));
}

TEST_CASE("CUDA kernel defines become #define lines, bad ones are refused by name, and the suffix follows",
          "[plugin][hooks][nvrtc]") {
    REQUIRE_TEST_HOOKS();
    const std::string plain = brain::cuda::kernel_source();
    {
        ScopedEnv defines("BRAIN_CUDA_KERNEL_DEFINES",
                          std::string("BRAIN_FUSED_BIAS_IN_TILES=1,,BRAIN_FUSED_FOLDED_HEAD=0,BRAIN_FLAG"));
        ScopedEnv suffix("BRAIN_CUDA_TEST_KERNEL_SUFFIX", std::string("// the end"));
        const std::string tuned = brain::cuda::kernel_source();
        CHECK(tuned ==
              "#define BRAIN_FUSED_BIAS_IN_TILES 1\n#define BRAIN_FUSED_FOLDED_HEAD 0\n#define BRAIN_FLAG\n" +
                  plain + "\n// the end\n");
        // The switches are the kernels' own: the tuned source compiles.
        CHECK_FALSE(brain::cuda::compile(tuned, brain::cuda::choose_target(9, 0)).empty());
    }
    for (const char* bad : {"3STAGES=1", "BRAIN TILE=2", "=4", "BRAIN_X=1\n#include <x>"}) {
        INFO("BRAIN_CUDA_KERNEL_DEFINES=" << bad);
        ScopedEnv defines("BRAIN_CUDA_KERNEL_DEFINES", std::string(bad));
        try {
            (void)brain::cuda::kernel_source();
            FAIL("an invalid define was accepted");
        } catch (const brain::sdk::Failure& failure) {
            CHECK(failure.code() == BRAIN_ERR_INVALID_ARGUMENT);
            CHECK(std::string(failure.what()).find("BRAIN_CUDA_KERNEL_DEFINES") != std::string::npos);
        }
    }
}

TEST_CASE("CUDA fused profile hook reads its variables and names every phase", "[plugin][hooks]") {
    REQUIRE_TEST_HOOKS();
    {
        ScopedEnv profile("BRAIN_CUDA_FUSED_PROFILE", std::string("1"));
        ScopedEnv shares("BRAIN_CUDA_TEST_HEAD_SHARES", std::string("0"));
        ScopedEnv rows("BRAIN_CUDA_TEST_HEAD_ROWS", std::string("0"));
        CHECK(brain::cuda::test_fused_profile_requested());
        CHECK(brain::cuda::test_withhold_head_shares());
        CHECK(brain::cuda::test_withhold_head_rows());
    }
    {
        ScopedEnv profile("BRAIN_CUDA_FUSED_PROFILE", std::nullopt);
        ScopedEnv shares("BRAIN_CUDA_TEST_HEAD_SHARES", std::string("1"));
        ScopedEnv rows("BRAIN_CUDA_TEST_HEAD_ROWS", std::nullopt);
        CHECK_FALSE(brain::cuda::test_fused_profile_requested());
        CHECK_FALSE(brain::cuda::test_withhold_head_shares());
        CHECK_FALSE(brain::cuda::test_withhold_head_rows());
    }
    // Two layers: two empty barriers (stamps 0..2), then forward 0 and 1, the loss, backward 1 and 0; a stamp
    // every microsecond but the loss, which takes three.
    std::uint64_t stamps[BRAIN_FUSED_PROFILE_SLOTS] = {0, 1000, 2000, 3000, 4000, 7000, 8000, 9000};
    const std::string text = brain::cuda::fused_profile_text(stamps, 2);
    CHECK(text == "fused epoch profile (microseconds, step 2): barrier 1.000000, forward 0 1.000000, forward 1 "
                  "1.000000, loss 3.000000, backward 1 1.000000, backward 0 1.000000; step 7.000000");
    // The loss phase's stamps (BRAIN_FUSED_LOSS_STAMPS), here in forward 1, which starts at 3000 ns: the global
    // timer at its entry (3100) and exit (5100), the SM's clock at its parts 0, 1 and 7 (4,000 cycles in 2,000 ns:
    // 2,000 MHz); parts left at zero were not stamped.
    std::uint64_t* parts = stamps + BRAIN_FUSED_LOSS_STAMP_SLOT;
    parts[0] = 3100;
    parts[1] = 5100;
    parts[2] = 10000;
    parts[3] = 10400;
    parts[9] = 14000;
    CHECK(brain::cuda::fused_profile_text(stamps, 2) ==
          text + ", in-loss 0 0.100000, in-loss 1 0.300000, in-loss 7 2.100000, in-loss MHz 2000.000000");
    // A forward tile's stamps (BRAIN_FUSED_TILE_STAMPS) in the same slots, the last naming layer 1 (1000 + 1),
    // whose phase starts at 3000 ns: the exit is part 6 (here 4,000 cycles after part 0).
    parts[9] = 0;
    parts[8] = 14000;
    stamps[BRAIN_FUSED_PROFILE_SLOTS - 1] = 1001;
    CHECK(brain::cuda::fused_profile_text(stamps, 2) ==
          text + ", in-tile 0 0.100000, in-tile 1 0.300000, in-tile 6 2.100000, in-tile MHz 2000.000000");
    // A mark past the network's layers is no tile's: the loss stamps' reading, which finds no exit part here.
    stamps[BRAIN_FUSED_PROFILE_SLOTS - 1] = 1002;
    CHECK(brain::cuda::fused_profile_text(stamps, 2) == text);
}

namespace {

// A whole-count hook: `variable` set to each of `taken` reads back as that number, to each of `refused` as 0.
void check_count_hook(const char* variable, unsigned (*read)() noexcept, std::initializer_list<const char*> taken,
                      std::initializer_list<const char*> refused) {
    for (const char* value : taken) {
        ScopedEnv set(variable, std::string(value));
        CHECK(read() == static_cast<unsigned>(std::stoul(value)));
    }
    for (const char* value : refused) {
        ScopedEnv set(variable, std::string(value));
        CHECK(read() == 0);
    }
}

} // namespace

TEST_CASE("CUDA cluster epoch hooks read their variables and the profile names every part of a step",
          "[plugin][hooks]") {
    REQUIRE_TEST_HOOKS();
    {
        ScopedEnv withhold("BRAIN_CUDA_TEST_CLUSTER_EPOCH", std::string("0"));
        ScopedEnv blocks("BRAIN_CUDA_TEST_CLUSTER_BLOCKS", std::string("8"));
        CHECK(brain::cuda::test_withhold_cluster_epoch());
        CHECK(brain::cuda::test_cluster_blocks() == 8);
    }
    for (const char* value : {"4", "16"}) {
        ScopedEnv blocks("BRAIN_CUDA_TEST_CLUSTER_BLOCKS", std::string(value));
        CHECK(brain::cuda::test_cluster_blocks() == static_cast<unsigned>(std::stoul(value)));
    }
    // The most clusters: 1 to 64; anything else (and unset) leaves the count to the batch.
    check_count_hook("BRAIN_CUDA_TEST_CLUSTERS", brain::cuda::test_max_clusters, {"1", "7", "64"},
                     {"0", "65", "2x", ""});
    {
        ScopedEnv most("BRAIN_CUDA_TEST_CLUSTERS", std::nullopt);
        CHECK(brain::cuda::test_max_clusters() == 0);
    }
    // The fused epoch kernel's blocks: 1 to 1024; anything else (and unset) leaves one per SM.
    check_count_hook("BRAIN_CUDA_TEST_FUSED_GRID", brain::cuda::test_fused_grid, {"1", "33", "1024"},
                     {"0", "1025", "48b", ""});
    // The gradient shares in global memory: "global" only.
    for (const auto& [value, global] : {std::pair{"global", true}, {"shared", false}, {"", false}}) {
        ScopedEnv grads("BRAIN_CUDA_TEST_CLUSTER_GRADS", std::string(value));
        CHECK(brain::cuda::test_cluster_global_grads() == global);
    }
    {
        // Unset, or not a size the session tries: the device's largest.
        ScopedEnv withhold("BRAIN_CUDA_TEST_CLUSTER_EPOCH", std::nullopt);
        ScopedEnv blocks("BRAIN_CUDA_TEST_CLUSTER_BLOCKS", std::string("12"));
        CHECK_FALSE(brain::cuda::test_withhold_cluster_epoch());
        CHECK(brain::cuda::test_cluster_blocks() == 0);
    }
    // A stamp at the step's start, then after forward (2 us), loss (1), backward (3), barrier, parameters (2) and
    // barrier (1 each).
    const std::uint64_t stamps[] = {0, 2000, 3000, 6000, 7000, 9000, 10000};
    CHECK(brain::cuda::cluster_profile_text(stamps) ==
          "cluster epoch profile (microseconds, step 2): forward 2.000000, loss 1.000000, backward 3.000000, "
          "barrier 1.000000, parameters 2.000000, barrier 1.000000; step 10.000000");
}
