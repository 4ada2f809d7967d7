#include "file_kind.hpp"

namespace brain::detail {

std::string other_format_hint(std::string_view bytes, FileKind expected) {
    const auto starts = [&](std::string_view prefix) { return bytes.substr(0, prefix.size()) == prefix; };
    const std::size_t first = bytes.find_first_not_of(" \t\r\n");
    if (expected != FileKind::ModelJson && first != std::string_view::npos && bytes[first] == '{')
        return " (it looks like JSON: a brain model file is read with load_json or --model)";
    if (starts("PK\x03\x04"))
        return " (it is a ZIP archive, such as a PyTorch .pt, a Keras .keras file or a NumPy .npz: export a model "
               "with torch.onnx.export or tf2onnx and import the ONNX file)";
    if (starts("\x89HDF"))
        return " (it is an HDF5 file, such as a Keras .h5 file: convert the model with tf2onnx and import the ONNX "
               "file)";
    if (starts("\x93NUMPY")) return " (it is a NumPy .npy array, not a model)";
    if (expected != FileKind::Safetensors && bytes.size() >= 9 && bytes[8] == '{')
        return " (it looks like a safetensors file: import it with brain import --safetensors or load_safetensors)";
    // A ModelProto opens with ir_version (field 1, a varint: 0x08, then a small number) and then, as exporters
    // write it, producer_name (0x12), opset_import (0x42) or the graph (0x3A).
    const auto byte = [&](std::size_t i) { return static_cast<unsigned char>(bytes[i]); };
    if (expected != FileKind::Onnx && bytes.size() >= 3 && byte(0) == 0x08 && byte(1) < 0x80 &&
        (byte(2) == 0x12 || byte(2) == 0x3A || byte(2) == 0x42 || byte(2) == 0x1A))
        return " (it looks like an ONNX file: import it with brain import --onnx or Network::load_onnx)";
    return "";
}

} // namespace brain::detail
