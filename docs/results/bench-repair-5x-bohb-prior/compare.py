"""The summary and paired comparisons of README.md: per arm (engine@budget) the significant
cells, median IR, mean trainings, pruned trials and significant repairs with a negative IR; per
pair of arms the cells where one's IR is higher, and a Wilcoxon signed-rank test over the
(fault, repeat) cells whose IRs differ. Usage: python3 compare.py results.jsonl (needs scipy)."""
import collections
import json
import statistics
import sys

from scipy.stats import wilcoxon

by = collections.defaultdict(dict)
for line in open(sys.argv[1]):
    r = json.loads(line)
    by[f"{r['engine']}@{r['budget']}"][(r["fault"], r["repeat"])] = r

ir = lambda c: c["ir"] if c["ir"] is not None else 0.0
for arm, cells in by.items():
    c = cells.values()
    print(f"{arm}: cells {len(cells)}, significant {sum(x['significant'] for x in c)}, "
          f"median IR {statistics.median(map(ir, c)):.2f}, "
          f"trainings {statistics.mean(x['trials'] for x in c):.1f}, "
          f"pruned {statistics.mean(x.get('pruned', 0) for x in c):.1f}, "
          f"significant with IR < 0: {sum(x['significant'] and ir(x) < 0 for x in c)}")
arms = list(by)
for i, a in enumerate(arms):
    for b in arms[i + 1:]:
        d = [ir(by[a][k]) - ir(by[b][k]) for k in sorted(set(by[a]) & set(by[b]))]
        nonzero = [x for x in d if abs(x) > 1e-12]
        p = wilcoxon(nonzero).pvalue if nonzero else 1.0
        print(f"{a} vs {b}: better {sum(x > 0 for x in nonzero)}, "
              f"worse {sum(x < 0 for x in nonzero)}, p {p:.3f}")
