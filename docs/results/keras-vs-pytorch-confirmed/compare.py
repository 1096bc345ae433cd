"""Pair the cells of results-pytorch.jsonl and results-keras.jsonl by fault and repeat; print
the table, the paired Wilcoxon signed-rank test of the IR differences (Keras - PyTorch), and an
equivalence test (TOST: two one-sided Wilcoxon signed-rank tests) with margin MARGIN IR.
Run with the managed environment's Python (SciPy)."""
import json
import statistics
import sys

from scipy.stats import wilcoxon

MARGIN = float(sys.argv[1]) if len(sys.argv) > 1 else 0.1


def load(path):
    rows = {}
    for line in open(path):
        r = json.loads(line)
        rows[(r["fault"].replace("-keras", ""), r["repeat"])] = r
    return rows


torch, keras = load("results-pytorch.jsonl"), load("results-keras.jsonl")
keys = sorted(set(torch) & set(keras))


def ir(r):
    return None if r["ir"] is None else r["ir"]


print("| fault | repeat | PyTorch IR (sig.) | Keras IR (sig.) |")
print("|---|---|---|---|")
diffs = []
for key in keys:
    a, b = torch[key], keras[key]
    show = lambda r: f"{ir(r):.2f}" if ir(r) is not None else "-"
    print(f"| {key[0]} | {key[1]} | {show(a)} ({'yes' if a['significant'] else 'no'}) "
          f"| {show(b)} ({'yes' if b['significant'] else 'no'}) |")
    if ir(a) is not None and ir(b) is not None:
        diffs.append(ir(b) - ir(a))
print()
print(f"pairs {len(diffs)}: Keras higher in {sum(d > 1e-9 for d in diffs)}, "
      f"lower in {sum(d < -1e-9 for d in diffs)}")
nonzero = [d for d in diffs if abs(d) > 1e-9]
if nonzero:
    print("Wilcoxon signed-rank (difference):", wilcoxon(nonzero))
lower = wilcoxon([d + MARGIN for d in diffs], alternative="greater")
upper = wilcoxon([d - MARGIN for d in diffs], alternative="less")
p = max(lower.pvalue, upper.pvalue)
print(f"TOST, margin {MARGIN} IR: p(lower) = {lower.pvalue:.4g}, p(upper) = {upper.pvalue:.4g}, "
      f"p = {p:.4g}: {'equivalent' if p < 0.05 else 'not shown equivalent'} at 0.05")
for name, rows in (("PyTorch", torch), ("Keras", keras)):
    print(f"{name}: significant {sum(rows[k]['significant'] for k in keys)}/{len(keys)}, "
          f"median IR {statistics.median([ir(rows[k]) or 0.0 for k in keys]):.2f}, "
          f"negative IR reported as repaired: "
          f"{sum(1 for k in keys if rows[k]['significant'] and (ir(rows[k]) or 0) < 0)}")
