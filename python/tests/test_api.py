"""The C++ API end to end on the CPU plugin: builder, fit, predict, evaluate, sessions, model files, plugins."""

import ast
import copy
import os
import pickle
import re

import numpy as np
import pytest

import brain


def regression_network(seed=3, optimizer=None):
    builder = brain.Network.builder().input_size(3).dense(16, brain.Activation.Tanh).dense(1, "linear")
    return builder.optimizer(optimizer or brain.Optimizer.adam(0.01)).seed(seed).build()


def test_builder_describes_the_network():
    net = brain.Network.builder().input_size(4).dense(8, "relu").dense(3, brain.Activation.Softmax).seed(5).build()
    assert [(l.inputs, l.outputs, l.activation) for l in net.layers] == [
        (4, 8, brain.Activation.Relu), (8, 3, brain.Activation.Softmax)]
    assert net.parameter_count == 4 * 8 + 8 + 8 * 3 + 3
    assert net.loss == brain.Loss.CategoricalCrossEntropy
    assert net.is_classifier
    assert net.seed == 5
    assert net.parameters.shape == (net.parameter_count,)


def test_fit_lowers_the_loss_and_predict_matches_evaluate(regression):
    X, y = regression
    net = regression_network()
    before = net.evaluate(X, y).loss
    report = net.fit(X, y, config=brain.TrainConfig(epochs=60, batch_size=32))
    assert len(report.epoch_losses) == 60
    assert report.epoch_losses[-1] < report.epoch_losses[0] / 10
    assert net.epochs_trained == 60
    after = net.evaluate(X, y)
    assert after.loss < before / 10 and after.accuracy is None
    out = net.predict(X)
    assert out.shape == (256, 1) and out.dtype == np.float32
    assert np.mean((out - y) ** 2) == pytest.approx(after.loss, rel=1e-4)
    assert report.stats.epochs == 60 and report.stats.batches == 60 * 8


def test_fit_with_backend_equals_fit_on_the_cpu(regression):
    X, y = regression
    a, b = regression_network(), regression_network()
    config = brain.TrainConfig(epochs=5, batch_size=16, seed=9)
    la = a.fit(X, y, config=config).epoch_losses
    lb = b.fit_with_backend(brain.Dataset(X, y), config=config, backend=brain.TrainingBackend.cpu()).epoch_losses
    assert la == lb
    np.testing.assert_array_equal(a.parameters, b.parameters)


def test_validation_losses_are_reported(regression):
    X, y = regression
    net = regression_network()
    report = net.fit(X[:200], y[:200], config=brain.TrainConfig(epochs=4, batch_size=20),
                     validation=(X[200:], y[200:]))
    assert len(report.validation_losses) == 4
    assert report.validation_losses[-1] == pytest.approx(net.evaluate(X[200:], y[200:]).loss, rel=1e-5)


def test_training_session_matches_fit(regression):
    X, y = regression
    config = brain.TrainConfig(epochs=3, batch_size=32, seed=1)
    fitted = regression_network()
    fitted.fit(X, y, config=config)
    net = regression_network()
    with brain.TrainingSession(net, X, y, config=config, backend=brain.TrainingBackend.cpu()) as session:
        losses = [session.train_epoch() for _ in range(3)]
        checkpoint = session.checkpoint()
        assert session.stats().epochs == 3 and session.stats().devices == 1
        assert [s.epochs for s in session.device_stats()] == [3]
        assert session.backend.plugin_name == "cpu"
    assert not session.is_open
    with pytest.raises(brain.InvalidState):
        session.train_epoch()
    net.restore_checkpoint(checkpoint)
    assert checkpoint.epochs_trained == 3 and len(losses) == 3
    np.testing.assert_array_equal(net.parameters, fitted.parameters)


def test_session_trains_epochs_in_one_call_as_one_each(regression):
    X, y = regression
    config = brain.TrainConfig(epochs=3, batch_size=32, seed=1)
    each, together = regression_network(), regression_network()
    with brain.TrainingSession(each, X, y, config=config) as session:
        one_by_one = [session.train_epoch() for _ in range(3)]
        by_epoch = session.checkpoint()
    with brain.TrainingSession(together, X, y, config=config) as session:
        losses = session.train_epochs(3)
        in_one_call = session.checkpoint()
        with pytest.raises(brain.InvalidArgument, match="0 epochs"):
            session.train_epochs(0)
    assert losses == one_by_one
    assert in_one_call.epochs_trained == 3
    np.testing.assert_array_equal(in_one_call.parameters, by_epoch.parameters)


def test_session_learning_rate_can_change(regression):
    X, y = regression
    net = regression_network(optimizer=brain.Optimizer.sgd(0.01))
    with brain.TrainingSession(net, X, y, config=brain.TrainConfig(epochs=2, batch_size=64)) as session:
        session.train_epoch()
        session.set_learning_rate(0.001)
        assert np.isfinite(session.train_epoch())
        with pytest.raises(brain.InvalidArgument):
            session.set_learning_rate(-1.0)


def test_classifier_predict_classes_and_accuracy(blobs):
    X, labels = blobs
    Y = np.eye(3, dtype=np.float32)[labels]
    net = brain.Network.builder().input_size(4).dense(16, "relu").dense(3, "softmax").seed(2).build()
    data = brain.Dataset(X, Y).standardize()
    net.fit(data, config=brain.TrainConfig(epochs=30, batch_size=32))
    assert net.standardization is not None
    result = net.evaluate(data)
    assert result.accuracy > 0.95
    assert np.mean(net.predict_classes(X) == labels) == pytest.approx(result.accuracy, abs=1e-6)


def test_save_load_copy_and_pickle_round_trip(tmp_path, regression):
    X, y = regression
    net = regression_network()
    net.fit(X, y, config=brain.TrainConfig(epochs=2))
    path = tmp_path / "model.json"
    brain.save(net, path)
    for other in (brain.load(path), brain.Network.load_json(str(path)),
                  brain.Network.from_json_string(net.to_json_string()), pickle.loads(pickle.dumps(net)),
                  copy.deepcopy(net)):
        np.testing.assert_array_equal(other.predict(X), net.predict(X))
    twin = copy.copy(net)
    twin.set_parameters(np.zeros(net.parameter_count, dtype=np.float32))
    assert np.any(net.parameters != 0), "a copy is independent"
    with pytest.raises(brain.InvalidModelFile) as error:
        brain.Network.from_json_string("{}", "broken.json")
    assert "broken.json" in str(error.value)
    with pytest.raises(brain.IoError, match="same file"):
        net.save_json(path, inputs=[path])


def test_value_objects_copy_and_deepcopy_independently(regression):
    X, y = regression
    net = regression_network()
    report = net.fit(X, y, config=brain.TrainConfig(epochs=2))
    data = brain.Dataset(X, y)
    cases = [
        (brain.TrainConfig(epochs=7), lambda o: setattr(o, "epochs", 1), lambda o: o.epochs == 7),
        (brain.Optimizer.sgd(0.1, momentum=0.5), lambda o: setattr(o, "momentum", 0.0), lambda o: o.momentum == 0.5),
        (brain.InputLimits(), lambda o: setattr(o, "max_columns", 1), lambda o: o.max_columns != 1),
        (brain.EarlyStoppingOptions(), lambda o: setattr(o, "patience", 99), lambda o: o.patience != 99),
        (data, lambda o: o.standardize(), lambda o: np.array_equal(o.features, X)),
    ]
    for original, change, unchanged in cases:
        for duplicate in (copy.copy(original), copy.deepcopy(original)):
            assert type(duplicate) is type(original)
            change(duplicate)
            assert unchanged(original), f"changing a copy of {type(original).__name__} changed the original"
    assert np.array_equal(copy.deepcopy(data).targets, y)
    # Read-only results copy whole.
    assert copy.deepcopy(report).epoch_losses == report.epoch_losses
    evaluation = net.evaluate(X, y)
    assert copy.copy(evaluation).loss == evaluation.loss


def test_dataset_from_csv_and_split(tmp_path):
    csv = tmp_path / "d.csv"
    csv.write_text("a,b,label\n1,2,cat\n2,3,dog\n3,4,cat\n4,5,dog\n")
    data = brain.Dataset.from_csv(csv, ["label"])
    assert data.size == 4 and data.class_labels == ["cat", "dog"]
    assert data.feature_names == ["a", "b"]
    np.testing.assert_array_equal(data.features[:, 0], [1, 2, 3, 4])
    train, valid = data.split(0.25, 1)
    assert (len(train), len(valid)) == (3, 1)


def test_estimates_doctor_and_backends():
    net = brain.Network.builder().input_size(16).dense(256, "relu").dense(1, "linear").build()
    mib = brain.estimate_tensor_memory_mib(net, 64)
    assert mib >= 1
    assert brain.estimate_tensor_memory_bytes(net, 64) <= mib * 1024 * 1024
    assert brain.estimate_tensor_memory_mib(net, 64, brain.Precision.Bf16) >= 1
    assert brain.largest_batch_within(net, brain.estimate_tensor_memory_bytes(net, 64)) >= 64
    assert brain.accelerator_doctor(brain.TrainingBackend.cpu()) is None
    report = brain.accelerator_doctor(brain.TrainingBackend.cpu(64))
    assert report.gemm_available and report.total_memory_mib > 0
    backend = brain.TrainingBackend.parse("cuda:1", 2048).with_precision("bf16")
    assert (backend.plugin_name, backend.device, backend.memory_budget_mib, backend.precision) == (
        "cuda", 1, 2048, brain.Precision.Bf16)
    assert copy.deepcopy(backend).describe() == backend.describe()
    multi = brain.TrainingBackend.cuda([0, 1], 4096).with_processes(1, 2, "tcp:127.0.0.1:29500")
    assert (multi.devices, multi.rank, multi.world_size, multi.rendezvous) == ([0, 1], 1, 2, "tcp:127.0.0.1:29500")
    assert copy.deepcopy(multi).describe() == multi.describe()
    assert brain.TrainingBackend.cuda_all(1024).all_devices


def test_plugins_report_load_records():
    records = brain.plugins()
    cpu = [r for r in records if r.name == "cpu"]
    assert cpu and cpu[0].ok and cpu[0].stage == brain.PluginStage.Ready
    assert cpu[0].abi_major == 1 and cpu[0].path.name == "libbrain_cpu.so"
    assert cpu[0].capabilities.runs(brain.Activation.Relu)
    assert brain.load_plugin("cpu").ok
    assert any(p.name == "plugins" for p in brain.plugin_search_paths())


def test_predictor_on_the_cpu_backend(regression):
    X, y = regression
    net = regression_network()
    with brain.Predictor(net, brain.TrainingBackend.cpu(), max_batch_rows=50) as predictor:
        assert predictor.batch_rows <= 50
        np.testing.assert_allclose(predictor.predict(X), net.predict(X), rtol=1e-5, atol=1e-6)
        rows = brain.Matrix(X)
        with predictor.pin(rows) as pinned:
            assert not pinned.pinned  # the CPU backend has no transfers to speed up
            np.testing.assert_allclose(predictor.predict(rows), net.predict(X), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(net.predict_with_backend(X, brain.TrainingBackend.cpu()), net.predict(X),
                               rtol=1e-5, atol=1e-6)


def test_names_parse_like_the_cli():
    assert brain.Activation("leaky_relu") == brain.Activation.LeakyRelu
    assert brain.Loss("mse") == brain.Loss.MeanSquaredError
    assert brain.Precision("BF16") == brain.Precision.Bf16
    with pytest.raises(brain.InvalidArgument, match="swish"):
        brain.Activation("swish")
    assert brain.version() == brain.__version__


NAMED_ENUMS = [brain.Activation, brain.Loss, brain.Precision, brain.Optimizer.Kind, brain.MonitorMode]


def test_every_enum_argument_takes_its_names():
    # Every member by its name, in any case, and brain's own spellings, wherever a method takes the enum.
    for enum in NAMED_ENUMS:
        for name, member in enum.__members__.items():
            for spelling in (name, name.lower(), name.upper()):
                assert enum(spelling) == member
    builder = brain.Network.builder().input_size(3)
    net = builder.dense(8, "LeakyRelu").dense(8, "GELU").dense(1, "linear").loss("mse").optimizer(
        brain.Optimizer.sgd(0.01)).seed(1).build()
    assert [layer.activation for layer in net.layers] == [brain.Activation.LeakyRelu, brain.Activation.Gelu,
                                                         brain.Activation.Linear]
    assert net.loss == brain.Loss.MeanSquaredError
    assert brain.TrainingBackend.cpu().with_precision("bf16").precision == brain.Precision.Bf16
    assert brain.TrainingBackend.cpu().with_precision(precision="Tf32").precision == brain.Precision.Tf32
    assert (brain.estimate_tensor_memory_bytes(net, 16, "fp32") ==
            brain.estimate_tensor_memory_bytes(net, 16, brain.Precision.Float32))
    optimizer = brain.Optimizer()
    optimizer.kind = "AdamW"
    assert optimizer.kind == brain.Optimizer.Kind.AdamW
    assert brain.EarlyStopping(mode="min").options.mode == brain.MonitorMode.Min
    assert brain.ModelCheckpoint("m.json", mode="MAX").options.mode == brain.MonitorMode.Max
    assert brain.PlateauOptions(mode="auto").mode == brain.MonitorMode.Auto
    options = brain.EarlyStoppingOptions()
    options.mode = "Max"
    assert options.mode == brain.MonitorMode.Max
    capabilities = brain.plugin_capabilities("cpu")
    assert capabilities.runs("relu") and capabilities.runs("mse") and capabilities.runs("adam")
    assert capabilities.runs("float32") == capabilities.runs(brain.Precision.Float32)
    assert capabilities.runs(loss="bce") and capabilities.runs(precision="float32")


def test_safetensors_activations_take_their_names(tmp_path):
    net = brain.Network.builder().input_size(3).dense(4, "tanh").dense(1, "linear").seed(2).build()
    net.save_safetensors(tmp_path / "m.safetensors")
    again = brain.Network.load_safetensors(tmp_path / "m.safetensors", ["Tanh", "linear"])
    assert [layer.activation for layer in again.layers] == [brain.Activation.Tanh, brain.Activation.Linear]
    np.testing.assert_array_equal(again.parameters, net.parameters)


def runtime_parameter_names(function, name):
    """The parameter names of each overload pybind11 lists in `function`'s docstring."""
    overloads = []
    for signature in re.findall(r"^(?:\d+\. )?" + re.escape(name) + r"\((.*)\) ->", function.__doc__ or "", re.M):
        signature = re.sub(r"'[^']*'|\"[^\"]*\"", "''", signature)  # defaults such as ',' hold no separator
        parts, depth, current = [], 0, ""
        for ch in signature + ",":
            depth += (ch in "([{") - (ch in ")]}")
            if ch == "," and depth == 0:
                parts.append(current.split(":")[0].split("=")[0].strip())
                current = ""
            else:
                current += ch
        overloads.append(tuple(p for p in parts if p and p != "*"))
    return overloads


def test_stub_parameter_names_match_the_module():
    stub = os.path.join(os.path.dirname(brain.__file__), "_brain.pyi")
    tree = ast.parse(open(stub, encoding="utf-8").read())
    checked, mismatches = 0, []

    def walk(node, scope, prefix):
        nonlocal checked
        for item in node.body:
            if isinstance(item, ast.ClassDef) and hasattr(scope, item.name):
                walk(item, getattr(scope, item.name), prefix + item.name + ".")
            elif isinstance(item, ast.FunctionDef) and not item.name.startswith("__"):
                function = getattr(scope, item.name, None)
                if function is None or "property" in [ast.unparse(d) for d in item.decorator_list]:
                    continue
                runtime = runtime_parameter_names(function, item.name)
                if not runtime:
                    continue  # a pure Python function: its own signature is its documentation
                a = item.args
                names = tuple(arg.arg for arg in a.posonlyargs + a.args + a.kwonlyargs)
                checked += 1
                if names not in runtime:
                    mismatches.append(f"{prefix}{item.name}{names}: the module has {runtime}")

    walk(tree, brain._brain, "")
    assert checked > 100
    assert not mismatches, "\n".join(mismatches)
    # The overloads answer to the names the stub gives them.
    capabilities = brain.plugin_capabilities("cpu")
    assert capabilities.runs(activation=brain.Activation.Relu)
    assert capabilities.runs(loss=brain.Loss.MeanSquaredError)
    assert capabilities.runs(kind=brain.Optimizer.Kind.Adam)
    assert capabilities.runs(precision=brain.Precision.Float32)


def test_a_standardization_read_stays_valid_after_the_object_changes():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(50, 3)).astype(np.float32)
    y = X[:, :1].copy()
    d = brain.Dataset(X, y).standardize()
    kept = d.standardization
    mean = list(kept.mean)
    d.standardization = None
    assert d.standardization is None
    assert list(kept.mean) == mean
    net = brain.Network.builder().input_size(3).dense(1, "linear").seed(1).build()
    net.fit(brain.Dataset(X, y).standardize(), config=brain.TrainConfig(epochs=1, batch_size=10))
    read = net.standardization
    net.fit(brain.Dataset(X * 3.0, y).standardize(), config=brain.TrainConfig(epochs=1, batch_size=10))
    assert list(read.mean) == pytest.approx(mean, rel=1e-6)
    assert list(net.standardization.mean) == pytest.approx([3.0 * m for m in mean], rel=1e-5)
