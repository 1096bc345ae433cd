"""reprolab.scaffold: the contract's candidates and the config keys a script reads, by ast."""
import json
import subprocess
import sys

from reprolab import scaffold

SCRIPT = '''
DEFAULTS = {"epochs": 5, "hidden": 32}

def build(config):
    return config["hidden"], config[f"act{0}"]

def train(config, seed):
    lr = config.get("lr", 0.01)
    opt = config["optimizer"]
    return {"search": lr, "holdout": config["epochs"]}

def helper(x):
    return x

if __name__ == "__main__":
    train({"optimizer": "adam", "epochs": 9}, 0)
'''


def test_candidates_keys_and_their_literal_values():
    found = scaffold.scan(SCRIPT)
    assert [(f["name"], f["candidate"]) for f in found["functions"]] == [
        ("build", False), ("train", True), ("helper", False)]
    keys = {k["key"]: k for k in found["keys"]["train"]}
    assert list(keys) == ["hidden", "lr", "optimizer", "epochs"]
    assert keys["lr"]["value"] == 0.01 and keys["lr"]["source"] == "get"
    assert keys["optimizer"]["value"] == "adam" and keys["optimizer"]["source"] == "literal"
    # the first dict literal that names a key wins: the module's DEFAULTS
    assert keys["epochs"]["value"] == 5
    assert keys["hidden"]["value"] == 32
    assert found["dynamic"]["train"] == 1


def test_a_script_without_the_contract_has_no_candidate():
    found = scaffold.scan("def fit(model, data):\n    return model\n")
    assert [f["candidate"] for f in found["functions"]] == [False]


def test_the_command_line_prints_json_and_rejects_a_syntax_error(tmp_path):
    good = tmp_path / "t.py"
    good.write_text(SCRIPT)
    out = subprocess.run([sys.executable, "-m", "reprolab.scaffold", str(good)],
                         capture_output=True, text=True, cwd=scaffold.__file__.rsplit("/", 2)[0])
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout)["functions"][1]["name"] == "train"
    bad = tmp_path / "bad.py"
    bad.write_text("def train(config, seed):\n    return {\n")
    out = subprocess.run([sys.executable, "-m", "reprolab.scaffold", str(bad)],
                         capture_output=True, text=True, cwd=scaffold.__file__.rsplit("/", 2)[0])
    assert out.returncode == 2
    assert "bad.py:" in out.stderr and "syntax error" in out.stderr


def test_the_framework_is_read_from_the_imports():
    assert scaffold.scan(SCRIPT)["framework"] == "pytorch"
    assert scaffold.scan("import keras\nfrom keras import layers\n")["framework"] == "keras"
    assert scaffold.scan("from tensorflow import keras\n")["framework"] == "keras"
    # Keras on the torch backend still is a Keras program only without torch of its own.
    assert scaffold.scan("import torch\nimport keras\n")["framework"] == "pytorch"


CLI_SCRIPT = '''
import argparse
import reprolab

def main():
    p = argparse.ArgumentParser()
    p.add_argument("--batch-size", type=int, default=64, help="input batch size")
    p.add_argument("--lr", type=float, default="0.5")
    p.add_argument("--opt", dest="optimizer", default="sgd", choices=["sgd", "adam"])
    p.add_argument("-n", "--no-cuda", action="store_true")
    p.add_argument("--keep", action="store_false")
    p.add_argument("data")
    p.add_argument("-v", action="count")
    p.add_argument("--sizes", nargs="+", type=int)
    p.add_argument("--hidden", nargs="+", type=int, default=[64, 32])
    p.add_argument("--version", action="version", version="1")
    args = p.parse_args()
    reprolab.result(search=1.0, holdout=1.0)

if __name__ == "__main__":
    main()
'''


def test_a_command_line_is_read_from_its_add_argument_calls():
    cli = scaffold.scan(CLI_SCRIPT)["argparse"]
    options = {o["dest"]: o for o in cli["options"]}
    assert list(options) == ["batch_size", "lr", "optimizer", "no_cuda", "keep", "hidden"]
    assert options["hidden"]["value"] == [64, 32]
    assert options["batch_size"]["flag"] == "--batch-size" and options["batch_size"]["value"] == 64
    assert options["batch_size"]["help"] == "input batch size"
    assert options["lr"]["value"] == 0.5  # a string default goes through type=float
    assert options["optimizer"]["flag"] == "--opt"
    assert options["optimizer"]["choices"] == ["sgd", "adam"]
    # a switch: the long option, and its default is its opposite
    assert (options["no_cuda"]["flag"], options["no_cuda"]["action"], options["no_cuda"]["value"]) \
        == ("--no-cuda", "store_true", False)
    assert options["keep"]["value"] is True
    assert cli["positional"] == ["data"]
    assert cli["skipped"] == ["v", "sizes"]
    assert scaffold.scan(CLI_SCRIPT)["calls_result"] is True
    assert scaffold.scan("def f(a): pass\n")["argparse"] is None


def test_upper_case_top_level_literals_are_constants():
    found = scaffold.scan("LR = 0.1\nEPOCHS: int = 3\nlower = 1\nDEVICE = get()\n"
                          "LR = 0.2\ndef f():\n    INNER = 1\n")
    assert found["constants"] == [{"name": "LR", "line": 1, "value": 0.1},
                                  {"name": "EPOCHS", "line": 2, "value": 3}]
    assert found["calls_result"] is False
    assert scaffold.scan("from reprolab import result as r\nr(search=1, holdout=2)\n")["calls_result"]


def test_imports_the_interpreter_cannot_find_are_missing(tmp_path):
    (tmp_path / "helpers.py").write_text("X = 1\n")
    script = tmp_path / "train.py"
    script.write_text("import os, helpers\nfrom reprolab_absent_pkg.sub import f\n"
                      "from . import sibling\nimport json as j\n")
    out = subprocess.run([sys.executable, "-m", "reprolab.scaffold", str(script)],
                         capture_output=True, text=True, check=True)
    found = json.loads(out.stdout)
    assert found["imports"] == ["helpers", "json", "os", "reprolab_absent_pkg"]
    assert found["missing"] == ["reprolab_absent_pkg"]
