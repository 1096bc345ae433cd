"""Agreement between the hand labels of the held-out sets and a second, blind annotator.

    python3 benchmarks/codegen/interrater.py [RESULTS_DIR ...]

Reads labelled-wrong-heldout{2..7}.jsonl (first annotator) and second-annotator-heldout2-7.jsonl
(ids `SET:TASK:SAMPLE`), prints raw agreement and Cohen's kappa; with the `--out` directories of
`reprolab codegen run` on those sets (in the order heldout2 .. heldout7), also the rules' agreement
with each annotator. Standard library only.
"""
import collections
import json
import pathlib
import sys

HERE = pathlib.Path(__file__).parent
SETS = [f"heldout{i}" for i in range(2, 8)]


def first_annotator():
    labels = {}
    for s in SETS:
        for line in (HERE / f"labelled-wrong-{s}.jsonl").read_text().splitlines():
            if not line.strip() or line.startswith("//"):
                continue
            d = json.loads(line)
            e = d["expected_label"]
            labels[f"{s}:{d['task_id']}:{d['sample']}"] = e if isinstance(e, str) else e["category"]
    return labels


def second_annotator():
    rows = map(json.loads, (HERE / "second-annotator-heldout2-7.jsonl").read_text().splitlines())
    return {r["id"]: r["category"] for r in rows}


def rules(dirs):
    labels = {}
    for s, d in zip(SETS, dirs):
        for line in (pathlib.Path(d) / "results.jsonl").read_text().splitlines():
            r = json.loads(line)
            labels[f"{s}:{r['task_id']}:{r['sample']}"] = (r.get("taxonomy") or {}).get("category")
    return labels


def agreement(x, y):
    ids = sorted(x)
    n = len(ids)
    observed = sum(x[i] == y[i] for i in ids) / n
    cx, cy = collections.Counter(x[i] for i in ids), collections.Counter(y[i] for i in ids)
    expected = sum(cx[k] * cy[k] for k in cx) / n / n
    return sum(x[i] == y[i] for i in ids), n, (observed - expected) / (1 - expected)


def main():
    a, b = first_annotator(), second_annotator()
    assert set(a) == set(b), "the two annotators must label the same items"
    pairs = [("first vs second annotator", a, b)]
    if len(sys.argv) > 1:
        r = rules(sys.argv[1:])
        pairs += [("rules vs first annotator", r, a), ("rules vs second annotator", r, b)]
    for name, x, y in pairs:
        agreed, n, kappa = agreement(x, y)
        print(f"{name}: {agreed}/{n} ({agreed / n:.0%}), Cohen's kappa {kappa:.2f}")


if __name__ == "__main__":
    main()
