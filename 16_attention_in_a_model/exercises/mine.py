"""Chapter 16's exercise: chapter 13's merge of two attention partials as a PyTorch operator.
Difficulty ★★, about 40 minutes. See exercises/README.md.

    merge(o_a, l_a, o_b, l_b) -> (o, l)

o_a, o_b: [..., d] partial outputs of the same query rows over two disjoint sets of keys, each
normalised by its own softmax denominator; l_a, l_b: [...] their log-sum-exps (natural log), -inf
where a side saw no key. o, l: the same over the union of the keys:

    m = max(l_a, l_b),  l = m + log(e^(l_a - m) + e^(l_b - m)),  o = e^(l_a - l) o_a + e^(l_b - l) o_b

A side with l = -inf contributes nothing (its o is not read, it may be NaN); when both are -inf,
o = 0 and l = -inf. float32 or float64, any device (the kernel is PyTorch operations).

The kernel (the forward) and the function a model calls are given. Write the three TODOs (1: the
fake and its registration; 2: setup_context and backward; 3: their registration), set
IMPLEMENTED = True, then run

    LADDER_EXERCISE_MINE=1 python3 -m pytest -q -rs 16_attention_in_a_model/tests/test_exercise_merge_op.py -k mine

The test checks the forward against an fp64 reference (rows whose keys are split in two), runs
torch.library.opcheck (schema, fake tensors, autograd registration, AOT dispatch) and
torch.autograd.gradcheck in float64 (opcheck does not check the gradients' values).
"""
import torch
from torch import Tensor

# Until this is True the test stops with "unimplemented: edit 16_attention_in_a_model/exercises/mine.py".
IMPLEMENTED = False
NAMESPACE = "ladder_exercise_mine"  # each implementation registers its own operator
OP = NAMESPACE + "::merge_partials"
INF = float("inf")


# ---- given: the kernel (the forward, on real tensors) --------------------------------------------------
@torch.library.custom_op(OP, mutates_args=())
def merge_partials(o_a: Tensor, l_a: Tensor, o_b: Tensor, l_b: Tensor) -> tuple[Tensor, Tensor]:
    m = torch.maximum(l_a, l_b)
    m = torch.where(m == -INF, 0.0, m)  # a row no side saw: weights e^-inf = 0, and no -inf - (-inf)
    w_a, w_b = torch.exp(l_a - m), torch.exp(l_b - m)  # at most 1: nothing overflows
    s = w_a + w_b  # in [1, 2], or 0 for a row no side saw
    inv = torch.where(s > 0, 1.0 / s, 0.0)
    o = ((w_a * inv)[..., None] * _seen(o_a, l_a) + (w_b * inv)[..., None] * _seen(o_b, l_b))
    return o, m + torch.log(s)  # log(0) = -inf where no side saw a key


def _seen(o, l):
    """o where its side saw a key, 0 where it did not (there o is not read: it may be NaN)."""
    return torch.where(l[..., None] == -INF, 0.0, o)


def _weight(l_x, l):
    """e^(l_x - l): the share of the merged row's softmax mass that side x holds; 0 where x saw no key."""
    return torch.where(l_x == -INF, 0.0, torch.exp(l_x - torch.where(l == -INF, 0.0, l)))


# ---- the fake: shapes and dtypes, without running anything ------------------------------------------------
# TODO 1: register the fake with torch.library.register_fake(OP): the outputs' shapes, dtypes and
# devices, computed from the inputs' alone (they are FakeTensors: no data to read).
def _merge_partials_fake(o_a, l_a, o_b, l_b):
    raise NotImplementedError("TODO: the fake of merge_partials")


# ---- autograd ---------------------------------------------------------------------------------------------
# TODO 2: save what the backward needs (ctx.save_for_backward). inputs = (o_a, l_a, o_b, l_b),
# output = (o, l).
def _setup_context(ctx, inputs, output):
    raise NotImplementedError("TODO: setup_context of merge_partials")


# TODO 2: the gradients of o_a, l_a, o_b, l_b from d_o [..., d] and d_l [...]. With w_x = e^(l_x - l):
# o depends on l_a through both weights, not only on o_a. Derive dl/dl_a and do/dl_a first
# (exercises/README.md has the hint). _weight and _seen above do the -inf cases.
def _backward(ctx, d_o, d_l):
    raise NotImplementedError("TODO: backward of merge_partials")


# TODO 3: register _backward and _setup_context as the operator's autograd (torch.library.register_autograd).


# ---- given: the function a model calls ------------------------------------------------------------------
def merge(o_a, l_a, o_b, l_b):
    """The checks, then the operator: o_a and o_b [..., d], l_a and l_b [...], one floating dtype."""
    if o_a.shape != o_b.shape or l_a.shape != l_b.shape or o_a.shape[:-1] != l_a.shape:
        raise ValueError(f"merge: o_a {tuple(o_a.shape)}, o_b {tuple(o_b.shape)} must be [..., d] and "
                         f"l_a {tuple(l_a.shape)}, l_b {tuple(l_b.shape)} their [...]")
    if len({o_a.dtype, l_a.dtype, o_b.dtype, l_b.dtype}) != 1 or not o_a.dtype.is_floating_point:
        raise ValueError("merge: o_a, l_a, o_b, l_b must share one floating dtype")
    return merge_partials(o_a, l_a, o_b, l_b)
