"""What a failing generated function did, next to the reference: the behaviour evidence of the
failure taxonomy (`reprolab codegen`, docs/codegen.md#behaviour).

The plugin (reprolab.codegen_plugin) wraps the task's entry point while each test runs and keeps
every call's arguments (copied before the call), the random state, and what the call returned
or raised. When the entry point is a class, the calls of its public methods on the instances it
built (`forward`, through `model(x)`) are recorded the same way, in order, with the instance's
parameters and modes before the call. When the test fails, :func:`analyse` runs the reference
on a copy of each recorded call's arguments, with the same random state (a method call on the
reference instance built from the same construction), and compares: the first call on which the
two differ gives the finding.

A finding is a dict (every key optional but ``finding``)::

    {"finding": "same" | "candidate_raises" | "reference_raises" | "both_raise" | "type" | "shape"
                | "dtype" | "nan" | "values" | "side_effect",
     "call": i, "calls": n,
     "method": str,                                # a class's method whose call differed
     "note": str,                                  # why a call could not be compared ("unavailable")
     "candidate": str, "reference": str,           # what each returned or raised
     "raised_at": str,                             # the call that raised in the candidate
     "broadcast": bool,                            # shape: the candidate's is a broadcast of the reference's
     "off_by_one": bool,                           # shape: one element or slice more or fewer at an end
     "close": bool, "rel_error": float, "corr": float, "permuted": bool, "ratio": float,
     "layout": bool,                               # permuted: a reshape where a permute belongs
     "guard": str,                                 # an early exit the reference took (its `if`)
     "edge": [str],                                # edge-case features of the inputs
     "ignored_args": [str],                        # arguments passed, used by the reference, never read by the candidate
     "library_args": [str],                        # the same library call with other keyword arguments
     "side_effect": str}
"""
from __future__ import annotations

import ast
import contextlib
import copy
import inspect
import itertools
import math
import random
import sys

MAX_CALLS = 50


# --- recording ----------------------------------------------------------------------------
def _rng_state():
    state = {"random": random.getstate()}
    np = sys.modules.get("numpy")
    if np is not None:
        state["numpy"] = np.random.get_state()
    torch = sys.modules.get("torch")
    if torch is not None:
        state["torch"] = torch.get_rng_state()
    return state


def _set_rng_state(state):
    random.setstate(state["random"])
    np = sys.modules.get("numpy")
    if np is not None and "numpy" in state:
        np.random.set_state(state["numpy"])
    torch = sys.modules.get("torch")
    if torch is not None and "torch" in state:
        torch.set_rng_state(state["torch"])


def _copy(x):
    try:
        return copy.deepcopy(x)
    except Exception:  # noqa: BLE001 - an uncopyable argument is compared as is
        return x


class Recorder:
    """Wraps the candidate's entry point and records its calls.

    For a class entry point (an nn.Module, a stateful helper) the construction alone says little:
    what the test checks is what the instance's methods do. So the class's own public methods
    (and `__call__`) are wrapped on the class while the recorder is active, and a call of one of
    them on an instance this recorder built is recorded too, in the same list, after its
    construction. The wrapping is on the class, not the instance, so deep copies and pickles of
    an instance carry no wrapper (a copy's calls are not recorded: it has no construction to
    replay). :meth:`restore` puts the class back.
    """

    def __init__(self, func):
        self.func = func
        self.calls = []
        # id(instance) -> index of its construction; the instances are kept so that ids stay
        # unique while the test runs.
        self._built = {}
        self._keep = []
        self._depth = 0
        self._patched = _patch_methods(func, self) if inspect.isclass(func) else []
        # Module states copied for method calls, in tensor values, over the whole test: the
        # recording runs in every test, passing or not, and must not change its memory.
        self._state_values_left = MAX_RECORDED_STATE_VALUES

    def restore(self):
        for cls, name, original in reversed(self._patched):
            setattr(cls, name, original)
        self._patched = []

    def __call__(self, *args, **kwargs):
        if len(self.calls) >= MAX_CALLS:
            return self.func(*args, **kwargs)
        rec = {"args": _copy(args), "kwargs": _copy(kwargs), "rng": _rng_state()}
        self.calls.append(rec)
        out = self._run(rec, self.func, args, kwargs)
        if inspect.isclass(self.func) and isinstance(out, self.func):
            self._built[id(out)] = len(self.calls) - 1
            self._keep.append(out)
        return out

    def _run(self, rec, func, args, kwargs, instance=None):
        """Call `func`, keeping what it returned or raised and the arguments afterwards."""
        self._depth += 1
        try:
            out = func(*args, **kwargs)
        except BaseException as e:
            rec["raised"] = e
            rec["tb"] = e.__traceback__
            rec["after"] = (_copy(args), _copy(kwargs))
            rec["self_after"] = self._snapshot(_instance_state, instance)
            raise
        finally:
            self._depth -= 1
        rec["returned"] = _copy(out)
        rec["after"] = (_copy(args), _copy(kwargs))
        rec["self_after"] = self._snapshot(_instance_state, instance)
        return out

    def _snapshot(self, take, instance):
        """`take(instance, limit)` within what is left of the test's budget of copied values."""
        if instance is None:
            return None
        state = take(instance, self._state_values_left)
        self._state_values_left -= _values_in(state)
        return state

    def method_call(self, name, original, instance, args, kwargs):
        """A call of a wrapped method: recorded when it is the test's own call (not one the
        candidate makes from inside another recorded call) on an instance built here."""
        k = self._built.get(id(instance))
        if k is None or self._depth or len(self.calls) >= MAX_CALLS:
            return original(instance, *args, **kwargs)
        rec = {"method": name, "instance": k, "args": _copy(args), "kwargs": _copy(kwargs),
               "rng": _rng_state(), "grad": _grad_enabled(), "state": self._snapshot(_module_state, instance)}
        self.calls.append(rec)
        return self._run(rec, lambda *a, **kw: original(instance, *a, **kw), args, kwargs,
                         instance)


def _patch_methods(cls, recorder):
    """Wrap the public methods (and `__call__`) that `cls` and its bases from the same module
    define; returns what to restore."""
    import functools
    import types

    patched, seen = [], set()
    for owner in cls.__mro__:
        if owner.__module__ != cls.__module__:
            continue  # library methods (nn.Module.train, state_dict) are not the candidate's
        for name, value in list(vars(owner).items()):
            if name in seen or not isinstance(value, types.FunctionType):
                continue
            if name.startswith("_") and name != "__call__":
                continue
            seen.add(name)
            patched.append((owner, name, value))
            setattr(owner, name, functools.wraps(value)(_method_wrapper(recorder, name, value)))
    return patched


def _method_wrapper(recorder, name, original):
    def method(self, *args, **kwargs):
        return recorder.method_call(name, original, self, args, kwargs)

    return method


def _grad_enabled():
    torch = sys.modules.get("torch")
    return bool(torch.is_grad_enabled()) if torch is not None else None


# Modules with more parameter values than this are not snapshotted (the reference then runs
# with its own parameters)...
MAX_STATE_VALUES = 20_000_000
# ...and a test's recorded method calls copy at most this many values in all (8 MB of float32).
MAX_RECORDED_STATE_VALUES = 2_000_000


def _numel(state_dict):
    """How many tensor values a state dict holds."""
    return sum(v.numel() for v in state_dict.values() if hasattr(v, "numel"))


def _values_in(state):
    """How many tensor values a module state (:func:`_module_state`) copied."""
    return _numel(state["state"]) if state and "state" in state else 0


def _module_state(instance, limit=MAX_STATE_VALUES):
    """An nn.Module's parameters and buffers, training flags and requires_grad flags, copied:
    what the reference instance is given before a method call is replayed on it (the test may
    have changed the instance since it was built: zeroed weights, eval mode)."""
    torch = sys.modules.get("torch")
    if torch is None or not isinstance(instance, torch.nn.Module):
        return None
    try:
        state = instance.state_dict()
        if _numel(state) > limit:
            return None
        return {"state": {k: v.detach().clone() if hasattr(v, "detach") else _copy(v)
                          for k, v in state.items()},
                "training": {n: m.training for n, m in instance.named_modules()},
                "grad": {n: p.requires_grad for n, p in instance.named_parameters()}}
    except Exception:  # noqa: BLE001 - a module whose state cannot be read is not synced
        return None


def _instance_state(instance, limit=MAX_STATE_VALUES):
    """What a method call left in its instance, for the side-effect comparison: a module's
    state (none past `limit` values), or a copy of another object's attributes."""
    if instance is None:
        return None
    torch = sys.modules.get("torch")
    if torch is not None and isinstance(instance, torch.nn.Module):
        return _module_state(instance, limit)  # never its __dict__: that holds the parameters
    attrs = getattr(instance, "__dict__", None)
    return {"attrs": _copy(dict(attrs))} if isinstance(attrs, dict) else None


# --- describing values ----------------------------------------------------------------------
def _kind(x):
    torch = sys.modules.get("torch")
    np = sys.modules.get("numpy")
    if torch is not None:
        if isinstance(x, torch.nn.Module):
            return "module"
        if isinstance(x, torch.Tensor):
            return "tensor"
    if np is not None and isinstance(x, np.ndarray):
        return "ndarray"
    if x is None:
        return "none"
    if isinstance(x, bool):
        return "bool"
    if isinstance(x, (int, float)) or (np is not None and isinstance(x, np.generic)):
        return "number"
    if isinstance(x, (list, tuple)):
        return "sequence"
    if isinstance(x, dict):
        return "dict"
    return type(x).__name__


def _array(x):
    """A float64 numpy array of a tensor, array or number (None if not numeric)."""
    np = sys.modules.get("numpy")
    if np is None:
        return None
    k = _kind(x)
    try:
        if k == "tensor":
            return x.detach().cpu().double().numpy() if not x.is_complex() else None
        if k == "ndarray":
            return x.astype(np.float64)
        if k in ("number", "bool"):
            return np.asarray(float(x))
        if k == "sequence" and all(_kind(v) in ("number", "bool") for v in x):
            return np.asarray([float(v) for v in x])
    except Exception:  # noqa: BLE001
        return None
    return None


def _describe(x):
    k = _kind(x)
    if k in ("tensor", "ndarray"):
        return f"{k} shape {tuple(x.shape)} dtype {str(x.dtype).replace('torch.', '')}"
    if k == "sequence":
        return f"{type(x).__name__} of {len(x)}"
    text = repr(x)
    return text if len(text) <= 60 else text[:57] + "..."


def _exc_text(e):
    msg = str(e).strip().splitlines()
    return f"{type(e).__name__}: {msg[0][:160] if msg else ''}"


def _raised_at(tb):
    """The innermost frame of the candidate (solution.py) and the call it made, when deeper."""
    frames = list(_walk(tb))
    own = [f for f in frames if f[0].endswith("solution.py")]
    if not own:
        return None
    path, line, func, text = own[-1]
    inner = frames[-1]
    where = f"solution.py:{line} in {func}: {text}"
    if inner is not own[-1]:
        where += f" -> {inner[2]} ({inner[0].rsplit('/', 2)[-1]})"
    return where


def _walk(tb):
    import linecache

    while tb is not None:
        code = tb.tb_frame.f_code
        line = tb.tb_lineno
        yield (code.co_filename, line, code.co_name,
               linecache.getline(code.co_filename, line).strip())
        tb = tb.tb_next


# --- inputs ---------------------------------------------------------------------------------
def _edge(args, kwargs):
    """Edge-case features of the arguments: empty tensors, NaN/inf, zeros, ties, large values."""
    found = []

    def visit(x, depth=0):
        if depth > 3:
            return
        k = _kind(x)
        if k in ("tensor", "ndarray"):
            if 0 in tuple(x.shape):
                found.append("empty")
                return
            a = _array(x)
            if a is None:
                return
            if not (a == a).all() or (abs(a) == float("inf")).any():
                found.append("nan_or_inf")
            is_float = str(x.dtype).startswith(("torch.float", "float"))
            if is_float and a.ndim >= 2 and a.shape[0] >= 2 and (a == a[:1]).all(axis=0).any():
                found.append("constant_column")
            if is_float and a.size > 1:
                flat = a.ravel()
                if len(set(flat.tolist())) < flat.size and flat.size <= 100000:
                    found.append("ties")
                if (abs(flat) >= 50).any():
                    found.append("large_values")
        elif k == "sequence":
            if len(x) == 0:
                found.append("empty")
            for v in list(x)[:20]:
                visit(v, depth + 1)
        elif k == "dict":
            for v in list(x.values())[:20]:
                visit(v, depth + 1)

    for v in list(args) + list(kwargs.values()):
        visit(v)
    return sorted(set(found))


# --- the code -------------------------------------------------------------------------------
def _function_node(source, name):
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError):
        return None
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name == name:
            return node
    return None


def _used_names(fn):
    return {n.id for n in ast.walk(fn) if isinstance(n, ast.Name)}


def _params(fn):
    a = fn.args
    return [p.arg for p in a.posonlyargs + a.args + a.kwonlyargs]


def _class_node(source, name):
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError):
        return None
    return next((n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == name), None)


def _ignored_method_args(cand_src, ref_src, entry):
    """For a class entry point: `method.param` that a method of the reference reads and the
    candidate's method of the same name takes but never reads (`forward.key_padding_mask`)."""
    c, r = _class_node(cand_src, entry), _class_node(ref_src, entry)
    if c is None or r is None:
        return []
    methods = {m.name: m for m in c.body if isinstance(m, (ast.FunctionDef, ast.AsyncFunctionDef))}
    out = []
    for rm in r.body:
        cm = methods.get(getattr(rm, "name", None))
        if cm is None or not isinstance(rm, (ast.FunctionDef, ast.AsyncFunctionDef)):
            continue
        r_used, c_used, c_params = _used_names(rm), _used_names(cm), _params(cm)
        for p in _params(rm)[1:]:
            if p in r_used and p in c_params and p not in c_used:
                out.append(f"{rm.name}.{p}")
    return out


def _ignored_args(cand_src, ref_src, entry, args, kwargs):
    """Parameters the failing call gave a value (not None), that the reference reads and the
    candidate's entry point never reads."""
    c, r = _function_node(cand_src, entry), _function_node(ref_src, entry)
    if c is None or r is None:
        return _ignored_method_args(cand_src, ref_src, entry)
    c_params, r_params = _params(c), _params(r)
    given = {}
    for i, v in enumerate(args):
        if i < len(r_params):
            given[r_params[i]] = v
    given.update(kwargs)
    c_used, r_used = _used_names(c), _used_names(r)
    out = []
    for name, v in given.items():
        if v is None or name not in r_used:
            continue
        if name in c_params and name not in c_used:
            out.append(name)
    return out


def _calls(source):
    """{dotted callee: {keyword: source of the value}} of every call in `source`."""
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError):
        return {}
    out = {}
    for n in ast.walk(tree):
        if isinstance(n, ast.Call):
            name = _dotted(n.func)
            if name:
                kws = {k.arg: ast.unparse(k.value) for k in n.keywords if k.arg}
                out.setdefault(name.rsplit(".", 1)[-1], []).append(kws)
    return out


def _dotted(node):
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        base = _dotted(node.value)
        return f"{base}.{node.attr}" if base else node.attr
    return None


_LIB_CALLEES = None


def _library_args(cand_src, ref_src):
    """Library calls both make with a keyword argument set differently (or left to its default
    by one of them): `hann_window(periodic=False)` against `periodic=True`."""
    c, r = _calls(cand_src), _calls(ref_src)
    out = []
    for callee in sorted(set(c) & set(r)):
        if not callee[:1].isupper() and callee not in _LIBRARY_FUNCS:
            continue
        ck = {k: v for d in c[callee] for k, v in d.items()}
        rk = {k: v for d in r[callee] for k, v in d.items()}
        for k in sorted(set(ck) | set(rk)):
            if k in _NEUTRAL_KWARGS:
                continue
            if ck.get(k) != rk.get(k) and (k in ck) != (k in rk) or (
                    k in ck and k in rk and ck[k] != rk[k] and _literal(ck[k]) and _literal(rk[k])):
                out.append(f"{callee}({k}={ck.get(k, '<default>')} vs {rk.get(k, '<default>')})")
    return out


_NEUTRAL_KWARGS = {"dtype", "device", "dim", "keepdim", "out", "requires_grad"}
_LIBRARY_FUNCS = {
    "hann_window", "hamming_window", "stft", "istft", "interpolate", "pad", "unfold", "cross_entropy",
    "binary_cross_entropy_with_logits", "nll_loss", "mse_loss", "l1_loss", "smooth_l1_loss",
    "kaiming_normal_", "kaiming_uniform_", "xavier_uniform_", "xavier_normal_", "normal_",
    "std", "var", "softmax", "log_softmax", "topk", "sort", "argsort", "unique", "bincount",
    "clip_grad_norm_", "layer_norm", "batch_norm", "dropout", "linspace", "arange", "round",
}


def _literal(text):
    try:
        ast.literal_eval(text)
        return True
    except (ValueError, SyntaxError):
        return False


# --- running the reference ------------------------------------------------------------------
def _guards(ref_fn, lines_run, ref_node, first_line):
    """`if` tests of the reference whose body ran and ends the function (return or raise)."""
    out = []
    if ref_node is None:
        return out
    for n in ast.walk(ref_node):
        if not isinstance(n, ast.If) or not n.body:
            continue
        body_lines = {s.lineno + first_line - 1 for s in n.body}
        exits = any(isinstance(s, (ast.Return, ast.Raise)) for s in n.body)
        if exits and body_lines & lines_run:
            out.append(ast.unparse(n.test))
    return out


def _run_traced(func, args, kwargs):
    """Call `func`, recording the lines it runs in its own file."""
    code = getattr(func, "__code__", None)
    target = code.co_filename if code else None
    lines = set()

    def tracer(frame, event, arg):
        if frame.f_code.co_filename != target:
            return None
        if event == "line":
            lines.add(frame.f_lineno)
        return tracer

    old = sys.gettrace()
    sys.settrace(tracer)
    try:
        out = ("returned", func(*args, **kwargs))
    except BaseException as e:  # noqa: BLE001
        out = ("raised", e)
    finally:
        sys.settrace(old)
    return out, lines


# --- comparing ------------------------------------------------------------------------------
def _compare_values(c, r, path="output"):
    """The first difference between two return values, as a partial finding; None if equal."""
    np = sys.modules.get("numpy")
    kc, kr = _kind(c), _kind(r)
    numeric = {"tensor", "ndarray"}
    if kc != kr and not ({kc, kr} <= {"number", "bool"}):
        return {"finding": "type", "candidate": f"{path}: {_describe(c)}",
                "reference": f"{path}: {_describe(r)}"}
    if kc == "sequence" and _array(c) is not None and _array(r) is not None and len(c) == len(r):
        # a list of numbers stands for a vector: compare it as one
        kc = kr = "vector"
    if kc == "sequence":
        if len(c) != len(r):
            # a list standing for a vector: a length difference is a shape difference
            return {"finding": "shape", "candidate": f"{path}: {_describe(c)}",
                    "reference": f"{path}: {_describe(r)}", "broadcast": False,
                    "off_by_one": _sequence_off_by_one(c, r)}
        for i, (a, b) in enumerate(zip(c, r)):
            d = _compare_values(a, b, f"{path}[{i}]")
            if d:
                return d
        return None
    if kc == "dict":
        if set(c) != set(r):
            return {"finding": "type", "candidate": f"{path}: keys {sorted(map(str, c))[:8]}",
                    "reference": f"{path}: keys {sorted(map(str, r))[:8]}"}
        for k in r:
            d = _compare_values(c[k], r[k], f"{path}[{k!r}]")
            if d:
                return d
        return None
    if kc == "module":
        return _compare_modules(c, r, path)
    if kc in numeric or kc in ("number", "bool", "vector"):
        if kc in numeric and tuple(c.shape) != tuple(r.shape):
            a, b = _array(c), _array(r)
            return {"finding": "shape", "candidate": f"{path}: {_describe(c)}",
                    "reference": f"{path}: {_describe(r)}",
                    "broadcast": _is_broadcast(tuple(c.shape), tuple(r.shape)),
                    "off_by_one": a is not None and b is not None and _off_by_one(a, b)}
        a, b = _array(c), _array(r)
        if a is None or b is None or np is None:
            return None if _safe_eq(c, r) else {"finding": "values", "candidate": _describe(c),
                                                 "reference": _describe(r)}
        nan_c = ~np.isfinite(a)
        nan_r = ~np.isfinite(b)
        if nan_c.any() and not nan_r.any():
            return {"finding": "nan", "candidate": f"{path}: {int(nan_c.sum())} of {a.size} values NaN or inf",
                    "reference": f"{path}: finite"}
        if np.allclose(a, b, rtol=1e-5, atol=1e-6, equal_nan=True):
            if kc in numeric and str(c.dtype) != str(r.dtype):
                return {"finding": "dtype", "candidate": f"{path}: {_describe(c)}",
                        "reference": f"{path}: {_describe(r)}"}
            return None
        return {"finding": "values", "candidate": f"{path}: {_describe(c)}",
                "reference": f"{path}: {_describe(r)}", **_value_stats(a, b),
                **({"dtype_differs": True} if kc in numeric and str(c.dtype) != str(r.dtype) else {})}
    if _plain_object(c) and _plain_object(r):
        return _compare_attributes(vars(c), vars(r), path)
    return None if _safe_eq(c, r) else {"finding": "values", "candidate": _describe(c),
                                         "reference": _describe(r)}


def _safe_eq(a, b):
    try:
        return bool(a == b)
    except Exception:  # noqa: BLE001
        return False


def _off_by_one(a, b):
    """Whether one array is the other with one slice more at the start or the end of one axis:
    a loop or a count off by one (a window lost, an extra step), not another computation.
    The shorter side must keep at least three slices, so that a match says something (two
    decoded tokens out of three can match by chance)."""
    if a.ndim != b.ndim or a.ndim == 0:
        return False
    axes = [i for i in range(a.ndim) if a.shape[i] != b.shape[i]]
    if len(axes) != 1:
        return False
    axis = axes[0]
    longer, shorter = (a, b) if a.shape[axis] > b.shape[axis] else (b, a)
    n = shorter.shape[axis]
    if longer.shape[axis] != n + 1 or n < 3:
        return False
    np = sys.modules["numpy"]
    ends = (np.take(longer, range(n), axis=axis), np.take(longer, range(1, n + 1), axis=axis))
    return any(_allclose(e, shorter) for e in ends)


def _sequence_off_by_one(c, r):
    """`_off_by_one` for lists: one element more or fewer at either end, the rest equal."""
    longer, shorter = (c, r) if len(c) > len(r) else (r, c)
    n = len(shorter)
    if len(longer) != n + 1 or n < 3:
        return False
    return any(all(_compare_values(x, y) is None for x, y in zip(part, shorter))
               for part in (longer[:n], longer[1:]))


def _is_broadcast(c, r):
    """Whether shape `c` is what broadcasting `r` against something else makes (more elements,
    `r` fits in it by numpy's rules)."""
    if math.prod(c) <= math.prod(r) or len(c) < len(r):
        return False
    for x, y in zip(reversed(c), reversed(r)):
        if y != 1 and x != y and not (y == x):
            return False
    return True


def _value_stats(a, b):
    np = sys.modules["numpy"]
    out = {}
    fa, fb = a.ravel(), b.ravel()
    ok = np.isfinite(fa) & np.isfinite(fb)
    fa, fb = fa[ok], fb[ok]
    if fa.size == 0:
        return out
    scale = max(float(np.abs(fb).max()), 1e-12)
    out["rel_error"] = round(float(np.abs(fa - fb).max()) / scale, 6)
    out["mismatched"] = round(float((~np.isclose(fa, fb, rtol=1e-5, atol=1e-6)).mean()), 6)
    if fa.size > 1:
        out["permuted"] = bool(np.allclose(np.sort(fa), np.sort(fb), rtol=1e-5, atol=1e-6))
        if out["permuted"] and a.ndim >= 2 and a.shape == b.shape:
            # A reshape or view where a permute belongs scrambles the rows; reordering whole
            # rows, the values within each row, or transposing the axes keeps them.
            out["layout"] = not (
                _rows_reordered(a, b) or _reordered_within_rows(a, b) or _transposed(a, b)
            ) or _relaid(a, b)
        if fa.std() > 0 and fb.std() > 0:
            out["corr"] = round(float(np.corrcoef(fa, fb)[0, 1]), 6)
    nz = np.abs(fb) > 1e-12
    # The reference puts one value (a sentinel: -1, 0, NaN) in several places where the
    # candidate computes ordinary values: a case the reference handles apart.
    differ = ~np.isclose(a.ravel(), b.ravel(), rtol=1e-5, atol=1e-6, equal_nan=True)
    ref_differ = b.ravel()[differ]
    # Only a conventional fill value counts (-1, 0, NaN, inf): equal values elsewhere are common
    # in symmetric or constant outputs and say nothing about a special case.
    if differ.sum() >= 2 and differ.mean() < 1.0 and (
            np.isnan(ref_differ).all() or (
                np.allclose(ref_differ, ref_differ[0])
                and (ref_differ[0] in (-1.0, 0.0) or np.isinf(ref_differ[0])))):
        out["sentinel"] = str(ref_differ[0])
    # A constant ratio says something only over several different reference values (over one
    # number, or one value repeated, any two outputs have a "constant ratio").
    if nz.sum() >= 2 and np.unique(fb[nz]).size >= 2:
        ratios = fa[nz] / fb[nz]
        if np.allclose(ratios, ratios[0], rtol=1e-4) and (~nz).sum() == 0 or (
                np.allclose(ratios, ratios[0], rtol=1e-4) and np.allclose(fa[~nz], 0)):
            out["ratio"] = round(float(ratios[0]), 6)
    out["close"] = out["rel_error"] < 0.5 and out.get("corr", 1.0) > 0.9
    return out


def _allclose(x, y):
    np = sys.modules["numpy"]
    return x.shape == y.shape and bool(np.allclose(x, y, rtol=1e-5, atol=1e-6, equal_nan=True))


def _rows_reordered(a, b):
    """Whether `a` holds `b`'s rows (last-axis vectors) in another order."""
    np = sys.modules["numpy"]

    def sorted_rows(x):
        rows = x.reshape(-1, x.shape[-1])
        # rounded keys, so that values equal within tolerance sort alike on both sides
        return rows[np.lexsort(np.round(rows, 6).T[::-1])]

    return _allclose(sorted_rows(a), sorted_rows(b))


def _reordered_within_rows(a, b):
    """Whether each row of `a` holds the same row of `b`'s values in another order."""
    np = sys.modules["numpy"]
    return _allclose(np.sort(a, axis=-1), np.sort(b, axis=-1))


def _transposed(a, b):
    """Whether `a` is `b` with its axes permuted (a transposed matrix, channels moved)."""
    if a.ndim > 6:
        return False
    return any(_allclose(a, b.transpose(p)) for p in itertools.permutations(range(b.ndim))
               if list(p) != list(range(b.ndim)) and b.transpose(p).shape == a.shape)


def _relaid(a, b):
    """Whether `a` is what reshaping a transpose of `b` gives: the reference's values read
    in another memory order, as `x.reshape(shape)` does where `x.permute(...)` belongs. Exact
    over the whole tensor, so it holds even where few distinct values (a one-hot) let rows
    look merely reordered."""
    if b.ndim > 6:
        return False
    return any(_allclose(a, b.transpose(p).reshape(a.shape))
               for p in itertools.permutations(range(b.ndim))
               if b.transpose(p).shape != a.shape)


def _compare_modules(c, r, path):
    return _compare_module_states(_module_state(c), _module_state(r), path)


def _compare_module_states(c, r, path):
    """The first difference between two modules' states (see :func:`_module_state`)."""
    if c is None or r is None:
        return None
    torch = sys.modules["torch"]
    cs, rs = c["state"], r["state"]
    if set(cs) != set(rs):
        missing = sorted(set(rs) - set(cs))[:4]
        extra = sorted(set(cs) - set(rs))[:4]
        return {"finding": "type", "candidate": f"{path}: module with extra {extra}",
                "reference": f"{path}: module with {missing}"}
    for k in rs:
        if tuple(cs[k].shape) != tuple(rs[k].shape):
            return {"finding": "shape", "candidate": f"{path}.{k}: {_describe(cs[k])}",
                    "reference": f"{path}.{k}: {_describe(rs[k])}", "broadcast": False}
    if list(c["training"].values()) != list(r["training"].values()):
        return {"finding": "side_effect", "side_effect": f"{path}: modules' training flags differ"}
    for k in rs:
        if torch.is_floating_point(rs[k]) and not torch.allclose(cs[k], rs[k], rtol=1e-5, atol=1e-6,
                                                                  equal_nan=True):
            d = _compare_values(cs[k], rs[k], f"{path}.{k}")
            if d:
                return d
    if list(c["grad"].values()) != list(r["grad"].values()):
        return {"finding": "side_effect", "side_effect": f"{path}: requires_grad flags differ"}
    return None


def _plain_object(x):
    """An instance of a user class without its own `==` (compared by identity otherwise)."""
    return isinstance(getattr(x, "__dict__", None), dict) and type(x).__eq__ is object.__eq__ \
        and not isinstance(x, type)


def _compare_attributes(c, r, path):
    """Two instances of a class without `==` (a stateful helper such as an early-stopping
    tracker): their attributes of the same name, since identity says nothing; attributes only
    one of them has are the candidate's own bookkeeping."""
    if path.count(".") > 4:
        return None  # objects that refer to each other: stop somewhere
    for name in [n for n in r if n in c]:
        if callable(r[name]) and _kind(r[name]) != "module":
            continue
        d = _compare_values(c[name], r[name], f"{path}.{name}")
        if d:
            return d
    return None


# --- the analysis ---------------------------------------------------------------------------
def analyse(recorder, reference_func, cand_src, ref_src, entry):
    """The finding of a failed test whose entry-point calls `recorder` kept.

    Calls are replayed in their order: a construction builds a reference instance from the same
    arguments and random state; a method call on the candidate's instance is replayed on that
    reference instance (given the candidate's parameters and modes first, see
    :func:`_sync_reference`), and compared exactly as a function call."""
    calls = recorder.calls
    base = {"calls": len(calls)}
    if not calls:
        return {"finding": "same", **base, "note": "the test did not call the function"}
    instances = {}  # index of a construction -> the reference's instance
    for i, rec in enumerate(calls):
        finding, lines = _replay(rec, reference_func, instances, i)
        if finding is None:
            continue
        finding.update(base)
        finding["call"] = i
        if "method" in rec:
            finding["method"] = rec["method"]
        ref_node = _reference_node(ref_src, entry, rec.get("method"))
        guards = _guards(None, lines, ref_node, 1)
        if guards:
            finding["guard"] = guards[0][:200]
        edge = _edge(rec["args"], rec["kwargs"])
        if edge:
            finding["edge"] = edge
        ignored = _ignored_args(cand_src, ref_src, entry, rec["args"], rec["kwargs"])
        if ignored:
            finding["ignored_args"] = ignored
        lib = _library_args(cand_src, ref_src)
        if lib:
            finding["library_args"] = lib[:4]
        return {k: v for k, v in finding.items() if v is not None}
    ignored = _ignored_args(cand_src, ref_src, entry, calls[-1]["args"], calls[-1]["kwargs"])
    return {"finding": "same", **base, **({"ignored_args": ignored} if ignored else {})}


def _reference_node(ref_src, entry, method):
    """The reference's code the call ran: the entry function, or the class's method."""
    if method is None:
        return _function_node(ref_src, entry)
    cls = _class_node(ref_src, entry)
    if cls is None:
        return None
    return next((m for m in cls.body if isinstance(m, (ast.FunctionDef, ast.AsyncFunctionDef))
                 and m.name == method), None)


def _replay(rec, reference_func, instances, i):
    """(the finding of one recorded call or None, the reference's lines it ran)."""
    if "method" not in rec:
        args, kwargs = _copy(rec["args"]), _copy(rec["kwargs"])
        _set_rng_state(rec["rng"])
        (how, value), lines = _run_traced(reference_func, args, kwargs)
        if how == "returned":
            instances[i] = value
        return _compare_call(rec, how, value, args, kwargs), lines
    ref = instances.get(rec["instance"])
    if ref is None:
        return _unavailable(rec, "the reference could not be built with the candidate's "
                                 "arguments"), set()
    method = getattr(ref, rec["method"], None)
    if not callable(method):
        return _unavailable(rec, f"the reference has no method {rec['method']}"), set()
    problem = _sync_reference(ref, rec.get("state"))
    if problem:
        return _unavailable(rec, problem), set()
    args, kwargs = _copy(rec["args"]), _copy(rec["kwargs"])
    _set_rng_state(rec["rng"])
    with _grad_mode(rec.get("grad")):
        (how, value), lines = _run_traced(method, args, kwargs)
    finding = _compare_call(rec, how, value, args, kwargs)
    if finding is None and "raised" not in rec:
        finding = _compare_self(rec.get("self_after"), ref, rec["method"])
    return finding, lines


def _unavailable(rec, note):
    return {"finding": "unavailable", "note": f"{rec.get('method', 'call')}: {note}"}


def _sync_reference(ref, state):
    """Give the reference instance the candidate's parameters, buffers and flags as they were
    before the call (the test may have zeroed weights or switched to eval mode since the
    construction); returns why that failed, or None."""
    if state is None:
        return None
    torch = sys.modules.get("torch")
    if torch is None or not isinstance(ref, torch.nn.Module):
        return None
    try:
        with torch.no_grad():
            ref.load_state_dict(state["state"], strict=True)
    except Exception as e:  # noqa: BLE001 - parameters the reference cannot take
        return f"the reference cannot take the candidate's parameters ({_exc_text(e)})"
    for name, module in ref.named_modules():
        if name in state["training"]:
            module.training = state["training"][name]
    for name, p in ref.named_parameters():
        if name in state["grad"]:
            p.requires_grad_(state["grad"][name])
    return None


def _grad_mode(enabled):
    """torch's grad mode of the candidate's call (a test calls forward under no_grad or not)."""
    torch = sys.modules.get("torch")
    if torch is None or enabled is None:
        return contextlib.nullcontext()
    return torch.set_grad_enabled(enabled)


def _compare_call(rec, how, value, args, kwargs):
    """The difference between the candidate's recorded call and the reference's, or None."""
    if "raised" in rec and how == "raised":
        if type(rec["raised"]) is not type(value):
            return {"finding": "both_raise", "candidate": _exc_text(rec["raised"]),
                    "reference": _exc_text(value), "raised_at": _raised_at(rec["tb"])}
        return None
    if "raised" in rec:
        return {"finding": "candidate_raises", "candidate": _exc_text(rec["raised"]),
                "reference": f"returned {_describe(value)}", "raised_at": _raised_at(rec["tb"])}
    if how == "raised":
        return {"finding": "reference_raises", "candidate": f"returned {_describe(rec['returned'])}",
                "reference": _exc_text(value)}
    finding = _compare_values(rec["returned"], value)
    if finding is None:
        finding = _compare_values(rec["after"], (args, kwargs), "arguments after the call")
        if finding is not None and finding["finding"] != "side_effect":
            finding = {"finding": "side_effect",
                       "side_effect": f"{finding.get('candidate', '')} / reference {finding.get('reference', '')}"}
    return finding


def _compare_self(cand_after, ref, method):
    """The same outputs: whether the method left its instance in another state (a module's
    parameters, buffers or flags; another object's attributes)."""
    path = f"self after {method}"
    if cand_after is None:
        return None
    if "state" in cand_after:
        d = _compare_module_states(cand_after, _module_state(ref), path)
    elif _plain_object(ref):
        d = _compare_attributes(cand_after["attrs"], vars(ref), path)
    else:
        d = None
    if d is not None and d["finding"] != "side_effect":
        d = {"finding": "side_effect",
             "side_effect": f"{d.get('candidate', '')} / reference {d.get('reference', '')}"}
    return d


def load_reference(path, entry):
    """The reference's entry point, from its own module (not `solution`)."""
    import importlib.util

    spec = importlib.util.spec_from_file_location("_reprolab_reference", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return getattr(module, entry)


def source_of(path):
    with open(path, encoding="utf-8") as f:
        return f.read()


__all__ = ["Recorder", "analyse", "load_reference", "source_of", "inspect"]
