"""Chapter 16's exercise (exercises/README.md): chapter 13's merge of two attention partials as a
torch.library operator, with a fake implementation and autograd. CPU only.

    test_solution_passes            exercises/solution.py passes every check      (every run)
    test_wrong_answer_fails[...]    each exercises/wrong/*.py fails, as it says     (every run)
    test_mine                       your exercises/mine.py: only on request,
        LADDER_EXERCISE_MINE=1 python3 -m pytest -q -rs 16_attention_in_a_model/tests/test_exercise_merge_op.py -k mine

The checks: the forward against an fp64 reference built from rows whose keys are split in two (the
whole row's softmax attention), with rows where one side or both saw no key; torch.library.opcheck
(schema, fake tensors, autograd registration, AOT dispatch); torch.autograd.gradcheck in float64,
since opcheck checks how the backward is registered, not what it computes; and gradients that stay
finite on the rows that saw no key.
"""
import functools
import importlib.util
import math
import os
import pathlib

import pytest

try:
    import torch
except ImportError:  # every test is collected and skipped with the reason (so `-k mine` exits 0 here too)
    torch = None
pytestmark = pytest.mark.skipif(torch is None, reason="PyTorch is not installed: the exercise's operator needs it "
                                "(python3 -m pip install torch --index-url https://download.pytorch.org/whl/cpu)")

EXERCISES = pathlib.Path(__file__).resolve().parents[1] / "exercises"
WRONG = sorted(p.stem for p in (EXERCISES / "wrong").glob("*.py"))
INF = math.inf

# ||out - ref|| / ||ref||. float32: each element is a handful of roundings (two exp of differences
# that are exact where the weight matters, two products, a sum, a division), a few 2^-24 and no long
# reduction: 1e-5 leaves a margin of ~20, and a missing weight or max is off by O(1) or NaN.
# float64: the same in 2^-53.
BOUND = {torch.float32: 1e-5, torch.float64: 1e-12} if torch else {}


@functools.lru_cache(maxsize=None)
def load(relpath):
    """Imports exercises/<relpath> once (importing registers its operator, which may happen only once)."""
    path = EXERCISES / relpath
    spec = importlib.util.spec_from_file_location("ladder_exercise_" + path.stem, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def split_rows(rows, d, logit_scale, seed):
    """Rows of query attention whose keys are split in two sides, a and b, all in float64. Row i's kind
    is (7 i + 3) mod 10: 0, side a saw no key; 1, side b saw none; 2, neither (a causal row whose keys
    all lie in the future); otherwise each side saw 1 to 40 keys. Scores N(0, 1) x logit_scale, values
    U(-1, 1). Returns the sides' partials (o_a, l_a, o_b, l_b; an empty side has l = -inf and o = 0)
    and the whole row's (o, l): softmax attention over the keys of both sides."""
    g = torch.Generator().manual_seed(seed)

    def partial(s, v):
        if s.numel() == 0:
            return torch.zeros(d, dtype=torch.float64), -INF
        lse = torch.logsumexp(s, 0)
        return torch.exp(s - lse) @ v, lse.item()

    o_a, o_b, o = (torch.zeros(rows, d, dtype=torch.float64) for _ in range(3))
    l_a, l_b, l = (torch.zeros(rows, dtype=torch.float64) for _ in range(3))
    for i in range(rows):
        kind = (7 * i + 3) % 10
        n_a = 0 if kind in (0, 2) else int(torch.randint(1, 41, (1,), generator=g))
        n_b = 0 if kind in (1, 2) else int(torch.randint(1, 41, (1,), generator=g))
        s = torch.randn(n_a + n_b, generator=g, dtype=torch.float64) * logit_scale
        v = torch.rand(n_a + n_b, d, generator=g, dtype=torch.float64) * 2 - 1
        o_a[i], l_a[i] = partial(s[:n_a], v[:n_a])
        o_b[i], l_b[i] = partial(s[n_a:], v[n_a:])
        o[i], l[i] = partial(s, v)
    return (o_a, l_a, o_b, l_b), (o, l)


def rel(out, ref):
    return ((out.double() - ref).norm() / ref.norm()).item()


def check_forward(m, dtype, logit_scale, seed):
    """The merge of the two sides against the whole row; an empty side's o is NaN (it must not be read)."""
    (o_a, l_a, o_b, l_b), (o, l) = split_rows(77, 33, logit_scale, seed)
    nan = torch.tensor(float("nan"), dtype=torch.float64)
    o_a = torch.where(l_a[:, None] == -INF, nan, o_a)
    o_b = torch.where(l_b[:, None] == -INF, nan, o_b)
    got_o, got_l = m.merge(*(t.to(dtype) for t in (o_a, l_a, o_b, l_b)))
    where = f"{dtype}, logits x{logit_scale:g}"
    if got_o.shape != o.shape or got_l.shape != l.shape or got_o.dtype != dtype or got_l.dtype != dtype:
        return f"forward at {where}: o {tuple(got_o.shape)} {got_o.dtype}, l {tuple(got_l.shape)} {got_l.dtype}"
    empty = l == -INF
    if not torch.isfinite(got_o).all():
        return f"forward at {where}: {int((~torch.isfinite(got_o)).sum())} non-finite elements of o"
    if not (got_o[empty] == 0).all() or not (got_l[empty] == -INF).all():
        return f"forward at {where}: a row no side saw must give o = 0 and l = -inf"
    if not torch.isfinite(got_l[~empty]).all():
        return f"forward at {where}: non-finite l on rows that saw keys"
    # The inputs are the fp64 partials rounded to dtype: their rounding is below the bound too.
    e_o, e_l = rel(got_o, o), rel(got_l[~empty], l[~empty])
    if e_o > BOUND[dtype] or e_l > BOUND[dtype]:
        return f"forward at {where}: rel error o {e_o:.2e}, l {e_l:.2e} > {BOUND[dtype]:g}"
    return None


def check(m):
    """None if the implementation in module m passes every check, else what failed first."""
    for dtype in (torch.float32, torch.float64):
        for logit_scale in (1.0, 100.0):
            why = check_forward(m, dtype, logit_scale, seed=int(logit_scale) + (dtype == torch.float64))
            if why:
                return why
    (o_a, l_a, o_b, l_b), _ = split_rows(20, 8, 1.0, seed=7)
    both = [t.clone().requires_grad_() for t in (o_a, l_a, o_b, l_b)]
    try:  # the registration: schema, fake tensors against the kernel, autograd, AOT dispatch
        torch.library.opcheck(m.merge_partials, tuple(t.float() for t in (o_a, l_a, o_b, l_b)))
        torch.library.opcheck(m.merge_partials, tuple(both))
    except Exception as e:  # noqa: BLE001: any failure of opcheck is the answer's
        return f"opcheck: {type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}"
    # The gradients' values, by finite differences, on rows where both sides saw keys.
    (o_a, l_a, o_b, l_b), _ = split_rows(12, 5, 1.0, seed=11)
    full = (l_a > -INF) & (l_b > -INF)
    args = tuple(t[full].clone().requires_grad_() for t in (o_a, l_a, o_b, l_b))
    try:
        torch.autograd.gradcheck(lambda *a: m.merge(*a), args)
    except Exception as e:  # noqa: BLE001: GradcheckError, or the error of a missing backward
        return f"gradcheck: {type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}"
    # Rows that saw no key: zero gradients for the empty side, never NaN.
    o, l = m.merge(*both)
    try:
        (o.sum() + l[l > -INF].sum()).backward()
    except Exception as e:  # noqa: BLE001
        return f"backward: {type(e).__name__}: {e}"
    for name, t in zip(("o_a", "l_a", "o_b", "l_b"), both):
        if t.grad is None or not torch.isfinite(t.grad).all():
            return f"backward: the gradient of {name} is missing or not finite on rows that saw no key"
    return None


def test_solution_passes():
    m = load("solution.py")
    assert m.IMPLEMENTED
    assert check(m) is None


@pytest.mark.parametrize("name", WRONG)
def test_wrong_answer_fails(name):
    m = load(f"wrong/{name}.py")
    assert m.IMPLEMENTED, f"wrong/{name}.py must set IMPLEMENTED: it is an answer, not the stub"
    why = check(m)
    assert why is not None, f"wrong/{name}.py passes the check, which exists to catch it"
    print(f"wrong/{name}.py fails, as it should: {why}")


@pytest.mark.skipif(os.environ.get("LADDER_EXERCISE_MINE") != "1",
                    reason="your exercise, run on request: LADDER_EXERCISE_MINE=1 python3 -m pytest "
                           "16_attention_in_a_model/tests/test_exercise_merge_op.py -k mine")
def test_mine():
    m = load("mine.py")
    assert m.IMPLEMENTED, ("unimplemented: edit 16_attention_in_a_model/exercises/mine.py "
                           "(write the fake and the backward, register them, then set IMPLEMENTED = True)")
    why = check(m)
    assert why is None, why
