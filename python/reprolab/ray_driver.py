"""`python -m reprolab.ray_driver`: the Ray driver behind `--backend ray`.

Rust starts it once per command and talks to it over JSON lines, like a local worker, except that
evaluations are answered out of order, as Ray finishes them:

* Start: `--address ADDR` joins an existing cluster; without it a local Ray head is started for
  the driver's lifetime (`--num-cpus`, `--temp-dir`). `--slots N` evaluation slots are placed (one
  CPU each; default: every CPU of the cluster). `--env-spec JSON` is the sandbox's environment
  allow list from Rust. The driver then emits
  {"ev": "ready", "address", "slots", "nodes", "slot_nodes": {node id: n}, "torch", "python", "start_s"}
  or {"ev": "error", "fatal": true, "message"} and exits 1.
* Requests: {"op": "eval", "id", "subject_dir", "entry", "config", "seed", "mode", "framework",
  "backend", "limits": {"timeout_s", "memory_mb", "output_mb"}} (or, for a command-template subject,
  "command": the line Rust rendered, with markers for the node's paths, instead of "entry")
  -> eventually
  {"ev": "done", "id", ...what Slot.run returned: "exit_code", "signal", "violation", "peak_mb",
  "elapsed_s", "result", "epochs", "output", "node"} or {"ev": "done", "id", "infra": message}
  when Ray itself failed (a slot that died twice, a lost node).
  {"op": "script", "id", "source", "seed", "paths": [directories], "limits"} runs a
  reproduction script (`reprolab reproduce`) in a slot's warm worker, the import directories
  shipped like subjects -> {"ev": "done", "id", "exit_code", "signal", "violation", "peak_mb",
  "elapsed_s", "workdir" (the node's, to neutralise paths in the output), "observed": {file
  name: text} (what `reprolab.repro` wrote), "output", "node"}, or "infra"/"died" as above.
  {"op": "test", "id", "tree", "args", "check", "limits", "max_procs"} runs one `reprolab
  codegen` sample's pytest in a slot's warm `reprolab.codegen_runner`, in a copy of the
  directory `tree` (`__REPROLAB_TREE__` in args stands for it on the node) -> {"ev": "done",
  "id", "exit_code", "signal", "violation", "peak_mb", "elapsed_s", "waited_s" (starting the
  runner), "result", "output", "node"}, or "infra"/"died" as above.
  {"op": "shutdown"} or end of input -> the cluster connection is closed (and a local head
  stopped) and the driver exits 0.

A slot whose process dies mid-evaluation is restarted by Ray and the evaluation retried once
(`max_restarts`, `max_task_retries`); a second death is reported as `infra` for that evaluation
and the slot is replaced.
"""
from __future__ import annotations

import argparse
import hashlib
import io
import json
import os
import queue
import sys
import tarfile
import threading
import time

_events = None

# Directories never shipped with a subject: caches, version control, reprolab's own state.
_SKIP_DIRS = {"__pycache__", ".git", ".reprolab", ".pytest_cache", ".mypy_cache"}
# A subject larger than this is refused: its data should live where every node can read it.
MAX_SUBJECT_BYTES = 1 << 30


def _emit(obj):
    _events.write(json.dumps(obj) + "\n")
    _events.flush()


def _setup_channels():
    """Protocol events on a private duplicate of fd 1; everything Ray prints goes to stderr."""
    global _events
    _events = os.fdopen(os.dup(1), "w", buffering=1, encoding="utf-8")
    os.dup2(2, 1)


# --- subjects by content ----------------------------------------------------------------------
def _subject_files(root):
    out = []
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = sorted(d for d in dirnames if d not in _SKIP_DIRS)
        for name in sorted(filenames):
            path = os.path.join(dirpath, name)
            if os.path.isfile(path):
                st = os.stat(path)
                out.append((os.path.relpath(path, root), st.st_size, st.st_mtime_ns))
    return out


def pack_subject(root):
    """(content hash, tar archive bytes) of a subject directory."""
    files = _subject_files(root)
    total = sum(size for _, size, _ in files)
    if total > MAX_SUBJECT_BYTES:
        raise ValueError(f"{root}: {total / 2**20:.0f} MiB of files; at most "
                         f"{MAX_SUBJECT_BYTES >> 20} MiB travel to Ray nodes (keep large data "
                         "where every node can read it and load it by absolute path)")
    digest = hashlib.sha256()
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w") as tar:
        for rel, _, _ in files:
            with open(os.path.join(root, rel), "rb") as f:
                data = f.read()
            digest.update(rel.encode() + b"\0" + len(data).to_bytes(8, "little") + data)
            info = tarfile.TarInfo(rel)
            info.size = len(data)
            info.mode = 0o644
            tar.addfile(info, io.BytesIO(data))
    return digest.hexdigest()[:32], buf.getvalue()


class Subjects:
    """Each subject directory in the object store once; re-packed only when its files change.

    An eval request names the subject's content hash (reprolab's cache key part): a directory
    already shipped under that hash is not read again, which a subject with many data files
    would otherwise pay on every evaluation. Without a hash (script runs' import directories),
    the files' sizes and times tell whether to re-pack."""

    def __init__(self):
        self.known = {}  # dir -> (file signature, [hash, [ref]])
        self.by_hash = {}  # (dir, content hash) -> [hash, [ref]]

    def get(self, root, content_hash=None):
        import ray

        if content_hash is not None and (root, content_hash) in self.by_hash:
            return self.by_hash[(root, content_hash)]
        signature = _subject_files(root)
        hit = self.known.get(root)
        if hit is not None and hit[0] == signature:
            handle = hit[1]
        else:
            digest, data = pack_subject(root)
            handle = [digest, [ray.put(data)]]
            self.known[root] = (signature, handle)
        if content_hash is not None:
            self.by_hash[(root, content_hash)] = handle
        return handle


# --- the cluster ------------------------------------------------------------------------------
def _reachable(address, timeout_s=10.0):
    """None when a HOST:PORT address accepts TCP connections (or is not of that form: `auto`,
    `ray://...`), else why not. Ray itself retries an unreachable head for many minutes."""
    import socket

    host, sep, port = address.rpartition(":")
    if not sep or "://" in address or not port.isdigit():
        return None
    try:
        socket.create_connection((host.strip("[]"), int(port)), timeout=timeout_s).close()
        return None
    except OSError as e:
        return (f"cannot reach the Ray head at {address}: {e.strerror or e} (is `ray start "
                "--head` running there, and is the port the GCS port it printed?)")


def _connect(args):
    import ray

    package_dir = os.path.dirname(os.path.abspath(__file__))
    runtime_env = {"py_modules": [package_dir], "env_vars": {"KERAS_BACKEND": "torch"}}
    common = dict(namespace="reprolab", runtime_env=runtime_env, log_to_driver=False,
                  logging_level="WARNING", configure_logging=True)
    if args.address:
        ray.init(address=args.address, **common)
    else:
        os.environ.pop("RAY_ADDRESS", None)
        ray.init(num_cpus=args.num_cpus, include_dashboard=False, _temp_dir=args.temp_dir,
                 **common)
    return ray


def _new_slot(ray, env_spec):
    from reprolab.ray_slot import Slot

    # Two threads: one runs the slot's evaluation, the other takes `cancel` while it runs.
    actor = ray.remote(Slot).options(num_cpus=1, max_restarts=1, max_task_retries=1,
                                     max_concurrency=2)
    return actor.remote(env_spec)


def _local_versions():
    import platform
    from importlib import metadata

    try:
        torch = metadata.version("torch")
    except metadata.PackageNotFoundError:
        torch = None
    return torch, platform.python_version()


def _check_versions(infos):
    """The slots must train with this environment's torch and Python: results from elsewhere
    would be stored under this environment's cache keys."""
    torch, python = _local_versions()
    for info in infos:
        if info["torch"] != torch or info["python"] != python:
            return (f"a Ray worker on node {info['node']} runs torch {info['torch']} on Python "
                    f"{info['python']}; this environment has torch {torch} on Python {python}. "
                    "Install reprolab's requirements.lock into the cluster's Python (see "
                    "docs/execution.md, \"Ray\") so results mean the same on every node.")
    return None


def _read_requests(q):
    for line in sys.stdin:
        line = line.strip()
        if not line:
            continue
        try:
            q.put(json.loads(line))
        except ValueError as e:
            _emit({"ev": "error", "message": f"malformed request (not JSON): {e}"})
    q.put(None)


def _cancel(rid, waiting, running):
    """The caller no longer wants run `rid`: drop it from the queue, or have its slot end it (its
    answer then comes and is not read)."""
    for i, req in enumerate(waiting):
        if req["id"] == rid:
            del waiting[i]
            return
    for req_id, slot in running.values():
        if req_id == rid:
            slot.cancel.remote(rid)
            return


def serve(ray, slots, env_spec):
    """Dispatch requests to idle slots and report results as they finish."""
    requests = queue.Queue()
    threading.Thread(target=_read_requests, args=(requests,), daemon=True).start()
    subjects = Subjects()
    idle, waiting, running = list(slots), [], {}
    open_input = True
    while open_input or waiting or running:
        try:
            req = requests.get(timeout=0.02 if (running or waiting) else None)
        except queue.Empty:
            req = False
        while req is not False:
            if req is None or req.get("op") == "shutdown":
                open_input = False
                waiting.clear()  # nobody is left to read their results
            elif req.get("op") in ("eval", "script", "test"):
                waiting.append(req)
            elif req.get("op") == "cancel":
                _cancel(req.get("id"), waiting, running)
            else:
                _emit({"ev": "error", "id": req.get("id"),
                       "message": f"unknown op {req.get('op')!r}; expected 'eval', 'script', "
                                  "'test', 'cancel' or 'shutdown'"})
            try:
                req = requests.get_nowait()
            except queue.Empty:
                req = False
        while waiting and idle:
            req = waiting.pop(0)
            try:
                if req["op"] == "script":
                    paths = [subjects.get(p) for p in req.get("paths") or ()]
                elif req["op"] == "test":
                    tree = pack_subject(req["tree"])[1]
                else:
                    subject = subjects.get(req["subject_dir"], req.get("subject_hash"))
            except Exception as e:  # noqa: BLE001 - reported with the evaluation
                _emit({"ev": "done", "id": req["id"], "infra": str(e)})
                continue
            slot = idle.pop()
            if req["op"] == "script":
                ref = slot.script.remote(req, paths)
            elif req["op"] == "test":
                ref = slot.test.remote(req, tree)
            else:
                ref = slot.run.remote(req, subject)
            running[ref] = (req["id"], slot)
        if running:
            done, _ = ray.wait(list(running), num_returns=1, timeout=0.05)
            for ref in done:
                rid, slot = running.pop(ref)
                try:
                    _emit({"ev": "done", "id": rid, **ray.get(ref)})
                except Exception as e:  # noqa: BLE001 - Ray's failure, not the subject's
                    _emit({"ev": "done", "id": rid,
                           "infra": f"Ray lost the evaluation: {type(e).__name__}: {e}"})
                    slot = _new_slot(ray, env_spec)
                idle.append(slot)


def main():
    parser = argparse.ArgumentParser(prog="python -m reprolab.ray_driver")
    parser.add_argument("--address")
    parser.add_argument("--slots", type=int)
    parser.add_argument("--num-cpus", type=int)
    parser.add_argument("--temp-dir")
    parser.add_argument("--env-spec", default="{}")
    args = parser.parse_args()
    _setup_channels()
    t0 = time.perf_counter()
    unreachable = args.address and _reachable(args.address)
    if unreachable:
        _emit({"ev": "error", "fatal": True, "message": unreachable})
        return 1
    try:
        ray = _connect(args)
    except Exception as e:  # noqa: BLE001
        where = args.address or "a local Ray head"
        _emit({"ev": "error", "fatal": True,
               "message": f"cannot connect to {where}: {type(e).__name__}: {e}"})
        return 1
    try:
        env_spec = json.loads(args.env_spec)
        n = args.slots or max(1, int(ray.cluster_resources().get("CPU", 1)))
        slots = [_new_slot(ray, env_spec) for _ in range(n)]
        infos = ray.get([s.info.remote() for s in slots], timeout=600)
    except Exception as e:  # noqa: BLE001
        _emit({"ev": "error", "fatal": True,
               "message": f"the evaluation slots did not start: {type(e).__name__}: {e}"})
        ray.shutdown()
        return 1
    mismatch = _check_versions(infos)
    if mismatch:
        _emit({"ev": "error", "fatal": True, "message": mismatch})
        ray.shutdown()
        return 1
    per_node = {}
    for info in infos:
        per_node[info["node"]] = per_node.get(info["node"], 0) + 1
    torch, python = _local_versions()
    _emit({"ev": "ready", "address": args.address or "local", "slots": n,
           "nodes": len([x for x in ray.nodes() if x.get("Alive")]), "slot_nodes": per_node,
           "slot_pids": [info["pid"] for info in infos], "torch": torch, "python": python,
           "start_s": round(time.perf_counter() - t0, 3)})
    try:
        serve(ray, slots, env_spec)
    finally:
        ray.shutdown()
    return 0


if __name__ == "__main__":
    sys.exit(main())
