"""What `reprolab init` needs to know of a training script, read with `ast` (nothing is run).

    python -m reprolab.scaffold FILE

(FILE a script, or a Jupyter notebook read as the script its code cells make) prints one JSON
object:

    {"functions": [{"name", "line", "params": [names], "candidate": bool}],
     "keys": {"FUNCTION": [{"key", "line", "value"?, "source": "get" | "literal"}]},
     "dynamic": {"FUNCTION": int}, "framework": "pytorch" | "keras",
     "argparse": {"line", "options": [...], "positional": [...], "skipped": [...]} | null,
     "constants": [{"name", "line", "value"}], "calls_result": bool,
     "imports": [names], "missing": [names]}

`functions` are the top-level functions; `candidate` marks those whose first two parameters
read like the subject contract `train(config, seed)` (a config-like name, then a seed-like name).
For each function of two or more parameters, `keys` lists the literal string keys the script reads from its first
parameter's name anywhere in the file (`config["lr"]`, `config.get("lr", 0.01)`), in order of
first use. `value` is the literal the script gives for the key: the default of `.get`, else a
value of the key in a dict literal with only constant keys (a `DEFAULTS = {...}` or the config
of an `if __name__ == "__main__":` call); absent when the script gives none. `dynamic` counts
the reads whose key is not a literal (`config[f"act{i}"]`), which no scaffold can list.
`framework` is "keras" when the file imports keras (or tensorflow.keras / tf.keras) and not
torch, else "pytorch".

`argparse` describes the script's command line when it calls `add_argument` (on any parser):
`options` are the optional arguments reprolab can set, each `{"dest", "flag", "action": null |
"store_true" | "store_false", "line", "value"?, "choices"?, "help"?}` (`value` the default,
converted by `type=int/float` when it is a string; a switch defaults to its opposite);
`positional` the positional arguments' names (a script needs their values on its command line);
`skipped` the options reprolab cannot set (`count`, `append`, constants, several values without
a literal list as default). An option of several values (`nargs="+"`) with a list default has
that list as its `value`.
`imports` are the top-level modules the file imports (absolute imports, sorted); `missing` those
of them this interpreter cannot find, the script's own directory searched first (its own
modules are found there), which the program will need installed. `constants` are the top-level assignments of an upper-case name to a literal (`LR = 0.01`,
`BATCH_SIZE: int = 64`), what a script without functions or options sets its hyperparameters
with. `calls_result` says whether the file calls `reprolab.result(...)` (or a `result` imported from
reprolab). A file that does not parse exits 2 with the syntax error on stderr.
"""
from __future__ import annotations

import ast
import json
import os
import sys

CONFIG_NAMES = {"config", "cfg", "conf", "hparams", "hp", "params", "hyperparams", "args", "opts",
                "options", "settings"}
SEED_NAMES = {"seed", "random_seed", "rng_seed", "s"}


def _params(fn):
    return [a.arg for a in fn.args.posonlyargs + fn.args.args]


def _is_candidate(params):
    return (len(params) >= 2 and params[0].lower() in CONFIG_NAMES
            and params[1].lower() in SEED_NAMES)


_MISSING = object()


def _literal(node):
    """The node's value when it is a JSON-able literal (numbers, strings, booleans, lists)."""
    try:
        value = ast.literal_eval(node)
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
        return _MISSING
    try:
        json.dumps(value, allow_nan=False)
    except (TypeError, ValueError):
        return _MISSING
    return value


def _dict_values(tree):
    """Literal values per string key over every dict literal whose keys are all strings (first
    one wins: a module-level DEFAULTS usually comes before a __main__ call)."""
    values = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Dict) and node.keys and all(
                isinstance(k, ast.Constant) and isinstance(k.value, str) for k in node.keys):
            for k, v in zip(node.keys, node.values):
                value = _literal(v)
                if value is not _MISSING:
                    values.setdefault(k.value, value)
    return values


def _reads(tree, name):
    """(key or None, default or _MISSING, line) of each read of `name[...]` / `name.get(...)`."""
    reads = []
    for node in ast.walk(tree):
        if (isinstance(node, ast.Subscript) and isinstance(node.value, ast.Name)
                and node.value.id == name and isinstance(node.ctx, ast.Load)):
            key = node.slice
            literal = key.value if isinstance(key, ast.Constant) and isinstance(key.value, str) else None
            reads.append((literal, _MISSING, node.lineno, node.col_offset))
        elif (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
              and node.func.attr == "get" and isinstance(node.func.value, ast.Name)
              and node.func.value.id == name and node.args):
            key = node.args[0]
            literal = key.value if isinstance(key, ast.Constant) and isinstance(key.value, str) else None
            default = _literal(node.args[1]) if len(node.args) > 1 else _MISSING
            reads.append((literal, default, node.lineno, node.col_offset))
    reads.sort(key=lambda r: (r[2], r[3]))
    return reads


def _framework(imports):
    """"keras" for a Keras program: it imports keras (or tensorflow) and not torch."""
    roots = set(imports)
    return "keras" if roots & {"keras", "tensorflow"} and "torch" not in roots else "pytorch"


_TYPES = {"int": int, "float": float, "str": str}


def _keyword(call, name):
    return next((k.value for k in call.keywords if k.arg == name), None)


def _argument(call):
    """One add_argument call as {"dest", "flag", ...}, or ("positional", name), or
    ("skipped", name) for what reprolab cannot set."""
    names = [a.value for a in call.args if isinstance(a, ast.Constant) and isinstance(a.value, str)]
    if not names:
        return None
    dest_node = _keyword(call, "dest")
    dest = dest_node.value if isinstance(dest_node, ast.Constant) else None
    if not names[0].startswith("-"):
        return ("positional", dest or names[0])
    longs = [n for n in names if n.startswith("--")]
    flag = longs[0] if longs else names[0]
    dest = dest or flag.lstrip("-").replace("-", "_")
    action_node = _keyword(call, "action")
    action = action_node.value if isinstance(action_node, ast.Constant) else None
    nargs_node = _keyword(call, "nargs")
    nargs = nargs_node.value if isinstance(nargs_node, ast.Constant) else nargs_node
    if action in ("help", "version"):
        return None
    # Several values (nargs "+", "*" or a count) are settable when the default is a list.
    several = nargs is not None and nargs != "?"
    if (action not in (None, "store", "store_true", "store_false")
            or (action is None and action_node is not None)
            or (several and not (nargs in ("+", "*") or (isinstance(nargs, int) and nargs > 0)))):
        return ("skipped", dest)
    out = {"dest": dest, "flag": flag, "action": action if action in ("store_true", "store_false") else None,
           "line": call.lineno}
    default_node = _keyword(call, "default")
    if default_node is not None:
        value = _literal(default_node)
        type_node = _keyword(call, "type")
        convert = _TYPES.get(type_node.id) if isinstance(type_node, ast.Name) else None
        if isinstance(value, str) and convert is not None:
            try:
                value = convert(value)
            except ValueError:
                value = _MISSING
        if value is not _MISSING and value is not None:
            out["value"] = value
    elif out["action"]:
        out["value"] = out["action"] == "store_false"
    if several:
        if not (isinstance(out.get("value"), list) and out["value"]):
            return ("skipped", dest)
        return out  # `choices` bound each value, not the list
    choices_node = _keyword(call, "choices")
    if choices_node is not None:
        choices = _literal(choices_node)
        if isinstance(choices, (list, tuple)) and choices:
            out["choices"] = list(choices)
    help_node = _keyword(call, "help")
    if isinstance(help_node, ast.Constant) and isinstance(help_node.value, str):
        out["help"] = help_node.value
    return out


def _argparse(tree):
    """The script's command line, from its add_argument calls in source order; None when none."""
    calls = [n for n in ast.walk(tree) if isinstance(n, ast.Call)
             and isinstance(n.func, ast.Attribute) and n.func.attr == "add_argument"]
    if not calls:
        return None
    calls.sort(key=lambda c: (c.lineno, c.col_offset))
    parsed = {"line": calls[0].lineno, "options": [], "positional": [], "skipped": []}
    seen = set()
    for call in calls:
        arg = _argument(call)
        if arg is None:
            continue
        if isinstance(arg, tuple):
            parsed[arg[0]].append(arg[1])
        elif arg["dest"] not in seen:
            seen.add(arg["dest"])
            parsed["options"].append(arg)
    return parsed


def _constants(tree):
    """Top-level `NAME = literal` (and annotated) assignments of upper-case names, first wins:
    the assignments `reprolab.script_entry` replaces."""
    from reprolab.script_entry import constant_target

    found, seen = [], set()
    for node in tree.body:
        name = constant_target(node)
        if name is None or not name.isupper() or name in seen:
            continue
        literal = _literal(node.value)
        if literal is _MISSING or literal is None:
            continue
        seen.add(name)
        found.append({"name": name, "line": node.lineno, "value": literal})
    return found


def _imports(tree):
    """The top-level modules of the file's absolute imports, sorted."""
    roots = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            roots.update(a.name.split(".")[0] for a in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            roots.add(node.module.split(".")[0])
    return sorted(roots)


def _missing(modules, directory):
    """The modules this interpreter cannot find, `directory` searched first."""
    import importlib.util

    sys.path.insert(0, directory)
    try:
        return [m for m in modules if m not in sys.builtin_module_names
                and importlib.util.find_spec(m) is None]
    except (ImportError, ValueError):
        return []
    finally:
        sys.path.remove(directory)


def _calls_result(tree):
    """Whether the file calls reprolab.result(...) or a `result` it imported from reprolab."""
    imported = {a.asname or a.name for n in ast.walk(tree) if isinstance(n, ast.ImportFrom)
                and n.module == "reprolab" for a in n.names if a.name == "result"}
    for n in ast.walk(tree):
        if not isinstance(n, ast.Call):
            continue
        f = n.func
        if isinstance(f, ast.Attribute) and f.attr == "result" and isinstance(f.value, ast.Name) \
                and f.value.id == "reprolab":
            return True
        if isinstance(f, ast.Name) and f.id in imported:
            return True
    return False


def scan(source, filename="<script>"):
    tree = ast.parse(source, filename=filename)
    functions = []
    keys, dynamic = {}, {}
    literals = None
    for node in tree.body:
        if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            continue
        params = _params(node)
        candidate = _is_candidate(params)
        functions.append({"name": node.name, "line": node.lineno, "params": params,
                          "candidate": candidate})
        if len(params) < 2:
            continue
        if literals is None:
            literals = _dict_values(tree)
        found, order, n_dynamic = {}, [], 0
        for key, default, line, _ in _reads(tree, params[0]):
            if key is None:
                n_dynamic += 1
                continue
            if key not in found:
                found[key] = {"key": key, "line": line}
                order.append(key)
            entry = found[key]
            if "value" not in entry and default is not _MISSING:
                entry["value"], entry["source"] = default, "get"
        for key in order:
            entry = found[key]
            if "value" not in entry and key in literals:
                entry["value"], entry["source"] = literals[key], "literal"
        keys[node.name] = [found[k] for k in order]
        dynamic[node.name] = n_dynamic
    imports = _imports(tree)
    return {"functions": functions, "keys": keys, "dynamic": dynamic,
            "framework": _framework(imports), "argparse": _argparse(tree),
            "constants": _constants(tree), "calls_result": _calls_result(tree),
            "imports": imports}


def main(argv):
    if len(argv) != 1:
        print("usage: python -m reprolab.scaffold FILE", file=sys.stderr)
        return 2
    path = argv[0]
    from reprolab import ReprolabContractError
    from reprolab.script_entry import read_source

    try:
        result = scan(read_source(path), path)
        result["missing"] = _missing(result["imports"], os.path.dirname(os.path.abspath(path)))
    except OSError as e:
        print(f"{path}: cannot read: {e.strerror}", file=sys.stderr)
        return 2
    except ReprolabContractError as e:
        print(str(e), file=sys.stderr)
        return 2
    except SyntaxError as e:
        where = " (a line of the script its code cells make)" if path.endswith(".ipynb") else ""
        print(f"{path}:{e.lineno}:{e.offset}: syntax error{where}: {e.msg}", file=sys.stderr)
        return 2
    print(json.dumps(result))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
