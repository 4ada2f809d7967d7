"""The report of tools/perf/grid-compare: reads OUT/brain.jsonl, band.jsonl, torch.jsonl (and path-*.jsonl,
named-*.jsonl, floors.jsonl where present), writes OUT/grid.md, OUT/grid.json and OUT/grid.svg (ratio against
multiply-adds per step, pure-python SVG) and prints a short table last. Standard library only.
    python3 tools/perf/grid_report.py OUT DEV LOSS_TOL LIMIT_S ELAPSED_S [BARRIER_US]
With floors.jsonl (brain_gemm_rate on the points, grid-compare --floors), each point's step times against two
floors: the step's matrix products alone as cuBLAS runs them in one CUDA graph, and, on the fused epoch kernel's
points, its grid barriers (2L + 1 per step for L layers, the most the kernel places without layer 0's row shares,
x BARRIER_US, default 1.07).
Exit status 1 when a measured point's losses disagree."""
import json, math, os, statistics, sys


def read(path):
    if not os.path.exists(path):
        return []
    rows = []
    for line in open(path):
        if line.startswith("{"):
            try:
                rows.append(json.loads(line))
            except json.JSONDecodeError:
                pass  # a line cut by the time limit
    return rows


def shape(p):
    hidden = p["hidden"]
    return f"{p['inp']}-{hidden[0]}x{len(hidden)}-{p['out']}"


def plot(points, path, title):
    """Ratio against multiply-adds per step (log x), one dot per point, coloured by the loss check."""
    W, H, L, R, T, B = 760, 440, 70, 20, 50, 60
    xs = [math.log10(p["macs_per_step"]) for p in points]
    ys = [p["ratio"] for p in points]
    x0, x1 = math.floor(min(xs)), math.ceil(max(xs))
    if x1 == x0:
        x1 += 1
    ymax = max(2.0, max(ys) * 1.1)
    px = lambda v: L + (v - x0) / (x1 - x0) * (W - L - R)
    py = lambda v: H - B - v / ymax * (H - T - B)
    svg = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{W}" height="{H}" font-family="sans-serif" font-size="12">',
           f'<rect width="{W}" height="{H}" fill="white"/>',
           f'<text x="{W / 2}" y="25" text-anchor="middle" font-size="15">{title}</text>',
           f'<line x1="{L}" y1="{H - B}" x2="{W - R}" y2="{H - B}" stroke="black"/>',
           f'<line x1="{L}" y1="{T}" x2="{L}" y2="{H - B}" stroke="black"/>',
           f'<text x="{W / 2}" y="{H - 15}" text-anchor="middle">multiply-adds per optimizer step (log scale)</text>',
           f'<text x="18" y="{H / 2}" text-anchor="middle" transform="rotate(-90 18 {H / 2})">brain / PyTorch (samples/s)</text>']
    step = 1 if ymax <= 12 else 2
    for k in range(0, int(ymax) + 1, step):
        svg.append(f'<text x="{L - 8}" y="{py(k) + 4:.1f}" text-anchor="end">{k}x</text>')
        svg.append(f'<line x1="{L}" y1="{py(k):.1f}" x2="{W - R}" y2="{py(k):.1f}" stroke="#eee"/>')
    for e in range(x0, x1 + 1):
        svg.append(f'<text x="{px(e):.1f}" y="{H - B + 16}" text-anchor="middle">1e{e}</text>')
    for level, colour in ((1.0, "#c00"), (1.5, "#e90"), (5.0, "#090")):
        if level < ymax:
            svg.append(f'<line x1="{L}" y1="{py(level):.1f}" x2="{W - R}" y2="{py(level):.1f}" stroke="{colour}" '
                       f'stroke-dasharray="5,4"/>')
            svg.append(f'<text x="{W - R - 4}" y="{py(level) - 5:.1f}" text-anchor="end" fill="{colour}">{level:g}x</text>')
    for p, x, y in zip(points, xs, ys):
        colour = "#06c" if p["loss_check"] == "ok" else "#c00"
        svg.append(f'<circle cx="{px(x):.1f}" cy="{py(y):.1f}" r="4" fill="{colour}"><title>{p["cfg"]} {p["shape"]} '
                   f'{p["act"]} {p["loss"]} {p["opt"]} batch {p["batch"]}: {y:.2f}x</title></circle>')
    svg.append("</svg>")
    open(path, "w").write("\n".join(svg) + "\n")


def add_floors(points, brain, floors, barrier_us):
    """Per point: both sides' step times, the products' floor and the bound it sets, and the barrier floor where
    brain ran its fused epoch kernel. Returns whether any point has a products' floor."""
    graph = {}
    for f in floors:
        graph.setdefault(f["cfg"], []).append(f)
    arithmetic = {b["cfg"]: b.get("stats", {}).get("arithmetic", "") for b in brain}
    for p in points:
        p["torch_step_us"] = p["batch"] / p["torch_samples_per_s"] * 1e6
        p["brain_step_us"] = p["batch"] / p["brain_samples_per_s"] * 1e6
        rows = graph.get(p["cfg"])
        if rows:
            p["products_floor_us"] = statistics.median(r["graph_seconds_per_step"] for r in rows) * 1e6
            p["products_calls_us"] = statistics.median(r["gemm_seconds_per_step"] for r in rows) * 1e6
            p["products_bound"] = p["torch_step_us"] / p["products_floor_us"]
        if "fused epoch kernel" in arithmetic.get(p["cfg"], ""):
            layers = len(p["hidden"]) + 1
            p["barriers_per_step"] = 2 * layers + 1
            p["barrier_floor_us"] = p["barriers_per_step"] * barrier_us
    return any("products_floor_us" in p for p in points)


def floors_sentence(points, barrier_us):
    """What bounds the points below 5x: the products' bound where it is below 5x, else brain's step against the
    two floors."""
    below = sorted((p for p in points if p["ratio"] < 5), key=lambda q: q["ratio"])
    text = (f"Floors: the products' floor is one step's matrix products alone, as cuBLAS runs them back to back in "
            f"one CUDA graph (brain_gemm_rate); the bound, PyTorch's step / that floor, is the most brain / PyTorch "
            f"could reach if brain's step were just those products. The barrier floor, on the points brain trains "
            f"in its fused epoch kernel, is 2L + 1 grid barriers per step (L layers; the most the kernel places "
            f"without layer 0's row shares) "
            f"x {barrier_us:g} µs. ")
    if not below:
        return text + "No point is below 5x."
    # A bound below 5x explains a point only where brain has not passed it: the fused epoch kernel runs its own
    # products and can beat cuBLAS's floor, and such a point is not stopped by the vendor's rate.
    bounded = [p for p in below if p.get("products_bound", math.inf) < 5 and p["ratio"] <= p["products_bound"]]
    unmeasured = [p for p in below if "products_bound" not in p]
    others = [p for p in below if "products_bound" in p and p not in bounded]
    names = lambda group: f" ({', '.join(p['cfg'] for p in group)})" if group else ""
    text += (f"Points below 5x: {len(below)}; at or under a products bound below 5x, bounded by the vendor "
             f"library's rate: {len(bounded)}{names(bounded)}")
    if unmeasured:
        text += f"; without a products' floor: {len(unmeasured)}{names(unmeasured)}"
    if others:
        def against(p):
            barrier = f", barrier floor {p['barrier_floor_us']:.1f} µs" if "barrier_floor_us" in p else ""
            return (f"{p['cfg']} at {p['ratio']:.2f}x (bound {p['products_bound']:.1f}x), brain's step "
                    f"{p['brain_step_us']:.1f} µs against products' floor {p['products_floor_us']:.1f} µs{barrier}")
        text += ("; the others, above the products' bound or with a bound of 5x or more, brain's step against the "
                 "floors: " + "; ".join(against(p) for p in others))
    return text + "."


def main(argv):
    out, dev, tol, limit, elapsed = argv[1], argv[2], float(argv[3]), argv[4], argv[5]
    barrier_us = float(argv[6]) if len(argv) > 6 else 1.07
    brain, band, torch = read(f"{out}/brain.jsonl"), read(f"{out}/band.jsonl"), read(f"{out}/torch.jsonl")
    env = open(f"{out}/env.txt").read().strip() if os.path.exists(f"{out}/env.txt") else ""
    points, bad = [], []
    for b in brain:
        variants = [t for t in torch if t["cfg"] == b["cfg"]]
        if not variants:
            continue
        best = max(variants, key=lambda t: t["samples_per_s"])
        losses = [b["final_loss"]] + [e["final_loss"] for e in band if e["cfg"] == b["cfg"]]
        lo, hi = min(losses), max(losses)
        ok = lo * (1 - tol) - 1e-7 <= best["final_loss"] <= hi * (1 + tol) + 1e-7
        p = {k: b[k] for k in ("cfg", "inp", "hidden", "out", "batch", "act", "loss", "opt", "epochs", "macs_per_step")}
        p.update(shape=shape(b), brain_samples_per_s=b["samples_per_s"], torch_variant=best["variant"],
                 torch_samples_per_s=best["samples_per_s"], ratio=b["samples_per_s"] / best["samples_per_s"],
                 brain_loss=b["final_loss"], torch_loss=best["final_loss"], band=[lo, hi],
                 loss_check="ok" if ok else "DISAGREE")
        points.append(p)
        if not ok:
            bad.append(f"{b['cfg']} {p['shape']}: torch {best['final_loss']:.5g} outside brain's {lo:.5g}..{hi:.5g}")
    # The two epoch paths forced, against each other (cuda --paths): the fused epoch kernel and the cuBLAS path.
    paths = {name: {r["cfg"]: r["samples_per_s"] for r in read(f"{out}/path-{name}.jsonl")} for name in ("1", "0")}
    for p in points:
        fused, cublas = paths["1"].get(p["cfg"]), paths["0"].get(p["cfg"])
        if fused and cublas:
            p["fused_samples_per_s"], p["cublas_samples_per_s"] = fused, cublas
            p["fused_over_cublas"] = fused / cublas
    # brain against itself with one variable set (--against-env): medians over the alternating rounds.
    against = open(f"{out}/against.txt").read().strip() if os.path.exists(f"{out}/against.txt") else ""
    this_runs, env_runs = read(f"{out}/against-this.jsonl"), read(f"{out}/against-env.jsonl")
    for p in points:
        a = [r["samples_per_s"] for r in this_runs if r["cfg"] == p["cfg"]]
        b = [r["samples_per_s"] for r in env_runs if r["cfg"] == p["cfg"]]
        if a and b:
            p["against_env"] = statistics.median(a) / statistics.median(b)
    has_against = any("against_env" in p for p in points)
    floors = read(f"{out}/floors.jsonl")
    has_floors = bool(floors) and add_floors(points, brain, floors, barrier_us)
    lines = [f"# brain / PyTorch on the shape grid ({dev})", "", env.replace("\n", "; "), ""]
    sentence = ""
    if points:
        ratios = [p["ratio"] for p in points]
        lines.append(f"{len(points)} points: brain / PyTorch's fastest variant min **{min(ratios):.2f}x**, median "
                     f"**{statistics.median(ratios):.2f}x**, max **{max(ratios):.2f}x**; loss check: "
                     f"{sum(p['loss_check'] == 'ok' for p in points)} ok, {len(bad)} disagree")
        if has_floors:
            sentence = floors_sentence(points, barrier_us)
            lines += ["", sentence]
        floor_head = (" PyTorch µs / step | brain µs / step | products' floor µs | bound | barrier floor µs |"
                      if has_floors else "")
        lines += ["", "| point | layers | batch | activation | loss | optimizer | multiply-adds / step | brain samples/s "
                  "| PyTorch samples/s | ratio | losses brain / torch | check |" + (" fused / cuBLAS |" if paths["1"] else "")
                  + floor_head + (f" brain / brain with {against} |" if has_against else ""),
                  "|---|---|---:|---|---|---|---:|---:|---:|---:|---|---|" + ("---:|" if paths["1"] else "")
                  + ("---:|---:|---:|---:|---:|" if has_floors else "") + ("---:|" if has_against else "")]
        for p in sorted(points, key=lambda q: q["macs_per_step"]):
            extra = f" {p['fused_over_cublas']:.2f}x |" if "fused_over_cublas" in p else (" |" if paths["1"] else "")
            if has_floors:
                extra += (f" {p['torch_step_us']:.1f} | {p['brain_step_us']:.1f} | " +
                          (f"{p['products_floor_us']:.1f} | {p['products_bound']:.2f}x | " if "products_floor_us" in p
                           else "- | - | ") +
                          (f"{p['barrier_floor_us']:.1f} |" if "barrier_floor_us" in p else "- |"))
            if has_against:
                extra += f" {p['against_env']:.3f}x |" if "against_env" in p else " - |"
            lines.append(f"| {p['cfg']} | {p['shape']} | {p['batch']} | {p['act']} | {p['loss']} | {p['opt']} | "
                         f"{p['macs_per_step']:.3g} | {p['brain_samples_per_s']:,} | {p['torch_samples_per_s']:,} "
                         f"({p['torch_variant']}) | {p['ratio']:.2f}x | {p['brain_loss']:.4g} / {p['torch_loss']:.4g} "
                         f"| {p['loss_check']} |{extra}")
    else:
        lines.append("no point was measured on both sides (see the .err logs)")
    named_this, named_base = read(f"{out}/named-this.jsonl"), read(f"{out}/named-base.jsonl")
    if named_this and named_base:
        other = f"with {against}" if against else "the baseline"
        lines += ["", f"Named shapes, this build / {other} (median over alternating rounds):", "",
                  f"| config | this build samples/s | {other} samples/s | ratio |", "|---|---:|---:|---:|"]
        for cfg in dict.fromkeys(r["cfg"] for r in named_this):
            a = [r["samples_per_s"] for r in named_this if r["cfg"] == cfg]
            b = [r["samples_per_s"] for r in named_base if r["cfg"] == cfg]
            if a and b:
                lines.append(f"| {cfg} | {statistics.median(a):,.0f} | {statistics.median(b):,.0f} | "
                             f"{statistics.median(a) / statistics.median(b):.3f}x |")
    skipped = open(f"{out}/skipped.txt").read().strip() if os.path.exists(f"{out}/skipped.txt") else ""
    lines += ["", f"time: {elapsed} s of the limit {limit} s" + (f"; not run: {skipped}" if skipped else "")]
    open(f"{out}/grid.md", "w", encoding="utf-8").write("\n".join(lines) + "\n")
    json.dump(points, open(f"{out}/grid.json", "w"), indent=1)
    if points:
        plot(points, f"{out}/grid.svg", f"brain / PyTorch on the shape grid ({dev}, {len(points)} points)")
    # The short table, last.
    print("\n".join(lines[:5]))
    if sentence:
        print("\n" + sentence)
    if points:
        print(f"\n{'point':6} {'shape':18} {'act':10} {'loss':4} {'opt':5} {'MACs/step':>10} {'ratio':>7}  check")
        for p in sorted(points, key=lambda q: q["ratio"])[:10]:
            print(f"{p['cfg']:6} {p['shape']:18} {p['act']:10} {p['loss']:4} {p['opt']:5} {p['macs_per_step']:>10.3g} "
                  f"{p['ratio']:>6.2f}x  {p['loss_check']}" +
                  (f"  fused/cuBLAS {p['fused_over_cublas']:.2f}x" if "fused_over_cublas" in p else "") +
                  (f"  bound {p['products_bound']:.2f}x" if "products_bound" in p else "") +
                  (f"  against {p['against_env']:.3f}x" if "against_env" in p else ""))
        print("(the 10 lowest ratios; every point in grid.md)")
    for line in lines:
        if line.startswith("| seed16") or line.startswith("| x") or line.startswith("| wide") or line.startswith("| huge"):
            print(line)
    print(f"report: {out}/grid.md, grid.json, grid.svg")
    if bad:
        print("final losses disagree:\n  " + "\n  ".join(bad), file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
