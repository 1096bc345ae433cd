"""`python -m reprolab.codegen_runner [--light]`: the warm pytest runner of `reprolab codegen`.

It speaks the worker protocol of docs/architecture.md (a private event channel, fd 1 pointed at
fd 2, a `ready` event first) with three more requests:

* {"op": "test", "id", "workdir", "cwd", "args": [...], "check": [...], "memory_mb", "max_procs"}
  fork a child (reprolab.worker's child set-up: own process group, output to workdir/output.log)
  that chdirs to `cwd`, runs `pytest.main(args)` with reprolab.codegen_plugin writing
  workdir/result.json, then exits; events `started` and `done` as for an eval.
* {"op": "parse", "id", "sources": [...]} -> {"ev": "parsed", "id", "ok": [bool], "errors": [str|null]}
  (`ast.parse` of each source: the "does this code block parse" test of code extraction, batched)
* {"op": "locate", "id", "items": [{"source", "function"}]} -> {"ev": "located", "id", "results": [...]}
  each result {"error": str|null, "error_type", "toplevel": [{"kind": def|class|import|future|assign|main|other,
  "name", "start", "def_line", "end", "col"}], "methods": [{"class", "start", "def_line", "end",
  "col"}]}: the line ranges (1-based, inclusive, decorators included) of every top-level
  statement and of every method named `function` of a top-level class, so that the Rust side can
  splice generated code into a repository file.
* {"op": "shutdown"} or end of input -> exit.

The full runner imports numpy, scikit-learn, torch and pytest once, so that each sample's child
starts with them loaded (the cost a fresh `python -m pytest` pays per sample). `--light` imports
nothing heavy: it answers parse/locate requests and starts in a fraction of a second.
"""
from __future__ import annotations

import os
import sys

from reprolab import worker as _w

_RESULT_NAME = "result.json"


# --- the test child ------------------------------------------------------------------------
def _user_tasks():
    """Tasks (threads) of this user now: what RLIMIT_NPROC counts."""
    uid = os.getuid()
    total = 0
    try:
        names = os.listdir("/proc")
    except OSError:
        return 0
    for name in names:
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/status") as f:
                owner = threads = None
                for line in f:
                    if line.startswith("Uid:"):
                        owner = int(line.split()[1])
                    elif line.startswith("Threads:"):
                        threads = int(line.split()[1])
                        break
        except (OSError, ValueError, IndexError):
            continue
        if owner == uid:
            total += threads or 1
    return total


def _limit_procs(max_procs):
    """Let the child start at most about `max_procs` more processes or threads: a fork bomb
    then fails with an error instead of filling the machine before the watchdog's next look."""
    if not max_procs:
        return
    try:
        import resource

        soft = _user_tasks() + int(max_procs)
        _, hard = resource.getrlimit(resource.RLIMIT_NPROC)
        if hard != resource.RLIM_INFINITY and soft > hard:
            soft = hard
        resource.setrlimit(resource.RLIMIT_NPROC, (soft, hard))
    except (ValueError, OSError) as e:
        print(f"reprolab: could not set RLIMIT_NPROC: {e}", file=sys.stderr)


def _child_test(req, workdir):
    import json

    _w._limit_memory(req.get("memory_mb"))
    _limit_procs(req.get("max_procs"))
    torch = sys.modules.get("torch")
    if torch is not None:
        torch.set_num_threads(1)
    cwd = os.path.abspath(req["cwd"])
    os.chdir(cwd)
    sys.path.insert(0, cwd)
    result = os.path.join(workdir, _RESULT_NAME)
    args = [str(a) for a in req.get("args") or []]
    args += ["--reprolab-result", result]
    for f in req.get("check") or []:
        args += ["--reprolab-check", str(f)]
    sys.argv = ["pytest", *args]
    import pytest

    from reprolab import codegen_plugin

    # The plugin object itself (already imported by the parent), not `-p`, which would warn
    # that an imported module cannot be assertion-rewritten.
    code = pytest.main(args, plugins=[codegen_plugin])
    if not os.path.exists(result):
        # pytest stopped before the session (usage error, internal error): say so.
        with open(result, "w", encoding="utf-8") as f:
            json.dump({"status": "no_result", "exit_code": int(code)}, f)


# --- parse and locate ----------------------------------------------------------------------
def _parse_all(sources):
    import ast

    ok, errors = [], []
    for src in sources:
        try:
            ast.parse(src)
            ok.append(True)
            errors.append(None)
        except SyntaxError as e:
            ok.append(False)
            errors.append(f"{type(e).__name__}: {e.msg} (line {e.lineno})")
        except (ValueError, RecursionError, MemoryError, TypeError) as e:
            ok.append(False)
            errors.append(f"{type(e).__name__}: {e}")
    return ok, errors


def _span(node):
    start = min([d.lineno for d in getattr(node, "decorator_list", [])] + [node.lineno])
    return {"start": start, "def_line": node.lineno, "end": node.end_lineno, "col": node.col_offset}


def _is_main_guard(node):
    import ast

    if not isinstance(node, ast.If) or not isinstance(node.test, ast.Compare):
        return False
    names = [node.test.left, *node.test.comparators]
    return any(isinstance(n, ast.Name) and n.id == "__name__" for n in names)


def _locate(source, function):
    import ast

    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError, RecursionError, MemoryError, TypeError) as e:
        msg = getattr(e, "msg", None) or str(e)
        line = getattr(e, "lineno", None)
        return {"error": f"{type(e).__name__}: {msg}" + (f" (line {line})" if line else ""),
                "error_type": type(e).__name__, "toplevel": [], "methods": []}
    funcs = (ast.FunctionDef, ast.AsyncFunctionDef)
    toplevel, methods = [], []
    for node in tree.body:
        if isinstance(node, funcs):
            toplevel.append({"kind": "def", "name": node.name, **_span(node)})
        elif isinstance(node, ast.ClassDef):
            toplevel.append({"kind": "class", "name": node.name, **_span(node)})
            for member in node.body:
                if isinstance(member, funcs) and member.name == function:
                    methods.append({"class": node.name, **_span(member)})
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            future = isinstance(node, ast.ImportFrom) and node.module == "__future__"
            toplevel.append({"kind": "future" if future else "import", "name": None,
                             **_span(node)})
        elif isinstance(node, (ast.Assign, ast.AnnAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            name = targets[0].id if len(targets) == 1 and isinstance(targets[0], ast.Name) else None
            toplevel.append({"kind": "assign" if name else "other", "name": name, **_span(node)})
        elif _is_main_guard(node):
            toplevel.append({"kind": "main", "name": None, **_span(node)})
        else:
            toplevel.append({"kind": "other", "name": None, **_span(node)})
    return {"error": None, "error_type": None, "toplevel": toplevel, "methods": methods}


# --- the loop ------------------------------------------------------------------------------
def _check_test_request(req):
    for k in ("id", "workdir", "cwd"):
        if not isinstance(req.get(k), str) or not req.get(k):
            return f"test request: {k} must be a non-empty string"
    if not isinstance(req.get("args", []), list):
        return "test request: args must be a list"
    return None


def _preload():
    import importlib
    import time

    t0 = time.perf_counter()
    import numpy  # noqa: F401
    import sklearn  # noqa: F401
    import torch

    torch.set_num_threads(1)
    try:
        torch.set_num_interop_threads(1)
    except RuntimeError:
        pass
    for name in _w._WARM_IMPORTS + ("pytest", "_pytest.python", "_pytest.assertion.rewrite",
                                    "_pytest.runner", "_pytest.terminal", "_pytest.fixtures",
                                    "reprolab.codegen_plugin", "scipy", "torch.testing"):
        try:
            importlib.import_module(name)
        except Exception as e:  # noqa: BLE001 - a missing optional module is not fatal
            print(f"reprolab codegen runner: could not pre-import {name}: {e}", file=sys.stderr)
    # Everything imported so far lives as long as the runner: move it out of the collector's
    # reach, so that a child's gc.collect() (pytest runs several at the end of each session)
    # neither walks it nor writes to its pages (each write would copy a page from the parent).
    import gc

    gc.collect()
    gc.freeze()
    return time.perf_counter() - t0, torch.__version__


def main(argv):
    import json
    import platform

    light = "--light" in argv
    _w._setup_channels()
    sandbox_status = _w.enter_worker_sandbox(argv)
    for var in _w._THREAD_VARS:
        os.environ.setdefault(var, "1")
    import_s, torch_version = 0.0, None
    if not light:
        try:
            import_s, torch_version = _preload()
        except BaseException as e:  # noqa: BLE001
            _w._emit({"ev": "error", "fatal": True,
                      "message": f"import failed: {type(e).__name__}: {e}"})
            return 1
    _w._emit({"ev": "ready", "pid": os.getpid(), "python": platform.python_version(),
              "torch": torch_version, "import_s": round(import_s, 3), "light": light, **sandbox_status})

    while True:
        line = sys.stdin.readline()
        if not line:
            return 0
        line = line.strip()
        if not line:
            continue
        try:
            req = json.loads(line)
        except ValueError as e:
            _w._emit({"ev": "error", "message": f"malformed request (not JSON): {e}"})
            continue
        if not isinstance(req, dict):
            _w._emit({"ev": "error", "message": "malformed request: expected a JSON object"})
            continue
        op = req.get("op")
        rid = req.get("id")
        if op == "shutdown":
            return 0
        if op == "test":
            err = _check_test_request(req)
            if err:
                _w._emit({"ev": "error", "id": rid, "message": err})
                continue
            _w.fork_and_wait(req, _child_test)
        elif op == "parse":
            ok, errors = _parse_all([s if isinstance(s, str) else "" for s in req.get("sources", [])])
            _w._emit({"ev": "parsed", "id": rid, "ok": ok, "errors": errors})
        elif op == "locate":
            results = [_locate(str(it.get("source", "")), str(it.get("function", "")))
                       for it in req.get("items", []) if isinstance(it, dict)]
            _w._emit({"ev": "located", "id": rid, "results": results})
        else:
            _w._emit({"ev": "error", "id": rid,
                      "message": f"unknown op {op!r}; expected test, parse, locate or shutdown"})


if __name__ == "__main__":
    _code = main(sys.argv[1:])
    for _stream in (_w._events, sys.stdout, sys.stderr):
        try:
            if _stream is not None:
                _stream.flush()
        except Exception:
            pass
    os._exit(_code or 0)
