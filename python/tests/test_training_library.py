"""Callbacks (Python subclasses and the built-in EarlyStopping and ModelCheckpoint), learning-rate schedules, metrics
and resumable checkpoints from Python."""

import _thread
import threading

import numpy as np
import pytest

import brain


def regression(rows=256, seed=11):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(rows, 3)).astype(np.float32)
    y = (2 * X[:, :1] - X[:, 1:2] + 0.5 * X[:, 2:3]).astype(np.float32)
    return X, y


def network(seed=3, lr=0.01):
    return (brain.Network.builder().input_size(3).dense(16, "tanh").dense(1, "linear")
            .optimizer(brain.Optimizer.adam(lr)).seed(seed).build())


class Recorder(brain.Callback):
    def __init__(self):
        super().__init__()
        self.events = []

    def on_train_begin(self, context):
        self.events.append(("begin", context.epoch))

    def on_epoch_end(self, context):
        self.events.append(("epoch", context.epoch, context.loss, context.learning_rate))

    def on_train_end(self, context):
        self.events.append(("end", context.epoch))


def test_python_callback_sees_every_epoch_with_the_gil():
    X, y = regression()
    recorder = Recorder()
    report = network().fit(X, y, config=brain.TrainConfig(epochs=4, batch_size=32), callbacks=[recorder])
    epochs = [e for e in recorder.events if e[0] == "epoch"]
    assert [e[1] for e in epochs] == [1, 2, 3, 4]
    assert [e[2] for e in epochs] == pytest.approx(report.epoch_losses)
    assert recorder.events[0][0] == "begin" and recorder.events[-1][0] == "end"


def test_callback_stops_training_and_errors_propagate():
    X, y = regression()

    class StopAtTwo(brain.Callback):
        def on_epoch_end(self, context):
            if context.epoch == 2:
                context.stop_training("enough")

    net = network()
    report = net.fit(X, y, config=brain.TrainConfig(epochs=10, batch_size=32), callbacks=[StopAtTwo()])
    assert len(report.epoch_losses) == 2 and report.stop_reason == "enough" and net.epochs_trained == 2

    class Broken(brain.Callback):
        def on_epoch_end(self, context):
            raise RuntimeError("callback failed")

    before = net.parameters
    with pytest.raises(RuntimeError, match="callback failed"):
        net.fit(X, y, config=brain.TrainConfig(epochs=3, batch_size=32), callbacks=[Broken()])
    np.testing.assert_array_equal(net.parameters, before)


def test_on_epoch_end_hook_and_context_network():
    X, y = regression()
    seen = []
    network().fit(X, y, config=brain.TrainConfig(epochs=3, batch_size=32),
                  on_epoch_end=lambda c: seen.append((c.epoch, c.network().epochs_trained)))
    assert seen == [(1, 1), (2, 2), (3, 3)]


def test_early_stopping_restores_the_best_weights():
    X, y = regression()
    stop = brain.EarlyStopping(monitor="val_loss", patience=2, restore_best_weights=True)
    net = network(lr=0.5)  # a rate that makes the validation loss wander
    report = net.fit(X[:200], y[:200], config=brain.TrainConfig(epochs=200, batch_size=16),
                     validation=(X[200:], y[200:]), callbacks=[stop])
    assert stop.best_epoch is not None and stop.monitor == "val_loss"
    if stop.stopped_epoch is not None:
        assert len(report.epoch_losses) < 200 and report.stop_reason
    with pytest.raises(brain.InvalidArgument):
        network().fit(X, y, config=brain.TrainConfig(epochs=2), callbacks=[brain.EarlyStopping(monitor="val_r2")])


def test_schedules_set_the_rate_of_every_epoch():
    X, y = regression()
    schedule = brain.LearningRateSchedule.step(every_epochs=2, gamma=0.5)
    report = network(lr=0.01).fit(X, y, config=brain.TrainConfig(epochs=4, batch_size=64), schedule=schedule)
    assert report.learning_rates == pytest.approx([0.01, 0.01, 0.005, 0.005])
    parsed = brain.LearningRateSchedule.parse("cosine:warmup=1,min=1e-5")
    assert parsed.kind == brain.LearningRateSchedule.Kind.Cosine
    assert brain.LearningRateSchedule.parse(parsed.to_string()).to_string() == parsed.to_string()
    with pytest.raises(brain.InvalidArgument):
        brain.LearningRateSchedule.parse("cosine:nonsense=1")


def test_evaluation_metrics():
    rng = np.random.default_rng(1)
    X = rng.normal(size=(300, 2)).astype(np.float32)
    labels = (X[:, 0] > 0).astype(int) + (X[:, 1] > 0).astype(int)
    Y = np.eye(3, dtype=np.float32)[labels]
    net = brain.Network.builder().input_size(2).dense(16, "relu").dense(3, "softmax").seed(1).build()
    net.fit(X, Y, config=brain.TrainConfig(epochs=30, batch_size=32))
    result = net.evaluate(X, Y)
    metrics = result.classification
    assert metrics is not None and metrics.rows == 300 and len(metrics.per_class) == 3
    assert metrics.accuracy == pytest.approx(result.accuracy, abs=1e-6)
    assert sum(map(sum, metrics.confusion)) == 300
    assert result.value("accuracy") == pytest.approx(metrics.accuracy)
    reg = brain.regression_metrics(np.array([1.0, 2.0, 3.0]), np.array([1.0, 2.0, 3.5]))
    assert reg.r2[0] == pytest.approx(1 - 0.25 / 2.0) and reg.mae[0] == pytest.approx(0.5 / 3)


def test_resumable_checkpoint_continues_exactly(tmp_path):
    X, y = regression()
    config = brain.TrainConfig(epochs=6, batch_size=32, seed=5)
    whole = network()
    whole.fit(X, y, config=config)
    path = tmp_path / "run-{epoch}.json"
    saver = brain.ModelCheckpoint(str(path), every_epochs=3)

    class StopAtThree(brain.Callback):
        def on_epoch_end(self, context):
            if context.epoch == 3:
                context.stop_training("pause")

    first = network()
    first.fit(X, y, config=config, callbacks=[saver, StopAtThree()])
    assert [p.name for p in saver.written] == ["run-3.json"]
    checkpoint = brain.TrainingCheckpoint.load(saver.written[0])
    assert checkpoint.epochs_trained == 3 and checkpoint.remaining().epochs == 3
    resumed = checkpoint.network
    resumed.fit(X, y, config=checkpoint.remaining(), resume=checkpoint)
    np.testing.assert_array_equal(resumed.parameters, whole.parameters)


def test_session_follows_a_schedule():
    X, y = regression()
    net = network(lr=0.01)
    with brain.TrainingSession(net, X, y, config=brain.TrainConfig(epochs=2, batch_size=64)) as session:
        session.set_schedule(brain.LearningRateSchedule.exponential(0.5))
        session.train_epoch()
        session.train_epoch()
        assert session.learning_rate == pytest.approx(0.005)
        assert session.batches_per_epoch == 4


def test_keyboard_interrupt_through_a_callback_keeps_the_epoch():
    X, y = regression(rows=2048)

    class Interrupt(brain.Callback):
        def on_epoch_end(self, context):
            if context.epoch == 3:
                raise KeyboardInterrupt

    net = network()
    with pytest.raises(KeyboardInterrupt):
        net.fit(X, y, config=brain.TrainConfig(epochs=50, batch_size=64), callbacks=[Interrupt()])
    assert net.epochs_trained == 3


def test_a_context_kept_after_its_callback_raises_invalid_state():
    X, y = regression()
    config = brain.TrainConfig(epochs=2, batch_size=64)
    kept, copies = [], []

    def hook(context):
        kept.append(context)
        copies.append((context.epoch, context.validation.loss, context.network()))

    class Keeper(brain.Callback):
        def on_epoch_end(self, context):
            super().on_epoch_end(context)
            kept.append(context)

    class Raiser(brain.Callback):
        def on_epoch_end(self, context):
            kept.append(context)
            raise RuntimeError("from the callback")

    net = network()
    net.fit(X, y, config=config, validation=(X, y), on_epoch_end=hook, callbacks=[Keeper()])
    # A second run frees the memory of the first: the kept contexts must not read it.
    net.fit(X, y, config=config)
    with pytest.raises(RuntimeError, match="from the callback"):
        net.fit(X, y, config=config, callbacks=[Raiser()])
    assert len(kept) == 5
    for context in kept:
        with pytest.raises(brain.InvalidState, match=r"belonged to epoch \d+'s callback.*no longer valid"):
            context.epoch
        with pytest.raises(brain.InvalidState, match="context.network\\(\\) returns a copy"):
            context.network()
        with pytest.raises(brain.InvalidState):
            context.stop_training("too late")
    assert "epoch 2's callback" in str(pytest.raises(brain.InvalidState, lambda: kept[-3].loss).value)
    # What was read during the callback stays valid.
    assert [epoch for epoch, _, _ in copies] == [1, 2]
    assert all(np.isfinite(loss) for _, loss, _ in copies)
    assert copies[-1][2].epochs_trained == 2


def test_validation_may_be_a_list_pair():
    X, y = regression()
    config = brain.TrainConfig(epochs=2, batch_size=64)
    as_list = network().fit(X, y, config=config, validation=[X[:64], y[:64]])
    as_tuple = network().fit(X, y, config=config, validation=(X[:64], y[:64]))
    assert len(as_list.validation_losses) == 2
    assert as_list.validation_losses == as_tuple.validation_losses
    with pytest.raises(brain.InvalidArgument,
                       match=r"validation must be a brain.Dataset or a \(features, targets\) pair.*a list of 1 item"):
        network().fit(X, y, config=config, validation=[X[:64]])
