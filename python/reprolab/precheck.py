"""Static checks of a reproduction script before it is run, for `reprolab reproduce`.

    python -m reprolab.precheck SCRIPT [--expect NAME] [--path DIR ...]

Prints a JSON list of findings, each `{"kind", "line", "message", "blocking"}`. Nothing of the
script is executed: it is parsed with `ast`, its scopes are read with `symtable`, and its imports
are looked up with `importlib.util.find_spec` on their top-level package (which imports nothing).

Kinds (RepGen checks syntax and lints its candidates before judging them; the blocking ones are
those whose outcome every seeded run would otherwise spend itself on; a script that raises the
report's exception itself is left to the verdict, which sees whether the library raised it too):

- `syntax` (blocking): the script does not parse.
- `missing-module` (blocking): a top-level `import` of a package this environment does not have
  (not inside `try`, and not when the report's error is itself an ImportError).
- `undefined-name` (advisory): a name that is read but bound nowhere the script can see it.
  Advisory because a name in a branch that never runs does no harm; it is shown to the model
  only when the run does not reproduce the bug.
"""
from __future__ import annotations

import argparse
import ast
import builtins
import importlib.util
import json
import os
import symtable
import sys

IMPORT_ERRORS = {"ImportError", "ModuleNotFoundError"}
# Names every module has that `builtins` does not list.
MODULE_NAMES = {"__file__", "__name__", "__doc__", "__builtins__", "__spec__", "__loader__",
                "__package__", "__path__", "__annotations__", "__dict__", "__cached__"}


def finding(kind, line, message, blocking):
    return {"kind": kind, "line": line, "message": message, "blocking": blocking}


def _in_try(node, parents):
    """Whether `node` sits in the body of a `try` (an import guarded by `except`)."""
    child = node
    while child in parents:
        parent = parents[child]
        if isinstance(parent, ast.Try) and child in parent.body:
            return True
        child = parent
    return False


def _parents(tree):
    return {child: node for node in ast.walk(tree) for child in ast.iter_child_nodes(node)}


def missing_modules(tree, parents, expect):
    if expect in IMPORT_ERRORS:
        return []
    out, seen = [], set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names = [node.module]
        else:
            continue
        for name in names:
            top = name.split(".")[0]
            if top in seen or _in_try(node, parents):
                continue
            seen.add(top)
            try:
                found = importlib.util.find_spec(top) is not None
            except (ImportError, ValueError):
                found = False
            if not found:
                out.append(finding(
                    "missing-module", node.lineno,
                    f"`{name}` cannot be imported: no package `{top}` is installed in this "
                    "environment", True))
    return out


def _tables(table):
    yield table
    for child in table.get_children():
        yield from _tables(child)


def undefined_names(tree, source, filename):
    """Names read somewhere and bound nowhere they could be found (pyflakes' main check, from
    the standard library's symbol tables)."""
    if any(isinstance(n, ast.ImportFrom) and any(a.name == "*" for a in n.names)
           for n in ast.walk(tree)):
        return []  # a star import can bind anything
    top = symtable.symtable(source, filename, "exec")
    known = set(dir(builtins)) | MODULE_NAMES
    bound = set()
    for t in _tables(top):
        for s in t.get_symbols():
            # Module-level bindings, and `global x` assigned inside a function.
            if (t is top or s.is_declared_global()) and (s.is_assigned() or s.is_imported()
                                                         or s.is_namespace()):
                bound.add(s.get_name())
    unknown = set()
    for t in _tables(top):
        for s in t.get_symbols():
            name = s.get_name()
            if not s.is_referenced() or name in known or name in bound:
                continue
            global_there = t is top or s.is_global()
            if global_there and not (s.is_assigned() or s.is_imported() or s.is_parameter()):
                unknown.add(name)
    lines = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load) and node.id in unknown:
            lines[node.id] = min(lines.get(node.id, node.lineno), node.lineno)
    return [finding("undefined-name", line,
                    f"`{name}` is used but never defined or imported", False)
            for name, line in sorted(lines.items(), key=lambda kv: (kv[1], kv[0]))]


def check(source, filename="reproduce.py", expect=None):
    try:
        tree = ast.parse(source, filename=filename)
    except SyntaxError as e:
        return [finding("syntax", e.lineno or 0, f"SyntaxError: {e.msg}", True)]
    except ValueError as e:  # e.g. a NUL byte
        return [finding("syntax", 0, f"the script cannot be parsed: {e}", True)]
    parents = _parents(tree)
    found = missing_modules(tree, parents, expect)
    try:
        found += undefined_names(tree, source, filename)
    except SyntaxError:
        pass  # symtable is stricter than ast on a few constructs; the run will say
    return sorted(found, key=lambda f: (f["line"], f["kind"]))


def main(argv=None):
    ap = argparse.ArgumentParser(prog="python -m reprolab.precheck")
    ap.add_argument("script")
    ap.add_argument("--expect", help="the report's exception class (last name: ValueError)")
    ap.add_argument("--path", action="append", default=[],
                    help="a directory the script may import from (repeatable)")
    args = ap.parse_args(argv)
    sys.path[:0] = [os.path.dirname(os.path.abspath(args.script))] + args.path
    with open(args.script, encoding="utf-8", errors="replace") as f:
        source = f.read()
    json.dump(check(source, args.script, args.expect), sys.stdout)
    sys.stdout.write("\n")


if __name__ == "__main__":
    main()
