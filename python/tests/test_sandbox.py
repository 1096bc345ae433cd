"""The kernel side of the sandbox (reprolab.sandbox) and the worker's own deadline. Landlock is
irreversible, so each restriction is tried in a child process."""
import os
import signal
import subprocess
import sys
import time

import pytest

from reprolab import sandbox, worker


def _in_child(code, tmp_path):
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)},
                         cwd=tmp_path, timeout=60)
    assert out.returncode == 0, out.stderr
    return out.stdout.split()


@pytest.mark.skipif(sandbox.landlock_abi() < 1, reason="no Landlock on this kernel")
def test_restrict_allows_only_the_writable_directory(tmp_path):
    allowed = tmp_path / "allowed"
    allowed.mkdir()
    (tmp_path / "victim.txt").write_text("x")
    code = f"""
from reprolab import sandbox
st = sandbox.restrict([{str(allowed)!r}])
open({str(allowed / 'ok.txt')!r}, 'w').write('ok')
for attempt in (lambda: open({str(tmp_path / 'no.txt')!r}, 'w'),
                lambda: __import__('os').remove({str(tmp_path / 'victim.txt')!r})):
    try:
        attempt(); print('written')
    except PermissionError:
        print('refused')
print(st['fs'])
"""
    assert _in_child(code, tmp_path) == ["refused", "refused", "True"]
    assert (allowed / "ok.txt").read_text() == "ok"
    assert (tmp_path / "victim.txt").exists()


def test_kill_descendants_finds_a_daemon(tmp_path):
    code = """
import os, time
from reprolab import sandbox
sandbox.become_subreaper()
if os.fork() == 0:
    os.setsid()
    if os.fork() == 0:
        time.sleep(60); os._exit(0)
    os._exit(0)
os.wait()
time.sleep(0.2)
print(len(sandbox._children()))
sandbox.kill_descendants()
print(len(sandbox._children()))
"""
    assert _in_child(code, tmp_path) == ["1", "0"]


def test_the_worker_kills_a_child_past_its_deadline(monkeypatch):
    monkeypatch.setattr(worker, "_DEADLINE_GRACE_S", 0.2)
    pid = os.fork()
    if pid == 0:
        time.sleep(60)
        os._exit(0)
    t0 = time.monotonic()
    status = worker._wait_child(pid, 0.3)
    assert time.monotonic() - t0 < 5
    assert os.WIFSIGNALED(status) and os.WTERMSIG(status) == signal.SIGKILL
