"""What a failing generated function did, next to the reference: the behaviour evidence of the
failure taxonomy (`reprolab codegen`, docs/codegen.md#behaviour).

The plugin (reprolab.codegen_plugin) wraps the task's entry point while each test runs and keeps
every call's arguments (copied before the call), the random state, and what the call returned
or raised. When the test fails, :func:`analyse` runs the reference function on a copy of each
recorded call's arguments, with the same random state, and compares: the first call on which
the two differ gives the finding.

A finding is a dict (every key optional but ``finding``)::

    {"finding": "same" | "candidate_raises" | "reference_raises" | "both_raise" | "type" | "shape"
                | "dtype" | "nan" | "values" | "side_effect",
     "call": i, "calls": n,
     "candidate": str, "reference": str,           # what each returned or raised
     "raised_at": str,                             # the call that raised in the candidate
     "broadcast": bool,                            # shape: the candidate's is a broadcast of the reference's
     "close": bool, "rel_error": float, "corr": float, "permuted": bool, "ratio": float,
     "guard": str,                                 # an early exit the reference took (its `if`)
     "edge": [str],                                # edge-case features of the inputs
     "ignored_args": [str],                        # arguments passed, used by the reference, never read by the candidate
     "library_args": [str],                        # the same library call with other keyword arguments
     "side_effect": str}
"""
from __future__ import annotations

import ast
import copy
import inspect
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
    """Wraps the candidate's entry point and records its calls."""

    def __init__(self, func):
        self.func = func
        self.calls = []

    def __call__(self, *args, **kwargs):
        if len(self.calls) >= MAX_CALLS:
            return self.func(*args, **kwargs)
        rec = {"args": _copy(args), "kwargs": _copy(kwargs), "rng": _rng_state()}
        self.calls.append(rec)
        try:
            out = self.func(*args, **kwargs)
        except BaseException as e:
            rec["raised"] = e
            rec["tb"] = e.__traceback__
            rec["after"] = (_copy(args), _copy(kwargs))
            raise
        rec["returned"] = _copy(out)
        rec["after"] = (_copy(args), _copy(kwargs))
        return out


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
                    "reference": f"{path}: {_describe(r)}", "broadcast": False}
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
            return {"finding": "shape", "candidate": f"{path}: {_describe(c)}",
                    "reference": f"{path}: {_describe(r)}",
                    "broadcast": _is_broadcast(tuple(c.shape), tuple(r.shape))}
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
    return None if _safe_eq(c, r) else {"finding": "values", "candidate": _describe(c),
                                         "reference": _describe(r)}


def _safe_eq(a, b):
    try:
        return bool(a == b)
    except Exception:  # noqa: BLE001
        return False


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


def _compare_modules(c, r, path):
    torch = sys.modules["torch"]
    cs, rs = c.state_dict(), r.state_dict()
    if set(cs) != set(rs):
        missing = sorted(set(rs) - set(cs))[:4]
        extra = sorted(set(cs) - set(rs))[:4]
        return {"finding": "type", "candidate": f"{path}: module with extra {extra}",
                "reference": f"{path}: module with {missing}"}
    for k in rs:
        if tuple(cs[k].shape) != tuple(rs[k].shape):
            return {"finding": "shape", "candidate": f"{path}.{k}: {_describe(cs[k])}",
                    "reference": f"{path}.{k}: {_describe(rs[k])}", "broadcast": False}
    ct = [m.training for m in c.modules()]
    rt = [m.training for m in r.modules()]
    if ct != rt:
        return {"finding": "side_effect", "side_effect": f"{path}: modules' training flags differ"}
    for k in rs:
        if torch.is_floating_point(rs[k]) and not torch.allclose(cs[k], rs[k], rtol=1e-5, atol=1e-6,
                                                                  equal_nan=True):
            d = _compare_values(cs[k], rs[k], f"{path}.{k}")
            if d:
                return d
    cg = [p.requires_grad for p in c.parameters()]
    rg = [p.requires_grad for p in r.parameters()]
    if cg != rg:
        return {"finding": "side_effect", "side_effect": f"{path}: requires_grad flags differ"}
    return None


# --- the analysis ---------------------------------------------------------------------------
def analyse(recorder, reference_func, cand_src, ref_src, entry):
    """The finding of a failed test whose entry-point calls `recorder` kept."""
    calls = recorder.calls
    ref_node = _function_node(ref_src, entry)
    first_line = 1
    base = {"calls": len(calls)}
    if not calls:
        return {"finding": "same", **base, "note": "the test did not call the function"}
    for i, rec in enumerate(calls):
        args, kwargs = _copy(rec["args"]), _copy(rec["kwargs"])
        _set_rng_state(rec["rng"])
        (how, value), lines = _run_traced(reference_func, args, kwargs)
        finding = None
        if "raised" in rec and how == "raised":
            if type(rec["raised"]) is not type(value):
                finding = {"finding": "both_raise", "candidate": _exc_text(rec["raised"]),
                           "reference": _exc_text(value),
                           "raised_at": _raised_at(rec["tb"])}
        elif "raised" in rec:
            finding = {"finding": "candidate_raises", "candidate": _exc_text(rec["raised"]),
                       "reference": f"returned {_describe(value)}",
                       "raised_at": _raised_at(rec["tb"])}
        elif how == "raised":
            finding = {"finding": "reference_raises", "candidate": f"returned {_describe(rec['returned'])}",
                       "reference": _exc_text(value)}
        else:
            finding = _compare_values(rec["returned"], value)
            if finding is None:
                finding = _compare_values(rec["after"], (args, kwargs), "arguments after the call")
                if finding is not None and finding["finding"] != "side_effect":
                    finding = {"finding": "side_effect",
                               "side_effect": f"{finding.get('candidate', '')} / reference {finding.get('reference', '')}"}
        if finding is None:
            continue
        finding.update(base)
        finding["call"] = i
        guards = _guards(reference_func, lines, ref_node, first_line)
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
