#!/usr/bin/env python3
"""Chapter 11's listings in Python: doctor (11.3), the estimate and the budget (11.4), fit_with_backend (11.5),
TrainingSession (11.6), measuring (11.7) and the Metal backend (11.8), on --backend (default cuda:0 with an 8192 MiB
budget). A backend that cannot run says precisely why and the listing moves on; nothing falls back to the CPU.

    PYTHONPATH=build/python python3 examples/python/chapter_listings.py [--backend cuda:0] [--budget 8192]
                                                                          [--epochs 5]
"""
import argparse
import time

import numpy as np

import brain


def chapter_network():
    return (brain.Network.builder().input_size(16)
            .dense(256, brain.Activation.Relu).dense(256, brain.Activation.Relu).dense(1, brain.Activation.Linear)
            .optimizer(brain.Optimizer.adam(0.001)).seed(42).build())


def chapter_data(rows=4096):
    rng = np.random.default_rng(0)
    X = rng.normal(size=(rows, 16)).astype(np.float32)
    w = rng.normal(size=(16, 1)).astype(np.float32) / 4
    y = (np.tanh(X @ w) + 0.1 * rng.normal(size=(rows, 1))).astype(np.float32)
    return brain.Dataset(X, y)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--backend", default="cuda:0")
    parser.add_argument("--budget", type=int, default=8192)
    parser.add_argument("--epochs", type=int, default=5)
    args = parser.parse_args()
    backend = brain.TrainingBackend.parse(args.backend, args.budget)
    model, data = chapter_network(), chapter_data()
    config = brain.TrainConfig(epochs=args.epochs, batch_size=256, shuffle=True, seed=7)

    print("== 11.3 doctor")
    try:
        report = brain.accelerator_doctor(backend)
        print(report if report is not None else f"{backend.describe()}: nothing to probe")
    except brain.Error as error:
        print(f"{backend.describe()}: {error.code.name}: {error}")

    print("== 11.4 estimate and budget")
    print(f"{brain.estimate_tensor_memory_mib(model, 256)} MiB of tensors for batch 256")
    try:
        model.fit_with_backend(data, config=config, backend=brain.TrainingBackend.cpu(1))
    except brain.BudgetExceeded as error:
        print(f"BudgetExceeded: {error}")

    print("== 11.5 fit_with_backend")
    try:
        fit = model.fit_with_backend(data, config=config, backend=backend)
        print(f"final loss {fit.epoch_losses[-1]:.6f} on {backend.describe()}")
        print(fit.stats.to_json())
    except brain.Error as error:
        print(f"{error.code.name}: {error}  (the network keeps its weights: {model.epochs_trained} epochs)")

    print("== 11.6 TrainingSession")
    try:
        with brain.TrainingSession(model, data, config=config, backend=backend) as session:
            for epoch in range(args.epochs):
                print(f"epoch {epoch + 1}: loss {session.train_epoch():.6f}")
            model.restore_checkpoint(session.checkpoint())
    except brain.Error as error:
        print(f"{error.code.name}: {error}")

    print("== 11.7 measuring")
    for candidate in (brain.TrainingBackend.cpu(), backend):
        try:
            start = time.perf_counter()
            chapter_network().fit_with_backend(data, config=config, backend=candidate)
            print(f"{candidate.describe()}: {time.perf_counter() - start:.3f} s for {args.epochs} epochs")
        except brain.Error as error:
            print(f"{candidate.describe()}: {error.code.name}")

    print("== 11.8 Metal")
    try:
        chapter_network().fit_with_backend(data, config=config, backend=brain.TrainingBackend.metal(0, 1024))
    except brain.Error as error:
        print(f"{error.code.name}: {error}")


if __name__ == "__main__":
    main()
