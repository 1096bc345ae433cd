"""Shared fixtures: the checkout's python/ directory first on sys.path, one torch thread."""
import os
import sys
from pathlib import Path

PYTHON_DIR = Path(__file__).resolve().parents[1]
if str(PYTHON_DIR) not in sys.path:
    sys.path.insert(0, str(PYTHON_DIR))

for _var in ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import pytest  # noqa: E402


@pytest.fixture
def run_context(tmp_path):
    """Set reprolab's run context (as the worker child does) for an in-process test."""
    import reprolab

    def set_ctx(mode="eval"):
        reprolab._set_run_context(str(tmp_path), mode, run_id="t")
        return tmp_path

    yield set_ctx
    reprolab._clear_run_context()


# ------------------------------------------------------------------------------- the worker
import json  # noqa: E402
import queue  # noqa: E402
import subprocess  # noqa: E402
import threading  # noqa: E402


class Worker:
    """`python -m reprolab.worker` in a subprocess, with its events read by a thread."""

    def __init__(self, directory, stdin=subprocess.PIPE):
        env = dict(os.environ)
        env["PYTHONPATH"] = os.pathsep.join(p for p in (str(PYTHON_DIR), env.get("PYTHONPATH")) if p)
        self.stderr_path = Path(directory) / "worker.stderr"
        self._stderr = open(self.stderr_path, "w")
        self.proc = subprocess.Popen([sys.executable, "-m", "reprolab.worker"], stdin=stdin,
                                     stdout=subprocess.PIPE, stderr=self._stderr, env=env,
                                     cwd=directory, text=True, bufsize=1)
        self.raw = []
        self.ready = None
        self._events = queue.Queue()
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self):
        for line in self.proc.stdout:
            self.raw.append(line)
            self._events.put(line)
        self._events.put(None)

    def event(self, timeout=180):
        line = self._events.get(timeout=timeout)
        if line is None:
            raise EOFError(f"worker closed its event channel; stderr:\n{self.stderr_path.read_text()}")
        return json.loads(line)  # every line on the channel must be a JSON event

    def wait_ready(self):
        if self.ready is None:
            self.ready = self.event()
        return self.ready

    def send(self, obj):
        self.proc.stdin.write((obj if isinstance(obj, str) else json.dumps(obj)) + "\n")
        self.proc.stdin.flush()

    def close(self):
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait()
        self._stderr.close()


_workers = {}


class Background:
    """A command started at collection, its output kept in a file, that a test waits for."""

    def __init__(self, args, **popen):
        import tempfile

        self.out, self.err = (tempfile.TemporaryFile(mode="w+") for _ in range(2))
        self.proc = subprocess.Popen(args, stdout=self.out, stderr=self.err, text=True, **popen)

    def wait(self, timeout):
        """(exit code, stdout, stderr) once it has ended."""
        code = self.proc.wait(timeout=timeout)
        for f in (self.out, self.err):
            f.seek(0)
        return code, self.out.read(), self.err.read()

    def close(self):
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait()
        self.out.close()
        self.err.close()


_background = {}


@pytest.hookimpl(trylast=True)  # after -k and -m have deselected what will not run
def pytest_collection_modifyitems(session, config, items):
    """Start the workers (several seconds of imports) as soon as collection shows they are needed,
    so that their start overlaps with the in-process tests; the same for the TensorFlow run of
    test_keras_fit.py (a pytest of its own, tens of seconds of TensorFlow), whose test then only
    collects its result, last, so that everything else runs meanwhile."""
    files = {item.fspath.basename for item in items}
    if "test_worker.py" in files:
        import tempfile

        directory = tempfile.mkdtemp(prefix="reprolab-worker-test-")
        _workers["main"] = Worker(directory)
        _workers["main"].directory = directory
    if "test_keras_fit_tensorflow.py" in files:
        from test_keras_fit_tensorflow import start_keras_fit_on_tensorflow

        _background["keras_fit_tensorflow"] = start_keras_fit_on_tensorflow()
        items.sort(key=lambda item: item.fspath.basename == "test_keras_fit_tensorflow.py")


def pytest_sessionfinish(session, exitstatus):
    import shutil

    for w in _workers.values():
        w.close()
        if getattr(w, "directory", None):
            shutil.rmtree(w.directory, ignore_errors=True)
    for b in _background.values():
        b.close()


@pytest.fixture(scope="session")
def background():
    """The commands started at collection, by name."""
    return _background


@pytest.fixture(scope="session")
def worker():
    w = _workers.get("main")
    if w is None:
        pytest.skip("worker not started")
    return w
