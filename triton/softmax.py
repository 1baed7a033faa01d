"""Fused row softmax in Triton, beside chapter 04 (04_online_softmax, its `block_onchip` kernel).

    y = softmax(x)            # x: [R, C] on the GPU (or the CPU under TRITON_INTERPRET=1)

One program per row. The row is read from DRAM once into registers, its max m and its sum
l = sum exp(x - m) are taken there, and y is written once: 2 passes over DRAM (one read, one
write) instead of the 3 of the naive softmax (max, sum, normalise). This is chapter 04's
`block_onchip`, and Triton's tutorial 02-fused-softmax. What Triton decides for us: which thread
holds which element of the row, and how the reductions are done across a warp and across warps
(chapter 04 writes those shuffles and the shared-memory step by hand).

The limit is the same as chapter 04's: the whole row must fit on chip (BLOCK = the next power of
two >= C, held in registers). Longer rows need the online softmax, with its running (m, l).
"""
import triton
import triton.language as tl


@triton.jit
def softmax_kernel(X, Y, C, stride_x, stride_y, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)  # BLOCK is a power of two >= C: tl.arange needs a power of two
    mask = cols < C
    # Padding columns read -inf, so they change neither the max nor the sum (exp(-inf) = 0).
    x = tl.load(X + row * stride_x + cols, mask=mask, other=float("-inf")).to(tl.float32)
    m = tl.max(x, axis=0)  # subtracting the max keeps exp() <= 1: no overflow, even in fp16 inputs
    e = tl.exp(x - m)
    l = tl.sum(e, axis=0)
    tl.store(Y + row * stride_y + cols, (e / l).to(Y.dtype.element_ty), mask=mask)


def warps_for(block):
    """More warps for longer rows, so each thread keeps a few elements (the tutorial's rule)."""
    return 16 if block >= 8192 else 8 if block >= 2048 else 4


def softmax(x):
    """softmax over the last dimension of a 2-D tensor (fp32, fp16 or bf16; fp32 arithmetic)."""
    if not (x.dim() == 2):
        raise ValueError("softmax: x must be [rows, columns]")
    x = x if x.stride(1) == 1 else x.contiguous()
    R, C = x.shape
    y = x.new_empty((R, C))
    block = triton.next_power_of_2(C)
    softmax_kernel[(R,)](x, y, C, x.stride(0), y.stride(0), BLOCK=block, num_warps=warps_for(block))
    return y
