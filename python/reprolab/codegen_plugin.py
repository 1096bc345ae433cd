"""pytest plugin of `reprolab codegen`: records every test's outcome with the exception's type,
message and traceback, and writes them as one JSON file when the session ends.

Loaded with `-p reprolab.codegen_plugin --reprolab-result PATH [--reprolab-check FILE ...]`, the
same way by the warm runner (`reprolab.codegen_runner`, one fork per sample) and by the fresh
baseline (`python -m pytest`, one process per sample), so both produce the same record:

    {"status": "done", "exit_code": 1, "tests_s": 0.42,
     "tests": [{"nodeid", "outcome": "passed|failed|error|skipped", "duration_s",
                "type", "message", "traceback", "oom"}],
     "collect_errors": [{"nodeid", "type", "message", "traceback", "oom"}],
     "precheck": null | {"type": "SyntaxError", "message", "traceback", "file", "line"}}

Why a plugin rather than junit XML (what Deep-Bench's harness reads): junit keeps only a text
message, while the failure taxonomy needs the exception's real type. `--reprolab-check` compiles
the candidate's files before collection, so a syntax error is reported with its exact type, file
and line instead of pytest's collection text.
"""
from __future__ import annotations

import json
import os
import re

MAX_MESSAGE = 2000
MAX_TRACEBACK = 4000
_OOM_MARKERS = ("can't allocate memory", "DefaultCPUAllocator", "out of memory")
# The last "E   SomeError: message" line of a collection report (pytest turns import failures
# into text, so the type has to be read back from it).
_E_LINE = re.compile(r"^E\s+([A-Za-z_][\w.]*(?:Error|Exception|Exit|Interrupt|Warning|Failed)):?\s?(.*)$")

_state = None
_session = None


class _State:
    def __init__(self, result_path, check_files, reference=None, entry=None):
        self.result_path = result_path
        # Behaviour evidence (reprolab.codegen_behaviour): the reference module's path and the
        # entry point, the recorder of the test running now, and each failed test's finding.
        self.reference = reference
        self.entry = entry
        self.recorder = None
        self.behaviour = {}
        self.tests = {}  # nodeid -> record, in report order (dicts keep insertion order)
        self.collect_errors = []
        self.excinfo = {}  # (nodeid, when) -> (type, message, oom)
        self.precheck = _compile_check(check_files)


def _truncate(text, limit, keep_end):
    if text is None:
        return ""
    text = str(text)
    if len(text) <= limit:
        return text
    cut = len(text) - limit
    if keep_end:
        return f"[... {cut} characters cut]\n" + text[-limit:]
    return text[:limit] + f"\n[... {cut} characters cut]"


def _type_name(t):
    module = getattr(t, "__module__", None) or ""
    name = getattr(t, "__qualname__", None) or getattr(t, "__name__", "Exception")
    if module in ("builtins", "") or module.startswith("_pytest") or module in ("solution",):
        return name
    return f"{module}.{name}"


def _safe_str(e):
    try:
        return str(e)
    except BaseException:  # noqa: BLE001 - a broken __str__ must not break the record
        try:
            return repr(e)
        except BaseException:  # noqa: BLE001
            return "<unprintable exception>"


def _is_oom(type_name, message):
    if type_name.endswith("MemoryError") or type_name.endswith("OutOfMemoryError"):
        return True
    return any(m in message for m in _OOM_MARKERS)


def _compile_check(files):
    """The first syntax error among `files`, as a record; None when they all compile."""
    import traceback

    for path in files or ():
        try:
            with open(path, "rb") as f:
                source = f.read()
            compile(source, path, "exec", dont_inherit=True)
        except SyntaxError as e:  # IndentationError and TabError are SyntaxErrors
            return {
                "type": type(e).__name__,
                "message": _truncate(f"{e.msg} ({os.path.basename(path)}, line {e.lineno})",
                                     MAX_MESSAGE, keep_end=False),
                "traceback": _truncate("".join(traceback.format_exception_only(type(e), e)),
                                       MAX_TRACEBACK, keep_end=True),
                "file": path,
                "line": e.lineno,
            }
        except (OSError, ValueError) as e:  # unreadable file, NUL bytes
            return {"type": type(e).__name__, "message": _safe_str(e), "traceback": "",
                    "file": path, "line": None}
    return None


def _from_text(text):
    """(type, message) from the last `E   Type: message` line of a report's text."""
    found = None
    for line in text.splitlines():
        m = _E_LINE.match(line)
        if m:
            found = (m.group(1), m.group(2).strip())
    return found or ("CollectionError", text.strip().splitlines()[-1] if text.strip() else "")


def pytest_addoption(parser):
    group = parser.getgroup("reprolab")
    group.addoption("--reprolab-result", action="store", default=None,
                    help="write per-test outcomes as JSON to this file")
    group.addoption("--reprolab-check", action="append", default=[],
                    help="compile this file before collection and report its syntax error")
    group.addoption("--reprolab-reference", action="store", default=None,
                    help="the reference solution: on a failed test, run it on the test's calls and compare")
    group.addoption("--reprolab-entry", action="store", default=None,
                    help="the entry point the tests import from solution")


def pytest_configure(config):
    global _state
    path = config.getoption("--reprolab-result", default=None)
    if path:
        _state = _State(os.path.abspath(path), config.getoption("--reprolab-check", default=[]),
                        config.getoption("--reprolab-reference", default=None),
                        config.getoption("--reprolab-entry", default=None))


def pytest_sessionstart(session):
    global _session
    _session = session


def _stop_on_oom():
    """An allocation failed: the sample's verdict is `oom` whatever the other tests do, and
    each of them would only fill memory up to the bound again."""
    if _session is not None:
        _session.shouldstop = "reprolab: an allocation failed (memory bound)"


def pytest_collection(session):
    """A candidate that does not compile cannot be imported: skip collection, whose error
    report would only repeat the syntax error (and costs a second rendering tracebacks)."""
    if _state is not None and _state.precheck is not None:
        session.items = []
        session.testscollected = 0
        return True
    return None


def pytest_collectreport(report):
    if _state is None or not report.failed:
        return
    text = report.longreprtext or ""
    kind, message = _from_text(text)
    _state.collect_errors.append({
        "nodeid": report.nodeid,
        "type": kind,
        "message": _truncate(message, MAX_MESSAGE, keep_end=False),
        "traceback": _truncate(text, MAX_TRACEBACK, keep_end=True),
        "oom": _is_oom(kind, message),
    })


try:
    import pytest as _pytest_mod

    _hookwrapper = _pytest_mod.hookimpl(hookwrapper=True)
except Exception:  # noqa: BLE001 - imported outside pytest (docs, linters)
    def _hookwrapper(f):
        return f


@_hookwrapper
def pytest_runtest_call(item):
    """Record the calls of the entry point while the test runs (behaviour evidence)."""
    patched = _patch_entry(item)
    try:
        yield
    finally:
        for module, name, original in patched:
            setattr(module, name, original)
        if _state is not None and _state.recorder is not None:
            # a class entry point's methods were wrapped on the class itself
            _state.recorder.restore()


def _patch_entry(item):
    import sys

    if _state is None or not _state.reference or not _state.entry:
        return []
    solution = sys.modules.get("solution")
    func = getattr(solution, _state.entry, None) if solution is not None else None
    if not callable(func):
        return []
    from reprolab.codegen_behaviour import Recorder

    _state.recorder = Recorder(func)
    patched = []
    for module in (getattr(item, "module", None), solution):
        if module is not None and getattr(module, _state.entry, None) is func:
            patched.append((module, _state.entry, func))
            setattr(module, _state.entry, _state.recorder)
    return patched


def _behaviour(item):
    """The finding of a failed test (None when there is nothing to compare)."""
    rec, _state.recorder = _state.recorder, None
    if rec is None:
        return None
    try:
        from reprolab import codegen_behaviour as b

        ref = b.load_reference(_state.reference, _state.entry)
        solution = __import__("sys").modules.get("solution")
        cand_src = b.source_of(solution.__file__) if getattr(solution, "__file__", None) else ""
        return b.analyse(rec, ref, cand_src, b.source_of(_state.reference), _state.entry)
    except BaseException as e:  # noqa: BLE001 - evidence must never break the record
        return {"finding": "unavailable", "note": f"{type(e).__name__}: {_safe_str(e)[:200]}"}


@_hookwrapper
def pytest_runtest_makereport(item, call):
    """Keep the real exception of a failing phase; the report only has its text."""
    outcome = yield
    if _state is None or call.excinfo is None:
        return
    report = outcome.get_result()
    if report.passed or report.skipped:
        return
    exc = call.excinfo
    kind = _type_name(exc.type)
    message = _safe_str(exc.value)
    _state.excinfo[(item.nodeid, call.when)] = (kind, message, _is_oom(kind, message))
    if call.when == "call" and not _is_oom(kind, message):
        finding = _behaviour(item)
        if finding is not None:
            _state.behaviour[item.nodeid] = finding


def pytest_runtest_logreport(report):
    if _state is None:
        return
    rec = _state.tests.setdefault(report.nodeid, {
        "nodeid": report.nodeid, "outcome": "passed", "duration_s": 0.0,
        "type": None, "message": None, "traceback": None, "oom": False,
    })
    rec["duration_s"] += float(getattr(report, "duration", 0.0) or 0.0)
    xfail = hasattr(report, "wasxfail")
    if report.when == "call":
        if report.passed:
            rec["outcome"] = "passed"
        elif report.skipped:
            rec["outcome"] = "skipped"
        else:
            rec["outcome"] = "failed"
    elif report.failed and rec["outcome"] != "failed":
        # Setup or teardown failed: the test could not be judged (pytest's "error").
        rec["outcome"] = "error"
    elif report.skipped and report.when == "setup":
        rec["outcome"] = "skipped"
    if xfail and report.skipped:
        rec["outcome"] = "skipped"
    if report.failed and rec["type"] is None:
        kind, message, oom = _state.excinfo.get(
            (report.nodeid, report.when), _from_text(report.longreprtext or "") + (False,))
        rec["type"] = kind
        rec["message"] = _truncate(message, MAX_MESSAGE, keep_end=False)
        rec["traceback"] = _truncate(report.longreprtext or "", MAX_TRACEBACK, keep_end=True)
        rec["oom"] = bool(oom) or _is_oom(kind, message)
        if report.nodeid in _state.behaviour:
            rec["behaviour"] = _state.behaviour[report.nodeid]
        if rec["oom"]:
            _stop_on_oom()


def pytest_sessionfinish(session, exitstatus):
    if _state is None:
        return
    tests = list(_state.tests.values())
    record = {
        "status": "done",
        "exit_code": int(exitstatus),
        "tests_s": round(sum(t["duration_s"] for t in tests), 6),
        "tests": tests,
        "collect_errors": _state.collect_errors,
        "precheck": _state.precheck,
    }
    tmp = _state.result_path + ".tmp"
    with open(tmp, "w", encoding="utf-8") as f:
        json.dump(record, f)
    os.replace(tmp, _state.result_path)
