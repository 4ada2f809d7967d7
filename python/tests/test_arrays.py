"""NumPy in and out: brain.Matrix and Dataset views share memory; rows to predict are read in place; outputs view
the library's result; other dtypes and layouts are converted."""

import os

import numpy as np
import pytest

import brain


def net_2_to_1():
    return brain.Network.builder().input_size(2).dense(4, "tanh").dense(1, "linear").seed(1).build()


def test_numpy_view_of_a_matrix_is_its_storage():
    m = brain.Matrix(3, 2)
    view = np.asarray(m)
    assert view.ctypes.data == m.address, "numpy.asarray(Matrix) must not copy"
    assert view.dtype == np.float32 and view.shape == (3, 2) and view.flags.c_contiguous
    view[:] = [[1, 2], [3, 4], [5, 6]]
    net = net_2_to_1()
    np.testing.assert_array_equal(net.predict(m), net.predict(view.copy()))


def test_prediction_array_views_the_library_result():
    out = net_2_to_1().predict(np.ones((5, 2), dtype=np.float32))
    assert not out.flags.owndata, "the result views the library's matrix"
    assert out.base is not None and out.flags.c_contiguous and out.dtype == np.float32
    out[0, 0] = 42.0  # writable and owned by the array's base
    assert out[0, 0] == 42.0


def pinlog_runs(log):
    """The addresses and row counts of the pinlog test plugin's predictor_run calls, in order."""
    with open(log) as f:
        return [(int(address, 16), int(rows)) for what, address, rows in (line.split() for line in f) if what == "run"]


def test_predictor_reads_a_float32_array_in_place(tmp_path, monkeypatch):
    """The rows a backend reads are the array's own memory: the pinlog test plugin predicts only from memory pinned
    through it and logs the address of every call."""
    plugins = os.environ.get("BRAIN_TEST_PLUGIN_DIR")
    if not plugins or not os.path.isdir(plugins):
        pytest.skip("BRAIN_TEST_PLUGIN_DIR (the test plugins' folder) is not set: run the suite through ctest")
    log = tmp_path / "log"
    monkeypatch.setenv("BRAIN_PLUGIN_PATH", plugins)
    monkeypatch.setenv("BRAIN_PLUGIN_PATH_ONLY", "1")
    monkeypatch.setenv("BRAIN_PINLOG_FILE", str(log))
    net = brain.Network.builder().input_size(4).dense(5, "linear").dense(2, "linear").seed(2).build()
    X = np.random.default_rng(3).normal(size=(1000, 4)).astype(np.float32)
    begin, end = X.ctypes.data, X.ctypes.data + X.nbytes
    with brain.Predictor(net, brain.TrainingBackend.plugin("pinlog", 0, 0), 256) as predictor:
        with predictor.pin(X) as pinned:
            assert pinned.pinned
            log.unlink(missing_ok=True)
            out = predictor.predict(X)
        runs = pinlog_runs(log)
        assert [rows for _, rows in runs] == [256, 256, 256, 232]
        assert runs[0][0] == begin, "the first batch is the array's first row, not a copy"
        assert all(begin <= address < end for address, _ in runs)
        np.testing.assert_allclose(out, net.predict(X), rtol=1e-5, atol=1e-5)
        with pytest.raises(brain.InvalidArgument, match="would need a converted copy"):
            predictor.pin(X.astype(np.float64))
        # A memory-mapped file is pinned and read where it lies, like any float32 array.
        mapped = np.memmap(tmp_path / "rows.f32", dtype=np.float32, mode="w+", shape=X.shape)
        mapped[:] = X
        with predictor.pin(mapped):
            log.unlink(missing_ok=True)
            np.testing.assert_array_equal(predictor.predict(mapped), out)
        assert pinlog_runs(log)[0][0] == mapped.ctypes.data


def test_dataset_features_are_views_of_its_storage():
    X = np.arange(8, dtype=np.float32).reshape(4, 2)
    data = brain.Dataset(X, np.zeros(4, dtype=np.float32))
    f1, f2 = data.features, data.features
    assert f1.ctypes.data == f2.ctypes.data, "the same storage each time, no copy"
    np.testing.assert_array_equal(f1, X)
    assert data.targets.shape == (4, 1), "a 1-D target array is one column"
    # Read-only: the values were checked finite once, and a reader without the GIL may be reading them.
    for view in (data.features, data.targets):
        assert not view.flags.writeable
        with pytest.raises(ValueError, match="read-only"):
            view[0, 0] = np.nan
    np.testing.assert_array_equal(data.features, X)


@pytest.mark.parametrize("make", [
    lambda a: a.astype(np.float64),
    lambda a: a.astype(np.int32),
    lambda a: np.asfortranarray(a),
    lambda a: np.repeat(a, 2, axis=1)[:, ::2],
    lambda a: a.tolist(),
])
def test_other_dtypes_and_layouts_are_converted(make):
    base = np.array([[5.0, -1.0], [2.0, 3.0], [1.0, 1.0]], dtype=np.float32)
    net = net_2_to_1()
    np.testing.assert_array_equal(net.predict(make(base)), net.predict(base))


def test_wrong_shapes_are_refused():
    net = net_2_to_1()
    with pytest.raises(brain.InvalidArgument, match="expected 2 input columns"):
        net.predict(np.ones((3, 5), dtype=np.float32))
    with pytest.raises(brain.InvalidArgument, match="3 dimensions"):
        net.predict(np.ones((2, 2, 2), dtype=np.float32))
    with pytest.raises(brain.InvalidArgument, match="does not convert"):
        net.predict("not numbers")
    with pytest.raises(brain.InvalidArgument, match="found a numpy.ndarray of dtype <U1 that does not convert"):
        net.predict(np.array([["a", "b"]]))
    with pytest.raises(brain.InvalidArgument, match="found a list that does not convert"):
        net.predict([[object(), 1.0]])
    with pytest.raises(brain.InvalidData, match="finite"):
        net.predict(np.array([[np.nan, 1.0]], dtype=np.float32))
    data = brain.Dataset(np.ones((4, 2)), np.ones(4))
    for validation, found in ((np.ones((4, 2)), "a numpy.ndarray of dtype float64"), ([1, 2, 3], "a list of 3 items"),
                              ((data.features,), "a tuple of 1 item")):
        with pytest.raises(brain.InvalidArgument, match=r"validation must be a brain.Dataset or a \(features, "
                                                        r"targets\) pair.*found " + found):
            net.fit(data, config=brain.TrainConfig(epochs=1, batch_size=2), validation=validation)


@pytest.mark.parametrize("rows, cols", [(2**61, 1), (2**40, 2**10)])
def test_a_matrix_too_large_for_the_host_is_allocation_failed(rows, cols):
    with pytest.raises(brain.AllocationFailed, match=f"Matrix: not enough host memory for {rows} x {cols} floats"):
        brain.Matrix(rows, cols)


class Raises:
    """An array-like whose conversion fails with `error`."""

    def __init__(self, error):
        self.error = error

    def __array__(self, *args, **kwargs):
        raise self.error


@pytest.mark.parametrize("error", [MemoryError("no memory"), KeyboardInterrupt(), RuntimeError("broken __array__")])
def test_errors_other_than_bad_types_propagate_unchanged(error):
    net = net_2_to_1()
    for call in (net.predict, lambda x: brain.Dataset(x, np.ones(3, dtype=np.float32)),
                 lambda x: net.fit(x, np.ones(3, dtype=np.float32))):
        with pytest.raises(type(error)) as info:
            call(Raises(error))
        assert info.value is error and not isinstance(info.value, brain.Error)
    with pytest.raises(brain.InvalidArgument, match=r"found a [\w.]*Raises that does not convert"):
        net.predict(Raises(TypeError("not numbers")))
