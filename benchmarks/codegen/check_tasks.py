#!/usr/bin/env python3
"""Validate codegen task files: schema, and that every task really discriminates.

For every function-level task it writes the reference to `solution.py` and the test to
`test_task.py` in a fresh temporary directory and runs pytest there, exactly as the harness
does; the reference must pass at least 3 tests, and each entry of "wrong" must fail at least
one. For every repository task it copies the repository, runs the named pytest node ids
(they must pass), then replaces the target function with a stub that raises and checks that
the node ids now fail (so the tests really exercise the function).

Why a standalone script: task authors need the check without building the Rust harness, and
a task set whose references do not pass is worthless (DL-Bench's own references passed 277 of
490 when run through its harness).

Usage: python check_tasks.py tasks.jsonl [repo-tasks.jsonl ...] [--jobs N] [--only SUBSTR]
"""

from __future__ import annotations

import argparse
import ast
import collections
import concurrent.futures
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import textwrap
import time
import xml.etree.ElementTree as ET
from dataclasses import dataclass, field
from pathlib import Path

STAGES = ("pre_post_processing", "model_construction", "training", "inference", "evaluation")
TASK_TYPES = ("classification", "regression", "object_detection", "image_segmentation",
              "time_series", "recommendation", "general")
DATA_TYPES = ("image", "text", "structured_array", "others")
REQUIREMENTS = ("torch", "numpy", "scikit-learn", "scipy")
ID_RE = re.compile(r"^[a-z0-9_/-]+$")
FUNCTION_FIELDS = {"id": str, "prompt": str, "entry_point": str, "reference": str, "test": str,
                   "labels": dict, "requirements": list}
FUNCTION_OPTIONAL = {"timeout_s": (int, float), "wrong": list}
REPO_FIELDS = {"id": str, "repo": str, "file": str, "function": str, "tests": list,
               "prompt": str, "labels": dict, "requirements": list}
REPO_OPTIONAL = {"class": str, "timeout_s": (int, float)}
# Top-level import name -> requirement name, for the packages a task may declare.
IMPORT_TO_REQUIREMENT = {"torch": "torch", "numpy": "numpy", "sklearn": "scikit-learn", "scipy": "scipy"}
DEFAULT_TIMEOUT_S = 60
MIN_TESTS = 3


@dataclass
class Task:
    source: Path          # the JSONL file it came from
    line: int
    data: dict
    kind: str             # "function" or "repository"
    problems: list[str] = field(default_factory=list)

    @property
    def id(self) -> str:
        return str(self.data.get("id", f"<line {self.line}>"))

    @property
    def timeout(self) -> float:
        return float(self.data.get("timeout_s", DEFAULT_TIMEOUT_S))


@dataclass
class RunResult:
    """One pytest run. `tests`/`failed` come from pytest's junit XML report."""
    status: str           # "ok", "timeout", "no_report"
    tests: int = 0
    failed: int = 0       # failures + errors
    skipped: int = 0
    seconds: float = 0.0
    output: str = ""
    failing: list[str] = field(default_factory=list)
    slowest: tuple[float, str] = (0.0, "")  # (seconds, test name) of the slowest test function


# ---------------------------------------------------------------- loading and schema


def load_tasks(path: Path) -> list[Task]:
    tasks = []
    for lineno, raw in enumerate(path.read_text().splitlines(), 1):
        if not raw.strip() or raw.lstrip().startswith("//"):
            continue
        try:
            data = json.loads(raw)
        except json.JSONDecodeError as e:
            t = Task(path, lineno, {}, "function")
            t.problems.append(f"{path}:{lineno}: not valid JSON: {e}")
            tasks.append(t)
            continue
        if not isinstance(data, dict):
            t = Task(path, lineno, {}, "function")
            t.problems.append(f"{path}:{lineno}: expected a JSON object, found {type(data).__name__}")
            tasks.append(t)
            continue
        tasks.append(Task(path, lineno, data, "repository" if "repo" in data else "function"))
    return tasks


def check_fields(task: Task, required: dict, optional: dict) -> None:
    where = f"{task.source.name}:{task.line} ({task.id})"
    for name, typ in required.items():
        if name not in task.data:
            task.problems.append(f"{where}: missing field '{name}'")
        elif not isinstance(task.data[name], typ):
            task.problems.append(f"{where}: field '{name}' should be {typ.__name__}, "
                                 f"found {type(task.data[name]).__name__}")
    for name, typ in optional.items():
        if name in task.data and not isinstance(task.data[name], typ):
            task.problems.append(f"{where}: field '{name}' has type {type(task.data[name]).__name__}")
    unknown = set(task.data) - set(required) - set(optional)
    if unknown:
        task.problems.append(f"{where}: unknown fields {sorted(unknown)}")
    ident = task.data.get("id")
    if isinstance(ident, str) and not ID_RE.match(ident):
        task.problems.append(f"{where}: id must match [a-z0-9_/-]+")
    labels = task.data.get("labels")
    if isinstance(labels, dict):
        for key, vocab in (("stage", STAGES), ("task", TASK_TYPES), ("data", DATA_TYPES)):
            if labels.get(key) not in vocab:
                task.problems.append(f"{where}: labels.{key} is {labels.get(key)!r}, "
                                     f"expected one of {', '.join(vocab)}")
        extra = set(labels) - {"stage", "task", "data"}
        if extra:
            task.problems.append(f"{where}: unknown label keys {sorted(extra)}")
    reqs = task.data.get("requirements")
    if isinstance(reqs, list):
        bad = [r for r in reqs if r not in REQUIREMENTS]
        if bad:
            task.problems.append(f"{where}: requirements {bad} not in {', '.join(REQUIREMENTS)}")
    timeout = task.data.get("timeout_s")
    if isinstance(timeout, (int, float)) and timeout <= 0:
        task.problems.append(f"{where}: timeout_s must be positive, found {timeout}")


def parse_or_problem(task: Task, what: str, text: str) -> ast.Module | None:
    try:
        return ast.parse(text)
    except SyntaxError as e:
        task.problems.append(f"{task.id}: {what} does not parse: line {e.lineno}: {e.msg}")
        return None


def count_test_functions(tree: ast.Module) -> int:
    """Module-level `test_*` functions plus `test_*` methods of `Test*` classes."""
    n = 0
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name.startswith("test"):
            n += 1
        elif isinstance(node, ast.ClassDef) and node.name.startswith("Test"):
            n += sum(1 for m in node.body
                     if isinstance(m, (ast.FunctionDef, ast.AsyncFunctionDef))
                     and m.name.startswith("test"))
    return n


def imported_requirements(tree: ast.Module) -> set[str]:
    """Requirement names of the known packages a module imports anywhere."""
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names = [node.module]
        else:
            continue
        for name in names:
            req = IMPORT_TO_REQUIREMENT.get(name.split(".")[0])
            if req:
                found.add(req)
    return found


def validate_function_task(task: Task) -> None:
    check_fields(task, FUNCTION_FIELDS, FUNCTION_OPTIONAL)
    if task.problems:
        return
    d = task.data
    entry = d["entry_point"]
    ref = parse_or_problem(task, "reference", d["reference"])
    if ref is not None and not any(
        isinstance(n, (ast.FunctionDef, ast.ClassDef)) and n.name == entry for n in ref.body
    ):
        task.problems.append(f"{task.id}: reference defines no top-level '{entry}'")
    prompt = parse_or_problem(task, "prompt", d["prompt"])
    if prompt is not None and entry not in d["prompt"]:
        task.problems.append(f"{task.id}: prompt does not mention entry point '{entry}'")
    test = parse_or_problem(task, "test", d["test"])
    if test is not None:
        n = count_test_functions(test)
        if n < MIN_TESTS:
            task.problems.append(f"{task.id}: test has {n} test functions, expected >= {MIN_TESTS}")
        if "from solution import" not in d["test"] and "import solution" not in d["test"]:
            task.problems.append(f"{task.id}: test never imports from 'solution'")
    if ref is not None and test is not None:
        # The harness may refuse or skip tasks whose packages are missing, so every package the
        # reference or the test imports must be declared.
        undeclared = (imported_requirements(ref) | imported_requirements(test)) - set(d["requirements"])
        if undeclared:
            task.problems.append(f"{task.id}: requirements lack {sorted(undeclared)} "
                                 f"(imported by the reference or the test)")
    wrong = d.get("wrong", [])
    if not wrong:
        task.problems.append(f"{task.id}: no 'wrong' solutions (at least one recommended)")
    for i, module in enumerate(wrong):
        if not isinstance(module, str):
            task.problems.append(f"{task.id}: wrong[{i}] is not a string")
        elif module.strip() == d["reference"].strip():
            task.problems.append(f"{task.id}: wrong[{i}] is identical to the reference")
        else:
            # A wrong solution that does not even parse tests nothing about the test's power.
            parse_or_problem(task, f"wrong[{i}]", module)


def find_definition(tree: ast.Module, function: str, cls: str | None):
    body = tree.body
    if cls is not None:
        classes = [n for n in body if isinstance(n, ast.ClassDef) and n.name == cls]
        if not classes:
            return None
        body = classes[0].body
    for node in body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name == function:
            return node
    return None


def validate_repo_task(task: Task) -> None:
    check_fields(task, REPO_FIELDS, REPO_OPTIONAL)
    if task.problems:
        return
    d = task.data
    repo = task.source.parent / d["repo"]
    if not repo.is_dir():
        task.problems.append(f"{task.id}: repo '{d['repo']}' is not a directory next to {task.source}")
        return
    target = repo / d["file"]
    if not target.is_file():
        task.problems.append(f"{task.id}: file '{d['file']}' not found in {repo}")
        return
    tree = parse_or_problem(task, d["file"], target.read_text())
    if tree is not None and find_definition(tree, d["function"], d.get("class")) is None:
        owner = f"class {d['class']}" if d.get("class") else "module level"
        task.problems.append(f"{task.id}: no function '{d['function']}' at {owner} of {d['file']}")
    if not d["tests"]:
        task.problems.append(f"{task.id}: 'tests' is empty")
    for node_id in d["tests"]:
        if not isinstance(node_id, str) or not (repo / node_id.split("::")[0]).is_file():
            task.problems.append(f"{task.id}: test node '{node_id}' names no file in the repo")


# ---------------------------------------------------------------- running pytest


def run_pytest(workdir: Path, targets: list[str], timeout: float, python: str) -> RunResult:
    """Run pytest in its own process group; kill the whole group on timeout."""
    report = workdir / ".junit.xml"
    cmd = [python, "-m", "pytest", "-q", "-p", "no:cacheprovider", "--tb=short",
           f"--junitxml={report}", *targets]
    env = dict(os.environ, OMP_NUM_THREADS="1", MKL_NUM_THREADS="1",
               PYTHONDONTWRITEBYTECODE="1", PYTHONHASHSEED="0")
    start = time.monotonic()
    proc = subprocess.Popen(cmd, cwd=workdir, env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True, start_new_session=True)
    try:
        out, _ = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        out, _ = proc.communicate()
        return RunResult("timeout", seconds=time.monotonic() - start, output=out[-3000:])
    seconds = time.monotonic() - start
    if not report.exists():
        return RunResult("no_report", seconds=seconds, output=out[-3000:])
    root = ET.parse(report).getroot()
    result = RunResult("ok", seconds=seconds, output=out[-3000:])
    for case in root.iter("testcase"):
        result.tests += 1
        seconds_in_test = float(case.get("time", 0.0))
        if seconds_in_test > result.slowest[0]:
            result.slowest = (seconds_in_test, case.get("name", "?"))
        if case.find("failure") is not None or case.find("error") is not None:
            result.failed += 1
            result.failing.append(case.get("name", "?"))
        elif case.find("skipped") is not None:
            result.skipped += 1
    # Collection errors are reported as <testsuite errors=N> with no testcase for the test.
    suite_errors = sum(int(s.get("errors", 0)) for s in root.iter("testsuite"))
    counted_errors = sum(1 for c in root.iter("testcase") if c.find("error") is not None)
    result.failed += max(0, suite_errors - counted_errors)
    return result


def run_function_variant(task: Task, module: str, python: str) -> RunResult:
    with tempfile.TemporaryDirectory(prefix="codegen-check-") as tmp:
        work = Path(tmp)
        (work / "solution.py").write_text(module)
        (work / "test_task.py").write_text(task.data["test"])
        return run_pytest(work, ["test_task.py"], task.timeout, python)


def stub_out(source: str, function: str, cls: str | None) -> str:
    """Replace a definition (decorators included) with one that raises, keeping indentation."""
    tree = ast.parse(source)
    node = find_definition(tree, function, cls)
    lines = source.splitlines(keepends=True)
    start = min([node.lineno] + [d.lineno for d in node.decorator_list]) - 1
    indent = re.match(r"\s*", lines[node.lineno - 1]).group(0)
    decorators = "".join(lines[d.lineno - 1] for d in node.decorator_list)
    stub = decorators + textwrap.indent(
        f"def {function}(*args, **kwargs):\n    raise NotImplementedError('stubbed by check_tasks')\n",
        indent)
    return "".join(lines[:start]) + stub + "".join(lines[node.end_lineno:])


def run_repo_variant(task: Task, stubbed: bool, python: str) -> RunResult:
    d = task.data
    with tempfile.TemporaryDirectory(prefix="codegen-check-repo-") as tmp:
        work = Path(tmp) / "repo"
        shutil.copytree(task.source.parent / d["repo"], work,
                        ignore=shutil.ignore_patterns("__pycache__", ".pytest_cache"))
        if stubbed:
            target = work / d["file"]
            target.write_text(stub_out(target.read_text(), d["function"], d.get("class")))
        return run_pytest(work, list(d["tests"]), task.timeout, python)


# ---------------------------------------------------------------- orchestration


def judge(task: Task, variant: str, result: RunResult) -> str | None:
    """Return a problem description, or None when the variant behaves as required."""
    if variant == "reference":
        if result.status != "ok":
            return f"reference: {result.status}\n{result.output}"
        if result.failed or result.skipped or result.tests < (MIN_TESTS if task.kind == "function" else 1):
            return (f"reference: {result.tests} tests, {result.failed} failed "
                    f"({', '.join(result.failing)}), {result.skipped} skipped\n{result.output}")
        return None
    if result.status == "timeout":
        return None if task.kind == "repository" else f"{variant}: timed out (make it fail fast)"
    if result.status != "ok" or result.failed == 0:
        return f"{variant}: expected at least one failing test, got {result.status} " \
               f"with {result.tests} tests all passing"
    return None


def units_for(task: Task) -> list[tuple[str, object]]:
    if task.kind == "function":
        units = [("reference", task.data["reference"])]
        units += [(f"wrong[{i}]", m) for i, m in enumerate(task.data.get("wrong", []))]
        return units
    return [("reference", False), ("stubbed", True)]


def main() -> int:
    parser = argparse.ArgumentParser(description="Validate codegen task files.")
    parser.add_argument("files", nargs="+", type=Path)
    parser.add_argument("--jobs", type=int, default=min(2, os.cpu_count() or 1))
    parser.add_argument("--only", default="", help="check only tasks whose id contains this")
    parser.add_argument("--python", default=sys.executable, help="interpreter that runs pytest")
    parser.add_argument("--schema-only", action="store_true", help="skip running pytest")
    args = parser.parse_args()

    started = time.monotonic()
    tasks: list[Task] = []
    for path in args.files:
        if not path.is_file():
            print(f"error: {path} does not exist", file=sys.stderr)
            return 2
        tasks += load_tasks(path.resolve())
    seen: dict[str, Task] = {}
    for task in tasks:
        (validate_function_task if task.kind == "function" else validate_repo_task)(task)
        if task.id in seen:
            task.problems.append(f"{task.id}: duplicate id (also {seen[task.id].source.name}:"
                                 f"{seen[task.id].line})")
        seen[task.id] = task
    selected = [t for t in tasks if args.only in t.id]

    results: dict[tuple[str, str], RunResult] = {}
    if not args.schema_only:
        runnable = [t for t in selected if not t.problems]
        jobs = []
        with concurrent.futures.ThreadPoolExecutor(max_workers=max(1, args.jobs)) as pool:
            for task in runnable:
                for variant, payload in units_for(task):
                    if task.kind == "function":
                        fut = pool.submit(run_function_variant, task, payload, args.python)
                    else:
                        fut = pool.submit(run_repo_variant, task, payload, args.python)
                    jobs.append((task, variant, fut))
            for task, variant, fut in jobs:
                result = fut.result()
                results[(task.id, variant)] = result
                problem = judge(task, variant, result)
                if problem:
                    task.problems.append(f"{task.id}: {problem}")

    # ------------------------------------------------------------ report
    total_tests = 0
    for task in selected:
        ref = results.get((task.id, "reference"))
        extra = ""
        if ref is not None:
            total_tests += ref.tests
            wrongs = [(v, r) for (i, v), r in results.items() if i == task.id and v != "reference"]
            caught = ", ".join(f"{v} fails {r.failed}/{r.tests}" for v, r in wrongs)
            task_secs = ref.seconds + sum(r.seconds for _, r in wrongs)
            extra = f"  {ref.tests} tests  {task_secs:5.1f}s  {caught}"
        mark = "FAIL" if task.problems else "ok  "
        print(f"{mark} {task.id:<48}{extra}")
    references = [(r.slowest, tid) for (tid, v), r in results.items() if v == "reference"]
    if references:
        (secs, name), tid = max(references)
        print(f"\nslowest reference test function: {secs:.2f}s ({tid}::{name}); "
              f"pytest process time is dominated by importing torch")
    problems = [p for t in selected for p in t.problems]
    if problems:
        print("\nproblems:")
        for p in problems:
            print("  - " + p.replace("\n", "\n    "))

    print(f"\n{len(selected)} tasks ({sum(t.kind == 'function' for t in selected)} function, "
          f"{sum(t.kind == 'repository' for t in selected)} repository), "
          f"{sum(len(t.data.get('wrong', [])) for t in selected if t.kind == 'function')} wrong "
          f"solutions, {total_tests} reference tests run, "
          f"{sum(1 for t in selected if t.problems)} with problems, "
          f"{time.monotonic() - started:.0f}s wall with {args.jobs} jobs")
    for key, vocab in (("stage", STAGES), ("task", TASK_TYPES), ("data", DATA_TYPES)):
        counts = collections.Counter(t.data.get("labels", {}).get(key) for t in selected)
        print(f"  {key:<6} " + "  ".join(f"{v}={counts.get(v, 0)}" for v in vocab))
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
