"""A wrong answer to chapter 16's exercise, kept so that the test is known to catch it: the
backward is written but never registered (no torch.library.register_autograd). The forward runs
and the fake is right, but PyTorch has no derivative for the operator: a backward through it
raises ("no autograd formula was registered"). opcheck's test_aot_dispatch_dynamic, which runs
a backward through the operator, fails (and so would the test's gradcheck).
"""
import torch
from torch import Tensor

IMPLEMENTED = True
NAMESPACE = "ladder_exercise_wrong_no_autograd"  # each implementation registers its own operator
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
@torch.library.register_fake(OP)
def _merge_partials_fake(o_a, l_a, o_b, l_b):
    return torch.empty_like(o_a), torch.empty_like(l_a)


# ---- autograd ---------------------------------------------------------------------------------------------
def _setup_context(ctx, inputs, output):
    o_a, l_a, o_b, l_b = inputs
    o, l = output
    ctx.save_for_backward(o_a, l_a, o_b, l_b, o, l)


def _backward(ctx, d_o, d_l):
    # o = w_a o_a + w_b o_b and l = log(e^l_a + e^l_b), with w_x = e^(l_x - l):
    #   dl/dl_a = w_a,  do/do_a = w_a,  do/dl_a = w_a (o_a - o)   (the weights move with l_a)
    o_a, l_a, o_b, l_b, o, l = ctx.saved_tensors
    w_a, w_b = _weight(l_a, l), _weight(l_b, l)
    d_l_a = w_a * (d_l + (d_o * (_seen(o_a, l_a) - o)).sum(-1))
    d_l_b = w_b * (d_l + (d_o * (_seen(o_b, l_b) - o)).sum(-1))
    return w_a[..., None] * d_o, d_l_a, w_b[..., None] * d_o, d_l_b


# torch.library.register_autograd(OP, _backward, setup_context=_setup_context)  # forgotten


# ---- given: the function a model calls ------------------------------------------------------------------
def merge(o_a, l_a, o_b, l_b):
    """The checks, then the operator: o_a and o_b [..., d], l_a and l_b [...], one floating dtype."""
    if o_a.shape != o_b.shape or l_a.shape != l_b.shape or o_a.shape[:-1] != l_a.shape:
        raise ValueError(f"merge: o_a {tuple(o_a.shape)}, o_b {tuple(o_b.shape)} must be [..., d] and "
                         f"l_a {tuple(l_a.shape)}, l_b {tuple(l_b.shape)} their [...]")
    if len({o_a.dtype, l_a.dtype, o_b.dtype, l_b.dtype}) != 1 or not o_a.dtype.is_floating_point:
        raise ValueError("merge: o_a, l_a, o_b, l_b must share one floating dtype")
    return merge_partials(o_a, l_a, o_b, l_b)
