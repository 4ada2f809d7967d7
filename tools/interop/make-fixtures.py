#!/usr/bin/env python3
"""Makes brain's PyTorch fixtures with the real exporters: small nn.Sequential models trained a little on
synthetic tasks, written by torch.onnx.export (the TorchScript exporter, dynamo=False, and the dynamo exporter;
either may fail, and the other still counts) and by safetensors.torch.save_file (float32, and float16/bfloat16
copies), with PyTorch's and ONNX Runtime's outputs on reference inputs and the training data.

Needs torch and onnx (no network); onnxruntime and safetensors are used when present (without safetensors no
.safetensors files are written, and the safetensors fixture test skips saying so). Runs on the CPU, so the outputs
do not depend on a GPU. Debian 12's python3-torch (PyTorch 1.13, TorchScript exporter only) and python3-onnx are
enough for the ONNX fixtures.
Usage: python3 tools/interop/make-fixtures.py [OUT_DIR]        (default: tests/data/interop/torch)

For every model NAME it writes NAME.csv (the training data), NAME.legacy.onnx, NAME.dynamo.onnx, NAME.safetensors,
NAME.f16.safetensors, NAME.bf16.safetensors and NAME.json: what brain's tests read (layer widths, activations in
brain's names, reference inputs and PyTorch's outputs, ONNX Runtime's outputs for each export, the data's target
columns, PyTorch's loss and accuracy on the data, the versions that made it).
"""
import json
import os
import sys
import traceback

import inspect

import numpy as np
import onnx
import torch
from torch import nn

try:
    import onnxruntime
except ImportError:
    onnxruntime = None
try:
    import safetensors
    from safetensors.torch import save_file
except ImportError:
    safetensors = None

ROWS = 120  # training rows per model: keeps each CSV at a few KB


def binary_task(rng, features):
    x = rng.uniform(-2.0, 2.0, size=(ROWS, features)).astype(np.float32)
    y = (x[:, 0] * x[:, 1] + np.sin(x[:, 2]) - 0.5 * x[:, 3] > 0).astype(np.float32)
    return x, y.reshape(-1, 1)


def three_class_task(rng, features):
    x = rng.uniform(-2.0, 2.0, size=(ROWS, features)).astype(np.float32)
    score = x[:, 0] + 0.5 * x[:, 1] ** 2 - x[:, 2]
    label = np.digitize(score, np.quantile(score, [1 / 3, 2 / 3]))
    return x, label


def regression_task(rng, features):
    x = rng.uniform(-2.0, 2.0, size=(ROWS, features)).astype(np.float32)
    y = np.stack([np.sin(x[:, 0]) + 0.3 * x[:, 1] * x[:, 2], 0.5 * x[:, 3] - np.abs(x[:, 4])], axis=1)
    return x, y.astype(np.float32)


# name: (the model, brain's activation per Linear, the task, its kind)
MODELS = {
    "gelu_tanh_sigmoid": (lambda: nn.Sequential(nn.Linear(6, 16), nn.GELU(), nn.Linear(16, 8), nn.Tanh(),
                                                nn.Linear(8, 1), nn.Sigmoid()),
                          ["gelu", "tanh", "sigmoid"], binary_task, "binary"),
    # Dropout takes an index too: the Linear modules are 0, 3 and 5.
    "relu_dropout_leaky_softmax": (lambda: nn.Sequential(nn.Linear(4, 16), nn.ReLU(), nn.Dropout(0.1),
                                                         nn.Linear(16, 16), nn.LeakyReLU(), nn.Linear(16, 3),
                                                         nn.Softmax(dim=1)),
                                   ["relu", "leaky_relu", "softmax"], three_class_task, "multiclass"),
    "relu_regression": (lambda: nn.Sequential(nn.Linear(5, 12), nn.ReLU(), nn.Linear(12, 2)),
                        ["relu", "linear"], regression_task, "regression"),
}


def features_of(model):
    return next(m for m in model if isinstance(m, nn.Linear)).in_features


def train(model, x, y, kind, epochs=150):
    opt = torch.optim.Adam(model.parameters(), lr=0.01)
    xt = torch.from_numpy(x)
    for _ in range(epochs):
        opt.zero_grad()
        loss = metrics_loss(model(xt), y, kind)
        loss.backward()
        opt.step()
    model.eval()
    with torch.no_grad():
        out = model(xt)
        loss = float(metrics_loss(out, y, kind))
        if kind == "binary":
            accuracy = float(((out[:, 0] >= 0.5).numpy() == (y[:, 0] >= 0.5)).mean())
        elif kind == "multiclass":
            accuracy = float((out.argmax(dim=1).numpy() == y).mean())
        else:
            accuracy = None
    return {"loss": loss, "accuracy": accuracy}


def metrics_loss(out, y, kind):
    if kind == "binary":
        return nn.functional.binary_cross_entropy(out, torch.from_numpy(y))
    if kind == "multiclass":
        return nn.functional.nll_loss(torch.log(out.clamp_min(1e-12)), torch.from_numpy(y).long())
    return nn.functional.mse_loss(out, torch.from_numpy(y))


def write_csv(path, x, y, kind):
    names = ["x%d" % i for i in range(x.shape[1])]
    if kind == "binary":
        targets, cells = ["y"], [["%d" % v] for v in y[:, 0]]
    elif kind == "multiclass":
        # Class labels sort byte-wise in brain; "class0" < "class1" < "class2" keeps PyTorch's class order.
        targets, cells = ["species"], [["class%d" % v] for v in y]
    else:
        targets, cells = ["y0", "y1"], [["%.6g" % v for v in row] for row in y]
    with open(path, "w") as f:
        f.write(",".join(names + targets) + "\n")
        for row, target in zip(x, cells):
            f.write(",".join(["%.6g" % v for v in row] + target) + "\n")
    return targets


def export(model, example, path, dynamo):
    kwargs = dict(input_names=["input"], output_names=["output"], opset_version=17 if not dynamo else None)
    if dynamo:
        kwargs.pop("opset_version")
        torch.onnx.export(model, (example,), path, dynamo=True, external_data=False,
                          dynamic_shapes=({0: torch.export.Dim("batch", min=1, max=4096)},), **kwargs)
    else:
        if "dynamo" in inspect.signature(torch.onnx.export).parameters:
            kwargs["dynamo"] = False  # PyTorch 2.9 and later default to the dynamo exporter
        torch.onnx.export(model, (example,), path, dynamic_axes={"input": {0: "batch"}, "output": {0: "batch"}},
                          **kwargs)


def main():
    out = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..",
                                                            "tests", "data", "interop", "torch")
    os.makedirs(out, exist_ok=True)
    torch.manual_seed(20261201)
    rng = np.random.RandomState(20261201)
    versions = {"torch": torch.__version__, "onnx": onnx.__version__,
                "onnxruntime": onnxruntime.__version__ if onnxruntime else None,
                "safetensors": safetensors.__version__ if safetensors else None, "python": sys.version.split()[0]}
    for name, (make, activations, task, kind) in MODELS.items():
        model = make()
        n = features_of(model)
        x, y = task(rng, n)
        x = np.array([[float("%.6g" % v) for v in row] for row in x], dtype=np.float32)  # as the CSV holds them
        if kind == "regression":
            y = np.array([[float("%.6g" % v) for v in row] for row in y], dtype=np.float32)
        targets = write_csv(os.path.join(out, name + ".csv"), x, y, kind)
        metrics = train(model, x, y, kind)
        inputs = rng.uniform(-2.5, 2.5, size=(16, n)).astype(np.float32)
        inputs[0] = 0.0
        with torch.no_grad():
            outputs = model(torch.from_numpy(inputs)).numpy()
        info = {"name": name, "made_with": versions, "task": kind,
                "layers": [n] + [m.out_features for m in model if isinstance(m, nn.Linear)],
                "activations": activations, "input_shape": [n], "inputs": inputs.tolist(),
                "outputs": outputs.tolist(), "data": name + ".csv", "targets": targets, "torch_metrics": metrics,
                "onnx": {}, "onnx_opset": {}, "onnx_errors": {}, "onnx_checker": {}, "onnxruntime_outputs": {},
                "onnxruntime_relative_error": {}}
        example = torch.from_numpy(inputs[:4])
        for exporter, dynamo in (("legacy", False), ("dynamo", True)):
            path = os.path.join(out, "%s.%s.onnx" % (name, exporter))
            try:
                export(model, example, path, dynamo)
                m = onnx.load(path)
                info["onnx"][exporter] = os.path.basename(path)
                info["onnx_opset"][exporter] = {o.domain: o.version for o in m.opset_import}
                try:
                    onnx.checker.check_model(m, full_check=True)
                    info["onnx_checker"][exporter] = "passed"
                except Exception as e:
                    info["onnx_checker"][exporter] = "%s: %s" % (type(e).__name__, e)
                if onnxruntime:
                    session = onnxruntime.InferenceSession(path, providers=["CPUExecutionProvider"])
                    got = session.run(None, {session.get_inputs()[0].name: inputs})[0]
                    info["onnxruntime_outputs"][exporter] = got.tolist()
                    scale = np.maximum(np.abs(outputs).max(axis=0), 1e-30)
                    error = float((np.abs(got - outputs).max(axis=0) / scale).max())
                    info["onnxruntime_relative_error"][exporter] = error
            except Exception as e:
                info["onnx"][exporter] = None
                info["onnx_errors"][exporter] = "%s: %s" % (type(e).__name__, e)
                traceback.print_exc()
                if os.path.exists(path):
                    os.remove(path)
        state = {k: v.detach().contiguous() for k, v in model.state_dict().items()}
        info["safetensors"] = None
        if safetensors:
            save_file(state, os.path.join(out, name + ".safetensors"))
            save_file({k: v.half() for k, v in state.items()}, os.path.join(out, name + ".f16.safetensors"))
            save_file({k: v.bfloat16() for k, v in state.items()}, os.path.join(out, name + ".bf16.safetensors"))
            info["safetensors"] = {"float32": name + ".safetensors", "float16": name + ".f16.safetensors",
                                   "bfloat16": name + ".bf16.safetensors"}
        info["state_dict_names"] = list(state)
        with open(os.path.join(out, name + ".json"), "w") as f:
            json.dump(info, f)
            f.write("\n")
        print("%s: %s; onnx %s; errors %s" % (name, metrics, info["onnx"], info["onnx_errors"] or "none"))
    sizes = sorted((os.path.getsize(os.path.join(out, f)), f) for f in os.listdir(out))
    print("wrote %d files to %s, largest %s (%d bytes)" % (len(sizes), out, sizes[-1][1], sizes[-1][0]))


if __name__ == "__main__":
    main()
