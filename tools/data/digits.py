#!/usr/bin/python3
"""scikit-learn's handwritten digits (load_digits: 1,797 8x8 images, classes 0-9) as CSV files for brain, and the
accuracy scikit-learn's MLPClassifier reaches on the same split, for comparison with `brain train --classes digit`.

Usage: tools/data/digits.py OUT_DIR [--hidden 64[,32...]] [--seed 0] [--test-size 0.25] [--seeds N] [--no-baseline]

Writes OUT_DIR/digits_train.csv and OUT_DIR/digits_test.csv (columns p0..p63, then digit), a stratified split with
the seed, and prints one line per result (machine-readable, key=value):
  rows train=1347 test=450
  sklearn hidden=64 random_state=1 accuracy=0.9756 seconds=1.02
  ...
  sklearn hidden=64 mean_accuracy=0.9764 runs=5
one run per MLPClassifier random_state 1..N (--seeds, default 5). MLPClassifier runs with its defaults (Adam, learning rate 0.001, 200 iterations, batch 200, ReLU, L2 1e-4) on
standardised pixels, as brain train standardises them. Exit status 3 when scikit-learn is missing (say so, skip)."""
import argparse
import csv
import os
import sys
import time

# One BLAS thread: the fits are small, and OpenBLAS's threads only contend on a busy machine (they made a 1 s fit
# take 30 s beside a compile on two cores).
for variable in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(variable, "1")


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("out_dir")
    parser.add_argument("--hidden", default="64", help="hidden layer widths, comma-separated (brain's --layers)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--test-size", type=float, default=0.25)
    parser.add_argument("--seeds", type=int, default=5, help="MLPClassifier runs, random_state 1..N")
    parser.add_argument("--no-baseline", action="store_true", help="write the CSV files only")
    args = parser.parse_args()
    try:
        from sklearn.datasets import load_digits
        from sklearn.model_selection import train_test_split
    except ImportError as e:
        print(f"digits.py: scikit-learn is not installed for {sys.executable} ({e}); install python3-sklearn",
              file=sys.stderr)
        return 3
    digits = load_digits()
    x_train, x_test, y_train, y_test = train_test_split(
        digits.data, digits.target, test_size=args.test_size, random_state=args.seed, stratify=digits.target)
    os.makedirs(args.out_dir, exist_ok=True)
    header = [f"p{i}" for i in range(digits.data.shape[1])] + ["digit"]
    for name, x, y in (("digits_train.csv", x_train, y_train), ("digits_test.csv", x_test, y_test)):
        with open(os.path.join(args.out_dir, name), "w", newline="") as f:
            writer = csv.writer(f)
            writer.writerow(header)
            for row, label in zip(x, y):
                writer.writerow([f"{v:g}" for v in row] + [int(label)])
    print(f"rows train={len(y_train)} test={len(y_test)}")
    if args.no_baseline:
        return 0
    import warnings
    from sklearn.exceptions import ConvergenceWarning
    from sklearn.neural_network import MLPClassifier
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler
    hidden = tuple(int(w) for w in args.hidden.split(","))
    total = 0.0
    for random_state in range(1, args.seeds + 1):
        model = make_pipeline(StandardScaler(),
                              MLPClassifier(hidden_layer_sizes=hidden, random_state=random_state))
        start = time.perf_counter()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ConvergenceWarning)
            model.fit(x_train, y_train)
        seconds = time.perf_counter() - start
        accuracy = model.score(x_test, y_test)
        total += accuracy
        print(f"sklearn hidden={args.hidden} random_state={random_state} accuracy={accuracy:.4f} "
              f"seconds={seconds:.2f}")
    print(f"sklearn hidden={args.hidden} mean_accuracy={total / args.seeds:.6f} runs={args.seeds}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
