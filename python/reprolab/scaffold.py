"""What `reprolab init` needs to know of a training script, read with `ast` (nothing is run).

    python -m reprolab.scaffold FILE

prints one JSON object:

    {"functions": [{"name", "line", "params": [names], "candidate": bool}],
     "keys": {"FUNCTION": [{"key", "line", "value"?, "source": "get" | "literal"}]},
     "dynamic": {"FUNCTION": int}, "framework": "pytorch" | "keras"}

`functions` are the top-level functions; `candidate` marks those whose first two parameters
read like the subject contract `train(config, seed)` (a config-like name, then a seed-like name).
For each function of two or more parameters, `keys` lists the literal string keys the script reads from its first
parameter's name anywhere in the file (`config["lr"]`, `config.get("lr", 0.01)`), in order of
first use. `value` is the literal the script gives for the key: the default of `.get`, else a
value of the key in a dict literal with only constant keys (a `DEFAULTS = {...}` or the config
of an `if __name__ == "__main__":` call); absent when the script gives none. `dynamic` counts
the reads whose key is not a literal (`config[f"act{i}"]`), which no scaffold can list.
`framework` is "keras" when the file imports keras (or tensorflow.keras / tf.keras) and not
torch, else "pytorch". A file that does not parse exits 2 with the syntax error on stderr.
"""
from __future__ import annotations

import ast
import json
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


def _framework(tree):
    """"keras" for a Keras program: it imports keras (or tensorflow) and not torch."""
    roots = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            roots.update(a.name.split(".")[0] for a in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            roots.add(node.module.split(".")[0])
    return "keras" if roots & {"keras", "tensorflow"} and "torch" not in roots else "pytorch"


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
    return {"functions": functions, "keys": keys, "dynamic": dynamic,
            "framework": _framework(tree)}


def main(argv):
    if len(argv) != 1:
        print("usage: python -m reprolab.scaffold FILE", file=sys.stderr)
        return 2
    path = argv[0]
    try:
        with open(path, encoding="utf-8") as f:
            source = f.read()
        result = scan(source, path)
    except OSError as e:
        print(f"{path}: cannot read: {e.strerror}", file=sys.stderr)
        return 2
    except SyntaxError as e:
        print(f"{path}:{e.lineno}:{e.offset}: syntax error: {e.msg}", file=sys.stderr)
        return 2
    print(json.dumps(result))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
