// libFuzzer target: the safetensors reader. Any input must either load or throw brain::Error(InvalidModelFile),
// with the activations the file records and with all-linear ones; a loaded network must write and read back the
// same parameters.
#include "safetensors_format.hpp"

#include <brain/error.hpp>
#include <brain/network.hpp>
#include <cstdint>
#include <cstdlib>
#include <string_view>
#include <vector>

namespace {

void round_trip(const brain::Network& network) {
    const auto again = brain::detail::network_from_safetensors(brain::detail::safetensors_bytes(network), "again",
                                                               nullptr, {});
    if (again.parameters() != network.parameters()) std::abort();
}

template <class F>
void expect_load_or_refusal(F&& load) {
    try {
        round_trip(load());
    } catch (const brain::Error& e) {
        if (e.code() != brain::ErrorCode::InvalidModelFile) std::abort();
    }
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    const std::string_view bytes(reinterpret_cast<const char*>(data), size);
    expect_load_or_refusal([&] { return brain::detail::network_from_safetensors(bytes, "fuzz", nullptr, {}); });
    expect_load_or_refusal([&] {
        const auto layers = brain::detail::safetensors_layers(bytes, "fuzz");
        return brain::detail::network_from_safetensors(
            bytes, "fuzz", nullptr, std::vector<brain::Activation>(layers.size(), brain::Activation::Linear));
    });
    return 0;
}
