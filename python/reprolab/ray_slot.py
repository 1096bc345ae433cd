"""One evaluation slot on a Ray node (`--backend ray`): a Ray actor that keeps a warm
`python -m reprolab.worker` beside it and runs evaluations through it, under the limits the local
pool enforces from Rust (wall clock, memory of the evaluation's process tree, output size).

Why an actor around a worker process rather than a plain Ray task: the worker imported torch once
and forks a child per evaluation (the warm start that makes small trainings cheap), and forking
must happen in a process without Ray's gRPC threads. The worker is the same module, started the
same way (sandboxed to the slot's scratch directory, scrubbed environment) as on the local
backend, so an evaluation sees the same world wherever it runs.

What comes back is what Rust needs to decide the outcome with the code it uses locally
(`result::interpret`): how the child ended, which limit it broke, its peak memory, and the
contents of `result.json`, `epochs.jsonl` and the end of `output.log`.

Subjects travel through Ray's object store as a tar archive keyed by a content hash and are
unpacked once per node; nothing assumes a shared file system.
"""
from __future__ import annotations

import io
import json
import os
import queue
import re
import shutil
import signal
import subprocess
import sys
import tarfile
import tempfile
import threading
import time

# How much of the end of output.log travels back (Rust keeps the last 8 KiB of it).
OUTPUT_TAIL_BYTES = 16 * 1024
# How long the worker may take to import torch, to fork, and to report a killed child.
STARTUP_S = 300.0
FORK_S = 60.0
STUCK_S = 10.0
POLL_S = 0.2
# Seconds between two PSS looks of one evaluation (see MemoryWatch).
PSS_EVERY_S = 1.0
# A worker's own memory is measured again after this many evaluations (it drifts by a few MB).
BASELINE_EVERY = 16

# The warm processes a slot keeps: the evaluation worker, and (started by the first codegen
# sample) the pytest runner of `reprolab codegen`.
EVAL_WORKER, TEST_RUNNER = "reprolab.worker", "reprolab.codegen_runner"

# Placeholders of a command template that only the node can fill (Rust renders the rest).
MARK_PYTHON, MARK_CONFIG = "__REPROLAB_PYTHON__", "__REPROLAB_CONFIG__"
MARK_RESULT, MARK_WORKDIR = "__REPROLAB_RESULT__", "__REPROLAB_WORKDIR__"
# Where a codegen sample's files lie on the node (its pytest arguments name them).
MARK_TREE = "__REPROLAB_TREE__"

_CREDENTIAL_URL = re.compile(r"://[^/?#@]*:[^/?#@]*@")


def scrubbed_env(passed, fixed, pythonpath):
    """The environment of the worker: the names Rust passes (its allow list, without
    credentials), `LC_*`, the fixed settings, and PYTHONPATH for the reprolab package."""
    env = {k: v for k, v in os.environ.items()
           if (k in passed or k.startswith("LC_")) and not _CREDENTIAL_URL.search(v)}
    env.update(fixed)
    env["PYTHONPATH"] = pythonpath
    return env


def network_namespace_works():
    """Whether `unshare -rn` can give the worker a network namespace with no interface up."""
    try:
        return subprocess.run(["unshare", "-rn", "true"], stdout=subprocess.DEVNULL,
                              stderr=subprocess.DEVNULL, timeout=10).returncode == 0
    except (OSError, subprocess.SubprocessError):
        return False


# --- the process tree's memory, as proctree.rs measures it -----------------------------------
def _children_map():
    kids = {}
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/stat") as f:
                stat = f.read()
        except OSError:
            continue
        # the command name may hold spaces and parentheses: fields follow the last ')'
        fields = stat[stat.rfind(")") + 2:].split()
        kids.setdefault(int(fields[1]), []).append(int(name))
    return kids


def _pss_kb(pid):
    try:
        with open(f"/proc/{pid}/smaps_rollup") as f:
            for line in f:
                if line.startswith("Pss:"):
                    return int(line.split()[1])
    except (OSError, ValueError):
        pass
    return 0


def _rss_kb(pid):
    try:
        with open(f"/proc/{pid}/statm") as f:
            return int(f.read().split()[1]) * (os.sysconf("SC_PAGE_SIZE") // 1024)
    except (OSError, ValueError, IndexError):
        return 0


def _tree_kb(root, per_process, kids):
    total, stack = 0, [root]
    while stack:
        pid = stack.pop()
        total += per_process(pid)
        stack.extend(kids.get(pid, ()))
    return total


def tree_memory_kb(root):
    """(RSS, PSS) in kB of `root` and every process below it."""
    kids = _children_map()
    return _tree_kb(root, _rss_kb, kids), _tree_kb(root, _pss_kb, kids)


class MemoryWatch:
    """What an evaluation adds to the worker's tree, as proctree.rs measures it: RSS (an upper
    bound, ~0.01 ms a process) at every look, PSS only once the bound passes the limit, and then
    at most every PSS_EVERY_S. A PSS look walks every process's page tables: 0.8 s for 200
    forked torch processes on a loaded 2-core machine, which, repeated at every look, would
    starve the very evaluation it watches."""

    def __init__(self, root, baseline, limit_kb):
        self.root, self.baseline, self.limit_kb = root, baseline, limit_kb
        self.pss_kb, self.pss_at = 0, float("-inf")

    def used_kb(self):
        kids = _children_map()
        rss = max(0, _tree_kb(self.root, _rss_kb, kids) - self.baseline[0])
        if not self.limit_kb or rss <= self.limit_kb:
            return rss
        now = time.monotonic()
        if now - self.pss_at >= PSS_EVERY_S:
            self.pss_kb = max(0, _tree_kb(self.root, _pss_kb, kids) - self.baseline[1])
            self.pss_at = now
        return self.pss_kb


def _tail(path, limit):
    try:
        with open(path, "rb") as f:
            f.seek(0, os.SEEK_END)
            size = f.tell()
            f.seek(max(0, size - limit))
            return f.read().decode("utf-8", "replace")
    except OSError:
        return None


def _read(path):
    try:
        with open(path, encoding="utf-8", errors="replace") as f:
            return f.read()
    except OSError:
        return None


def disk_bytes(directory):
    """What the files below `directory` occupy on disk (allocated blocks; links not followed),
    as supervise.rs's disk_mb counts it."""
    total = 0
    for root, dirs, files in os.walk(directory):
        for name in dirs + files:
            try:
                total += os.lstat(os.path.join(root, name)).st_blocks * 512
            except OSError:
                pass
    return total


class Bounds:
    """An evaluation's limits as the watchdog checks them (supervise.rs's order: wall clock,
    memory of the tree, output size, and every DISK_EVERY looks what the work directory (the
    output's directory) holds); `broken` names the first one past its bound."""

    DISK_EVERY = 10

    def __init__(self, limits, output):
        self.timeout_s = limits["timeout_s"]
        self.memory_kb = (limits.get("memory_mb") or 0) * 1024
        self.output_bytes = (limits.get("output_mb") or 0) * 2**20
        self.disk_bytes = (limits.get("disk_mb") or 0) * 2**20
        self.output = output
        self.looks = 0

    def broken(self, elapsed_s, used_kb):
        if elapsed_s > self.timeout_s:
            return "timeout"
        if self.memory_kb and used_kb > self.memory_kb:
            return "memory"
        if (self.output_bytes and os.path.exists(self.output)
                and os.path.getsize(self.output) > self.output_bytes):
            return "output"
        self.looks += 1
        if (self.disk_bytes and self.looks % self.DISK_EVERY == 0
                and disk_bytes(os.path.dirname(self.output)) > self.disk_bytes):
            return "disk"
        return None


def _outputs(workdir):
    """What Rust's `interpret` reads from a finished evaluation's work directory."""
    return {"result": _read(os.path.join(workdir, "result.json")),
            "epochs": _read(os.path.join(workdir, "epochs.jsonl")),
            "output": _tail(os.path.join(workdir, "output.log"), OUTPUT_TAIL_BYTES)}


class WorkerGone(Exception):
    """The worker process died or stopped answering (not the evaluated code's fault)."""


class Worker:
    """A `python -m reprolab.worker` child speaking the JSON-lines protocol."""

    def __init__(self, scratch, env, netns, module=EVAL_WORKER):
        argv = [sys.executable, "-m", module, "--write", scratch]
        if netns:
            argv = ["unshare", "-rn", "--"] + argv + ["--netns"]
        self.proc = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     stderr=subprocess.PIPE, env=env, cwd=scratch,
                                     start_new_session=True, text=True, bufsize=1)
        self.events = queue.Queue()
        self.stderr = []
        threading.Thread(target=self._read_events, daemon=True).start()
        threading.Thread(target=self._read_stderr, daemon=True).start()
        ready = self.next_event(STARTUP_S)
        if ready is None or ready.get("ev") != "ready":
            self.kill()
            raise WorkerGone(f"the worker did not start: {ready}\n{self.stderr_text()}")
        self.ready = ready
        self.host_pid = ready.get("host_pid") or self.proc.pid
        self.baseline_kb, self.baseline_age = (0, 0), BASELINE_EVERY
        # The Keras backend the worker imports at its first Keras request and keeps (Keras
        # reads it once per process); None until then.
        self.keras_backend = None

    def _read_events(self):
        for line in self.proc.stdout:
            try:
                self.events.put(json.loads(line))
            except ValueError:
                pass
        self.events.put(None)

    def _read_stderr(self):
        for line in self.proc.stderr:
            self.stderr.append(line.rstrip("\n"))
            del self.stderr[:-30]

    def stderr_text(self):
        return "\n".join(self.stderr)

    def next_event(self, timeout):
        try:
            return self.events.get(timeout=timeout)
        except queue.Empty:
            return None

    def send(self, msg):
        try:
            self.proc.stdin.write(json.dumps(msg) + "\n")
            self.proc.stdin.flush()
        except (OSError, ValueError) as e:
            raise WorkerGone(f"the worker stopped reading requests: {e}") from e

    def baseline(self):
        """The idle worker's own (RSS, PSS), the part of the tree that is not the evaluation's."""
        if self.baseline_age >= BASELINE_EVERY:
            self.baseline_kb, self.baseline_age = tree_memory_kb(self.host_pid), 0
        self.baseline_age += 1
        return self.baseline_kb

    def alive(self):
        return self.proc.poll() is None

    def kill(self):
        try:
            os.killpg(self.proc.pid, signal.SIGKILL)
        except OSError:
            pass
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            pass


class Slot:
    """A Ray actor: one evaluation at a time through a warm worker. `env_spec` is what the Rust
    side decides about the sandbox: {"pass": [names], "fixed": {name: value}}."""

    def __init__(self, env_spec):
        import reprolab

        self.root = tempfile.mkdtemp(prefix="reprolab-ray-slot-")
        self.subjects = os.path.join(tempfile.gettempdir(), "reprolab-ray-subjects")
        os.makedirs(self.subjects, exist_ok=True)
        package_parent = os.path.dirname(os.path.dirname(os.path.abspath(reprolab.__file__)))
        self.env = scrubbed_env(set(env_spec.get("pass") or ()), env_spec.get("fixed") or {},
                                package_parent)
        self.netns = network_namespace_works()
        import ray

        # The node's id, not its IP: several nodes may share a machine (and an address).
        self.node = ray.get_runtime_context().get_node_id()[:12]
        self.workers = {}
        # Ids of runs whose caller went away (`cancel`, from the actor's second thread).
        self.cancelled = set()
        self._worker()

    def _worker(self, module=EVAL_WORKER):
        w = self.workers.get(module)
        if w is None or not w.alive():
            w = self.workers[module] = Worker(self.root, self.env, self.netns, module)
        return w

    def info(self):
        import platform
        from importlib import metadata

        w = self._worker()
        return {"node": self.node, "pid": os.getpid(),
                "torch": metadata.version("torch"), "python": platform.python_version(),
                "import_s": w.ready.get("import_s"), "sandbox": w.ready.get("sandbox")}

    def run(self, req, subject):
        """Run one eval request; `subject` is `[hash, [object ref of its tar archive]]` (the ref
        nested so that Ray does not fetch it when the node already has the subject)."""
        try:
            subject_dir = self._materialise(subject[0], subject[1][0])
        except Exception as e:  # noqa: BLE001 - the machinery's failure, reported as such
            return {"infra": f"cannot unpack the subject on this node: {type(e).__name__}: {e}"}
        if req.get("command"):
            return self._command(req, subject_dir)
        return self._in_worker(lambda: self._eval(req, subject_dir))

    def script(self, req, paths):
        """Run one reproduction script (`reprolab.repro` in a forked child of the warm worker,
        as the local pool runs it); `paths` are the import directories it may use (`--repo`),
        each `[hash, [object ref]]` like a subject."""
        try:
            dirs = [self._materialise(p[0], p[1][0]) for p in paths]
        except Exception as e:  # noqa: BLE001 - the machinery's failure, reported as such
            return {"infra": f"cannot unpack an import directory on this node: "
                             f"{type(e).__name__}: {e}"}
        return self._in_worker(lambda: self._script(req, dirs))

    def test(self, req, tree):
        """Run one `reprolab codegen` sample's pytest in a forked child of the slot's warm pytest
        runner, in a private copy of the sample's files (`tree`: their tar archive, passed by
        value: every sample differs, so nothing is kept on the node)."""
        return self._in_worker(lambda: self._test(req, tree), TEST_RUNNER)

    def cancel(self, rid):
        """End run `rid` if it is running here (its watchdog kills it at its next look)."""
        self.cancelled.add(rid)

    def _in_worker(self, run, module=EVAL_WORKER):
        last = None
        for _ in range(2):  # a worker that died is replaced and the run tried once more
            try:
                return run()
            except WorkerGone as e:
                last = str(e)
                w = self.workers.pop(module, None)
                if w is not None:
                    w.kill()
        return {"died": last}

    def _materialise(self, digest, ref):
        dest = os.path.join(self.subjects, digest)
        if os.path.isdir(dest):
            return dest
        import ray

        data = ray.get(ref)
        staging = tempfile.mkdtemp(prefix=".unpack-", dir=self.subjects)
        with tarfile.open(fileobj=io.BytesIO(data)) as tar:
            tar.extractall(staging, filter="data")
        try:
            os.rename(staging, dest)
        except OSError:  # another slot on this node unpacked it first
            shutil.rmtree(staging, ignore_errors=True)
        return dest

    def _eval_worker(self, req):
        """The eval worker for `req`: replaced first when it holds the other Keras backend, as
        the local pool does (a worker asked for the other one would refuse and exit, and the
        retry would cost the run one of its two tries)."""
        w = self._worker()
        if req.get("framework") == "keras":
            want = req.get("backend") or "torch"
            if w.keras_backend not in (None, want):
                self.workers.pop(EVAL_WORKER, None)
                w.kill()
                w = self._worker()
            w.keras_backend = want
        return w

    def _eval(self, req, subject_dir):
        w = self._eval_worker(req)
        limits = req["limits"]
        workdir = tempfile.mkdtemp(prefix="e", dir=self.root)
        try:
            msg = {"op": "eval", "id": req["id"], "subject_dir": subject_dir,
                   "entry": req["entry"], "config": req["config"], "seed": req["seed"],
                   "mode": req["mode"], "framework": req["framework"],
                   "backend": req.get("backend"), "workdir": workdir,
                   "prune": req.get("prune"),
                   "memory_mb": limits["memory_mb"], "timeout_s": limits["timeout_s"]}
            return {**self._forked(w, msg, limits, workdir), **_outputs(workdir)}
        finally:
            shutil.rmtree(workdir, ignore_errors=True)

    def _script(self, req, dirs):
        w = self._worker()
        workdir = tempfile.mkdtemp(prefix="s", dir=self.root)
        try:
            script, out = os.path.join(workdir, "reproduce.py"), os.path.join(workdir, "observed")
            with open(script, "w", encoding="utf-8") as f:
                f.write(req["source"])
            os.mkdir(out)
            msg = {"op": "script", "id": req["id"], "script": script, "seed": req["seed"],
                   "out": out, "paths": dirs, "workdir": workdir}
            ended = self._forked(w, msg, req["limits"], workdir)
            observed = {name: _read(os.path.join(out, name)) for name in sorted(os.listdir(out))
                        if os.path.isfile(os.path.join(out, name))}
            return {**ended, "workdir": workdir, "observed": observed,
                    "output": _tail(os.path.join(workdir, "output.log"), OUTPUT_TAIL_BYTES)}
        finally:
            shutil.rmtree(workdir, ignore_errors=True)

    def _test(self, req, tree):
        t0 = time.monotonic()
        w = self._worker(TEST_RUNNER)
        started_s = time.monotonic() - t0
        workdir = tempfile.mkdtemp(prefix="t", dir=self.root)
        try:
            cwd = os.path.join(workdir, "src")
            with tarfile.open(fileobj=io.BytesIO(tree)) as tar:
                tar.extractall(cwd, filter="data")
            limits = req["limits"]
            msg = {"op": "test", "id": req["id"], "workdir": workdir, "cwd": cwd,
                   "args": [a.replace(MARK_TREE, cwd) for a in req["args"]],
                   "check": req.get("check") or [], "memory_mb": limits["memory_mb"],
                   "max_procs": req.get("max_procs") or 0}
            return {**self._forked(w, msg, limits, workdir), "waited_s": started_s,
                    "result": _read(os.path.join(workdir, "result.json")),
                    "output": _tail(os.path.join(workdir, "output.log"), OUTPUT_TAIL_BYTES)}
        finally:
            shutil.rmtree(workdir, ignore_errors=True)

    def _forked(self, w, msg, limits, workdir):
        """Send `msg` to worker `w`, watch the child it forks under `limits` and say how it
        ended (the fields every answer of a slot has)."""
        baseline = w.baseline()
        w.send(msg)
        child = self._started(w, msg["id"])
        ended, violation, peak_kb, elapsed = self._supervise(w, msg["id"], child, baseline,
                                                             limits, workdir)
        self.cancelled.discard(msg["id"])
        return {"exit_code": ended.get("exit_code"), "signal": ended.get("signal"),
                "violation": violation, "peak_mb": peak_kb // 1024, "elapsed_s": elapsed,
                "node": self.node}

    def _command(self, req, subject_dir):
        """A command-template subject: a fresh process per evaluation (script.rs's cold path),
        `python -m reprolab.sandbox` between it and the slot, confined to its work directory.
        The command line comes rendered by Rust with markers for the paths only this node
        knows."""
        workdir = tempfile.mkdtemp(prefix="c", dir=self.root)
        try:
            config = os.path.join(workdir, "config.json")
            with open(config, "w") as f:
                json.dump(req["config"], f)
            line = req["command"]
            for mark, value in ((MARK_PYTHON, sys.executable), (MARK_CONFIG, config),
                                (MARK_RESULT, os.path.join(workdir, "result.json")),
                                (MARK_WORKDIR, workdir)):
                line = line.replace(mark, value)
            argv = [sys.executable, "-m", "reprolab.sandbox", "--write", workdir]
            argv += ["--netns"] if self.netns else []
            argv += ["--", "sh", "-c", line]
            if self.netns:
                argv = ["unshare", "-rn", "--"] + argv
            env = dict(self.env, REPROLAB_WORKDIR=workdir, TMPDIR=workdir,
                       REPROLAB_MODE=req["mode"],
                       REPROLAB_PRUNE=json.dumps(req["prune"]) if req.get("prune") else "")
            env["PATH"] = os.path.dirname(sys.executable) + os.pathsep + env.get("PATH", "")
            output = os.path.join(workdir, "output.log")
            with open(output, "wb") as out:
                proc = subprocess.Popen(argv, cwd=subject_dir, env=env, stdin=subprocess.DEVNULL,
                                        stdout=out, stderr=out, start_new_session=True)
            bounds = Bounds(req["limits"], output)
            memory = MemoryWatch(proc.pid, (0, 0), bounds.memory_kb)
            start, violation, peak_kb = time.monotonic(), None, 0
            while proc.poll() is None:
                time.sleep(POLL_S)
                used_kb = memory.used_kb()
                peak_kb = max(peak_kb, used_kb)
                violation = bounds.broken(time.monotonic() - start, used_kb)
                if req["id"] in self.cancelled:
                    violation = "cancelled"
                if violation is not None:
                    break
            self.cancelled.discard(req["id"])
            elapsed = time.monotonic() - start
            try:
                os.killpg(proc.pid, signal.SIGKILL)  # the limit, or whatever it left behind
            except OSError:
                pass
            code = proc.wait()
            return {"exit_code": code if code >= 0 else None,
                    "signal": -code if code < 0 else None,
                    "violation": violation, "peak_mb": peak_kb // 1024, "elapsed_s": elapsed,
                    "node": self.node, **_outputs(workdir)}
        finally:
            shutil.rmtree(workdir, ignore_errors=True)

    @staticmethod
    def _started(w, rid):
        deadline = time.monotonic() + FORK_S
        while True:
            ev = w.next_event(max(0.0, deadline - time.monotonic()))
            if ev is None:
                raise WorkerGone("the worker did not start the evaluation: "
                                 + (w.stderr_text() or "no output"))
            if ev.get("ev") == "started" and ev.get("id") == rid:
                return ev["pid"]
            if ev.get("ev") == "error" and ev.get("id") == rid:
                raise WorkerGone(f"the worker refused the request: {ev.get('message')}")

    def _supervise(self, w, rid, child, baseline_kb, limits, workdir):
        """Wait for the child's end, killing its group when it breaks a limit or is cancelled;
        the first broken limit is the verdict (as supervise.rs decides it locally)."""
        start = time.monotonic()
        bounds = Bounds(limits, os.path.join(workdir, "output.log"))
        memory = MemoryWatch(w.host_pid, baseline_kb, bounds.memory_kb)
        violation, peak_kb, killed_at = None, 0, None
        while True:
            ev = w.next_event(POLL_S)
            if ev is not None and ev.get("ev") == "done" and ev.get("id") == rid:
                return ev, violation, peak_kb, time.monotonic() - start
            if ev is None and not w.alive():
                if violation is not None:
                    return {}, violation, peak_kb, time.monotonic() - start
                raise WorkerGone("the worker died during the evaluation: " + w.stderr_text())
            if killed_at is not None:
                if time.monotonic() - killed_at > STUCK_S:
                    w.kill()  # it did not report the killed child: replace it
                    return {}, violation, peak_kb, time.monotonic() - start
                continue
            used_kb = memory.used_kb()
            peak_kb = max(peak_kb, used_kb)
            violation = bounds.broken(time.monotonic() - start, used_kb)
            if rid in self.cancelled:
                violation = "cancelled"
            if violation is not None:
                try:
                    os.killpg(child, signal.SIGKILL)
                except OSError:
                    pass
                killed_at = time.monotonic()

    def close(self):
        for w in self.workers.values():
            w.kill()
        shutil.rmtree(self.root, ignore_errors=True)
