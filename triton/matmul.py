"""Tiled matmul in Triton, beside chapter 03 (03_matmul_tiled: the tile sweep) and chapter 09
(09_tensor_core_matmul: tensor cores, tile order, pipelining).

    c = matmul(a, b)                 # a: [M, K], b: [K, N]; fp32, fp16 or bf16; c in a's dtype
    c = matmul(a, b, CONFIGS[3])     # one configuration of the sweep

Each program computes one BLOCK_M x BLOCK_N tile of C, walking K in steps of BLOCK_K: the tiles
of chapter 03 (there the tile is T x T and one thread computes one or a few elements). Here you
write what the tile does and Triton chooses the rest, which chapter 03 and 09 make you write:
  - BLOCK_M, BLOCK_N, BLOCK_K: the tile. Larger tiles reuse each loaded element more times
    (arithmetic intensity ~ BLOCK_M*BLOCK_N/(BLOCK_M+BLOCK_N)) but need more registers and
    shared memory and give fewer programs to spread over the SMs: chapter 03's sweep of T.
  - num_warps: how many warps share the tile (chapter 03's threads per block).
  - num_stages: how many K-steps of A and B tiles are in flight in shared memory at once
    (chapter 09's cp.async pipeline, step 4): the copy of step k+1 overlaps the math of step k.
  - GROUP_M: programs are numbered so that GROUP_M rows of tiles walk the columns together and
    share B tiles in L2 (chapter 09's tile order, its exercise 5).
fp16/bf16 operands go to tensor cores (mma.sync on sm_80/86/89, wgmma on sm_90); fp32 operands use
input_precision="ieee" (full fp32 FMAs, as chapter 03's SGEMM; tf32 would change the answer).
"""
import triton
import triton.language as tl

# The sweep, as chapter 03 sweeps T. Each stage is an A tile and a B tile, (BLOCK_M + BLOCK_N) * BLOCK_K
# elements; the shared memory the compiled kernel asks for is read back by chosen.py --matmul (for num_stages
# = 3, Triton 3.9 allocates two stages' buffers on sm_90 and one on sm_75). Every configuration fits 64 KiB
# (a T4) in fp16/bf16; tests/test_chosen.py compiles them for sm_75 to check.
CONFIGS = [
    dict(BLOCK_M=32, BLOCK_N=32, BLOCK_K=32, GROUP_M=8, num_warps=4, num_stages=2),
    dict(BLOCK_M=64, BLOCK_N=64, BLOCK_K=32, GROUP_M=8, num_warps=4, num_stages=3),
    dict(BLOCK_M=128, BLOCK_N=64, BLOCK_K=32, GROUP_M=8, num_warps=4, num_stages=3),
    dict(BLOCK_M=64, BLOCK_N=128, BLOCK_K=32, GROUP_M=8, num_warps=4, num_stages=3),
    dict(BLOCK_M=128, BLOCK_N=128, BLOCK_K=32, GROUP_M=8, num_warps=8, num_stages=3),
    dict(BLOCK_M=128, BLOCK_N=128, BLOCK_K=32, GROUP_M=8, num_warps=4, num_stages=3),
    dict(BLOCK_M=128, BLOCK_N=128, BLOCK_K=64, GROUP_M=8, num_warps=8, num_stages=2),
    dict(BLOCK_M=128, BLOCK_N=128, BLOCK_K=32, GROUP_M=8, num_warps=8, num_stages=2),
]
DEFAULT = CONFIGS[4]


def name(cfg):
    return "{BLOCK_M}x{BLOCK_N}x{BLOCK_K} w{num_warps} s{num_stages}".format(**cfg)


@triton.jit
def matmul_kernel(A, B, C, M, N, K, stride_am, stride_ak, stride_bk, stride_bn, stride_cm, stride_cn,
                  BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr, GROUP_M: tl.constexpr,
                  PRECISION: tl.constexpr):
    # Grouped order: program ids run down GROUP_M tile rows before moving one tile column right,
    # so the programs resident at one time share their B tiles (and A tiles) in L2.
    pid = tl.program_id(0)
    tiles_m = tl.cdiv(M, BLOCK_M)
    tiles_n = tl.cdiv(N, BLOCK_N)
    per_group = GROUP_M * tiles_n
    first_m = (pid // per_group) * GROUP_M
    rows_in_group = min(tiles_m - first_m, GROUP_M)
    tile_m = first_m + (pid % per_group) % rows_in_group
    tile_n = (pid % per_group) // rows_in_group

    rm = tile_m * BLOCK_M + tl.arange(0, BLOCK_M)
    rn = tile_n * BLOCK_N + tl.arange(0, BLOCK_N)
    rk = tl.arange(0, BLOCK_K)
    a_ptrs = A + rm[:, None] * stride_am + rk[None, :] * stride_ak
    b_ptrs = B + rk[:, None] * stride_bk + rn[None, :] * stride_bn
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)  # fp32 accumulator, whatever the inputs
    for k in range(0, tl.cdiv(K, BLOCK_K)):
        # The tails (M, N, K not multiples of the tile) read zeros, which add nothing to the sum.
        k_left = K - k * BLOCK_K
        a = tl.load(a_ptrs, mask=(rm[:, None] < M) & (rk[None, :] < k_left), other=0.0)
        b = tl.load(b_ptrs, mask=(rk[:, None] < k_left) & (rn[None, :] < N), other=0.0)
        acc = tl.dot(a, b, acc, input_precision=PRECISION)
        a_ptrs += BLOCK_K * stride_ak
        b_ptrs += BLOCK_K * stride_bk
    c_ptrs = C + rm[:, None] * stride_cm + rn[None, :] * stride_cn
    tl.store(c_ptrs, acc.to(C.dtype.element_ty), mask=(rm[:, None] < M) & (rn[None, :] < N))


def matmul(a, b, config=None):
    """a @ b with one configuration (default DEFAULT); fp32 accumulation, the result in a's dtype."""
    cfg = dict(config or DEFAULT)
    if not (a.dim() == 2 and b.dim() == 2 and a.shape[1] == b.shape[0]):
        raise ValueError("matmul: [M, K] @ [K, N]")
    if not (a.dtype == b.dtype):
        raise ValueError("matmul: a and b must have the same dtype")
    M, K = a.shape
    N = b.shape[1]
    c = a.new_empty((M, N))
    grid = (triton.cdiv(M, cfg["BLOCK_M"]) * triton.cdiv(N, cfg["BLOCK_N"]),)
    precision = "ieee" if a.dtype.is_floating_point and a.element_size() == 4 else "tf32"
    matmul_kernel[grid](a, b, c, M, N, K, a.stride(0), a.stride(1), b.stride(0), b.stride(1), c.stride(0),
                        c.stride(1), PRECISION=precision, **cfg)
    return c
