"""NumPy files from Python: Dataset.from_npy / from_npz / save_npz, load_npy / save_npy, and StreamingDataset."""

import numpy as np
import pytest

import brain


def arrays():
    rng = np.random.default_rng(9)
    X = rng.normal(size=(300, 3)).astype(np.float32)
    y = (X[:, :1] - X[:, 2:3]).astype(np.float32)
    return X, y


def test_npy_and_npz_round_trips(tmp_path):
    X, y = arrays()
    np.save(tmp_path / "x.npy", X.astype(np.float64))
    np.save(tmp_path / "y.npy", y)
    data = brain.Dataset.from_npy(tmp_path / "x.npy", tmp_path / "y.npy")
    np.testing.assert_array_equal(data.features, X)
    if brain.npz_supported():
        data.save_npz(tmp_path / "d.npz")
        again = brain.Dataset.from_npz(tmp_path / "d.npz")
        np.testing.assert_array_equal(again.targets, y)
    else:
        with pytest.raises(brain.Error, match="install libzip-dev"):
            data.save_npz(tmp_path / "d.npz")
        assert not (tmp_path / "d.npz").exists()
    brain.save_npy(tmp_path / "m.npy", X)
    np.testing.assert_array_equal(np.load(tmp_path / "m.npy"), X)
    np.testing.assert_array_equal(brain.load_npy(tmp_path / "m.npy"), X)
    (tmp_path / "bad.npy").write_bytes(b"not numpy")
    with pytest.raises(brain.Error):
        brain.load_npy(tmp_path / "bad.npy")


def test_streaming_dataset_trains_a_session(tmp_path):
    X, y = arrays()
    np.save(tmp_path / "x.npy", X)
    np.save(tmp_path / "y.npy", y)
    stream = brain.StreamingDataset.from_npy(tmp_path / "x.npy", tmp_path / "y.npy",
                                             brain.StreamOptions(chunk_rows=64, window_chunks=2))
    assert (len(stream), stream.input_width, stream.target_width) == (300, 3, 1)
    np.testing.assert_array_equal(stream.read_rows(10, 20).features, X[10:20])
    net = brain.Network.builder().input_size(3).dense(8, "tanh").dense(1, "linear").seed(1).build()
    try:
        session = brain.TrainingSession(net, stream, config=brain.TrainConfig(epochs=2, batch_size=32))
    except brain.Unsupported as error:
        pytest.skip(f"the CPU plugin does not stream: {error}")
    with session:
        losses = [session.train_epoch() for _ in range(2)]
    assert all(np.isfinite(losses))
