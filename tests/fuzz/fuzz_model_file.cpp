// libFuzzer target: the model-file loader. Any input must either load or throw brain::Error(InvalidModelFile);
// a loaded model must survive a save/load round trip unchanged.
#include <brain/error.hpp>
#include <brain/network.hpp>

#include <cstdint>
#include <cstdlib>
#include <string>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    const std::string text(reinterpret_cast<const char*>(data), size);
    try {
        const auto network = brain::Network::from_json_string(text, "fuzz.json");
        const auto again = brain::Network::from_json_string(network.to_json_string(), "fuzz-roundtrip.json");
        if (again.parameters() != network.parameters()) std::abort();
    } catch (const brain::Error& e) {
        if (e.code() != brain::ErrorCode::InvalidModelFile && e.code() != brain::ErrorCode::InvalidArgument)
            std::abort();
    }
    return 0;
}
