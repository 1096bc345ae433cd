"""reprolab.codefacts: constants read through names bound once, and only those."""
import ast

from reprolab import codefacts

SOURCE = '''
BASE_LR = 0.1
BATCH = 256
SCALE = BASE_LR * BATCH / 128
lr = 0.5
lr = 0.6
for epoch in range(3):
    pass
class Cfg:
    width = 64
    depth = width // 16
    def f(self, x=BASE_LR * 2):
        opt(lr=BASE_LR, momentum=width, eps=epoch, betas=(BASE_LR, 0.999), step=lr)
        local = 3
        g(dim=local * 2, n=SCALE)
        return [h(k=i) for i in range(3)]
def setlr():
    global BATCH
    BATCH = 512
i = 7
m = lambda BASE_LR: k(v=BASE_LR)
'''


def facts(src):
    out = codefacts.Out()
    codefacts.Facts("t.py", out).visit(ast.parse(src))
    values = {(v["scope"], v["name"]): v["value"] for v in out.values}
    calls = {c["callee"]: c["kwargs"] for c in out.calls}
    return values, calls


def test_names_bound_once_by_a_constant_are_read_through():
    values, calls = facts(SOURCE)
    assert values[("Cfg", "depth")] == 4  # a class body sees its own names
    assert values[("Cfg.f", "x")] == 0.2  # a default is evaluated in the enclosing scope
    assert calls["opt"]["lr"] == 0.1
    assert calls["opt"]["betas"] == [0.1, 0.999]
    assert calls["g"]["dim"] == 6


def test_names_bound_again_or_hidden_stay_unknown():
    values, calls = facts(SOURCE)
    opt = calls["opt"]
    assert opt["step"] is None  # lr is assigned twice
    assert opt["momentum"] is None  # a class attribute is not in its methods' scope
    assert opt["eps"] is None  # a loop variable
    assert calls["g"]["n"] is None  # BATCH is rebound through `global`, so SCALE is unknown
    assert ("", "SCALE") not in values
    assert calls["h"]["k"] is None  # the comprehension's i hides the module's
    assert calls["k"]["v"] is None  # the lambda's parameter hides the module's BASE_LR
