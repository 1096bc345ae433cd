"""The Ray backend's Python side without a cluster: subjects packed by content, the worker's
environment, the reachability check, and a slot's watchdog over a real warm worker."""
import io
import json
import os
import socket
import tarfile
import threading
import time
from pathlib import Path

import pytest

from reprolab import ray_driver, ray_slot

PYTHON_DIR = Path(__file__).resolve().parents[1]
OUTCOMES = PYTHON_DIR.parent / "crates/reprolab/tests/fixtures/outcomes"


def test_a_subject_packs_to_the_same_hash_and_leaves_caches_out(tmp_path):
    (tmp_path / "train.py").write_text("def train(c, s): pass\n")
    (tmp_path / "data").mkdir()
    (tmp_path / "data" / "x.csv").write_text("1,2\n")
    (tmp_path / "__pycache__").mkdir()
    (tmp_path / "__pycache__" / "train.pyc").write_bytes(b"junk")
    digest, data = ray_driver.pack_subject(str(tmp_path))
    assert ray_driver.pack_subject(str(tmp_path))[0] == digest
    names = tarfile.open(fileobj=io.BytesIO(data)).getnames()
    assert sorted(names) == ["data/x.csv", "train.py"]
    (tmp_path / "train.py").write_text("def train(c, s): return 1\n")
    assert ray_driver.pack_subject(str(tmp_path))[0] != digest


def test_a_subject_too_large_to_ship_is_refused_with_the_remedy(tmp_path, monkeypatch):
    monkeypatch.setattr(ray_driver, "MAX_SUBJECT_BYTES", 10)
    (tmp_path / "big.bin").write_bytes(b"x" * 100)
    with pytest.raises(ValueError, match="absolute path"):
        ray_driver.pack_subject(str(tmp_path))


def test_the_worker_environment_keeps_only_the_allow_list(monkeypatch):
    monkeypatch.setenv("HOME", "/home/u")
    monkeypatch.setenv("LC_ALL", "C")
    monkeypatch.setenv("MY_API_KEY", "sk-1")
    monkeypatch.setenv("DB", "postgres://user:secret@host/db")
    env = ray_slot.scrubbed_env({"HOME", "DB"}, {"OMP_NUM_THREADS": "1"}, "/pkg")
    assert env["HOME"] == "/home/u" and env["LC_ALL"] == "C"
    assert "MY_API_KEY" not in env and "DB" not in env
    assert env["OMP_NUM_THREADS"] == "1" and env["PYTHONPATH"] == "/pkg"


def test_an_address_nobody_listens_on_is_refused_at_once():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    why = ray_driver._reachable(f"127.0.0.1:{port}", timeout_s=2)
    assert why and f"127.0.0.1:{port}" in why
    assert ray_driver._reachable("auto") is None
    assert ray_driver._reachable("ray://head:10001") is None


@pytest.fixture(scope="module")
def slot(tmp_path_factory):
    """A slot's evaluation machinery around a real warm worker, without Ray."""
    root = tmp_path_factory.mktemp("slot")
    s = object.__new__(ray_slot.Slot)
    s.root = str(root)
    s.subjects = str(root / "subjects")
    env = ray_slot.scrubbed_env({"PATH", "HOME"}, {"OMP_NUM_THREADS": "1",
                                                   "KERAS_BACKEND": "torch"}, str(PYTHON_DIR))
    s.env, s.netns, s.node, s.workers, s.cancelled = env, False, "test", {}, set()
    yield s
    s.close()


def _eval(slot, behavior, **limits):
    req = {"id": behavior, "entry": "train.py:train", "config": {"behavior": behavior},
           "seed": 0, "mode": "eval", "framework": "pytorch",
           "limits": {"timeout_s": 60, "memory_mb": 2048, "output_mb": 16, **limits}}
    return slot._eval(req, str(OUTCOMES))


def test_a_slot_returns_what_interpret_needs(slot):
    r = _eval(slot, "ok")
    assert r["violation"] is None and r["exit_code"] == 0
    assert json.loads(r["result"])["status"] == "ok"
    assert '"epoch": 0' in r["epochs"]
    assert r["node"] == "test"


def test_a_slot_enforces_time_and_output_limits_and_keeps_its_worker(slot):
    r = _eval(slot, "sleep", timeout_s=1)
    assert r["violation"] == "timeout" and r["result"] is None
    r = _eval(slot, "print", output_mb=1)
    assert r["violation"] == "output"
    assert len(r["output"]) <= ray_slot.OUTPUT_TAIL_BYTES
    assert slot._worker().alive()
    assert json.loads(_eval(slot, "ok")["result"])["status"] == "ok"


def test_a_slot_bounds_what_an_evaluation_writes(slot):
    r = _eval(slot, "write_disk", disk_mb=64)
    assert r["violation"] == "disk", r
    assert slot._worker().alive()


def test_a_slot_bounds_memory(slot):
    r = _eval(slot, "allocate", memory_mb=300)
    # RLIMIT_DATA makes the allocation fail (an oom result) or the watchdog kills the tree first
    assert r["violation"] == "memory" or json.loads(r["result"])["status"] == "oom", r


def test_a_worker_killed_mid_evaluation_is_replaced_and_the_evaluation_retried(slot):
    import signal

    req = {"id": "k", "entry": "train.py:train", "config": {"behavior": "slow"},
           "seed": 0, "mode": "eval", "framework": "pytorch",
           "limits": {"timeout_s": 60, "memory_mb": 2048, "output_mb": 16}}
    # the subject is already on this node (unpacked there before): no object store needed
    subject = ["outcomes-test", [None]]
    os.makedirs(slot.subjects, exist_ok=True)
    os.symlink(OUTCOMES, os.path.join(slot.subjects, subject[0]))
    first = slot._worker()
    threading.Timer(1.0, lambda: os.killpg(first.proc.pid, signal.SIGKILL)).start()
    r = slot.run(req, subject)
    assert json.loads(r["result"])["status"] == "ok", r
    assert slot._worker() is not first and slot._worker().alive()


def _tree(files):
    """A codegen sample's files as the driver ships them (a tar archive)."""
    import io
    import tarfile

    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w") as tar:
        for name, text in files.items():
            data = text.encode()
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    return buf.getvalue()


def test_a_slot_runs_a_codegen_sample_in_its_warm_pytest_runner(slot):
    tree = _tree({"solution.py": "def add(a, b):\n    return a + b\n",
                  "test_task.py": "from solution import add\n\n"
                                  "def test_add():\n    assert add(1, 2) == 3\n\n"
                                  "def test_wrong():\n    assert add(1, 1) == 3\n",
                  "pytest.ini": "[pytest]\n"})
    req = {"id": "t1", "args": ["-q", "-p", "no:cacheprovider", "--rootdir",
                                ray_slot.MARK_TREE, "test_task.py"],
           "check": ["solution.py"], "max_procs": 0,
           "limits": {"timeout_s": 60, "memory_mb": 2048, "output_mb": 4}}
    r = slot.test(req, tree)
    assert r["violation"] is None, r
    record = json.loads(r["result"])
    outcomes = {t["nodeid"].split("::")[-1]: t["outcome"] for t in record["tests"]}
    assert outcomes == {"test_add": "passed", "test_wrong": "failed"}, record
    assert slot.workers[ray_slot.TEST_RUNNER].alive()
    # a sample that loops is stopped at its time limit, and the next one still runs
    loop = _tree({"test_loop.py": "def test_loop():\n    while True:\n        pass\n"})
    r = slot.test(dict(req, id="t2", args=["test_loop.py"], check=[],
                       limits=dict(req["limits"], timeout_s=2)), loop)
    assert r["violation"] == "timeout", r
    assert json.loads(slot.test(dict(req, id="t3"), tree)["result"])["tests"], "runs again"


def test_a_cancelled_evaluation_is_ended_and_the_slot_keeps_its_worker(slot):
    """`cancel` (the actor's second thread) ends a running evaluation at the watchdog's next
    look; the slot's worker then takes the next one."""

    ended = {}
    run = threading.Thread(target=lambda: ended.update(_eval(slot, "sleep")))
    run.start()
    time.sleep(3)
    slot.cancel("sleep")
    run.join(timeout=30)
    assert not run.is_alive(), "the cancelled evaluation still runs"
    assert ended["violation"] == "cancelled"
    assert "sleep" not in slot.cancelled
    assert _eval(slot, "ok")["exit_code"] == 0


def test_a_slot_switches_its_worker_between_keras_backends_before_the_request(slot):
    """Keras keeps the backend of its first import: a request for the other one gets a fresh
    worker first (no refusal, no retry); PyTorch requests and same-backend ones keep it."""
    keras = {"framework": "keras", "backend": "tensorflow"}
    first = slot._eval_worker(keras)
    assert first.keras_backend == "tensorflow"
    assert slot._eval_worker({"framework": "pytorch"}) is first
    assert slot._eval_worker(keras) is first
    other = slot._eval_worker({"framework": "keras"})  # the default backend, torch
    assert other is not first and other.alive() and not first.alive()
    assert other.keras_backend == "torch"
    assert slot._eval_worker({"framework": "keras", "backend": "torch"}) is other
