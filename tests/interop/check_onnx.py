#!/usr/bin/python3
"""The ONNX project's checker on every file brain exported: onnx.checker.check_model(full_check=True) (the model,
then strict shape inference), and the interface docs/interop.md promises: IR version 8, opset 17, input "input"
[batch, n] and output "output" [batch, k] with a symbolic batch dimension, shape inference's output [batch, k],
names in the metadata as JSON arrays of the right length.

Usage: /usr/bin/python3 check_onnx.py EXPORTED_DIR    (Debian's python3-onnx)
"""
import json
import os
import sys

try:
    import onnx
    from onnx import shape_inference
except ImportError:
    print("SKIP: the python module onnx is missing for " + sys.executable + " (install Debian's python3-onnx)")
    sys.exit(0)


def dims(value):
    return [d.dim_param if d.HasField("dim_param") else d.dim_value for d in value.type.tensor_type.shape.dim]


def check(path):
    model = onnx.load(path)
    onnx.checker.check_model(model, full_check=True)
    problems = []
    opsets = {o.domain: o.version for o in model.opset_import}
    if model.ir_version != 8 or opsets != {"": 17}:
        problems.append("IR %d, opsets %s; expected IR 8, opset 17" % (model.ir_version, opsets))
    graph = model.graph
    if [i.name for i in graph.input] != ["input"] or [o.name for o in graph.output] != ["output"]:
        problems.append("inputs %s, outputs %s" % ([i.name for i in graph.input], [o.name for o in graph.output]))
    features, outputs = dims(graph.input[0])[1], dims(graph.output[0])[1]
    for value in (graph.input[0], graph.output[0]):
        shape = dims(value)
        if len(shape) != 2 or not isinstance(shape[0], str) or not shape[0] or not isinstance(shape[1], int):
            problems.append("%s has shape %s; expected [batch, n]" % (value.name, shape))
    inferred = shape_inference.infer_shapes(model, check_type=True, strict_mode=True)
    if dims(inferred.graph.output[0]) != dims(graph.output[0]):
        problems.append("shape inference gives %s" % dims(inferred.graph.output[0]))
    meta = {p.key: p.value for p in model.metadata_props}
    for key, width in (("feature_names", features), ("target_names", outputs), ("class_labels", outputs)):
        if key in meta:
            names = json.loads(meta[key])
            if not isinstance(names, list) or not all(isinstance(n, str) for n in names) or \
                    len(names) not in (width, 2 if key == "class_labels" and width == 1 else width):
                problems.append("metadata %s = %s for width %d" % (key, meta[key], width))
    return problems


def main():
    folder = sys.argv[1]
    files = sorted(f for f in os.listdir(folder) if f.endswith(".onnx"))
    if not files:
        print("no .onnx files in " + folder)
        return 1
    failed = 0
    for name in files:
        try:
            problems = check(os.path.join(folder, name))
        except Exception as e:  # the checker's own error, as it words it
            problems = ["%s: %s" % (type(e).__name__, e)]
        if problems:
            failed += 1
            print("FAIL   %s: %s" % (name, "; ".join(problems)))
        else:
            print("ok     %s" % name)
    print("onnx %s checker (full_check): %d passed, %d failed" % (onnx.__version__, len(files) - failed, failed))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
