"""test_keras_fit.py again, on Keras' TensorFlow backend: Keras reads its backend once per process,
so the file runs in a pytest of its own with KERAS_BACKEND=tensorflow. Skipped (with the reason)
where TensorFlow is not installed: it is an optional extra of the managed environment
(`reprolab env --tensorflow` installs it)."""
import importlib.util
import os
import subprocess
import sys
from pathlib import Path

import pytest

if importlib.util.find_spec("tensorflow") is None:
    pytest.skip("tensorflow is not installed in this environment (`reprolab env --tensorflow`)",
                allow_module_level=True)

HERE = Path(__file__).resolve().parent


def test_keras_fit_passes_on_the_tensorflow_backend():
    env = dict(os.environ, KERAS_BACKEND="tensorflow", TF_CPP_MIN_LOG_LEVEL="1")
    out = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
                          str(HERE / "test_keras_fit.py")],
                         cwd=HERE.parent, env=env, capture_output=True, text=True, timeout=600)
    summary = out.stdout.strip().splitlines()[-1] if out.stdout.strip() else out.stderr
    assert out.returncode == 0, out.stdout + out.stderr
    assert " passed" in summary and "skipped" not in summary, summary
