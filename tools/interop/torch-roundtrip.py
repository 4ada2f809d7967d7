#!/usr/bin/env python3
"""The whole round trip with the real tools, on a machine with PyTorch (and a GPU for --backend cuda:0):
PyTorch trains and exports small nn.Sequential models (make-fixtures.py: torch.onnx.export and
safetensors.torch.save_file), brain imports each file, trains it further on BACKEND and exports it, and then
PyTorch takes brain's weights back (load_state_dict(load_file(...))) and ONNX Runtime runs brain's ONNX file; both
must predict what brain predicts (relative error per output column at most 1e-5).

Needs torch, onnx and safetensors; onnxruntime when present. Writes everything under OUT_DIR and OUT_DIR/summary.json;
exits 1 when a comparison fails or a step errs, 0 otherwise.
Usage: python3 tools/interop/torch-roundtrip.py --brain build/bin/brain --out OUT_DIR [--backend cuda:0] [--epochs 5]
"""
import argparse
import csv
import importlib.util
import json
import os
import subprocess
import sys

import numpy as np
import torch
from safetensors.torch import load_file

try:
    import onnxruntime
except ImportError:
    onnxruntime = None

HERE = os.path.dirname(os.path.abspath(__file__))
TOLERANCE = 1e-5


def load_fixture_maker():
    spec = importlib.util.spec_from_file_location("make_fixtures", os.path.join(HERE, "make-fixtures.py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def run(cmd, log):
    log.append(" ".join(cmd))
    done = subprocess.run(cmd, capture_output=True, text=True)
    log.append(done.stdout + done.stderr)
    if done.returncode != 0:
        raise RuntimeError("%s exited %d: %s" % (cmd[1], done.returncode, (done.stdout + done.stderr).strip()))
    return done.stdout


def relative_error(got, want):
    got, want = np.asarray(got, dtype=np.float64), np.asarray(want, dtype=np.float64)
    if got.shape != want.shape:
        return float("inf")
    scale = np.maximum(np.abs(want).max(axis=0), 1e-30)
    return float((np.abs(got - want).max(axis=0) / scale).max())


def brain_predict(brain, model, inputs, work, log):
    """brain predict's probabilities or outputs for `inputs` (the columns x0..x{n-1})."""
    src, dst = os.path.join(work, "inputs.csv"), os.path.join(work, "predictions.csv")
    with open(src, "w") as f:
        f.write(",".join("x%d" % i for i in range(inputs.shape[1])) + "\n")
        for row in inputs:
            f.write(",".join(repr(float(v)) for v in row) + "\n")
    run([brain, "predict", "--model", model, "--csv", src, "--out", dst], log)
    with open(dst) as f:
        rows = list(csv.reader(f))
    header = rows[0]
    columns = [i for i, name in enumerate(header) if name.startswith("p_")] or \
              [i for i, name in enumerate(header) if name != "label"]
    return np.array([[float(r[i]) for i in columns] for r in rows[1:]])


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--brain", required=True, help="the brain command (build/bin/brain)")
    parser.add_argument("--out", required=True, help="output folder")
    parser.add_argument("--backend", default="cuda:0", help="where brain trains further (default cuda:0)")
    parser.add_argument("--epochs", type=int, default=5, help="epochs brain trains (default 5)")
    args = parser.parse_args()
    brain = os.path.abspath(args.brain)
    fixtures = os.path.join(os.path.abspath(args.out), "fixtures")
    os.makedirs(fixtures, exist_ok=True)
    maker = load_fixture_maker()
    sys.argv = ["make-fixtures.py", fixtures]
    maker.main()

    summary, failures = {"backend": args.backend, "epochs": args.epochs, "torch": torch.__version__, "cases": []}, 0
    for name, (make, activations, _task, _kind) in maker.MODELS.items():
        info = json.load(open(os.path.join(fixtures, name + ".json")))
        work = os.path.join(os.path.abspath(args.out), name)
        os.makedirs(work, exist_ok=True)
        log = []
        sources = [("onnx_" + e, ["--onnx", os.path.join(fixtures, f)]) for e, f in info["onnx"].items() if f]
        if info.get("safetensors"):
            sources.append(("safetensors", ["--safetensors", os.path.join(fixtures, info["safetensors"]["float32"]),
                                            "--activation", ",".join(activations[:-1]),
                                            "--output-activation", activations[-1]]))
        inputs = np.array(info["inputs"], dtype=np.float32)
        for source, flags in sources:
            case = {"model": name, "from": source}
            try:
                imported, tuned = os.path.join(work, source + ".json"), os.path.join(work, source + ".tuned.json")
                run([brain, "import", *flags, "--out", imported], log)
                case["imported_vs_torch"] = relative_error(brain_predict(brain, imported, inputs, work, log),
                                                           info["outputs"])
                run([brain, "train", "--csv", os.path.join(fixtures, info["data"]), *sum(
                    (["--target", t] for t in info["targets"]), []), "--init", imported, "--epochs",
                     str(args.epochs), "--backend", args.backend, "--out", tuned], log)
                onnx_out, st_out = tuned.replace(".json", ".onnx"), tuned.replace(".json", ".safetensors")
                run([brain, "export", "--model", tuned, "--onnx", onnx_out, "--safetensors", st_out], log)
                want = brain_predict(brain, tuned, inputs, work, log)
                model = make()
                # PyTorch takes brain's weights. brain names its layers as an nn.Sequential of Linear and activation
                # modules; a source model with more modules (Dropout) takes them by its Linear layers' indices.
                linear = [str(i) for i, m in enumerate(model) if isinstance(m, torch.nn.Linear)]
                state = load_file(st_out)
                order = sorted({k.split(".")[0] for k in state}, key=int)
                model.load_state_dict({linear[order.index(k.split(".")[0])] + "." + k.split(".")[1]: v
                                       for k, v in state.items()})
                model.eval()
                standardization = json.load(open(tuned)).get("standardization")
                x = inputs if not standardization else (inputs - np.array(standardization["mean"], np.float32)) / \
                    np.array(standardization["stddev"], np.float32)
                with torch.no_grad():
                    case["torch_vs_brain"] = relative_error(model(torch.from_numpy(x)).numpy(), want)
                if onnxruntime:
                    session = onnxruntime.InferenceSession(onnx_out, providers=["CPUExecutionProvider"])
                    case["onnxruntime_vs_brain"] = relative_error(session.run(["output"], {"input": inputs})[0], want)
                case["passed"] = all(v <= TOLERANCE for k, v in case.items() if k.endswith(("_brain", "_torch")))
            except Exception as e:  # a failed step is a failed case, reported with its message
                case["passed"], case["error"] = False, "%s: %s" % (type(e).__name__, e)
            failures += not case["passed"]
            summary["cases"].append(case)
            print(("ok     " if case["passed"] else "FAILED ") + json.dumps(case))
        with open(os.path.join(work, "commands.log"), "w") as f:
            f.write("\n".join(log))
    summary["failed"] = failures
    with open(os.path.join(os.path.abspath(args.out), "summary.json"), "w") as f:
        json.dump(summary, f, indent=1)
    print("torch round trip on %s: %d passed, %d failed" % (args.backend, len(summary["cases"]) - failures, failures))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
