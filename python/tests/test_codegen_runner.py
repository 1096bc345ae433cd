"""The codegen runner's ast helpers (what the Rust patcher relies on) and the pytest plugin's
per-test record, run in a fresh pytest process as the `--fresh` baseline does."""
import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

from reprolab import codegen_runner

PYTHON_DIR = Path(__file__).resolve().parents[1]

SOURCE = textwrap.dedent('''\
    from __future__ import annotations
    import torch
    EPS = 1e-6


    @decorator(1)
    def scale(x,
              k):
        return x * k


    class Scaler:
        @staticmethod
        def scale(x, k):
            return x


    if __name__ == "__main__":
        print(scale(1, 2))
    print("example")
''')


def test_locate_gives_line_ranges_with_decorators():
    r = codegen_runner._locate(SOURCE, "scale")
    assert r["error"] is None
    kinds = [(t["kind"], t["name"], t["start"], t["end"]) for t in r["toplevel"]]
    assert kinds == [
        ("future", None, 1, 1),
        ("import", None, 2, 2),
        ("assign", "EPS", 3, 3),
        ("def", "scale", 6, 9),
        ("class", "Scaler", 12, 15),
        ("main", None, 18, 19),
        ("other", None, 20, 20),
    ]
    assert r["toplevel"][3]["def_line"] == 7
    [m] = r["methods"]
    assert (m["class"], m["start"], m["def_line"], m["end"], m["col"]) == ("Scaler", 13, 14, 15, 4)


def test_locate_and_parse_report_syntax_errors():
    r = codegen_runner._locate("def f(:\n", "f")
    assert r["error_type"] == "SyntaxError" and "line 1" in r["error"]
    ok, errors = codegen_runner._parse_all(["x = 1\n", "def (", "\0"])
    assert ok == [True, False, False]
    assert errors[0] is None and errors[1].startswith("SyntaxError")


def _run_pytest(tmp_path, solution, test):
    src = tmp_path / "src"
    src.mkdir()
    (src / "solution.py").write_text(solution)
    (src / "test_task.py").write_text(test)
    (src / "pytest.ini").write_text("[pytest]\n")
    result = tmp_path / "result.json"
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(PYTHON_DIR), str(src)]))
    subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-s", "-p", "no:cacheprovider", "test_task.py",
         "-p", "reprolab.codegen_plugin", "--reprolab-result", str(result),
         "--reprolab-check", "solution.py"],
        cwd=src, env=env, capture_output=True, timeout=120)
    return json.loads(result.read_text())


TEST = textwrap.dedent('''\
    import pytest
    from solution import f

    def test_ok():
        assert f(1) == 2

    def test_assert():
        assert f(2) == 5

    def test_raises():
        with pytest.raises(ValueError):
            f(-1)

    def test_type():
        f("x")
''')


def test_plugin_records_each_test_with_the_real_exception_type(tmp_path):
    rec = _run_pytest(tmp_path, "def f(x):\n    return x + 1\n", TEST)
    assert rec["status"] == "done" and rec["precheck"] is None
    by = {t["nodeid"].split("::")[1]: t for t in rec["tests"]}
    assert by["test_ok"]["outcome"] == "passed"
    assert by["test_assert"]["type"] == "AssertionError"
    assert "assert 3 == 5" in by["test_assert"]["message"]
    assert by["test_raises"]["type"] == "Failed" and "DID NOT RAISE" in by["test_raises"]["message"]
    assert by["test_type"]["type"] == "TypeError"
    assert "test_task.py" in by["test_type"]["traceback"]


def test_plugin_reports_a_syntax_error_and_skips_collection(tmp_path):
    rec = _run_pytest(tmp_path, "def f(x:\n    return x\n", TEST)
    assert rec["precheck"]["type"] == "SyntaxError"
    assert "solution.py, line 1" in rec["precheck"]["message"]
    assert rec["tests"] == [] and rec["collect_errors"] == []
