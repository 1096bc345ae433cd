"""Run a training script that has no `train(config, seed)` as reprolab's `train`: a command-line
script (argparse options, `run_script_as_train`) or one that sets its hyperparameters as top-level
constants (`LR = 0.01`, `run_script_with_constants`).

`reprolab init` writes this entry for a script that has no `train(config, seed)`:

    from reprolab.script_entry import run_script_as_train

    SCRIPT = "main.py"
    OPTIONS = {"lr": "--lr", "batch_size": "--batch-size", "amp": ("--amp", "store_true")}
    ARGS = []                  # passed first, unchanged: positional arguments, fixed options
    SEED_OPTION = "--seed"     # None when the script takes no seed

    def train(config, seed):
        return run_script_as_train(__file__, SCRIPT, OPTIONS, config, seed, ARGS, SEED_OPTION)

Each config key reaches the script as the option OPTIONS names: `--lr 0.01`; a switch
(`store_true` / `store_false`) is passed alone when the config value asks for it; a list is
passed as several values (`nargs`). The script then runs as `python main.py ARGS ... --seed N`
would, but in the warm worker (no new process, torch already imported): as `__main__`, with that
`sys.argv`, after `reprolab.seed_everything(seed)`. Its metric is what it passes to
`reprolab.result(search=..., holdout=...)`; a script that ends without calling it raises
`ScriptResultMissing`, one that exits with a failure status (argparse rejecting an option)
`ScriptExit`.

A script of constants runs with config.json's values in place of the constants it names (the
assignment `LR = 0.01` at the top level of the script becomes `LR = config["LR"]`; nothing else
of the script changes) and reprolab's seed in place of `SEED_CONSTANT`'s. A Jupyter notebook
(`.ipynb`) runs the same way, as the script its code cells make (`notebook_source`).
"""
from __future__ import annotations

import ast
import json
import os
import runpy
import sys

import reprolab

SWITCHES = ("store_true", "store_false")


def script_argv(script_path, options, config, seed, args=(), seed_option=None):
    """The command line the script sees: `[script, *args, options from config..., seed]`."""
    argv = [script_path, *map(str, args)]
    unknown = [k for k in config if k not in options]
    if unknown:
        raise reprolab.ReprolabContractError(
            f"config keys without an option in OPTIONS: {', '.join(map(repr, unknown))}; add "
            f"each to OPTIONS of the entry file, e.g. {unknown[0]!r}: "
            f"'--{str(unknown[0]).replace('_', '-')}'")
    for key, value in config.items():
        option = options[key]
        flag, action = (option, None) if isinstance(option, str) else tuple(option)
        if action in SWITCHES:
            if bool(value) == (action == "store_true"):
                argv.append(flag)
        elif action is not None:
            raise reprolab.ReprolabContractError(
                f"OPTIONS[{key!r}]: unknown action {action!r}; expected a plain option "
                f"('{flag}') or ('{flag}', 'store_true' | 'store_false')")
        elif isinstance(value, (list, tuple)):
            argv += [flag, *map(str, value)]
        else:
            argv += [flag, str(value)]
    if seed_option:
        argv += [seed_option, str(seed)]
    return argv


class _Tail:
    """The script's stderr, passed through, its end kept: what argparse says before exit 2."""

    KEEP = 2000

    def __init__(self, stream):
        self._stream = stream
        self._tail = ""

    def write(self, text):
        self._tail = (self._tail + text)[-self.KEEP:]
        return self._stream.write(text)

    def last_line(self):
        lines = [line.strip() for line in self._tail.splitlines() if line.strip()]
        return lines[-1] if lines else ""

    def __getattr__(self, name):
        return getattr(self._stream, name)


def _script_path(entry_file, script):
    return os.path.join(os.path.dirname(os.path.abspath(entry_file)), script)


def run_script_as_train(entry_file, script, options, config, seed, args=(), seed_option=None):
    """Run `script` (relative to `entry_file`'s directory) with the options `config` sets and
    return its `reprolab.result(...)` as a train() result."""
    path = _script_path(entry_file, script)
    argv = script_argv(path, options, config, seed, args, seed_option)
    return _run(script, argv, seed, lambda: runpy.run_path(path, run_name="__main__"))


# Cell magics whose cell is still Python (the magic line is dropped); any other `%%` cell (bash,
# html, writefile, ...) is left out.
_PYTHON_CELL_MAGICS = ("%%time", "%%timeit", "%%capture")


def notebook_source(path):
    """The Python a notebook's code cells make, in order, one cell after another: IPython's line
    magics (`%matplotlib inline`) and shell lines (`!pip install ...`) become `pass` (indented as
    they were, so a block stays a block), a cell of another language (`%%bash`) is left out."""
    with open(path, encoding="utf-8") as f:
        try:
            notebook = json.load(f)
        except ValueError as e:
            raise reprolab.ReprolabContractError(f"{path}: not a notebook (JSON: {e})") from None
    cells = []
    for cell in notebook.get("cells", []):
        if cell.get("cell_type") != "code":
            continue
        source = cell.get("source", "")
        lines = ("".join(source) if isinstance(source, list) else str(source)).splitlines()
        first = lines[0].strip() if lines else ""
        if first.startswith("%%"):
            if not first.startswith(_PYTHON_CELL_MAGICS):
                continue
            lines = lines[1:]
        kept = []
        for line in lines:
            stripped = line.lstrip()
            if stripped.startswith(("%", "!")):
                line = line[: len(line) - len(stripped)] + "pass"
            kept.append(line)
        cells.append("\n".join(kept))
    return "\n\n".join(cells) + "\n"


def read_source(path):
    """A script's text, or the script a notebook's code cells make."""
    if path.endswith(".ipynb"):
        return notebook_source(path)
    with open(path, encoding="utf-8") as f:
        return f.read()


def constant_target(node):
    """NAME of a top-level `NAME = value` or `NAME: type = value`, else None."""
    if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
        return node.targets[0].id
    if isinstance(node, ast.AnnAssign) and node.value is not None and isinstance(node.target, ast.Name):
        return node.target.id
    return None


def with_constants(source, path, values):
    """The script's code with each top-level `NAME = ...` whose NAME is in `values` assigned
    `__reprolab_values__[NAME]` instead; a name of `values` the script never assigns at the top
    level is an error."""
    tree = ast.parse(source, filename=path)
    found = set()
    for node in tree.body:
        name = constant_target(node)
        if name is not None and name in values:
            node.value = ast.copy_location(ast.Subscript(
                value=ast.Name(id="__reprolab_values__", ctx=ast.Load()),
                slice=ast.Constant(value=name), ctx=ast.Load()), node.value)
            found.add(name)
    missing = [k for k in values if k not in found]
    if missing:
        raise reprolab.ReprolabContractError(
            f"config keys that {os.path.basename(path)} does not assign at its top level: "
            f"{', '.join(map(repr, missing))}; config.json may hold only the script's top-level "
            "constants (NAME = value)")
    return compile(ast.fix_missing_locations(tree), path, "exec")


def run_script_with_constants(entry_file, script, config, seed, seed_constant=None):
    """Run `script` with config's values in place of its top-level constants (and the seed in
    place of `seed_constant`'s) and return its `reprolab.result(...)` as a train() result."""
    path = _script_path(entry_file, script)
    values = dict(config)
    if seed_constant:
        values[seed_constant] = seed
    code = with_constants(read_source(path), path, values)

    def execute():
        import builtins

        namespace = {"__name__": "__main__", "__file__": path, "__builtins__": builtins,
                     "__reprolab_values__": values}
        if path.endswith(".ipynb"):
            # What a notebook calls without importing it: IPython's display, as a print.
            namespace["display"] = lambda *objects, **_: print(*objects)
        exec(code, namespace)

    return _run(script, [path], seed, execute)


def _run(script, argv, seed, execute):
    """Run a script by `execute()` as `__main__` with `argv`, after seeding; its last
    reprolab.result(...) is the result."""
    reprolab.seed_everything(seed)
    saved_argv, saved_stderr = sys.argv, sys.stderr
    results = reprolab._script_results = []
    sys.argv = argv
    sys.stderr = stderr = _Tail(saved_stderr)
    try:
        execute()
    except SystemExit as e:
        if e.code not in (None, 0):
            said = stderr.last_line()
            raise reprolab.ScriptExit(
                f"{script} exited with status {e.code}"
                + (f" ({said})" if said else "")
                + f" when run with: {' '.join(argv[1:])}") from None
    finally:
        sys.argv, sys.stderr = saved_argv, saved_stderr
        reprolab._script_results = None
    if not results:
        raise reprolab.ScriptResultMissing(
            f"{script} finished without calling reprolab.result(search=..., holdout=...): "
            "call it once after training with the metric on the validation and the test split")
    return results[-1]
