"""softmax.py (chapter 04's block_onchip) against the fp64 softmax, rows not powers of two."""
import pytest

torch = pytest.importorskip("torch", reason="PyTorch is not installed: the companion's tests need it")
pytest.importorskip("triton", reason="Triton is not installed: the companion's tests need it")
import companion_env as env  # noqa: E402
import softmax as S  # noqa: E402

DTYPES = {"fp32": torch.float32, "fp16": torch.float16, "bf16": torch.bfloat16}


@pytest.mark.parametrize("dtype", list(DTYPES))
@pytest.mark.parametrize("shape", [(1, 1), (3, 17), (5, 77), (2, 1000)])
def test_softmax_matches_fp64(shape, dtype):
    if dtype == "bf16" and env.bf16_gpu_skip():
        pytest.skip(env.bf16_gpu_skip())
    torch.manual_seed(0)
    x = (3 * torch.randn(shape, dtype=torch.float64)).to(DTYPES[dtype]).to(env.DEVICE)
    y = S.softmax(x)
    ref = torch.softmax(x.double(), dim=1)
    # The kernel computes in fp32 and rounds once into the dtype: at most half an ulp of y <= 1, so one
    # epsilon of the dtype bounds it, plus the fp32 arithmetic (exp and a sum of C terms, ~1e-6).
    bound = torch.finfo(DTYPES[dtype]).eps + 2e-6
    assert y.dtype == x.dtype and y.shape == x.shape
    err = env.max_err(y, ref)
    assert err <= bound, f"max |y - ref| = {err:.3g} > {bound:.3g}"
    assert torch.allclose(y.double().sum(1), torch.ones(shape[0], dtype=torch.float64), atol=shape[1] * bound)
