"""Models in and out of other frameworks from Python: ONNX and safetensors round trips, set_optimizer."""

import numpy as np
import pytest

import brain


def trained():
    rng = np.random.default_rng(5)
    X = rng.normal(size=(128, 4)).astype(np.float32)
    y = (X[:, :1] - 0.5 * X[:, 1:2]).astype(np.float32)
    net = brain.Network.builder().input_size(4).dense(8, "tanh").dense(1, "linear").seed(2).build()
    net.fit(brain.Dataset(X, y).standardize(), config=brain.TrainConfig(epochs=3, batch_size=32))
    return net, X


def test_onnx_round_trip(tmp_path):
    net, X = trained()
    path = tmp_path / "model.onnx"
    net.save_onnx(path)
    again = brain.Network.load_onnx(path)
    np.testing.assert_allclose(again.predict(X), net.predict(X), rtol=1e-5, atol=1e-6)
    with pytest.raises(brain.InvalidModelFile):
        bad = tmp_path / "bad.onnx"
        bad.write_bytes(b"not an onnx file")
        brain.Network.load_onnx(bad)


def test_safetensors_round_trip_and_set_optimizer(tmp_path):
    net, X = trained()
    path = tmp_path / "model.safetensors"
    net.save_safetensors(str(path))
    assert [(l.inputs, l.outputs) for l in brain.Network.safetensors_layers(path)] == [(4, 8), (8, 1)]
    same = brain.Network.load_safetensors(path, net)
    np.testing.assert_array_equal(same.parameters, net.parameters)
    widths = brain.Network.load_safetensors(path, ["tanh", "linear"])
    assert widths.parameter_count == net.parameter_count
    same.set_optimizer(brain.Optimizer.sgd(0.01, 0.9))
    assert same.optimizer.kind == brain.Optimizer.Kind.Sgd and same.optimizer_step == 0
