"""The GIL is released while brain trains and predicts; Ctrl-C between epochs stops at the last good weights; threads
sharing a Network, Dataset, StreamingDataset or TrainingCheckpoint see it before or after another thread's change,
never half-changed."""

import _thread
import os
import signal
import subprocess
import sys
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
    # Enough epochs to take long enough to tell, however fast this machine trains.
    for epochs in (1, 4, 16, 64):
        config = brain.TrainConfig(epochs=epochs, batch_size=64)
        elapsed, progress = progress_during(lambda: net.fit(X, y, config=config))
        if elapsed > 0.2:
            break
    assert elapsed > 0.05, "the fit must take long enough to tell"
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


# Run in a child interpreter: before the object locks, a reader of freed weights crashed the whole process.
READERS_DURING_WRITES = r"""
import sys, threading, time
import numpy as np
import brain

rng = np.random.default_rng(5)
X = rng.normal(size=(1024, 64)).astype(np.float32)
y = X[:, :1] - 0.5 * X[:, 1:2]
Xp = rng.normal(size=(4000, 64)).astype(np.float32)
net = (brain.Network.builder().input_size(64).dense(512, "relu").dense(512, "relu").dense(1, "linear")
       .seed(1).build())
snapshots = [net.parameters]
outputs = []
stop = threading.Event()

def predict_loop():
    while not stop.is_set():
        outputs.append(net.predict(Xp))

reader = threading.Thread(target=predict_loop)
reader.start()
deadline = time.monotonic() + float(sys.argv[1])
# Time-bound, but with a few swaps under a running reader however slow the machine.
while time.monotonic() < deadline or len(snapshots) < 4 or len(outputs) < 3:
    net.fit(X, y, config=brain.TrainConfig(epochs=1, batch_size=64))
    snapshots.append(net.parameters)
stop.set()
reader.join()

# Each prediction is the prediction of one of the weights the network held, never of a mixture or freed memory.
twin = net.__copy__()
expected = []
for parameters in snapshots:
    twin.set_parameters(parameters)
    expected.append(twin.predict(Xp))
for out in outputs:
    assert any(np.array_equal(out, e) for e in expected), "a prediction matches none of the network's weights"

# The same for a Dataset: save_npz (GIL released) while the main thread changes its names and standardisation.
# Long names make the writing of the names take long enough for a change to land in the middle of it.
data = brain.Dataset(X[:16], y[:16])
names = [[f"feature_{i}" for i in range(64)], [f"x{i}_" * 2000 for i in range(64)]]
saves = 0
torn = []

def save_loop():
    global saves
    while not stop.is_set():
        data.save_npz(sys.argv[2])
        try:
            saved = brain.Dataset.from_npz(sys.argv[2]).feature_names
        except brain.Error as error:
            saved = str(error)
        if saved not in names:
            torn.append(saved)
        saves += 1

data.set_names(names[0], ["target"])
stop.clear()
saver = threading.Thread(target=save_loop)
saver.start()
deadline = time.monotonic() + float(sys.argv[1])
i = 0
while time.monotonic() < deadline or saves < 3:
    data.set_names(names[i % 2], ["target"])
    if i % 2:
        data.standardize()
    else:
        data.standardization = None
    i += 1
stop.set()
saver.join()
assert not torn, f"{len(torn)} of {saves} files hold names never set, e.g. {str(torn[0])[:200]}"
print(len(snapshots), len(outputs), i, saves)
"""


@pytest.mark.skipif(not brain.npz_supported(), reason="this build has no .npz support (built without libzip)")
def test_readers_see_old_or_new_weights_while_another_thread_writes(tmp_path):
    package_root = os.path.dirname(os.path.dirname(brain.__file__))
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([package_root, os.environ.get("PYTHONPATH", "")]))
    run = subprocess.run([sys.executable, "-c", READERS_DURING_WRITES, "0.8", str(tmp_path / "d.npz")], env=env,
                         capture_output=True, text=True, timeout=60)
    assert run.returncode == 0, f"exit status {run.returncode}\n{run.stdout}\n{run.stderr}"
    fits, predictions, changes, saves = map(int, run.stdout.split())
    # Enough overlap to mean something: several weight swaps under a reader, several edits under a writer.
    assert fits >= 3 and predictions >= 3 and changes >= 3 and saves >= 3, run.stdout


def run_child(script, *args):
    """Runs `script` in a child interpreter (a crash there fails the test instead of ending the suite)."""
    package_root = os.path.dirname(os.path.dirname(brain.__file__))
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([package_root, os.environ.get("PYTHONPATH", "")]))
    run = subprocess.run([sys.executable, "-c", script, *map(str, args)], env=env, capture_output=True, text=True,
                         timeout=120)
    assert run.returncode == 0, f"exit status {run.returncode}\n{run.stdout}\n{run.stderr}"
    return list(map(int, run.stdout.split()))


# TrainingCheckpoint.save (GIL released) while the main thread replaces the checkpoint's fields and, through
# checkpoint.network, its network's weights. Every file written holds, field by field, a value that was set.
CHECKPOINT_SAVED_DURING_WRITES = r"""
import sys, threading, time
import numpy as np
import brain

net = (brain.Network.builder().input_size(64).dense(256, "relu").dense(256, "relu").dense(1, "linear")
       .seed(1).build())
other = brain.Network.builder().input_size(64).dense(256, "relu").dense(256, "relu").dense(1, "linear").seed(2).build()
weights = [net.parameters, other.parameters, net.parameters * 0.5]
notes = [{"run": "a" * 200000}, {"run": "b" * 100000, "more": "c" * 100000}]
losses = [[1.0] * 5000, [2.0] * 7000]
checkpoint = brain.TrainingCheckpoint(net)
checkpoint.notes, checkpoint.losses = notes[0], losses[0]
stop = threading.Event()
saves, torn = 0, []

def save_loop():
    global saves
    while not stop.is_set():
        checkpoint.save(sys.argv[2])
        saved = brain.TrainingCheckpoint.load(sys.argv[2])
        if not any(np.array_equal(saved.network.parameters, w) for w in weights):
            torn.append("network")
        if saved.notes not in notes:
            torn.append("notes")
        if saved.losses not in losses:
            torn.append("losses")
        saves += 1

saver = threading.Thread(target=save_loop)
saver.start()
deadline = time.monotonic() + float(sys.argv[1])
i = 0
while time.monotonic() < deadline or saves < 3:
    checkpoint.notes = notes[i % 2]
    checkpoint.losses = losses[i % 2]
    if i % 3 == 0:
        checkpoint.network = other if i % 2 else net
    else:
        checkpoint.network.set_parameters(weights[2] if i % 2 else weights[0])
    i += 1
stop.set()
saver.join()
assert not torn, f"{len(torn)} fields of {saves} files hold values never set: {sorted(set(torn))}"
print(i, saves)
"""


def test_checkpoint_save_sees_old_or_new_fields_while_another_thread_writes(tmp_path):
    changes, saves = run_child(CHECKPOINT_SAVED_DURING_WRITES, 0.8, tmp_path / "c.json")
    assert changes >= 3 and saves >= 3, (changes, saves)


# StreamingDataset.standardize (GIL released, one pass over the files) in one thread while another replaces or
# removes the standardisation and reads rows: each sees no standardisation, the one set, or the files' own.
STREAM_STANDARDIZED_DURING_WRITES = r"""
import sys, threading, time
import numpy as np
import brain

rng = np.random.default_rng(4)
X = (rng.normal(size=(20000, 16)) * 3 + 1).astype(np.float32)
np.save(sys.argv[2] + "/x.npy", X)
np.save(sys.argv[2] + "/y.npy", X[:, :1])
stream = brain.StreamingDataset.from_npy(sys.argv[2] + "/x.npy", sys.argv[2] + "/y.npy",
                                         brain.StreamOptions(chunk_rows=512))
files = brain.StreamingDataset.from_npy(sys.argv[2] + "/x.npy", sys.argv[2] + "/y.npy",
                                        brain.StreamOptions(chunk_rows=512)).standardize().standardization
custom = brain.Standardization()
custom.mean, custom.stddev = [float(i) for i in range(16)], [2.0] * 16

def key(s):
    return None if s is None else (tuple(s.mean), tuple(s.stddev))

valid = {key(None), key(files), key(custom)}
stop = threading.Event()
passes, seen, odd = 0, 0, []

def standardize_loop():
    global passes
    while not stop.is_set():
        if stream.standardize() is not stream:
            odd.append("standardize returned another object")
        passes += 1

worker = threading.Thread(target=standardize_loop)
worker.start()
deadline = time.monotonic() + float(sys.argv[1])
i = 0
while time.monotonic() < deadline or passes < 3:
    stream.standardization = None if i % 2 else custom
    for read in (stream.standardization, stream.read_rows(0, 8).standardization):
        if key(read) not in valid:
            odd.append(key(read))
        seen += 1
    i += 1
stop.set()
worker.join()
# The last pass attached the files' own standardisation.
stream.standardize()
assert key(stream.standardization) == key(files)
assert not odd, f"{len(odd)} of {seen} reads saw a standardisation never set: {str(odd[0])[:200]}"
print(i, passes)
"""


def test_streaming_standardize_sees_old_or_new_while_another_thread_writes(tmp_path):
    changes, passes = run_child(STREAM_STANDARDIZED_DURING_WRITES, 0.8, tmp_path)
    assert changes >= 3 and passes >= 3, (changes, passes)


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="no named pipes on this system")
def test_ctrl_c_ends_a_wait_for_a_pipes_writer_and_other_threads_run_meanwhile(tmp_path):
    fifo = tmp_path / "model.json"
    os.mkfifo(fifo)
    ticks = []

    def tick():
        for _ in range(5):
            ticks.append(time.monotonic())
            time.sleep(0.05)

    ticker = threading.Thread(target=tick)
    ticker.start()
    # A real signal (interrupt_main only sets Python's flag), which interrupts the wait as Ctrl-C does.
    for read in (brain.load, brain.Network.load_json, lambda path: brain.Dataset.from_csv(path, ["y"])):
        timer = threading.Timer(0.5, os.kill, (os.getpid(), signal.SIGINT))
        timer.start()
        started = time.monotonic()
        with pytest.raises(KeyboardInterrupt):
            read(fifo)
        timer.join()
        assert time.monotonic() - started < 30
    ticker.join()
    assert len(ticks) == 5, "the GIL is released while the file is awaited"
