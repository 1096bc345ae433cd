"""The Optuna side of `tpe_bench.rs`: the same objectives, spaces and faulty trial 0, run with
Optuna's samplers; prints one JSON line per (objective, sampler, seed) as the Rust side does.

    # from the repository root (measured with optuna 5.0.0):
    python3 -m venv /tmp/optuna-venv && /tmp/optuna-venv/bin/pip install optuna numpy
    cargo build --release -p reprolab-search --example tpe_bench
    # check that both sides compute the same objective values (to 1e-12):
    /tmp/optuna-venv/bin/python crates/reprolab-search/examples/tpe_bench_optuna.py \
        --check target/release/examples/tpe_bench
    /tmp/optuna-venv/bin/python crates/reprolab-search/examples/tpe_bench_optuna.py \
        --trials 60 --seeds 20 > optuna.jsonl

Samplers: `optuna-tpe` (`TPESampler(seed=...)`, the defaults: in Optuna >= 5 that is the
multivariate TPE for a single objective), `optuna-tpe-indep` (`multivariate=False`, the
independent TPE), `optuna-random` (`RandomSampler`). A failed training is told as
`TrialState.FAIL` (which Optuna's samplers ignore); with the suffix `+prunedfail` (e.g.
`optuna-tpe-indep+prunedfail`) as `TrialState.PRUNED` instead, which the TPE ranks last.
"""

import argparse
import json
import math
import random
import subprocess
import sys
import warnings

M64 = (1 << 64) - 1
ACTS = ["elu", "softmax", "selu", "softplus", "softsign", "relu", "tanh", "sigmoid",
        "hard_sigmoid", "exponential", "linear"]
INITS = ["zeros", "random_normal", "glorot_uniform", "he_uniform", "he_normal"]
OPTS = ["sgd", "rmsprop", "adam", "adadelta"]
OBJECTIVES = ["study", "study-float", "branin", "noisy-lr"]


def space(objective):
    """[(name, kind, spec)] in the Rust space's order; kind: choice | int | float | log-float."""
    if objective in ("study", "study-float"):
        out = []
        for i in range(3):
            out.append((f"act{i}", "choice", ACTS))
            out.append((f"ki{i}", "choice", INITS))
        out.append(("optimizer", "choice", OPTS))
        out.append(("lr", "log-float" if objective == "study" else "float", (1e-6, 10.0)))
        out.append(("batch_size", "choice", [16, 32, 64, 128, 256]))
        out.append(("epochs", "choice", [9, 12, 18, 27]))
        return out
    if objective == "branin":
        return [("x1", "float", (-5.0, 10.0)), ("x2", "int", (0, 15)),
                ("c", "choice", ["a", "b", "c", "d"])]
    if objective == "noisy-lr":
        return [("optimizer", "choice", OPTS), ("lr", "log-float", (1e-6, 10.0)),
                ("layers", "int", (1, 8)), ("batch_size", "choice", [16, 32, 64, 128, 256]),
                ("dropout", "float", (0.0, 0.9))]
    raise ValueError(objective)


def goal(objective):
    return "maximize" if objective in ("study", "study-float") else "minimize"


def faulty(objective):
    if objective in ("study", "study-float"):
        return {"act0": "relu", "ki0": "glorot_uniform", "act1": "relu", "ki1": "glorot_uniform",
                "act2": "sigmoid", "ki2": "glorot_uniform", "optimizer": "adam", "lr": 3.0,
                "batch_size": 32, "epochs": 9}
    if objective == "branin":
        return {"x1": 0.0, "x2": 0, "c": "c"}
    return {"optimizer": "adam", "lr": 3.0, "layers": 1, "batch_size": 256, "dropout": 0.5}


def uniforms(seed, trial):
    state = ((seed * 0x9E3779B97F4A7C15) & M64) ^ trial
    out = []
    for _ in range(2):
        state = (state + 0x9E3779B97F4A7C15) & M64
        z = state
        z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & M64
        z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & M64
        z ^= z >> 31
        out.append((z >> 11) * (1.0 / (1 << 53)))
    return out


def lr_bump(lr):
    x = math.log10(max(lr, 1e-300))
    dist = -3.0 - x if x < -3.0 else (x + 2.0 if x > -2.0 else 0.0)
    return max(1.0 - dist / 1.5, 0.0)


def branin(x1, x2):
    a, b, c = 1.0, 5.1 / (4.0 * math.pi * math.pi), 5.0 / math.pi
    r, s, t = 6.0, 10.0, 1.0 / (8.0 * math.pi)
    return a * (x2 - b * x1 * x1 + c * x1 - r) ** 2 + s * (1.0 - t) * math.cos(x1) + s


def evaluate(objective, c, seed, trial):
    u1, u2 = uniforms(seed, trial)
    if objective in ("study", "study-float"):
        gain = 0.45 * float(c["act2"] == "softmax") + 0.4 * lr_bump(c["lr"])
        return 0.1 + gain + 0.01 * (2.0 * u1 - 1.0)
    if objective == "branin":
        off = {"a": 0.0, "b": 2.0, "c": 5.0}.get(c["c"], 10.0)
        return branin(c["x1"], c["x2"]) + off
    if objective == "noisy-lr":
        best_lr, extra = {"sgd": (0.1, 0.1), "rmsprop": (1e-3, 0.05),
                          "adam": (1e-3, 0.0)}.get(c["optimizer"], (1.0, 0.3))
        lr = c["lr"]
        if lr > 10.0 * best_lr:
            return None
        d = math.log10(lr) - math.log10(best_lr)
        gauss = math.sqrt(-2.0 * math.log(1.0 - u1)) * math.cos(2.0 * math.pi * u2)
        return (0.5 * d * d + 0.1 * (c["layers"] - 4.0) ** 2
                + 0.2 * abs(math.log2(c["batch_size"]) - 6.0)
                + 2.0 * (c["dropout"] - 0.2) ** 2 + extra + 0.05 * gauss)
    raise ValueError(objective)


def random_config(objective, rng):
    c = {}
    for name, kind, spec in space(objective):
        if kind == "choice":
            c[name] = rng.choice(spec)
        elif kind == "int":
            c[name] = rng.randint(*spec)
        elif kind == "float":
            c[name] = rng.uniform(*spec)
        else:
            c[name] = math.exp(rng.uniform(math.log(spec[0]), math.log(spec[1])))
    return c


def check(binary, n=300):
    """Both sides give the same values on random configs (and the faulty ones)."""
    rng = random.Random(1)
    queries = []
    for objective in OBJECTIVES:
        configs = [faulty(objective)] + [random_config(objective, rng) for _ in range(n)]
        for i, c in enumerate(configs):
            queries.append({"objective": objective, "config": c, "seed": rng.randrange(1 << 40),
                            "trial": i})
    out = subprocess.run([binary, "--eval"], input="\n".join(json.dumps(q) for q in queries),
                         capture_output=True, text=True, check=True).stdout.split("\n")
    worst = 0.0
    for q, line in zip(queries, out):
        theirs = json.loads(line)["value"]
        ours = evaluate(q["objective"], q["config"], q["seed"], q["trial"])
        if (theirs is None) != (ours is None):
            sys.exit(f"mismatch (failure) {q}: rust {theirs}, python {ours}")
        if ours is not None:
            worst = max(worst, abs(theirs - ours))
    if worst > 1e-12:
        sys.exit(f"values differ by up to {worst}")
    print(f"{len(queries)} configs: same values (max |diff| {worst:.1e})", file=sys.stderr)


def make_sampler(name, seed):
    import optuna

    name = name.removesuffix("+prunedfail")

    if name == "optuna-tpe":
        return optuna.samplers.TPESampler(seed=seed)
    if name == "optuna-tpe-indep":
        return optuna.samplers.TPESampler(seed=seed, multivariate=False)
    if name == "optuna-random":
        return optuna.samplers.RandomSampler(seed=seed)
    raise ValueError(name)


def run(objective, sampler_name, seed, trials):
    import optuna
    from optuna.trial import TrialState

    sampler = make_sampler(sampler_name, seed)
    study = optuna.create_study(direction=goal(objective), sampler=sampler)
    study.enqueue_trial(faulty(objective))
    maximize = goal(objective) == "maximize"
    best, best_config, failed, out = None, None, 0, []
    for n in range(trials):
        t = study.ask()
        c = {}
        for name, kind, spec in space(objective):
            if kind == "choice":
                c[name] = t.suggest_categorical(name, spec)
            elif kind == "int":
                c[name] = t.suggest_int(name, *spec)
            else:
                c[name] = t.suggest_float(name, *spec, log=kind == "log-float")
        v = evaluate(objective, c, seed, n)
        if v is None or not math.isfinite(v):
            # Optuna's samplers ignore FAIL trials; PRUNED ones (no intermediate values) rank
            # last, the maintainers' advice for infeasible configs (optuna#566).
            pruned = sampler_name.endswith("+prunedfail")
            study.tell(t, state=TrialState.PRUNED if pruned else TrialState.FAIL)
            failed += 1
        else:
            study.tell(t, v)
            if best is None or (v > best if maximize else v < best):
                best, best_config = v, c
        out.append(best)
    if sampler_name.startswith("optuna-tpe") and seed == 0:
        print(f"{objective} {sampler_name}: multivariate = {sampler._is_multivariate(study)}",
              file=sys.stderr)
    return out, best_config, failed


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--check", metavar="TPE_BENCH_BINARY")
    ap.add_argument("--trials", type=int, default=60)
    ap.add_argument("--seeds", type=int, default=20)
    ap.add_argument("--objectives", default=",".join(OBJECTIVES))
    ap.add_argument("--samplers", default="optuna-tpe,optuna-tpe-indep,optuna-random")
    a = ap.parse_args()
    if a.check:
        check(a.check)
        return
    import optuna

    optuna.logging.set_verbosity(optuna.logging.ERROR)
    warnings.filterwarnings("ignore")
    print(f"optuna {optuna.__version__}", file=sys.stderr)
    for objective in a.objectives.split(","):
        for name in a.samplers.split(","):
            for seed in range(a.seeds):
                best, config, failed = run(objective, name, seed, a.trials)
                print(json.dumps({"objective": objective, "sampler": name, "seed": seed,
                                  "best": best, "best_config": config, "failed": failed}),
                      flush=True)


if __name__ == "__main__":
    main()
