"""matmul.py against the fp64 product: every configuration of the sweep, shapes not multiples of a tile."""
import pytest

torch = pytest.importorskip("torch", reason="PyTorch is not installed: the companion's tests need it")
pytest.importorskip("triton", reason="Triton is not installed: the companion's tests need it")
import companion_env as env  # noqa: E402
import matmul as MM  # noqa: E402

DTYPES = {"fp32": torch.float32, "fp16": torch.float16, "bf16": torch.bfloat16}


def check(M, N, K, dtype, cfg):
    if dtype == "bf16" and (env.bf16_dot_skip() or env.bf16_gpu_skip()):
        pytest.skip(env.bf16_dot_skip() or env.bf16_gpu_skip())
    torch.manual_seed(M * 131 + N * 7 + K)
    a = torch.rand(M, K, dtype=torch.float64).sub(0.5).to(DTYPES[dtype]).to(env.DEVICE)
    b = torch.rand(K, N, dtype=torch.float64).sub(0.5).to(DTYPES[dtype]).to(env.DEVICE)
    c = MM.matmul(a, b, cfg)
    A, B = a.double(), b.double()
    ref = A @ B
    # Elementwise bound: the products of fp16/bf16 inputs are exact in fp32, fp32 inputs lose half an ulp
    # each; the fp32 sum of K terms loses at most K * 2^-24 * sum |a||b|; then one rounding into the dtype.
    bound = torch.finfo(DTYPES[dtype]).eps * ref.abs() + 2 * K * 2.0**-24 * (A.abs() @ B.abs()) + 1e-30
    err = (c.double() - ref).abs()
    worst = (err / bound).max().item()
    assert c.shape == (M, N) and c.dtype == a.dtype
    assert worst <= 1, f"{MM.name(cfg)}: error {worst:.2f}x the bound (max |c - ref| = {err.max().item():.3g})"


@pytest.mark.parametrize("dtype", list(DTYPES))
@pytest.mark.parametrize("M,N,K", [(1, 1, 1), (17, 77, 33), (77, 17, 65)])
def test_matmul_default_config(M, N, K, dtype):
    check(M, N, K, dtype, MM.DEFAULT)


@pytest.mark.parametrize("cfg", MM.CONFIGS, ids=[MM.name(c).replace(" ", "_") for c in MM.CONFIGS])
def test_matmul_every_config_of_the_sweep(cfg):
    # 129 rows and 70 columns: at least two tiles and a tail in M for every BLOCK_M; K = 100 is a tail too.
    check(129, 70, 100, "fp16", cfg)


@pytest.mark.gpu
@pytest.mark.skipif(not env.GPU or env.INTERPRET, reason="needs a CUDA GPU (the interpreter would take minutes)")
@pytest.mark.parametrize("dtype", list(DTYPES))
def test_matmul_large_on_gpu(dtype):
    check(1000, 1030, 517, dtype, MM.DEFAULT)
