"""reprolab.precheck: static findings on a reproduction script, nothing of it executed."""
import json
import subprocess
import sys

from reprolab import precheck


def kinds(source, expect=None):
    return [(f["kind"], f["line"], f["blocking"]) for f in precheck.check(source, expect=expect)]


def test_a_clean_script_has_no_findings():
    src = (
        "import math\n"
        "import torch\n"
        "from torch import nn\n"
        "def f(x, *a, **k):\n"
        "    global G\n"
        "    G = [i for i in range(3)]\n"
        "    return nn.Linear(2, 1)(x) + math.pi + len(a)\n"
        "class M(nn.Module):\n"
        "    scale = 2\n"
        "    def forward(self, x):\n"
        "        return x * self.scale + G[0]\n"
        "f(torch.ones(2))\n"
        "print(__file__, __name__, (lambda q: q)(1))\n"
    )
    assert kinds(src) == []


def test_a_syntax_error_blocks_with_its_line():
    found = precheck.check("import torch\ndef f(:\n    pass\n")
    assert [(f["kind"], f["line"], f["blocking"]) for f in found] == [("syntax", 2, True)]
    assert found[0]["message"].startswith("SyntaxError")


def test_a_package_the_environment_lacks_blocks_unless_guarded_or_the_bug():
    src = (
        "import json\n"
        "import no_such_package_xyz.sub as s\n"
        "from also_missing_abc import thing\n"
        "try:\n"
        "    import guarded_missing_def\n"
        "except ImportError:\n"
        "    guarded_missing_def = None\n"
        "from . import local\n"
    )
    assert kinds(src) == [("missing-module", 2, True), ("missing-module", 3, True)]
    # The report's own error is an ImportError: the missing package may be the bug.
    assert kinds(src, expect="ModuleNotFoundError") == []


def test_names_bound_nowhere_are_advisory():
    src = (
        "import json\n"
        "def step(x):\n"
        "    return x + lr * grad_fn(x)\n"
        "class M:\n"
        "    size = 3\n"
        "    def f(self):\n"
        "        return size\n"  # a class attribute is not in a method's scope: a NameError
        "lr = 0.1\n"
    )
    found = precheck.check(src)
    assert [(f["kind"], f["line"], f["blocking"]) for f in found] == [
        ("undefined-name", 3, False), ("undefined-name", 7, False)]
    assert "`grad_fn`" in found[0]["message"] and "`size`" in found[1]["message"]
    # A star import can bind anything: no name is reported.
    assert kinds("from math import *\nprint(tau + undefined_here)\n") == []


def test_the_command_prints_json_and_imports_from_the_given_paths(tmp_path):
    (tmp_path / "proj").mkdir()
    (tmp_path / "proj" / "mylib.py").write_text("X = 1\n")
    script = tmp_path / "s.py"
    script.write_text("import mylib\nimport sibling\nprint(mylib.X)\n")
    (tmp_path / "sibling.py").write_text("")
    out = subprocess.run(
        [sys.executable, "-m", "reprolab.precheck", str(script), "--path", str(tmp_path / "proj")],
        capture_output=True, text=True, check=True)
    assert json.loads(out.stdout) == []
    out = subprocess.run([sys.executable, "-m", "reprolab.precheck", str(script)],
                         capture_output=True, text=True, check=True)
    assert [f["line"] for f in json.loads(out.stdout)] == [1]
