"""test_keras_fit.py again, on Keras' TensorFlow backend: Keras reads its backend once per process,
so the file runs in a pytest of its own with KERAS_BACKEND=tensorflow. Skipped (with the reason)
where TensorFlow is not installed: it is an optional extra of the managed environment
(`reprolab env --tensorflow` installs it)."""
import importlib.util
import os
import sys
from pathlib import Path

import pytest

if importlib.util.find_spec("tensorflow") is None:
    pytest.skip("tensorflow is not installed in this environment (`reprolab env --tensorflow`)",
                allow_module_level=True)

HERE = Path(__file__).resolve().parent


def start_keras_fit_on_tensorflow():
    """The TensorFlow pytest of test_keras_fit.py, started in the background (by conftest.py, at
    collection, so that TensorFlow's import and tests overlap with the rest of the session)."""
    from conftest import Background

    env = dict(os.environ, KERAS_BACKEND="tensorflow", TF_CPP_MIN_LOG_LEVEL="1")
    return Background([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
                       str(HERE / "test_keras_fit.py")], cwd=HERE.parent, env=env)


def test_keras_fit_passes_on_the_tensorflow_backend(background):
    run = background.get("keras_fit_tensorflow") or start_keras_fit_on_tensorflow()
    returncode, stdout, stderr = run.wait(timeout=600)
    summary = stdout.strip().splitlines()[-1] if stdout.strip() else stderr
    assert returncode == 0, stdout + stderr
    assert " passed" in summary and "skipped" not in summary, summary
