// Internal: safetensors files (docs/interop.md, "safetensors"): an 8-byte little-endian header length, a JSON
// header naming each tensor's dtype, shape and byte range, then the tensors' bytes. The reader validates the
// header strictly, as input from elsewhere; the writer uses PyTorch's nn.Sequential names.
#pragma once

#include <brain/network.hpp>
#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

namespace brain::detail {

// safetensors' own bound on the header (the format's reference implementation refuses larger ones).
inline constexpr std::uint64_t kSafetensorsMaxHeaderBytes = 100'000'000;

struct SafetensorsTensor {
    std::string name;
    std::string dtype; // "F32", "F16", "BF16", "F64", "I64", ...
    std::vector<std::uint64_t> shape;
    std::uint64_t begin = 0; // byte range within the data that follows the header
    std::uint64_t end = 0;
};

struct SafetensorsFile {
    std::vector<SafetensorsTensor> tensors; // in the order of their bytes
    std::map<std::string, std::string> metadata;
    std::string_view data; // the bytes after the header
};

// Reads and validates the header: its length within the file and under kSafetensorsMaxHeaderBytes, a JSON object
// (no repeated key), every entry a known dtype with a shape whose byte count equals its byte range, the ranges
// inside the data, without overlap or gap, covering it exactly. Errors are InvalidModelFile naming `origin`.
SafetensorsFile parse_safetensors(std::string_view bytes, const std::string& origin);

// The network's parameters as a safetensors file in nn.Sequential naming (float32), with the activations in the
// metadata ("brain.activations").
std::string safetensors_bytes(const Network& net);

// The Linear layers of a safetensors file in nn.Sequential naming (widths; activations linear).
std::vector<LayerSpec> safetensors_layers(std::string_view bytes, const std::string& origin);

// A network from a safetensors file: `architecture`'s, with the file's parameters, when it is given; otherwise
// widths from the file's shapes and `activations` (one per layer; empty: the file's "brain.activations").
Network network_from_safetensors(std::string_view bytes, const std::string& origin, const Network* architecture,
                                 const std::vector<Activation>& activations);

} // namespace brain::detail
