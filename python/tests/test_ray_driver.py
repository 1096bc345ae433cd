"""reprolab.ray_driver's subject shipping, without a cluster: `ray.put` is stood in for."""
import sys
import types

from reprolab import ray_driver


def _fake_ray(monkeypatch):
    puts = []
    fake = types.ModuleType("ray")
    fake.put = lambda data: puts.append(data) or f"ref{len(puts)}"
    monkeypatch.setitem(sys.modules, "ray", fake)
    return puts


def test_a_subject_is_packed_once_per_content_hash_without_reading_it_again(tmp_path, monkeypatch):
    puts = _fake_ray(monkeypatch)
    (tmp_path / "train.py").write_text("def train(config, seed):\n    return {}\n")
    subjects = ray_driver.Subjects()
    first = subjects.get(str(tmp_path), "h1")
    assert len(puts) == 1
    # Known under its hash: the directory is not read again (a walk would fail on a vanished
    # directory; this one is still there, but the walk is what the hash saves).
    walked = []
    monkeypatch.setattr(ray_driver, "_subject_files", lambda root: walked.append(root) or [])
    assert subjects.get(str(tmp_path), "h1") is first
    assert walked == [] and len(puts) == 1
    monkeypatch.undo()
    puts = _fake_ray(monkeypatch)
    # Another hash (the code changed): read and packed again.
    (tmp_path / "train.py").write_text("def train(config, seed):\n    return {'x': 1}\n")
    second = subjects.get(str(tmp_path), "h2")
    assert second[0] != first[0] and len(puts) == 1


def test_without_a_hash_the_files_signature_decides(tmp_path, monkeypatch):
    puts = _fake_ray(monkeypatch)
    (tmp_path / "helper.py").write_text("X = 1\n")
    subjects = ray_driver.Subjects()
    a = subjects.get(str(tmp_path))
    assert subjects.get(str(tmp_path)) is a and len(puts) == 1
    (tmp_path / "more.py").write_text("Y = 2\n")
    assert subjects.get(str(tmp_path))[0] != a[0] and len(puts) == 2


class _Slot:
    """A slot actor's handle, as far as cancelling goes: `slot.cancel.remote(id)`."""

    def __init__(self):
        self.cancelled = []
        self.cancel = types.SimpleNamespace(remote=self.cancelled.append)


def test_a_cancelled_run_leaves_the_queue_or_is_ended_by_its_slot():
    busy, idle = _Slot(), _Slot()
    waiting = [{"id": "1", "op": "eval"}, {"id": "2", "op": "eval"}]
    running = {"ref-a": ("0", busy)}
    ray_driver._cancel("1", waiting, running)
    assert [r["id"] for r in waiting] == ["2"] and busy.cancelled == []
    ray_driver._cancel("0", waiting, running)
    assert busy.cancelled == ["0"] and len(waiting) == 1
    # A run that already ended (its answer on the way) or was never asked for: nothing to do.
    ray_driver._cancel("9", waiting, running)
    assert busy.cancelled == ["0"] and idle.cancelled == [] and len(waiting) == 1
