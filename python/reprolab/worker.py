"""`python -m reprolab.worker`: the warm worker that the Rust side drives over JSON lines.

Protocol (docs/architecture.md, "Worker protocol"):

* At start the worker keeps a private duplicate of fd 1 for protocol events and points fd 1 at
  fd 2, so nothing printed (by Python or by C code) can corrupt the protocol. It imports torch,
  numpy and scikit-learn once, sets one intra-op thread and does no torch computation (thread
  pools do not survive fork), then emits
  {"ev": "ready", "pid", "python", "torch", "import_s"}.
* Requests on stdin, one JSON object per line:
  {"op": "eval", "id", "subject_dir", "entry", "config", "seed", "mode", "workdir", "memory_mb",
   "framework", "backend", "prune"}  ("prune": null or {"key", "goal", "thresholds"}: in eval
  mode, reprolab.log_epoch stops the training once the key's best value so far falls behind the
  epoch's threshold)
  -> fork a child ("framework": "keras" imports Keras on "backend" — "torch", the default, or
  "tensorflow" — in the worker once and attaches reprolab's callback to model.fit in the child;
  see reprolab.keras_fit); {"ev": "started", "id", "pid"}; wait; {"ev": "done", "id",
  "exit_code", "signal"}. A Keras request for another backend than the one this worker
  imported: {"ev": "error", "fatal": true, "id", "message"} and the worker exits, so that its
  driver starts a fresh one and retries the request there (Keras' backend is fixed at import).
  {"op": "script", "id", "script", "seed", "out", "paths", "workdir"} -> the same, the child
  running a bug-reproduction script through `reprolab.repro.run` (observed.json and
  reported.jsonl in "out", which must lie inside "workdir") as a fresh `python -m reprolab.repro`
  would: same streams, working directory, sys.path, seeding and warnings recording.
  {"op": "shutdown"} or end of input -> exit 0.
  A line that is not a valid request -> {"ev": "error", "message", ["id"]} and the loop goes on.
* The child (its own process group) writes everything it prints to workdir/output.log and its
  result to workdir/result.json (atomically):
  {"status": "ok", "search", "holdout", "extra"}  (+ "nonfinite": true, metrics null, when a
                                                   metric is NaN/Inf)
  {"status": "exception", "type", "message", "traceback"}
  {"status": "oom", "type", "message", "traceback"}   (MemoryError / allocator failures)
  {"status": "pruned", "epoch", "value"}   (stopped by the request's pruner)

Memory: `memory_mb` sets RLIMIT_DATA in the child. That is only a soft cap that makes large
allocations fail early with a MemoryError; the Rust side's RSS watchdog over the process group is
the real bound.
"""
from __future__ import annotations

import os
import sys

# --- protocol channel first, before anything can print --------------------------------------
_events = None


def _emit(obj):
    import json

    _events.write(json.dumps(obj, allow_nan=False) + "\n")
    _events.flush()


def _setup_channels():
    global _events
    _events = os.fdopen(os.dup(1), "w", buffering=1, encoding="utf-8")
    os.dup2(2, 1)  # fd 1 now goes where stderr goes
    try:
        sys.stdout.flush()
    except Exception:
        pass


_THREAD_VARS = ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS",
                "NUMEXPR_NUM_THREADS", "VECLIB_MAXIMUM_THREADS")

_WARM_IMPORTS = ("torch._dynamo", "torch.optim", "torch.utils.data", "sklearn.datasets",
                 "sklearn.model_selection", "sklearn.metrics", "sklearn.preprocessing")

_OOM_MARKERS = ("can't allocate memory", "DefaultCPUAllocator", "out of memory")


# --- the child ------------------------------------------------------------------------------
def _type_name(exc, entry_module_name=None, entry_stem=None):
    t = type(exc)
    module = getattr(t, "__module__", None) or ""
    if module in ("builtins", "reprolab"):
        return t.__qualname__
    if entry_module_name is not None and module == entry_module_name:
        module = entry_stem
    return f"{module}.{t.__qualname__}" if module else t.__qualname__


def _is_oom(exc):
    if isinstance(exc, MemoryError):
        return True
    torch = sys.modules.get("torch")
    oom_cls = getattr(torch, "OutOfMemoryError", None) if torch is not None else None
    if oom_cls is not None and isinstance(exc, oom_cls):
        return True
    if isinstance(exc, RuntimeError):
        msg = str(exc)
        return any(m in msg for m in _OOM_MARKERS)
    return False


def _resolve_entry(subject_dir, entry):
    """'train.py:train' -> (absolute file path, module stem, callable name)."""
    if not isinstance(entry, str) or entry.count(":") != 1:
        raise ValueError(f"entry must look like 'train.py:train', got {entry!r}")
    target, func = entry.split(":")
    if not func or not target:
        raise ValueError(f"entry must look like 'train.py:train', got {entry!r}")
    if target.endswith(".py"):
        rel = target
    else:  # a dotted module name
        rel = target.replace(".", os.sep) + ".py"
    path = os.path.normpath(os.path.join(subject_dir, rel))
    stem = os.path.splitext(os.path.basename(path))[0]
    return path, stem, func


def _run_child(req, body=None):
    """Runs in the forked child; never returns. `body(req, workdir)` does the work (default: the
    training of an eval request); everything around it (own process group, default signal
    handlers, output to workdir/output.log, no stdin) is the same for every kind of child."""
    code = 70
    try:
        try:
            os.setpgid(0, 0)
        except OSError:
            pass
        import signal

        # Python's usual handlers: SIGTERM kills, SIGINT raises KeyboardInterrupt
        for sig, handler in ((signal.SIGTERM, signal.SIG_DFL), (signal.SIGINT, signal.default_int_handler)):
            try:
                signal.signal(sig, handler)
            except (OSError, ValueError):
                pass
        try:
            _events.close()  # the child never speaks the protocol
        except Exception:
            pass
        workdir = os.path.abspath(req["workdir"])
        os.makedirs(workdir, exist_ok=True)
        log_fd = os.open(os.path.join(workdir, "output.log"),
                         os.O_WRONLY | os.O_CREAT | os.O_APPEND | os.O_TRUNC, 0o644)
        os.dup2(log_fd, 1)
        os.dup2(log_fd, 2)
        os.close(log_fd)
        null_fd = os.open(os.devnull, os.O_RDONLY)
        os.dup2(null_fd, 0)
        os.close(null_fd)
        _enter_child_sandbox(req, workdir)
        sys.stdin = open(0, "r", closefd=False)
        sys.stdout = open(1, "w", buffering=1, encoding="utf-8", errors="backslashreplace", closefd=False)
        sys.stderr = open(2, "w", buffering=1, encoding="utf-8", errors="backslashreplace", closefd=False)
        try:
            import faulthandler

            faulthandler.enable(file=sys.stderr)
        except Exception:
            pass
        (body or _child_eval)(req, workdir)
        code = 0
    except BaseException:  # noqa: BLE001 - the child must never return into the loop
        try:
            import traceback

            traceback.print_exc()
        except BaseException:
            pass
    finally:
        for stream in (sys.stdout, sys.stderr):
            try:
                stream.flush()
            except BaseException:
                pass
        os._exit(code)


def _enter_child_sandbox(req, workdir):
    """The child dies with the worker, writes only its own work directory (plus what the request
    names in "writable", e.g. a codegen sample's repository copy) and, in a Landlock domain of
    its own, cannot signal the worker or anything else outside it. Temporary files go to the
    work directory."""
    from reprolab import sandbox

    sandbox.die_with_parent()
    os.environ["TMPDIR"] = workdir
    import tempfile

    tempfile.tempdir = None
    if _SANDBOXED:
        extra = [p for p in req.get("writable") or [] if isinstance(p, str)]
        sandbox.restrict([workdir] + extra, tcp=_NETNS)


def _child_eval(req, workdir):
    import importlib.util
    import traceback

    import reprolab

    result_path = os.path.join(workdir, "result.json")
    _limit_memory(req.get("memory_mb"))
    torch = sys.modules.get("torch")
    if torch is not None:
        torch.set_num_threads(1)

    subject_dir = os.path.abspath(req["subject_dir"])
    entry = req["entry"]
    mode = req.get("mode") or "eval"
    module_name = None
    stem = None
    try:
        path, stem, func_name = _resolve_entry(subject_dir, entry)
        os.chdir(subject_dir)
        sys.path.insert(0, subject_dir)
        sys.argv = [path]
        safe_id = "".join(c if c.isalnum() else "_" for c in str(req["id"]))
        module_name = f"_reprolab_entry_{safe_id}"
        reprolab._set_run_context(workdir, mode, run_id=req["id"], prune=req.get("prune"))
        if not os.path.isfile(path):
            raise reprolab.ReprolabContractError(
                f"entry {entry!r}: no file {path} in the subject directory")
        with _framework(req.get("framework"), _keras_backend(req), req.get("seed", 0), mode):
            spec = importlib.util.spec_from_file_location(module_name, path)
            module = importlib.util.module_from_spec(spec)
            sys.modules[module_name] = module
            spec.loader.exec_module(module)
            fn = getattr(module, func_name, None)
            if fn is None or not callable(fn):
                raise reprolab.ReprolabContractError(
                    f"entry {entry!r}: {os.path.basename(path)} defines no callable {func_name!r}; "
                    "a subject must define train(config, seed) -> {'search': ..., 'holdout': ...}")
            result = fn(req.get("config") or {}, req.get("seed", 0))
        search, holdout, extra = reprolab._validate_result(result)
        record = reprolab._ok_record(search, holdout, extra)
    except reprolab.TrialPruned as e:
        # Stopped by the request's pruner at an epoch's end (log_epoch): not a failure.
        record = reprolab._pruned_record(e)
    except KeyboardInterrupt:
        # interrupted, not a property of the subject: die by SIGINT, write no result (-> crash)
        import signal

        sys.stdout.flush()
        sys.stderr.flush()
        signal.signal(signal.SIGINT, signal.SIG_DFL)
        os.kill(os.getpid(), signal.SIGINT)
        raise
    except BaseException as e:  # noqa: BLE001 - SystemExit inside train is an exception too
        tb = traceback.format_exc()
        try:
            sys.stderr.write(tb)
        except BaseException:
            pass
        message = _safe_str(e)
        if _SANDBOXED and isinstance(e, PermissionError):
            message += (" [reprolab's sandbox: user code may write only its work directory "
                        "(TMPDIR, reprolab.current_run()['workdir']); the subject directory, the "
                        "store and the user's files are read-only; REPROLAB_NO_ISOLATION=1 "
                        "turns the sandbox off]")
        record = {
            "status": "oom" if _is_oom(e) else "exception",
            "type": _type_name(e, module_name, stem),
            "message": message,
            "traceback": tb,
        }
    try:
        reprolab._write_json_atomic(result_path, record)
    except Exception as e:  # e.g. an unserialisable extra that slipped through
        fallback = {"status": "exception", "type": "ReprolabContractError",
                    "message": f"could not write the result: {_safe_str(e)}",
                    "traceback": traceback.format_exc()}
        reprolab._write_json_atomic(result_path, fallback)


def _framework(framework, backend, seed, mode):
    """What the subject's framework needs around its training: for Keras, one thread on the
    TensorFlow backend, Keras' own seeding (its global seed generator besides Python's, numpy's,
    torch's and on that backend TensorFlow's) and reprolab's callback attached to every
    `model.fit` (reprolab.keras_fit); nothing for PyTorch."""
    import contextlib

    if framework != "keras":
        return contextlib.nullcontext()
    keras = _import_keras(backend)
    if backend == "tensorflow":
        _tensorflow_one_thread()
    from reprolab import keras_fit

    keras.utils.set_random_seed(int(seed) % 2**32)
    return keras_fit.patched_fit(mode)


def _tensorflow_one_thread():
    """One intra-op and one inter-op thread, as for torch. In the child, before its first
    TensorFlow op: the runtime (and its thread pools) starts there, never in the worker, whose
    pools would not survive fork."""
    import tensorflow as tf

    tf.config.threading.set_intra_op_parallelism_threads(1)
    tf.config.threading.set_inter_op_parallelism_threads(1)


def _import_keras(backend):
    """Import Keras on `backend` ("torch" or "tensorflow"); the backend is read once, at Keras'
    first import, so the variable is set before it (over the sandbox's default, torch)."""
    os.environ["KERAS_BACKEND"] = backend
    # TensorFlow's C++ INFO lines (CPU features, oneDNN) would open every training's output.
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "1")
    try:
        import keras
    except ImportError as e:
        extra = (" (tensorflow-cpu is installed into it at the first training that needs it)"
                 if backend == "tensorflow" else "")
        raise ImportError(f"the subject's reprolab.toml says framework = \"keras\" on backend "
                          f"{backend!r}, but Keras cannot be imported on it in the managed "
                          f"environment{extra}: {e}") from e
    return keras


def _keras_backend(req):
    return req.get("backend") or "torch"


def _keras_held():
    """The backend of the Keras this worker imported, or None."""
    keras = sys.modules.get("keras")
    return None if keras is None else keras.backend.backend()


def _child_script(req, workdir):
    """A reproduction run, as `python -m reprolab.repro SCRIPT --seed S --out OUT` started fresh
    in `workdir` would do it (see script.rs / run.rs on the Rust side): no RLIMIT_DATA (the
    watchdog alone bounds memory, so an allocation past the limit is `oom`, not a MemoryError the
    script sees), no faulthandler, streams buffered as a fresh interpreter's, the interpreter's
    directory first on PATH, the work directory as cwd and first on sys.path."""
    import faulthandler

    faulthandler.disable()
    for name in ("stdout", "stderr"):
        fresh = getattr(sys, "__" + name + "__", None)
        fd = 1 if name == "stdout" else 2
        setattr(sys, name, open(fd, "w", encoding=getattr(fresh, "encoding", None) or "utf-8",
                                errors=getattr(fresh, "errors", None) or "strict",
                                buffering=-1 if name == "stdout" else 1,
                                closefd=False))
    os.chdir(workdir)
    os.environ["REPROLAB_WORKDIR"] = workdir
    os.environ["PATH"] = os.path.dirname(sys.executable) + os.pathsep + os.environ.get("PATH", "")
    # `python -m` puts the directory it started in first on sys.path: the worker's start
    # directory there becomes this run's work directory, as for a fresh run.
    if sys.path and sys.path[0] in ("", _START_CWD):
        sys.path[0] = workdir
    from reprolab import repro

    code = repro.run(req["script"], req.get("seed", 0), req["out"], req.get("paths") or [],
                     imported_filters=_IMPORTED_FILTERS)
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except BaseException:
            pass
    os._exit(0 if code == 0 else 1)


def _limit_memory(memory_mb):
    """Soft cap (RLIMIT_DATA) on what this child may allocate on top of what it inherited."""
    if not memory_mb:
        return
    try:
        import resource

        # RLIMIT_DATA counts the data segment the child inherited from the worker
        # (torch's, hundreds of MB), so the cap is what the evaluation may add on top.
        soft = (_vm_data_kb() * 1024) + int(memory_mb) * 2**20
        _, hard = resource.getrlimit(resource.RLIMIT_DATA)
        if hard != resource.RLIM_INFINITY and soft > hard:
            soft = hard
        resource.setrlimit(resource.RLIMIT_DATA, (soft, hard))
    except (ValueError, OSError) as e:
        print(f"reprolab: could not set RLIMIT_DATA to {memory_mb} MB: {e}", file=sys.stderr)


def _safe_str(e):
    try:
        return str(e)
    except BaseException:
        return repr(e)


# --- the sandbox of the worker itself ------------------------------------------------------
_SANDBOXED = False
# A network namespace cuts TCP off already (see enter_worker_sandbox).
_NETNS = False
# /dev/shm is this worker's own (sandbox.private_shm): emptied after every evaluation.
_PRIVATE_SHM = False
# Warnings filters that the worker's imports added (see repro.run's imported_filters).
_IMPORTED_FILTERS = []
# The directory the worker started in (`python -m` put it first on sys.path).
try:
    _START_CWD = os.getcwd()
except OSError:
    _START_CWD = ""


def enter_worker_sandbox(argv):
    """Called first thing by every worker (before any import that could start a thread): die
    with reprolab, keep orphans of evaluations as our own children, and with `--write DIR`
    (repeatable) enter a Landlock domain where only DIR is writable. Returns what the `ready`
    event reports: {"host_pid", "pid_namespace", "sandbox": {...}}."""
    global _SANDBOXED, _NETNS, _PRIVATE_SHM
    from reprolab import sandbox

    writable = [argv[i + 1] for i, a in enumerate(argv[:-1]) if a == "--write"]
    sandbox.die_with_parent()
    in_pid_namespace = os.getpid() == 1
    if not in_pid_namespace:
        sandbox.become_subreaper()
    status = None
    if writable:
        os.environ["TMPDIR"] = writable[0]
        _NETNS = "--netns" in argv
        _PRIVATE_SHM = sandbox.private_shm()
        status = sandbox.restrict(writable, tcp=_NETNS)
        status["private_shm"] = _PRIVATE_SHM
        _SANDBOXED = status["fs"]
    return {"host_pid": sandbox.host_pid(), "pid_namespace": in_pid_namespace,
            "sandbox": status}


# --- the parent loop ------------------------------------------------------------------------
_REQUIRED = ("id", "subject_dir", "entry", "workdir")


def _check_request(req):
    """None when `req` is a valid eval request, else a message."""
    missing = [k for k in _REQUIRED if k not in req]
    if missing:
        return f"eval request lacks {', '.join(missing)}"
    if not isinstance(req["id"], (str, int)):
        return "eval request: id must be a string"
    for k in ("subject_dir", "entry", "workdir"):
        if not isinstance(req[k], str) or not req[k]:
            return f"eval request: {k} must be a non-empty string"
    if req.get("mode", "eval") not in ("eval", "trace"):
        return f"eval request: mode must be 'eval' or 'trace', got {req.get('mode')!r}"
    if req.get("framework", "pytorch") not in ("pytorch", "keras"):
        return ("eval request: framework must be 'pytorch' or 'keras', "
                f"got {req.get('framework')!r}")
    if _keras_backend(req) not in ("torch", "tensorflow"):
        return f"eval request: backend must be 'torch' or 'tensorflow', got {req['backend']!r}"
    config = req.get("config", {})
    if config is not None and not isinstance(config, dict):
        return "eval request: config must be an object"
    seed = req.get("seed", 0)
    if isinstance(seed, bool) or not isinstance(seed, int):
        return "eval request: seed must be an integer"
    mem = req.get("memory_mb")
    if mem is not None and (isinstance(mem, bool) or not isinstance(mem, int) or mem < 0):
        return "eval request: memory_mb must be a non-negative integer or null"
    prune = req.get("prune")
    if prune is not None and not (isinstance(prune, dict) and isinstance(prune.get("key"), str)
                                  and isinstance(prune.get("thresholds", []), list)):
        return "eval request: prune must be null or {\"key\", \"goal\", \"thresholds\"}"
    return None


def _check_script_request(req):
    """None when `req` is a valid script request, else a message."""
    missing = [k for k in ("id", "script", "out", "workdir") if k not in req]
    if missing:
        return f"script request lacks {', '.join(missing)}"
    if not isinstance(req["id"], (str, int)):
        return "script request: id must be a string"
    for k in ("script", "out", "workdir"):
        if not isinstance(req[k], str) or not req[k]:
            return f"script request: {k} must be a non-empty string"
    seed = req.get("seed", 0)
    if isinstance(seed, bool) or not isinstance(seed, int):
        return "script request: seed must be an integer"
    paths = req.get("paths") or []
    if not isinstance(paths, list) or not all(isinstance(p, str) for p in paths):
        return "script request: paths must be a list of strings"
    return None


def _handle(req, check, body):
    """Answer a request that `check` refuses with an error event, else run `body` in a child."""
    err = check(req)
    if err is not None:
        ev = {"ev": "error", "message": err}
        if isinstance(req.get("id"), (str, int)):
            ev["id"] = req["id"]
        _emit(ev)
        return
    fork_and_wait(req, body)


def _handle_script(req):
    _handle(req, _check_script_request, _child_script)


def _handle_eval(req):
    """Run an eval request; False when this worker must exit instead (its Keras runs on
    another backend than the request's)."""
    if req.get("framework") == "keras" and _check_request(req) is None:
        backend, held = _keras_backend(req), _keras_held()
        if held is None:
            _preimport_keras(backend)
        elif held != backend:
            _emit({"ev": "error", "fatal": True, "id": req["id"],
                   "message": f"this worker's Keras runs on {held!r}, the request needs "
                              f"{backend!r}: exiting so that a fresh worker takes it"})
            return False
    _handle(req, _check_request, _child_eval)
    return True


def _preimport_keras(backend):
    """Import Keras in the worker itself at its first Keras evaluation, so that this and every
    later child forks with it loaded (seconds per child otherwise); PyTorch-only workers never
    pay for it. Only the import: TensorFlow's runtime starts at its first op, in a child. A
    failure is left to the child, whose result then carries the traceback."""
    import importlib.util

    try:
        _import_keras(backend)
        if backend == "torch" and importlib.util.find_spec("tensorflow") is not None:
            # keras.utils.set_random_seed, which this worker and Keras programs call, also seeds
            # TensorFlow whenever it is installed, importing it (~1,600 modules): on the torch
            # backend every child paid that again, 3-5 s a training, unless the worker holds it.
            import tensorflow  # noqa: F401
    except Exception as e:  # noqa: BLE001
        print(f"reprolab worker: could not import keras: {e}", file=sys.stderr)


def fork_and_wait(req, body):
    """Fork a child that runs `body(req, workdir)` (see `_run_child`), emit `started`, wait for
    it and emit `done` with its exit code or signal. `req` needs "id" and "workdir"."""
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except Exception:
            pass
    try:
        pid = os.fork()
    except OSError as e:
        _emit({"ev": "error", "id": req["id"], "message": f"fork failed: {e}"})
        return
    if pid == 0:
        _run_child(req, body)  # never returns
        os._exit(70)
    try:  # also from this side, so the group exists before Rust may signal it
        os.setpgid(pid, pid)
    except OSError:
        pass
    _emit({"ev": "started", "id": req["id"], "pid": pid})
    status = _wait_child(pid, req.get("timeout_s"))
    # Whatever the child left behind (daemons included: they were re-parented to this worker)
    # dies before the next evaluation starts.
    from reprolab import sandbox

    sandbox.kill_descendants()
    if _PRIVATE_SHM:
        sandbox.clear_shm()
    if status is None:
        exit_code, sig = None, None
    elif os.WIFSIGNALED(status):
        exit_code, sig = None, os.WTERMSIG(status)
    else:
        exit_code, sig = os.waitstatus_to_exitcode(status), None
    _emit({"ev": "done", "id": req["id"], "exit_code": exit_code, "signal": sig})


# The worker kills a child itself this long after its deadline: the Rust side normally acts
# first (and reports the timeout); this bound holds even when the Rust side is gone or stuck.
_DEADLINE_GRACE_S = 10.0


def _wait_child(pid, timeout_s):
    """The child's wait status (None if it cannot be waited for), killing its process group
    once `timeout_s` (+ grace) has passed."""
    if isinstance(timeout_s, (int, float)) and not isinstance(timeout_s, bool) and timeout_s > 0:
        _await_exit(pid, float(timeout_s) + _DEADLINE_GRACE_S)
    while True:
        try:
            return os.waitpid(pid, 0)[1]
        except ChildProcessError:
            return None
        except InterruptedError:
            continue


def _await_exit(pid, within_s):
    """Wait (without reaping) until `pid` exits or `within_s` passes; then SIGKILL its group."""
    import select
    import signal
    import time

    try:
        fd = os.pidfd_open(pid)
    except (AttributeError, OSError):
        fd = None
    try:
        if fd is not None:
            poller = select.poll()
            poller.register(fd, select.POLLIN)
            if poller.poll(within_s * 1000):
                return
        else:
            end = time.monotonic() + within_s
            while time.monotonic() < end:
                if os.waitid(os.P_PID, pid, os.WEXITED | os.WNOHANG | os.WNOWAIT) is not None:
                    return
                time.sleep(0.05)
    except ChildProcessError:
        return
    finally:
        if fd is not None:
            os.close(fd)
    for kill in (os.killpg, os.kill):
        try:
            kill(pid, signal.SIGKILL)
        except OSError:
            pass


def _vm_data_kb():
    """This process's data segment (VmData) in kB, 0 if unknown."""
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith("VmData:"):
                    return int(line.split()[1])
    except (OSError, ValueError):
        pass
    return 0


def main():
    import json
    import platform
    import time

    _setup_channels()
    sandbox_status = enter_worker_sandbox(sys.argv[1:])
    for var in _THREAD_VARS:
        os.environ.setdefault(var, "1")

    import warnings

    base_filters = list(warnings.filters)
    t0 = time.perf_counter()
    import importlib

    # numpy and scikit-learn are preloaded where installed: a bug report's own environment
    # (`reprolab reproduce`) may lack scikit-learn, and its scripts do not need it.
    for optional in ("numpy", "sklearn"):
        try:
            importlib.import_module(optional)
        except ImportError:
            pass
    try:
        import torch
    except BaseException as e:  # noqa: BLE001
        _emit({"ev": "error", "fatal": True, "message": f"import failed: {type(e).__name__}: {e}"})
        return 1
    torch.set_num_threads(1)
    try:
        torch.set_num_interop_threads(1)
    except RuntimeError:
        pass
    # Modules every training would otherwise import on its own, in each child: the first
    # optimizer step imports torch._dynamo (several seconds). Imports only, no computation.

    for name in _WARM_IMPORTS:
        try:
            importlib.import_module(name)
        except Exception as e:  # noqa: BLE001 - a missing optional module is not fatal
            print(f"reprolab worker: could not pre-import {name}: {e}", file=sys.stderr)
    import reprolab  # noqa: F401
    import reprolab.nn  # noqa: F401  (pre-import: children fork with it loaded)
    import reprolab.trace  # noqa: F401
    import_s = time.perf_counter() - t0
    global _IMPORTED_FILTERS
    _IMPORTED_FILTERS = [f for f in warnings.filters if f not in base_filters]

    _emit({"ev": "ready", "pid": os.getpid(), "python": platform.python_version(),
           "torch": torch.__version__, "import_s": round(import_s, 3), **sandbox_status})

    stdin = sys.stdin
    while True:
        line = stdin.readline()
        if not line:
            return 0  # EOF
        line = line.strip()
        if not line:
            continue
        try:
            req = json.loads(line)
        except ValueError as e:
            _emit({"ev": "error", "message": f"malformed request (not JSON): {e}"})
            continue
        if not isinstance(req, dict):
            _emit({"ev": "error", "message": "malformed request: expected a JSON object"})
            continue
        op = req.get("op")
        if op == "shutdown":
            return 0
        if op == "eval":
            if not _handle_eval(req):
                return 3
            continue
        if op == "script":
            _handle_script(req)
            continue
        ev = {"ev": "error",
              "message": f"unknown op {op!r}; expected 'eval', 'script' or 'shutdown'"}
        if isinstance(req.get("id"), (str, int)):
            ev["id"] = req["id"]
        _emit(ev)


if __name__ == "__main__":
    _code = main()
    # Leave without the interpreter's teardown (seconds with torch loaded); nothing is pending.
    for _stream in (_events, sys.stdout, sys.stderr):
        try:
            if _stream is not None:
                _stream.flush()
        except Exception:
            pass
    os._exit(_code or 0)
