"""Pruned trainings against their twins: the same config and seed trained to its end by another
arm of the run (README: "Why the first pruner lost"). Usage: python3 twins.py STORE.db"""
import collections
import json
import math
import sqlite3
import sys

db = sqlite3.connect(f"file:{sys.argv[1]}?mode=ro", uri=True)
rows = db.execute(
    "SELECT subject, config, seed, outcome_kind, outcome, epochs FROM evaluations WHERE mode = 'eval'"
).fetchall()
done = {}
for subject, config, seed, kind, outcome, epochs in rows:
    if kind == "ok":
        done[(subject, config, seed)] = (json.loads(outcome).get("search"), len(json.loads(epochs)))
count = collections.Counter()
at_zero = 0
for subject, config, seed, kind, outcome, _ in rows:
    if kind != "pruned" or (subject, config, seed) not in done:
        continue
    stopped = json.loads(outcome)
    end, trained = done[(subject, config, seed)]
    if end is None or stopped["value"] is None:
        continue
    full = json.loads(config).get("epochs") or trained
    early = stopped["epoch"] < math.ceil(full / 3 - 1e-9)
    at_zero += early and stopped["epoch"] == 0
    minimise = "diabetes" in subject or "D7" in subject  # the goal-min subjects of the run
    gain = stopped["value"] - end if minimise else end - stopped["value"]
    count[(early, gain / max(abs(stopped["value"]), 1e-9) > 0.2)] += 1
for early in (True, False):
    n = count[(early, True)] + count[(early, False)]
    print(f"stopped {'in' if early else 'after'} the first third: {n}, "
          f"ended more than 20% better: {count[(early, True)]}")
print(f"stopped at epoch 0: {at_zero}")
