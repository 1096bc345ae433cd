"""reprolab's Python side: the API that subjects call, the worker, the tracer and the Keras vocabulary.

Public API (see docs/architecture.md):

    reprolab.log_epoch(epoch, loss=..., acc=..., val_loss=..., val_acc=...)
    reprolab.watch(model)
    reprolab.seed_everything(seed)
    reprolab.in_trace()
    reprolab.current_run()
    reprolab.run_script(train)
    reprolab.result(search=..., holdout=...)   # the metric of an argparse script (script_entry)
    reprolab.report(loss=..., grad_norm=...)   # values a bug-reproduction script shows

Everything here is a cheap no-op when the code runs outside reprolab, so a subject stays a normal
program. Importing this package does not import torch (nor numpy): `reprolab.nn` and
`reprolab.trace` are loaded on first use.
"""
from __future__ import annotations

import json
import math
import numbers
import os
import random
import sys

__version__ = "0.1.0"

__all__ = [
    "log_epoch",
    "watch",
    "seed_everything",
    "in_trace",
    "current_run",
    "run_script",
    "result",
    "report",
    "ReprolabContractError",
    "ScriptResultMissing",
    "ScriptExit",
    "TrialPruned",
    "__version__",
]


class ReprolabContractError(Exception):
    """A subject broke the subject contract (wrong return value, missing entry callable, ...)."""


class ScriptResultMissing(ReprolabContractError):
    """A script run by `reprolab.script_entry` ended without calling `reprolab.result(...)`."""


class ScriptExit(Exception):
    """A script run by `reprolab.script_entry` called `sys.exit` with a failure status (argparse
    does, with status 2, when it rejects an option)."""


class TrialPruned(BaseException):
    """Raised by `log_epoch` when the run's pruner stops the training: its best value so far of
    the pruned metric fell behind the threshold of this epoch. A BaseException, so that a
    subject's `except Exception` does not swallow it; the worker records the run as pruned."""

    def __init__(self, epoch, value):
        super().__init__(f"pruned at epoch {epoch} (best so far {value})")
        self.epoch = epoch
        self.value = value


class _Pruner:
    """A request's prune spec ({"key", "goal", "thresholds"}), checked at each log_epoch: the
    rule of reprolab-search's `prune_at` (epochs counted by log_epoch calls, from 0; the best
    finite value so far against thresholds[epoch]; no finite value yet counts as worst)."""

    __slots__ = ("key", "maximize", "thresholds", "step", "best")

    def __init__(self, spec):
        self.key = str(spec["key"])
        self.maximize = spec.get("goal", "max") != "min"
        self.thresholds = list(spec.get("thresholds") or [])
        self.step = 0
        self.best = None

    def check(self, record):
        """Raises TrialPruned when this epoch's record falls behind its threshold."""
        step = self.step
        self.step += 1
        if self.key not in record:
            return
        v = record[self.key]
        if isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v):
            v = float(v)
            if self.best is None or (v > self.best if self.maximize else v < self.best):
                self.best = v
        t = self.thresholds[step] if step < len(self.thresholds) else None
        if t is None:
            return
        if self.best is None or (self.best < t if self.maximize else self.best > t):
            raise TrialPruned(step, self.best)


# --------------------------------------------------------------------------------------------
# Run context: set by the worker child (or by run_script) before the subject's train() runs.
# None outside reprolab, which makes every API call a no-op.
# --------------------------------------------------------------------------------------------
class _RunContext:
    __slots__ = ("workdir", "mode", "epochs_path", "run_id", "tracer", "pruner")

    def __init__(self, workdir, mode="eval", run_id=None, epochs_path=None, prune=None):
        if mode not in ("eval", "trace"):
            raise ValueError(f"unknown reprolab mode {mode!r}; expected 'eval' or 'trace'")
        self.workdir = os.fspath(workdir)
        self.mode = mode
        self.run_id = run_id
        self.epochs_path = os.fspath(epochs_path) if epochs_path else os.path.join(self.workdir, "epochs.jsonl")
        self.tracer = None  # reprolab.trace.Tracer, created by the first watch() in trace mode
        # In-training pruning (eval mode only: a trace always runs to its end).
        self.pruner = _Pruner(prune) if (prune and mode == "eval") else None


_context: _RunContext | None = None


def _set_run_context(workdir, mode="eval", run_id=None, epochs_path=None, prune=None):
    """Called by the worker child (and run_script) before train(); not part of the subject API.
    `prune`: the request's prune spec ({"key", "goal", "thresholds"}) or None."""
    global _context
    _context = _RunContext(workdir, mode, run_id, epochs_path, prune)
    return _context


def _pruned_record(e):
    """The result.json record of a pruned training."""
    value = e.value if (e.value is not None and math.isfinite(e.value)) else None
    return {"status": "pruned", "epoch": int(e.epoch), "value": value}


def _clear_run_context():
    global _context
    _context = None


def in_trace() -> bool:
    """True while `reprolab trace` runs this training."""
    ctx = _context
    return ctx is not None and ctx.mode == "trace"


def current_run():
    """A dict describing the current reprolab run ({"id", "mode", "workdir", "epochs_path"}),
    or None when the code runs outside reprolab."""
    ctx = _context
    if ctx is None:
        return None
    return {"id": ctx.run_id, "mode": ctx.mode, "workdir": ctx.workdir, "epochs_path": ctx.epochs_path}


# --------------------------------------------------------------------------------------------
# Value helpers shared by log_epoch, the worker and run_script.
# --------------------------------------------------------------------------------------------
def _to_float(value):
    """A Python float for a numeric scalar (int, float, numpy scalar, 1-element array/tensor);
    None when `value` is not a numeric scalar. Bools are not metrics."""
    if isinstance(value, bool):
        return None
    if isinstance(value, numbers.Real):
        try:
            return float(value)
        except (TypeError, ValueError, OverflowError):
            return None
    # numpy arrays / torch tensors holding exactly one number
    item = getattr(value, "item", None)
    if item is not None and callable(item):
        try:
            detach = getattr(value, "detach", None)
            if callable(detach):  # a torch tensor that may require grad
                value = detach()
                item = value.item
            size = value.numel() if hasattr(value, "numel") else getattr(value, "size", None)
            if size != 1:
                return None
            v = item()
        except Exception:
            return None
        if isinstance(v, bool) or not isinstance(v, numbers.Real):
            return None
        return float(v)
    return None


def _finite_or_none(x):
    return x if (x is not None and math.isfinite(x)) else None


def _json_safe(value, depth=0):
    """A JSON-serialisable copy of `value`: non-finite floats become None, numpy/torch values are
    converted, anything else unknown becomes its repr()."""
    if depth > 20:
        return repr(value)
    if value is None or isinstance(value, (bool, str)):
        return value
    if isinstance(value, int):
        return value
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, dict):
        return {str(k): _json_safe(v, depth + 1) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_json_safe(v, depth + 1) for v in value]
    f = _to_float(value)
    if f is not None:
        if isinstance(value, numbers.Integral):
            return int(value)
        return _finite_or_none(f)
    tolist = getattr(value, "tolist", None)
    if callable(tolist):
        try:
            return _json_safe(tolist(), depth + 1)
        except Exception:
            pass
    return repr(value)


def _validate_result(result):
    """Check a train() return value against the subject contract.

    Returns (search, holdout, extra) with search/holdout as floats (possibly non-finite);
    raises ReprolabContractError otherwise."""
    expected = ('train(config, seed) must return a dict with numeric "search" and "holdout" '
                'entries, e.g. {"search": 0.93, "holdout": 0.91}')
    if not isinstance(result, dict):
        shown = repr(result)
        if len(shown) > 200:
            shown = shown[:200] + "..."
        raise ReprolabContractError(f"{expected}; it returned {type(result).__name__}: {shown}")
    values = {}
    for key in ("search", "holdout"):
        if key not in result:
            raise ReprolabContractError(f"{expected}; the returned dict has no {key!r} key "
                                        f"(keys: {sorted(map(str, result.keys()))})")
        v = _to_float(result[key])
        if v is None:
            shown = repr(result[key])
            if len(shown) > 200:
                shown = shown[:200] + "..."
            raise ReprolabContractError(f"{expected}; {key!r} is {type(result[key]).__name__}: {shown}")
        values[key] = v
    extra = {str(k): _json_safe(v) for k, v in result.items() if k not in ("search", "holdout")}
    return values["search"], values["holdout"], extra


def _ok_record(search, holdout, extra):
    """The result.json record for a finished training; non-finite metrics become null and the
    record carries "nonfinite": true (the Rust side turns that into the `nan` outcome)."""
    rec = {"status": "ok", "search": _finite_or_none(search), "holdout": _finite_or_none(holdout),
           "extra": extra}
    if not (math.isfinite(search) and math.isfinite(holdout)):
        rec["nonfinite"] = True
    return rec


def _write_json_atomic(path, obj):
    tmp = f"{path}.tmp{os.getpid()}"
    with open(tmp, "w", encoding="utf-8") as f:
        json.dump(obj, f, allow_nan=False)
        f.write("\n")
        f.flush()
    os.replace(tmp, path)


# --------------------------------------------------------------------------------------------
# Public API
# --------------------------------------------------------------------------------------------
def log_epoch(epoch, **metrics):
    """Report one epoch's metrics (any float kwargs: loss, acc, val_loss, val_acc, ...).

    Appends one JSON line to the run's epochs.jsonl; in trace mode the record also carries the
    per-layer statistics of the watched models. Does nothing outside reprolab. When the run has
    a pruner (a search's trial) and this epoch falls behind its threshold, raises TrialPruned
    after recording the epoch."""
    ctx = _context
    if ctx is None:
        return
    record = {"epoch": int(epoch)}
    nan = False
    for key, value in metrics.items():
        if key in ("epoch", "nan", "layers", "steps"):
            key = f"{key}_"
        f = _to_float(value)
        if f is None:
            record[key] = _json_safe(value)
            continue
        if not math.isfinite(f):
            if key == "loss" or key.endswith("loss"):
                nan = True
            record[key] = None
        else:
            record[key] = f
    if ctx.tracer is not None:
        layers, params_nonfinite = ctx.tracer.epoch_layers()
        nan = nan or params_nonfinite
        record["nan"] = nan
        # Updates made through torch / Keras optimizers; a program that updates its weights
        # by hand makes none that a hook can see, so 0 says nothing and is left out.
        steps = ctx.tracer.epoch_steps()
        if steps:
            record["steps"] = steps
        record["layers"] = layers
        ctx.tracer.arm()
    else:
        record["nan"] = nan
    line = json.dumps(record, allow_nan=False)
    with open(ctx.epochs_path, "a", encoding="utf-8") as f:
        f.write(line + "\n")
    if ctx.pruner is not None:
        ctx.pruner.check(record)


def watch(model):
    """Let `reprolab trace` hook gradients and activations of a torch.nn.Module.

    Does nothing (and costs nothing) unless the run is a trace. Returns the model."""
    ctx = _context
    if ctx is None or ctx.mode != "trace":
        return model
    from . import trace as _trace

    if ctx.tracer is None:
        ctx.tracer = _trace.Tracer()
    ctx.tracer.watch(model)
    return model


def seed_everything(seed):
    """Seed Python's random, numpy and torch (when installed) with `seed`, and Keras' global seed
    generator when the program has imported Keras (this never imports it)."""
    seed = int(seed)
    random.seed(seed)
    keras = sys.modules.get("keras")
    if keras is not None:
        keras.utils.set_random_seed(seed % 2**32)
    try:
        import numpy as np
    except ImportError:
        np = None
    if np is not None:
        np.random.seed(seed % (2**32))
    try:
        import torch
    except ImportError:
        torch = None
    if torch is not None:
        torch.manual_seed(seed)


def run_script(train, argv=None):
    """Run a subject as a plain script, for `if __name__ == "__main__": reprolab.run_script(train)`.

    Parses `--config FILE --seed N --out FILE` (config defaults to config.json beside the script,
    seed to 0), calls `train(config, seed)` and writes the result as JSON to --out (or prints it).
    Optional `--workdir DIR [--mode eval|trace]` make log_epoch/watch record into DIR, as in the
    worker. Returns the result dict."""
    import argparse
    import inspect

    try:
        script_dir = os.path.dirname(os.path.abspath(inspect.getfile(train)))
    except (TypeError, OSError):
        script_dir = os.getcwd()
    parser = argparse.ArgumentParser(description="Train this reprolab subject once.")
    parser.add_argument("--config", default=None,
                        help="JSON file with the config (default: config.json beside the script)")
    parser.add_argument("--seed", type=int, default=0, help="random seed (default 0)")
    parser.add_argument("--out", default=None, help="write the result JSON here (default: print it)")
    # reprolab's script runner passes these through the environment.
    parser.add_argument("--workdir", default=os.environ.get("REPROLAB_WORKDIR"),
                        help="record epochs.jsonl into this directory")
    parser.add_argument("--mode", default=os.environ.get("REPROLAB_MODE", "eval"), choices=("eval", "trace"))
    args = parser.parse_args(argv)

    config_path = args.config or os.path.join(script_dir, "config.json")
    if args.config is None and not os.path.exists(config_path):
        config = {}
    else:
        with open(config_path, encoding="utf-8") as f:
            config = json.load(f)

    prune = None
    if os.environ.get("REPROLAB_PRUNE"):
        try:
            prune = json.loads(os.environ["REPROLAB_PRUNE"])
        except ValueError:
            prune = None
    if args.workdir:
        os.makedirs(args.workdir, exist_ok=True)
        _set_run_context(args.workdir, args.mode, prune=prune)
    try:
        result = train(config, args.seed)
    except TrialPruned as e:
        record = _pruned_record(e)
        if args.out:
            _write_json_atomic(args.out, record)
        else:
            print(json.dumps(record, allow_nan=False))
        return record
    finally:
        if args.workdir:
            _clear_run_context()
    search, holdout, extra = _validate_result(result)
    out = {"search": _finite_or_none(search), "holdout": _finite_or_none(holdout)}
    out.update({k: v for k, v in extra.items() if k not in out})
    if not (math.isfinite(search) and math.isfinite(holdout)):
        out["nonfinite"] = True
    if args.out:
        _write_json_atomic(args.out, out)
    else:
        print(json.dumps(out, allow_nan=False))
    return result


# Set by reprolab.script_entry while it runs a script: where result() puts what it is given.
_script_results: list | None = None


def result(search, holdout, **extra):
    """The metric of a training script that reprolab runs through `reprolab.script_entry` (what
    `reprolab init` writes for an argparse script): its value on the validation split
    (`search`, what searches optimise) and on the test split (`holdout`, what verdicts read),
    plus any other values. Call it once, after training; the last call counts. Outside reprolab
    it prints `reprolab.result: search=0.95, holdout=0.94` and does nothing else."""
    values = {"search": search, "holdout": holdout, **extra}
    if _script_results is not None:
        _script_results.append(values)
        return
    shown = ", ".join(f"{k}={_report_value(v)}" for k, v in values.items())
    print(f"reprolab.result: {shown}", flush=True)


def __getattr__(name):
    # lazy submodules: `reprolab.nn` / `reprolab.trace` without importing torch at package import
    if name in ("nn", "trace"):
        import importlib

        return importlib.import_module(f"{__name__}.{name}")
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


# --------------------------------------------------------------------------------------------
# Bug reproduction: values a script shows, for `reprolab reproduce`.
# --------------------------------------------------------------------------------------------
def _report_value(value):
    """A JSON value for report(): a number (non-finite ones as the strings "nan", "inf",
    "-inf"), a bool, or for an array/tensor with several elements a summary
    {"mean", "min", "max", "nonfinite"} so that NaN anywhere in it is seen."""
    if isinstance(value, bool) or value is None or isinstance(value, str):
        return value
    f = _to_float(value)
    if f is None:
        try:
            import numpy as np

            detach = getattr(value, "detach", None)
            arr = np.asarray(detach().cpu().float() if callable(detach) else value, dtype=float)
        except Exception:
            return repr(value)[:200]
        if arr.size == 0:
            return None
        finite = arr[np.isfinite(arr)]
        return {
            "mean": _report_value(float(arr.mean())),
            "min": _report_value(float(arr.min())),
            "max": _report_value(float(arr.max())),
            "nonfinite": int(arr.size - finite.size),
        }
    if math.isnan(f):
        return "nan"
    if math.isinf(f):
        return "inf" if f > 0 else "-inf"
    return f


def report(**values):
    """Show values a bug-reproduction script computed: `reprolab.report(loss=loss)` once per
    step, `reprolab.report(weight_change=delta, grad_is_none=p.grad is None)`. Under
    `reprolab reproduce` each call is recorded (and survives a crash); elsewhere it prints
    `reprolab.report: loss=0.31`. Values must be computed: a literal such as
    `report(loss=float("nan"))` is ignored by the judge."""
    record = {str(k): _report_value(v) for k, v in values.items()}
    path = os.environ.get("REPROLAB_REPORT_FILE")
    if path:
        with open(path, "a", encoding="utf-8") as f:
            f.write(json.dumps(record) + "\n")
    else:
        shown = ", ".join(f"{k}={v}" for k, v in record.items())
        print(f"reprolab.report: {shown}", flush=True)
