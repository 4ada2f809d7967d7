// Internal: the ONNX export's fixed choices and the entry points of the ONNX reader and writer (no ONNX type).
#pragma once

#include <brain/network.hpp>
#include <cstdint>
#include <string>
#include <string_view>

namespace brain::detail {

// ONNX IR version 8 with the standard operator set 17: what the ONNX 1.12 checker knows, ONNX Runtime has served
// since 1.13, and PyTorch's exporter writes by default.
inline constexpr std::int64_t kOnnxIrVersion = 8;
inline constexpr std::int64_t kOnnxExportOpset = 17;
// The graph's input and output names.
inline constexpr const char* kOnnxInputName = "input";
inline constexpr const char* kOnnxOutputName = "output";
// Parameter bytes a self-contained ONNX file can hold: protobuf's 2 GiB, less room for the graph itself.
inline constexpr std::uint64_t kOnnxMaxParameterBytes = (std::uint64_t{1} << 31) - (std::uint64_t{1} << 24);

// The operator PyTorch's exporter names after an activation ("Relu", "Sigmoid"...), for node and value names.
inline std::string to_onnx_name(Activation a) {
    switch (a) {
    case Activation::Relu:
        return "Relu";
    case Activation::LeakyRelu:
        return "LeakyRelu";
    case Activation::Sigmoid:
        return "Sigmoid";
    case Activation::Tanh:
        return "Tanh";
    case Activation::Softmax:
        return "Softmax";
    case Activation::Gelu:
        return "Gelu";
    default:
        return "Identity";
    }
}

// The serialised ONNX model of a network (Network::save_onnx writes it).
std::string onnx_model_bytes(const Network& net);

// A network from the bytes of an ONNX model; `origin` names the file in messages.
Network network_from_onnx(std::string_view bytes, const std::string& origin);

} // namespace brain::detail
