"""Shared fixtures: small seeded data sets (brain.Random's role is played by NumPy's seeded generator)."""

import numpy as np
import pytest


@pytest.fixture
def blobs():
    """Three separable classes in 4 dimensions: (X float32, labels int)."""
    rng = np.random.default_rng(7)
    centers = np.array([[2, 0, 0, 1], [-2, 1, 0, 0], [0, -2, 2, 0]], dtype=np.float32)
    labels = rng.integers(0, 3, size=300)
    X = (centers[labels] + rng.normal(scale=0.5, size=(300, 4))).astype(np.float32)
    return X, labels


@pytest.fixture
def regression():
    """y = 2 x0 - x1 + 0.5 x2 (+ small noise): (X float32, y float32 column)."""
    rng = np.random.default_rng(11)
    X = rng.normal(size=(256, 3)).astype(np.float32)
    y = (2 * X[:, 0] - X[:, 1] + 0.5 * X[:, 2] + rng.normal(scale=0.01, size=256)).astype(np.float32)
    return X, y.reshape(-1, 1)
