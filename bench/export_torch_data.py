"""Writes the PyTorch anchor's data and initial weights as raw files, so brain_bench --data DIR trains on exactly
what bench/torch_mlp.py trains on (same X, Y and starting parameters; only the batch shuffles differ).

    python3 bench/export_torch_data.py DIR [seed16,x64,...] [--grid-points N] [--grid-seed S] [--grid-work W]
                                                     (default: seed16,x64,x256,x1024; "grid" or g00,g01,...: the
                                                     points of bench/torch_mlp.py's grid with those options)

For each config, into DIR (created if missing):
    <cfg>.x.f32       rows x inputs, row-major float32, little-endian, no header  (torch_mlp.make(cfg, "cpu"))
    <cfg>.y.f32       rows x outputs, same format
    <cfg>.params.f32  the initial parameters of torch_mlp.model_for(cfg, "cpu") in brain's flat ABI layout:
                      per layer W (out x in, row-major) then b. torch.nn.Linear keeps weight as (out, in)
                      row-major, so this is the layers' weight and bias concatenated in order.
    <cfg>.json        shapes, element counts and file names
Both make() and model_for() draw on the CPU with fixed seeds and then move to the device, so these files are
also what the anchor's CUDA variants start from. Files are written only for the configs asked for ("huge" is
1 GiB of X alone)."""
import json
import os
import sys

import torch
import torch_mlp  # the anchor, beside this script (its folder is on sys.path when it runs)

DEFAULT_CONFIGS = "seed16,x64,x256,x1024"


def write_f32(path, tensor):
    """Writes a float32 tensor as raw little-endian bytes, row-major; returns the element count."""
    array = tensor.detach().to("cpu", torch.float32).contiguous().numpy()
    array.astype("<f4", copy=False).tofile(path)
    return int(array.size)


def export(name, cfg, directory):
    X, Y = torch_mlp.make(cfg, "cpu")
    model = torch_mlp.model_for(cfg, "cpu")
    linears = [m for m in model if isinstance(m, torch.nn.Linear)]
    files = {"x": f"{name}.x.f32", "y": f"{name}.y.f32", "params": f"{name}.params.f32"}
    x_count = write_f32(os.path.join(directory, files["x"]), X)
    y_count = write_f32(os.path.join(directory, files["y"]), Y)
    del X, Y
    layers, p_count = [], 0
    with open(os.path.join(directory, files["params"]), "wb") as out:
        for layer in linears:
            w, b = layer.weight.detach(), layer.bias.detach()
            assert w.shape == (layer.out_features, layer.in_features) and b.shape == (layer.out_features,)
            for t in (w, b):
                array = t.contiguous().numpy().astype("<f4", copy=False)
                out.write(array.tobytes())
                p_count += int(array.size)
            layers.append({"inputs": layer.in_features, "outputs": layer.out_features})
    meta = {
        "cfg": name,
        "source": "bench/torch_mlp.py make(cfg, 'cpu') and model_for(cfg, 'cpu')",
        "torch": torch.__version__,
        "dtype": "float32",
        "byteorder": "little",
        "rows": cfg["n"],
        "inputs": cfg["inp"],
        "hidden": cfg["hidden"],
        "outputs": cfg["out"],
        "activation": cfg.get("act", "relu"),
        "loss": cfg.get("loss", "mse"),
        "optimizer": cfg.get("opt", "adam"),
        "layers": layers,
        "parameter_layout": "per layer W (out x in, row-major) then b",
        "counts": {"x": x_count, "y": y_count, "params": p_count},
        "files": files,
    }
    assert x_count == cfg["n"] * cfg["inp"] and y_count == cfg["n"] * cfg["out"]
    with open(os.path.join(directory, f"{name}.json"), "w") as out:
        json.dump(meta, out, indent=1)
        out.write("\n")
    return meta


def main(argv):
    argv, points, seed, work = torch_mlp.grid_options(argv)
    if len(argv) < 2 or argv[1] in ("-h", "--help"):
        print(__doc__.strip(), file=sys.stderr)
        return 2
    directory = argv[1]
    names = (argv[2] if len(argv) > 2 else DEFAULT_CONFIGS).split(",")
    configs = torch_mlp.resolve(names, points, seed, work)  # exits naming an unknown config
    os.makedirs(directory, exist_ok=True)
    for name, cfg in configs.items():
        meta = export(name, cfg, directory)
        print(f"exported {name}: X {meta['rows']}x{meta['inputs']}, Y {meta['rows']}x{meta['outputs']}, "
              f"{meta['counts']['params']} parameters -> {directory}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
