// libFuzzer target: the ONNX reader. Any input must either import or throw brain::Error(InvalidModelFile); an
// imported model must export (passing the ONNX checker) and import again with the same parameters and layers.
#include "onnx_format.hpp"

#include <brain/error.hpp>
#include <brain/network.hpp>
#include <cstdint>
#include <cstdlib>
#include <string_view>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    const std::string_view bytes(reinterpret_cast<const char*>(data), size);
    try {
        const auto network = brain::detail::network_from_onnx(bytes, "fuzz.onnx");
        const auto again = brain::detail::network_from_onnx(brain::detail::onnx_model_bytes(network), "again.onnx");
        if (again.parameters() != network.parameters() || again.layers().size() != network.layers().size())
            std::abort();
        for (std::size_t i = 0; i < network.layers().size(); ++i)
            if (again.layers()[i].activation != network.layers()[i].activation) std::abort();
    } catch (const brain::Error& e) {
        if (e.code() != brain::ErrorCode::InvalidModelFile) std::abort();
    }
    return 0;
}
