"""examples/python/chapter_listings.py runs every listing: on the CPU backend each one trains, and the Metal
listing reports MetalFeatureDisabled off Apple systems."""

import os
import pathlib
import platform
import subprocess
import sys

import brain

SCRIPT = pathlib.Path(__file__).resolve().parents[2] / "examples" / "python" / "chapter_listings.py"


def test_chapter_listings_run_on_the_cpu():
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path))
    done = subprocess.run([sys.executable, str(SCRIPT), "--backend", "cpu", "--budget", "512", "--epochs", "2"],
                          capture_output=True, text=True, env=env, timeout=300)
    assert done.returncode == 0, done.stderr
    out = done.stdout
    for heading in ("11.3", "11.4", "11.5", "11.6", "11.7", "11.8"):
        assert f"== {heading}" in out
    assert "BudgetExceeded: the CPU session needs" in out
    assert "final loss" in out and "epoch 2: loss" in out
    if platform.system() != "Darwin" and any(r.name == "metal" for r in brain.plugins()):
        assert "MetalFeatureDisabled" in out
