"""The GIL is released while brain trains and predicts; Ctrl-C between epochs stops at the last good weights."""

import _thread
import threading
import time

import numpy as np
import pytest

import brain


def workload(rows):
    rng = np.random.default_rng(3)
    X = rng.normal(size=(rows, 32)).astype(np.float32)
    y = (X[:, :1] * 0.5 - X[:, 1:2]).astype(np.float32)
    net = brain.Network.builder().input_size(32).dense(256, "relu").dense(256, "relu").dense(1, "linear").seed(4)
    return X, y, net.build()


class Counter(threading.Thread):
    """Counts as fast as Python runs until stopped."""

    def __init__(self):
        super().__init__(daemon=True)
        self.count = 0
        self.stop = False

    def run(self):
        while not self.stop:
            self.count += 1


def progress_during(call):
    counter = Counter()
    counter.start()
    time.sleep(0.05)
    start, t0 = counter.count, time.perf_counter()
    call()
    elapsed, progress = time.perf_counter() - t0, counter.count - start
    counter.stop = True
    counter.join()
    return elapsed, progress


def test_another_thread_runs_during_fit_and_predict():
    X, y, net = workload(8192)
    config = brain.TrainConfig(epochs=1, batch_size=64)
    elapsed, progress = progress_during(lambda: net.fit(X, y, config=config))
    assert elapsed > 0.05, "the epoch must take long enough to tell"
    # Holding the GIL for the whole C++ call would leave the counter where it was.
    assert progress > 10000, f"only {progress} counts in {elapsed:.2f} s of fit"
    big = np.repeat(X, 8, axis=0)
    elapsed, progress = progress_during(lambda: net.predict(big))
    assert progress > 1000, f"only {progress} counts in {elapsed:.2f} s of predict"


def test_keyboard_interrupt_between_epochs_keeps_the_last_good_weights():
    X, y, net = workload(2048)
    config = brain.TrainConfig(epochs=100000, batch_size=64)
    timer = threading.Timer(0.5, _thread.interrupt_main)
    timer.start()
    with pytest.raises(KeyboardInterrupt):
        net.fit(X, y, config=config)
    timer.join()
    done = net.epochs_trained
    assert 1 <= done < config.epochs
    # The network holds exactly the weights of `done` completed epochs: a run of that many epochs agrees.
    _, _, twin = workload(2048)
    twin.fit(X, y, config=brain.TrainConfig(epochs=done, batch_size=64))
    np.testing.assert_array_equal(net.parameters, twin.parameters)
    assert np.isfinite(net.predict(X)).all()
