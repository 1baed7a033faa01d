"""Where the companion's tests run, and what they share: the device, the fp64 references, the criteria."""
import os

try:
    import torch
except ImportError:
    torch = None
try:
    import triton
except ImportError:
    triton = None

INTERPRET = os.environ.get("TRITON_INTERPRET", "0") == "1"
GPU = torch is not None and torch.cuda.is_available()
if torch is None:
    KERNEL_SKIP = MODE = "PyTorch is not installed (python3 -m pip install torch): the companion needs it"
elif triton is None:
    KERNEL_SKIP = MODE = "Triton is not installed (it comes with PyTorch's CUDA wheels on Linux): the companion needs it"
elif INTERPRET:
    KERNEL_SKIP, MODE = None, "TRITON_INTERPRET=1: the kernels run in Triton's interpreter on the CPU, small shapes"
elif GPU:
    KERNEL_SKIP, MODE = None, "GPU: " + torch.cuda.get_device_name()
else:
    KERNEL_SKIP = MODE = ("no CUDA GPU (torch.cuda.is_available() is False): run "
                          "`TRITON_INTERPRET=1 python3 -m pytest -q triton/tests` to run the kernels on the CPU")
DEVICE = "cpu" if INTERPRET or not GPU else "cuda"

_bf16_dot = None


def bf16_dot_skip():
    """None when tl.dot on bf16 operands is right here; else the reason to skip. Triton 3.9's interpreter
    keeps bf16 as uint16 (numpy has no bf16) and its tl.dot multiplies those raw bit patterns as integers
    (triton/runtime/interpreter.py, create_dot): a probe finds out, so that a fixed Triton runs the tests."""
    global _bf16_dot
    if not INTERPRET:
        return None
    if _bf16_dot is None:
        import triton.language as tl

        @triton.jit
        def probe(X, Y):
            i = tl.arange(0, 16)
            x = tl.load(X + i[:, None] * 16 + i[None, :])
            tl.store(Y + i[:, None] * 16 + i[None, :], tl.dot(x, x))

        x = torch.eye(16, dtype=torch.bfloat16)
        y = torch.zeros(16, 16, dtype=torch.float32)
        probe[(1,)](x, y)
        _bf16_dot = bool(torch.equal(y, torch.eye(16)))
    return None if _bf16_dot else ("Triton's interpreter computes tl.dot on bf16 operands wrongly (it multiplies "
                                   "the raw 16-bit patterns: numpy has no bf16); bf16 runs on the GPU")


def bf16_gpu_skip():
    """The reason a GPU cannot run bf16 (a T4, sm_75), or None."""
    if GPU and not INTERPRET and torch.cuda.get_device_capability()[0] < 8:
        return "bf16 needs sm_80 or newer: a T4 runs the fp16 path"
    return None


def max_err(x, ref):
    return (x.double() - ref).abs().max().item() if x.numel() else 0.0


def rounding_atol(ref, dtype):
    """flash-attention's floor (hopper/test_flash_attn.py: fwd_atol = 2 * (out_ref + 0.3 - 0.3 - out_ref)
    .abs().max(), out_ref in the inputs' dtype): twice the rounding noise of one addition at that dtype.
    It only matters where PyTorch's own error is near zero (N = 1: O = V exactly)."""
    r = ref.to(dtype)
    return 2 * (r + 0.3 - 0.3 - r).abs().max().item() if r.numel() else 0.0
