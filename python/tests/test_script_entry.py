"""reprolab.script_entry: a script without train(config, seed) run as one."""
import json

import pytest

import reprolab
from reprolab import script_entry

CLI = '''
import argparse, sys
import reprolab
p = argparse.ArgumentParser()
p.add_argument("--lr", type=float, default=0.1)
p.add_argument("--amp", action="store_true")
p.add_argument("--seed", type=int, default=1)
p.add_argument("data")
a = p.parse_args()
if a.lr < 0:
    sys.exit(3)
if a.lr > 0:
    reprolab.result(search=a.lr, holdout=a.seed, amp=a.amp, data=a.data, argv=sys.argv[1:])
'''

CONSTANTS = '''
import reprolab
SEED = 1
LR: float = 0.1
EPOCHS = 2
reprolab.result(search=LR * EPOCHS, holdout=SEED)
'''


def _entry(tmp_path, source):
    (tmp_path / "main.py").write_text(source)
    return str(tmp_path / "reprolab_entry.py")


def test_options_reach_the_script_as_its_command_line(tmp_path):
    entry = _entry(tmp_path, CLI)
    options = {"lr": "--lr", "amp": ("--amp", "store_true")}
    out = script_entry.run_script_as_train(entry, "main.py", options, {"lr": 0.5, "amp": True},
                                           7, args=["d"], seed_option="--seed")
    assert out == {"search": 0.5, "holdout": 7, "amp": True, "data": "d",
                   "argv": ["d", "--lr", "0.5", "--amp", "--seed", "7"]}
    # A switch that is off is not passed.
    out = script_entry.run_script_as_train(entry, "main.py", options, {"lr": 0.5, "amp": False},
                                           7, args=["d"], seed_option="--seed")
    assert out["amp"] is False and "--amp" not in out["argv"]


def test_a_script_that_fails_or_reports_nothing_says_so(tmp_path):
    entry = _entry(tmp_path, CLI)
    options = {"lr": "--lr"}
    with pytest.raises(reprolab.ScriptExit, match="required: data"):
        script_entry.run_script_as_train(entry, "main.py", options, {"lr": 0.5}, 0)
    with pytest.raises(reprolab.ScriptExit, match="status 3"):
        script_entry.run_script_as_train(entry, "main.py", options, {"lr": -1}, 0, args=["d"])
    with pytest.raises(reprolab.ScriptResultMissing, match=r"reprolab.result\(search="):
        script_entry.run_script_as_train(entry, "main.py", options, {"lr": 0}, 0, args=["d"])
    with pytest.raises(reprolab.ReprolabContractError, match="'epochs': '--epochs'"):
        script_entry.run_script_as_train(entry, "main.py", options, {"epochs": 3}, 0)
    # Outside a run, result() only prints.
    assert reprolab._script_results is None


def test_constants_take_the_config_s_values(tmp_path):
    entry = _entry(tmp_path, CONSTANTS)
    out = script_entry.run_script_with_constants(entry, "main.py", {"LR": 0.5}, 9, "SEED")
    assert out == {"search": 1.0, "holdout": 9}
    with pytest.raises(reprolab.ReprolabContractError, match="'BATCH'"):
        script_entry.run_script_with_constants(entry, "main.py", {"BATCH": 3}, 9)


def test_result_prints_outside_reprolab(capsys):
    reprolab.result(search=0.5, holdout=0.25)
    assert capsys.readouterr().out == "reprolab.result: search=0.5, holdout=0.25\n"


def _notebook(cells):
    return json.dumps({"cells": [{"cell_type": t, "source": s, "metadata": {}} for t, s in cells],
                       "metadata": {}, "nbformat": 4, "nbformat_minor": 5})


def test_a_notebook_runs_as_the_script_its_code_cells_make(tmp_path):
    (tmp_path / "train.ipynb").write_text(_notebook([
        ("markdown", "# Training\nLR = 5"),
        ("code", ["%matplotlib inline\n", "import reprolab\n", "LR = 0.1\n", "EPOCHS = 2"]),
        ("code", "%%bash\necho not python"),
        ("code", "for i in range(1):\n    !nvidia-smi\n    x = LR * EPOCHS"),
        ("code", ["%%time\n", "display(x)\n", "reprolab.result(search=x, holdout=EPOCHS)"]),
    ]))
    source = script_entry.notebook_source(str(tmp_path / "train.ipynb"))
    assert "echo" not in source and "LR = 5" not in source
    assert "    pass\n    x = LR" in source
    entry = str(tmp_path / "reprolab_entry.py")
    out = script_entry.run_script_with_constants(entry, "train.ipynb", {"LR": 0.5}, 0)
    assert out == {"search": 1.0, "holdout": 2}
    (tmp_path / "broken.ipynb").write_text("{not json")
    with pytest.raises(reprolab.ReprolabContractError, match="not a notebook"):
        script_entry.notebook_source(str(tmp_path / "broken.ipynb"))
