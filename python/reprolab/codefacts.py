"""Static facts of a code directory, for `reprolab paper verify`: the named constant values and
the calls it contains, each with where it is. Reads code with `ast`; runs none of it.

    python -m reprolab.codefacts DIR

prints one JSON object:

    {"values": [{"file", "line", "scope", "name", "value", "kind"} ...],
     "calls":  [{"file", "line", "scope", "callee", "kwargs": {name: value}, "args": [value]} ...],
     "files": int, "syntax_errors": [file ...], "truncated": bool}

A value's `kind` says where it came from: `assign` (`name = v`, `self.name = v`, annotated),
`keyword` (`f(name=v)`), `default` (`def f(name=v)`), `dict` (`{"name": v}`), `argparse`
(`add_argument("--name", default=v)`) or `config` (a key of a .json / .toml / simple .yaml file).
`v` is a constant: a number, string, bool or None, arithmetic on numbers, or a tuple / list of up
to 16 constants (a JSON list), where a name stands for its value when the name is bound exactly
once in its scope, by a constant (`base = 0.1` then `lr=base * 2` reads 0.2; a name bound again,
by a loop, an augmented assignment, a parameter or `global`, stays unknown); values that are not
constants are left out (calls keep them as null). `scope` is the dotted name of the enclosing
classes and functions (`Model.__init__`), "" at module level; for config keys, the dotted path of
the parent keys. A call's `callee` is its dotted name with import aliases resolved
(`import torch.nn.functional as F; F.relu` -> `torch.nn.functional.relu`).

Hidden directories, __pycache__ and files over 1 MB are skipped; at most 20,000 facts.
"""
from __future__ import annotations

import ast
import json
import operator
import os
import re
import sys

MAX_FILE_BYTES = 1_000_000
MAX_FACTS = 20_000
MAX_STRING = 200
_BINOPS = {
    ast.Add: operator.add,
    ast.Sub: operator.sub,
    ast.Mult: operator.mul,
    ast.Div: operator.truediv,
    ast.FloorDiv: operator.floordiv,
    ast.Pow: operator.pow,
    ast.Mod: operator.mod,
}
_UNKNOWN = object()


def constant(node, lookup=None):
    """The value of a constant expression, or _UNKNOWN; `lookup(name)` gives a name's value."""
    if isinstance(node, ast.Name):
        return lookup(node.id) if lookup else _UNKNOWN
    if isinstance(node, ast.Constant):
        v = node.value
        if isinstance(v, (bool, int, float)) or v is None:
            return v
        if isinstance(v, str):
            return v[:MAX_STRING]
        return _UNKNOWN
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.USub, ast.UAdd)):
        v = constant(node.operand, lookup)
        if isinstance(v, (int, float)) and not isinstance(v, bool):
            return -v if isinstance(node.op, ast.USub) else v
        return _UNKNOWN
    if isinstance(node, (ast.Tuple, ast.List)) and len(node.elts) <= 16:
        items = [constant(e, lookup) for e in node.elts]
        return _UNKNOWN if any(i is _UNKNOWN for i in items) else items
    if isinstance(node, ast.BinOp) and type(node.op) in _BINOPS:
        a, b = constant(node.left, lookup), constant(node.right, lookup)
        numbers = all(isinstance(x, (int, float)) and not isinstance(x, bool) for x in (a, b))
        # A huge power is not a hyperparameter and could take long to compute.
        if numbers and not (isinstance(node.op, ast.Pow) and abs(b) > 64):
            try:
                return _BINOPS[type(node.op)](a, b)
            except (ArithmeticError, ValueError):
                return _UNKNOWN
    return _UNKNOWN


def dotted(node):
    """`a.b.c` for a Name/Attribute chain, else None."""
    parts = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if isinstance(node, ast.Name):
        parts.append(node.id)
        return ".".join(reversed(parts))
    return None


def target_name(node):
    """The name an assignment target binds: `x` or the last attribute of `self.x`."""
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        return node.attr
    return None


_SCOPES = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda, ast.ListComp,
           ast.SetComp, ast.DictComp, ast.GeneratorExp)


def _names(target):
    """The names an assignment target binds (`a`, `a, (b, *c)`)."""
    if isinstance(target, ast.Name):
        return [target.id]
    if isinstance(target, (ast.Tuple, ast.List)):
        return [n for e in target.elts for n in _names(e)]
    if isinstance(target, ast.Starred):
        return _names(target.value)
    return []


def binding_counts(scope):
    """How often each name is bound in `scope`'s own body (nested scopes not entered); a plain
    `name = v` counts 1, every other binding (loops, `+=`, imports, defs, parameters, `global`,
    `with … as`, `except … as`, `:=`, `del`) counts 2, so that only names bound once by an
    assignment count 1. Also the names that functions declare `global`, for the module."""
    counts, declared_global = {}, set()

    def add(names, n):
        for name in names:
            counts[name] = counts.get(name, 0) + n

    if isinstance(scope, (ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp)):
        add([n for g in scope.generators for n in _names(g.target)], 2)
        return counts, declared_global
    if isinstance(scope, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
        a = scope.args
        params = a.posonlyargs + a.args + a.kwonlyargs + [x for x in (a.vararg, a.kwarg) if x]
        add([p.arg for p in params], 2)
    stack = list(ast.iter_child_nodes(scope)) if not isinstance(scope, ast.Lambda) else [scope.body]
    while stack:
        node = stack.pop()
        if isinstance(node, ast.Assign):
            for t in node.targets:
                add(_names(t), 1 if isinstance(t, ast.Name) else 2)
        elif isinstance(node, ast.AnnAssign):
            add(_names(node.target), 1 if node.value is not None else 0)
        elif isinstance(node, (ast.AugAssign, ast.For, ast.AsyncFor)):
            add(_names(node.target), 2)
        elif isinstance(node, ast.withitem) and node.optional_vars is not None:
            add(_names(node.optional_vars), 2)
        elif isinstance(node, ast.NamedExpr):
            add(_names(node.target), 2)
        elif isinstance(node, ast.ExceptHandler) and node.name:
            add([node.name], 2)
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            add([(a.asname or a.name).split(".")[0] for a in node.names], 2)
        elif isinstance(node, (ast.Global, ast.Nonlocal)):
            add(node.names, 2)
            if isinstance(node, ast.Global):
                declared_global.update(node.names)
        elif isinstance(node, ast.Delete):
            for t in node.targets:
                add(_names(t), 2)
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            add([node.name], 2)
            # Its decorators, defaults and bases are evaluated here; its body is its own scope,
            # but a `global` there rebinds a module name.
            stack.extend(node.decorator_list)
            if isinstance(node, ast.ClassDef):
                stack.extend(node.bases)
            else:
                stack.extend(d for d in node.args.defaults + node.args.kw_defaults if d)
            declared_global.update(_globals_in(node))
            continue
        if isinstance(node, _SCOPES):
            continue
        stack.extend(ast.iter_child_nodes(node))
    return counts, declared_global


def _globals_in(func):
    return {n for node in ast.walk(func) if isinstance(node, ast.Global) for n in node.names}


class _Scope:
    """A scope's bindings and the values of its names bound once by a constant."""

    def __init__(self, node):
        self.is_class = isinstance(node, ast.ClassDef)
        self.counts, self.declared_global = binding_counts(node)
        self.values = {}


class Facts(ast.NodeVisitor):
    def __init__(self, rel, out):
        self.rel = rel
        self.out = out
        self.scope = []
        self.aliases = {}
        self.scopes = []

    # -- scopes and imports ------------------------------------------------------------------
    def lookup(self, name):
        """A name's value: from the innermost scope that binds it (class bodies are not seen
        from their methods), when it binds it once, by a constant; else _UNKNOWN."""
        for i, sc in enumerate(reversed(self.scopes)):
            if sc.is_class and i > 0:
                continue
            if name in sc.counts:
                if sc.counts[name] != 1 or (i == len(self.scopes) - 1
                                            and name in sc.declared_global):
                    return _UNKNOWN
                return sc.values.get(name, _UNKNOWN)
        return _UNKNOWN

    def _const(self, node):
        return constant(node, self.lookup)

    def visit_Module(self, node):
        self.scopes.append(_Scope(node))
        self.generic_visit(node)
        self.scopes.pop()

    def _scoped(self, node):
        self.scope.append(node.name)
        self.scopes.append(_Scope(node))
        self.generic_visit(node)
        self.scopes.pop()
        self.scope.pop()

    def visit_ClassDef(self, node):
        self._scoped(node)

    def _anonymous(self, node):
        # A lambda's parameters and a comprehension's variables hide outer names.
        self.scopes.append(_Scope(node))
        self.generic_visit(node)
        self.scopes.pop()

    visit_Lambda = visit_ListComp = visit_SetComp = visit_DictComp = visit_GeneratorExp = \
        _anonymous

    def visit_FunctionDef(self, node):
        # A parameter's default belongs to its function: `Model.__init__`, not `Model`; it is
        # evaluated in the enclosing scope.
        self.scope.append(node.name)
        self._defaults(node.args)
        self.scopes.append(_Scope(node))
        self.generic_visit(node)
        self.scopes.pop()
        self.scope.pop()

    visit_AsyncFunctionDef = visit_FunctionDef

    def visit_Import(self, node):
        for a in node.names:
            if a.asname:
                self.aliases[a.asname] = a.name
            else:
                top = a.name.split(".")[0]
                self.aliases.setdefault(top, top)

    def visit_ImportFrom(self, node):
        if node.module and not node.level:
            for a in node.names:
                self.aliases[a.asname or a.name] = f"{node.module}.{a.name}"

    # -- values ------------------------------------------------------------------------------
    def _value(self, node, name, value, kind):
        if name and value is not _UNKNOWN:
            self.out.value(self.rel, node.lineno, ".".join(self.scope), name, value, kind)

    def _defaults(self, args):
        positional = args.posonlyargs + args.args
        for arg, default in zip(positional[len(positional) - len(args.defaults):], args.defaults):
            self._value(default, arg.arg, self._const(default), "default")
        for arg, default in zip(args.kwonlyargs, args.kw_defaults):
            if default is not None:
                self._value(default, arg.arg, self._const(default), "default")

    def visit_Assign(self, node):
        value = self._const(node.value)
        if len(node.targets) == 1 and isinstance(node.targets[0], ast.Name) \
                and value is not _UNKNOWN and self.scopes:
            self.scopes[-1].values[node.targets[0].id] = value
        for t in node.targets:
            targets = t.elts if isinstance(t, ast.Tuple) else [t]
            values = (
                [self._const(v) for v in node.value.elts]
                if isinstance(t, ast.Tuple) and isinstance(node.value, ast.Tuple)
                and len(node.value.elts) == len(targets)
                else [value] * len(targets)
            )
            for tt, v in zip(targets, values):
                self._value(node, target_name(tt), v, "assign")
        self.generic_visit(node)

    def visit_AnnAssign(self, node):
        if node.value is not None:
            value = self._const(node.value)
            if isinstance(node.target, ast.Name) and value is not _UNKNOWN and self.scopes:
                self.scopes[-1].values[node.target.id] = value
            self._value(node, target_name(node.target), value, "assign")
        self.generic_visit(node)

    def visit_Dict(self, node):
        for k, v in zip(node.keys, node.values):
            if isinstance(k, ast.Constant) and isinstance(k.value, str):
                self._value(k, k.value, self._const(v), "dict")
        self.generic_visit(node)

    def visit_Call(self, node):
        name = dotted(node.func)
        callee = None
        if name:
            head, _, rest = name.partition(".")
            base = self.aliases.get(head, head)
            callee = f"{base}.{rest}" if rest else base
        kwargs = {}
        for kw in node.keywords:
            if kw.arg is None:
                continue
            v = self._const(kw.value)
            kwargs[kw.arg] = None if v is _UNKNOWN else v
            self._value(kw.value, kw.arg, v, "keyword")
        args = [None if (v := self._const(a)) is _UNKNOWN else v for a in node.args]
        if callee:
            self.out.call(self.rel, node.lineno, ".".join(self.scope), callee, kwargs, args)
        if callee and callee.endswith("add_argument") and node.args:
            flag = self._const(node.args[0])
            if isinstance(flag, str) and "default" in kwargs:
                self._value(node, flag.lstrip("-"), self._const(
                    next(k.value for k in node.keywords if k.arg == "default")), "argparse")
        self.generic_visit(node)


class Out:
    def __init__(self):
        self.values = []
        self.calls = []
        self.truncated = False

    def _room(self):
        if len(self.values) + len(self.calls) >= MAX_FACTS:
            self.truncated = True
            return False
        return True

    def value(self, file, line, scope, name, value, kind):
        if self._room():
            self.values.append({"file": file, "line": line, "scope": scope, "name": name,
                                "value": value, "kind": kind})

    def call(self, file, line, scope, callee, kwargs, args):
        if self._room():
            self.calls.append({"file": file, "line": line, "scope": scope, "callee": callee,
                               "kwargs": kwargs, "args": args})


def _line_of(text, key):
    m = re.search(r'^\s*"?' + re.escape(key) + r'"?\s*[:=]', text, re.M)
    return text.count("\n", 0, m.start()) + 1 if m else 1


def _config_values(rel, text, data, out, prefix=()):
    if isinstance(data, dict):
        for k, v in data.items():
            if isinstance(v, (dict, list)):
                _config_values(rel, text, v, out, prefix + (str(k),))
            elif isinstance(v, (bool, int, float, str)) or v is None:
                out.value(rel, _line_of(text, str(k)), ".".join(prefix), str(k),
                          v[:MAX_STRING] if isinstance(v, str) else v, "config")
    elif isinstance(data, list):
        for item in data:
            _config_values(rel, text, item, out, prefix)


def _yaml_scalar(s):
    s = s.strip()
    if not s or s[0] in "[{|>&*!":
        return _UNKNOWN
    if s[0] in "'\"" and s[-1] == s[0] and len(s) >= 2:
        return s[1:-1]
    low = s.lower()
    if low in ("true", "yes", "on"):
        return True
    if low in ("false", "no", "off"):
        return False
    if low in ("null", "~"):
        return None
    for cast in (int, float):
        try:
            return cast(s)
        except ValueError:
            pass
    return s


def _simple_yaml(rel, text, out):
    """`key: scalar` lines of a block-style YAML file, nested keys by indentation."""
    stack = []  # (indent, key)
    for n, raw in enumerate(text.splitlines(), 1):
        line = raw.split(" #")[0].rstrip()
        m = re.match(r"^(\s*)(-\s+)?([A-Za-z_][\w.\-]*)\s*:(.*)$", line)
        if not m or line.lstrip().startswith("#"):
            continue
        indent = len(m.group(1)) + len(m.group(2) or "")
        while stack and stack[-1][0] >= indent:
            stack.pop()
        key, rest = m.group(3), m.group(4)
        if rest.strip():
            v = _yaml_scalar(rest)
            if v is not _UNKNOWN:
                out.value(rel, n, ".".join(k for _, k in stack), key, v, "config")
        else:
            stack.append((indent, key))


def scan_file(path, rel, out, errors):
    ext = os.path.splitext(path)[1].lower()
    try:
        if os.path.getsize(path) > MAX_FILE_BYTES:
            return False
        with open(path, encoding="utf-8", errors="replace") as f:
            text = f.read()
    except OSError:
        return False
    if ext == ".py":
        try:
            tree = ast.parse(text, filename=rel)
        except (SyntaxError, ValueError):
            errors.append(rel)
            return True
        Facts(rel, out).visit(tree)
    elif ext == ".json":
        try:
            _config_values(rel, text, json.loads(text), out)
        except ValueError:
            errors.append(rel)
    elif ext == ".toml":
        import tomllib

        try:
            _config_values(rel, text, tomllib.loads(text), out)
        except ValueError:
            errors.append(rel)
    elif ext in (".yaml", ".yml"):
        _simple_yaml(rel, text, out)
    else:
        return False
    return True


def scan(root):
    out, errors, files = Out(), [], 0
    if os.path.isfile(root):
        files += scan_file(root, os.path.basename(root), out, errors)
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = sorted(d for d in dirnames if not d.startswith(".") and d != "__pycache__")
        for name in sorted(filenames):
            path = os.path.join(dirpath, name)
            files += scan_file(path, os.path.relpath(path, root), out, errors)
    return {"values": out.values, "calls": out.calls, "files": files,
            "syntax_errors": errors, "truncated": out.truncated}


def main(argv):
    if len(argv) != 1:
        print("usage: python -m reprolab.codefacts DIR", file=sys.stderr)
        return 2
    if not os.path.exists(argv[0]):
        print(f"{argv[0]}: no such file or directory", file=sys.stderr)
        return 2
    json.dump(scan(argv[0]), sys.stdout)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
