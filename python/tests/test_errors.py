"""brain::Error reaches Python as brain.Error subclasses carrying the ErrorCode and the library's exact message."""

import numpy as np
import pytest

import brain


def small_data():
    rng = np.random.default_rng(0)
    return rng.normal(size=(64, 4)).astype(np.float32), rng.normal(size=(64, 1)).astype(np.float32)


def small_network(width=8):
    return brain.Network.builder().input_size(4).dense(width, "relu").dense(1, "linear").build()


def check(error_info, cls, code):
    error = error_info.value
    assert type(error) is cls and isinstance(error, brain.Error)
    assert error.code == code
    assert error.message == str(error) and len(error.message) > 20


def test_every_code_has_its_class():
    for name, code in brain.ErrorCode.__members__.items():
        cls = getattr(brain, name)
        assert issubclass(cls, brain.Error)
        assert cls.__name__ == ("FeatureDisabled" if name == "MetalFeatureDisabled" else name)
    assert brain.MetalFeatureDisabled is brain.FeatureDisabled
    assert issubclass(brain.InvalidArgument, ValueError) and issubclass(brain.InvalidData, ValueError)
    assert issubclass(brain.IoError, OSError) and issubclass(brain.AllocationFailed, MemoryError)


def test_plugin_not_found():
    X, y = small_data()
    with pytest.raises(brain.PluginNotFound) as info:
        small_network().fit_with_backend(X, y, backend=brain.TrainingBackend.plugin("nosuchplugin", 0, 64))
    check(info, brain.PluginNotFound, brain.ErrorCode.PluginNotFound)
    assert "nosuchplugin" in info.value.message


def test_budget_exceeded_keeps_the_weights():
    X, y = small_data()
    net = small_network(width=4096)
    before = net.parameters
    with pytest.raises(brain.BudgetExceeded) as info:
        net.fit_with_backend(X, y, config=brain.TrainConfig(epochs=1, batch_size=64),
                             backend=brain.TrainingBackend.cpu(1))
    check(info, brain.BudgetExceeded, brain.ErrorCode.BudgetExceeded)
    np.testing.assert_array_equal(net.parameters, before)


def test_metal_feature_disabled_off_apple():
    X, y = small_data()
    if not any(r.name == "metal" for r in brain.plugins()):
        pytest.skip("the Metal plugin is not built in this tree")
    with pytest.raises(brain.MetalFeatureDisabled) as info:
        small_network().fit_with_backend(X, y, backend=brain.TrainingBackend.metal(0, 64))
    check(info, brain.FeatureDisabled, brain.ErrorCode.MetalFeatureDisabled)


def test_driver_unavailable_without_a_gpu_driver():
    cuda = [r for r in brain.plugins() if r.name == "cuda"]
    if not cuda:
        pytest.skip("the CUDA plugin is not built in this tree")
    if cuda[0].device_count > 0:
        pytest.skip("a CUDA device is present: DriverUnavailable cannot be provoked")
    with pytest.raises((brain.DriverUnavailable, brain.DeviceNotFound)) as info:
        brain.accelerator_doctor(brain.TrainingBackend.cuda(0, 64))
    assert info.value.code in (brain.ErrorCode.DriverUnavailable, brain.ErrorCode.DeviceNotFound)
    assert info.value.message == str(info.value)


def test_input_errors(tmp_path):
    with pytest.raises(brain.InvalidArgument) as info:
        brain.Network.builder().input_size(4).dense(0, "relu").build()
    check(info, brain.InvalidArgument, brain.ErrorCode.InvalidArgument)
    with pytest.raises(brain.InvalidData) as info:
        brain.Dataset(np.array([[np.inf]], dtype=np.float32), np.zeros((1, 1), dtype=np.float32))
    check(info, brain.InvalidData, brain.ErrorCode.InvalidData)
    bad = tmp_path / "bad.json"
    bad.write_text('{"format": "nonsense"}')
    with pytest.raises(brain.InvalidModelFile) as info:
        brain.load(bad)
    check(info, brain.InvalidModelFile, brain.ErrorCode.InvalidModelFile)
    assert str(bad) in info.value.message
    with pytest.raises(brain.IoError) as info:
        brain.load(tmp_path)
    check(info, brain.IoError, brain.ErrorCode.IoError)
    with pytest.raises(brain.InvalidArgument, match="epochs is 0"):
        small_network().fit(*small_data(), config=brain.TrainConfig(epochs=0))


def test_messages_that_are_not_utf8_keep_the_error_class(tmp_path):
    # A path Python spells with a surrogate escape (the byte 0xe9 on disk).
    with pytest.raises(brain.IoError) as info:
        brain.load("/tmp/x\udce9/none.json")
    check(info, brain.IoError, brain.ErrorCode.IoError)
    assert "x\\xe9" in info.value.message
    # A model file with a byte that is not UTF-8, read from disk and from a string.
    path = tmp_path / "bad.json"
    path.write_bytes(b'{"a":"\xff"}')
    with pytest.raises(brain.InvalidModelFile) as info:
        brain.load(path)
    check(info, brain.InvalidModelFile, brain.ErrorCode.InvalidModelFile)
    with pytest.raises(brain.InvalidModelFile) as info:
        brain.Network.from_json_string(b'{"a":"\xff"}')
    check(info, brain.InvalidModelFile, brain.ErrorCode.InvalidModelFile)
    assert "\\xff" in info.value.message


def test_an_unknown_enum_name_is_refused_naming_the_accepted_ones():
    builder = brain.Network.builder().input_size(4)
    cases = [
        (lambda: builder.dense(8, "relux"), "brain.Activation", "'relux'", ["relu", "leaky_relu", "gelu"]),
        (lambda: builder.loss("msee"), "brain.Loss", "'msee'", ["mse", "binary_cross_entropy"]),
        (lambda: brain.TrainingBackend.cpu().with_precision("bf17"), "brain.Precision", "'bf17'",
         ["float32", "tf32", "bf16"]),
        (lambda: brain.estimate_tensor_memory_mib(small_network(), 8, precision="fp64"), "brain.Precision",
         "'fp64'", ["bf16"]),
        (lambda: setattr(brain.Optimizer(), "kind", "adagrad"), "brain.Optimizer.Kind", "'adagrad'",
         ["sgd", "adam", "adamw"]),
        (lambda: brain.EarlyStopping(mode="minimum"), "brain.MonitorMode", "'minimum'", ["auto", "min", "max"]),
        (lambda: brain.Network.load_safetensors("unused.safetensors", ["relu", "swish"]), "brain.Activation",
         "'swish'", ["relu"]),
        (lambda: brain.plugin_capabilities("cpu").runs("swish"), "PluginCapabilities.runs", "'swish'",
         ["Relu", "MeanSquaredError", "AdamW", "Bf16"]),
        (lambda: brain.Activation("swish"), "brain.Activation", "'swish'", ["relu"]),
    ]
    for call, enum, given, accepted in cases:
        with pytest.raises(ValueError) as info:
            call()
        check(info, brain.InvalidArgument, brain.ErrorCode.InvalidArgument)
        message = info.value.message
        assert "incompatible" not in message
        assert enum in message and given in message, message
        assert all(name in message for name in accepted), message
    # Not a name at all: a value of another type stays pybind11's TypeError listing the signatures.
    with pytest.raises(TypeError):
        builder.dense(8, 3.5)
    with pytest.raises(TypeError):
        brain.TrainingBackend.cpu().with_precision(None)
