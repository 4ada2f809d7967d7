// Internal: what a file's first bytes say it is, for the message about a file that is not what its reader expects
// (an ONNX file given as a model file, a PyTorch .pt given as safetensors).
#pragma once

#include <string>
#include <string_view>

namespace brain::detail {

// The readers that ask.
enum class FileKind { ModelJson, Onnx, Safetensors };

// " (it looks like an ONNX file: import it with ...)": what the bytes are when they are recognisably another
// format than `expected`, and how to read it; "" otherwise.
std::string other_format_hint(std::string_view bytes, FileKind expected);

} // namespace brain::detail
