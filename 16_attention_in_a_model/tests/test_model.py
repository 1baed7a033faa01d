"""The GPT, its KV caches, the data and train.py, on the CPU; the ladder against SDPA on a GPU.

CPU (fp32, SDPA's math backend): shapes, causality, generation with either cache against running
the whole sequence again for every token, the data's determinism and its files, a two-step
train.py run. GPU (skipped without one, or without the built flash_ladder): the same model with
the ladder's attention and with SDPA's, forward, backward and decoding.
"""
import json
import os
import tarfile

import pytest

torch = pytest.importorskip("torch", reason="PyTorch is not installed: the model needs it")

import data  # noqa: E402  (tests/conftest.py puts the chapter on sys.path)
import generate  # noqa: E402
import train  # noqa: E402
from gpt import GPT, GPTConfig  # noqa: E402

torch.set_num_threads(1)  # tensors this small: more threads cost more than they give


def tiny(attn="sdpa_math", **kw):
    torch.manual_seed(0)
    cfg = dict(n_layer=2, n_embd=64, n_head=2, block_size=16, attn=attn)
    return GPT(GPTConfig(**{**cfg, **kw})).eval()


@pytest.mark.parametrize("n_embd,n_head", [(64, 2), (128, 2)])  # head dims 32 and 64
def test_forward_shapes_and_loss(n_embd, n_head):
    model = tiny(n_embd=n_embd, n_head=n_head)
    idx, targets = torch.randint(0, 256, (2, 3, 17))
    logits, loss = model(idx, targets)
    assert logits.shape == (3, 17, 256)
    assert loss.shape == () and abs(loss.item() - torch.log(torch.tensor(256.0)).item()) < 0.5  # near uniform
    assert model(idx)[1] is None
    assert model(idx, last_only=True)[0].shape == (3, 1, 256)


def test_head_is_tied_to_the_embedding():
    model = tiny()
    names = [n for n, _ in model.named_parameters()]
    assert not any("head" in n for n in names)
    assert model.num_params() == sum(p.numel() for p in model.parameters())


def test_causal_future_tokens_do_not_change_earlier_logits():
    model = tiny()
    a = torch.randint(0, 256, (2, 24))
    b = a.clone()
    b[:, 13:] = torch.randint(0, 256, (2, 11))
    with torch.no_grad():
        la, lb = model(a)[0], model(b)[0]
    torch.testing.assert_close(la[:, :13], lb[:, :13], rtol=0, atol=0)
    assert not torch.allclose(la[:, 13:], lb[:, 13:])


@pytest.mark.parametrize("cache,page_size", [("contiguous", 64), ("paged", 4), ("paged", 7)])
def test_generate_with_cache_equals_full_forward(cache, page_size):
    """Past block_size (16) on purpose: rotary positions have no limit."""
    model = tiny()
    prompt = torch.randint(0, 256, (3, 20))
    ref = model.generate(prompt, 12, cache=None)
    out = model.generate(prompt, 12, cache=cache, page_size=page_size)
    assert torch.equal(out, ref)
    # Tokens can agree while logits do not (argmax hides small errors): compare the logits of
    # every cached step with the full forward's at the same position.
    with torch.no_grad():
        full = model(ref)[0]
        kv = model.new_cache(3, ref.shape[1], cache, page_size)
        steps = [model(ref[:, :20], cache=kv, last_only=True)[0][:, -1]]
        steps += [model(ref[:, t : t + 1], cache=kv)[0][:, -1] for t in range(20, ref.shape[1])]
    torch.testing.assert_close(torch.stack(steps, 1), full[:, 19:], rtol=1e-5, atol=1e-5)
    assert kv.length == ref.shape[1] and kv.seqlens.tolist() == [ref.shape[1]] * 3


def test_paged_cache_follows_the_block_table():
    model = tiny()
    kv = model.new_cache(2, 40, "paged", 8)
    assert kv.block_table.dtype == torch.int32 and kv.block_table.shape == (2, 5)
    assert sorted(kv.block_table.flatten().tolist()) == list(range(10))
    assert kv.block_table.flatten().tolist() != list(range(10))  # shuffled: the table matters
    with torch.no_grad():
        model(torch.randint(0, 256, (2, 19)), cache=kv)
    keys, _ = kv.read(0, 19)
    assert keys.shape == (2, 2, 19, 32)
    pool = kv.k[0]
    page, slot = kv.block_table[1, 18 // 8].item(), 18 % 8
    torch.testing.assert_close(keys[1, :, 18], pool[page, :, slot], rtol=0, atol=0)


def test_cache_refuses_to_overflow():
    model = tiny()
    kv = model.new_cache(1, 8, "contiguous")
    with pytest.raises(ValueError, match="KV cache full"):
        model(torch.randint(0, 256, (1, 9)), cache=kv)


# ---- data --------------------------------------------------------------------------------------
TARBALL = data.tarball_path()
needs_text = pytest.mark.skipif(not os.path.isfile(TARBALL),
                                reason=f"{TARBALL} not found: 16_attention_in_a_model/fetch_data.sh")


@pytest.fixture(scope="module")
def corpus():
    return data.Corpus()


@needs_text
def test_text_is_the_gutenberg_files_only():
    with tarfile.open(TARBALL) as tar:
        names = data.text_members(tar)
    assert len(names) == 42 and names == sorted(names)
    assert all(n.startswith(data.TEXTS) and n.endswith("_gut.txt") for n in names)
    assert not any(n.endswith("_gut_f.txt") for n in names)


@needs_text
def test_batches_are_deterministic_and_shifted(corpus):
    a = corpus.get_batch("train", 4, 32, torch.Generator().manual_seed(7))
    b = corpus.get_batch("train", 4, 32, torch.Generator().manual_seed(7))
    c = corpus.get_batch("train", 4, 32, torch.Generator().manual_seed(8))
    assert torch.equal(a[0], b[0]) and torch.equal(a[1], b[1]) and not torch.equal(a[0], c[0])
    x, y = a
    assert x.dtype == torch.int64 and x.shape == (4, 32)
    assert torch.equal(x[:, 1:], y[:, :-1])
    train_len, val_len = len(corpus.splits["train"]), len(corpus.splits["val"])
    assert abs(val_len / (train_len + val_len) - 0.1) < 1e-3


# ---- train.py and generate.py --------------------------------------------------------------------
SMALL = ["--layers", "1", "--width", "32", "--heads", "2", "--device", "cpu", "--attn", "sdpa_math"]


@needs_text
def test_train_smoke_writes_json(tmp_path):
    out = tmp_path / "results.json"
    train.main(SMALL + ["--steps", "2", "--seq", "32", "--batch", "2", "--eval-every", "1",
                        "--eval-batches", "1", "--timing-warmup", "0",
                        "--out", str(out), "--save", str(tmp_path / "ckpt.pt")])
    result = json.loads(out.read_text())
    run = result["runs"][0]
    assert result["kind"] == "train" and result["config"]["head_dim"] == 16
    assert run["attn"] == "sdpa_math" and len(run["train_loss"]) == 2
    assert [p["step"] for p in run["val_loss"]] == [0, 1, 2] and run["tokens_per_s"] > 0
    assert run["profile"] is None and run["peak_memory_bytes"] is None  # CUDA only
    assert (tmp_path / "ckpt.pt").is_file()


def test_train_refuses_cuda_only_attention_on_cpu():
    with pytest.raises(SystemExit):
        train.parse_args(["--device", "cpu", "--attn", "sdpa_cudnn"])


def test_generate_smoke_writes_json(tmp_path):
    out = tmp_path / "generate.json"
    generate.main(SMALL + ["sdpa_flash", "--batch", "1", "2", "--cache-len", "40", "--new-tokens", "2",
                           "--warmup-steps", "1", "--sample-tokens", "6", "--out", str(out)])
    result = json.loads(out.read_text())
    assert [(c["attn"], c["batch"]) for c in result["decode"]] == [
        ("sdpa_math", 1), ("sdpa_math", 2), ("sdpa_flash", 1), ("sdpa_flash", 2)]
    assert all(c["error"] is None and c["tokens_per_s"] > 0 for c in result["decode"])
    assert len(result["samples"][0]["tokens"]) == 6
    assert result["agreement"][0]["identical"]


# ---- GPU: the ladder against SDPA ------------------------------------------------------------------
def test_ladder_model_traces_on_meta():
    """The model with the ladder's operators, on meta tensors (bf16 weights: the operators take bf16):
    training forward and backward, then prefill and a decode step on a paged cache, every shape
    through the operators' fake implementations. No GPU needed; the built module is."""
    import gpt

    try:
        gpt.use_attn("ladder")
    except (ImportError, RuntimeError) as e:
        pytest.skip(f"flash_ladder is not usable: {e}")
    model = GPT(GPTConfig(n_layer=2, n_embd=256, n_head=2, block_size=64, attn="ladder"))
    model = model.to(device="meta", dtype=torch.bfloat16)
    idx = torch.randint(0, 256, (2, 300), device="meta")
    logits, loss = model(idx, idx)
    loss.backward()
    assert logits.shape == (2, 300, 256) and model.wte.weight.grad.shape == (256, 256)
    kv = model.new_cache(2, 400, "paged", 64)
    with torch.no_grad():
        assert model(idx, cache=kv, last_only=True)[0].shape == (2, 1, 256)
        assert model(idx[:, :1], cache=kv)[0].shape == (2, 1, 256)
    assert kv.length == 301


def ladder_or_skip():
    if not torch.cuda.is_available():
        pytest.skip("needs a CUDA GPU")
    import gpt

    try:
        gpt.use_attn("ladder")
    except (ImportError, RuntimeError) as e:
        pytest.skip(f"flash_ladder is not usable: {e}")


def rel(a, b):
    return ((a.float() - b.float()).norm() / b.float().norm()).item()


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")
@pytest.mark.parametrize("n_embd,n_head", [(256, 2), (256, 4)])  # head dims 128 and 64
def test_gpu_ladder_forward_and_backward_match_sdpa(n_embd, n_head):
    ladder_or_skip()
    grads, logits = {}, {}
    x = torch.randint(0, 256, (2, 333), device="cuda")  # no multiple of any tile
    for attn in ("ladder", "sdpa_flash"):
        model = tiny(attn, n_embd=n_embd, n_head=n_head).cuda().train()
        with torch.autocast("cuda", dtype=torch.bfloat16):
            out, loss = model(x, x)
        loss.backward()
        logits[attn] = out.detach()
        grads[attn] = torch.cat([p.grad.flatten() for p in model.parameters()])
    assert rel(logits["ladder"], logits["sdpa_flash"]) < 1e-2
    assert rel(grads["ladder"], grads["sdpa_flash"]) < 5e-2


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")
@pytest.mark.parametrize("cache,page_size", [("paged", 64), ("paged", 16), ("contiguous", 64)])
def test_gpu_ladder_decode_matches_sdpa(cache, page_size):
    ladder_or_skip()
    model = tiny("ladder", n_embd=256, n_head=2).cuda()
    prompt = torch.randint(0, 256, (3, 150), device="cuda")
    tokens = torch.randint(0, 256, (3, 20), device="cuda")
    steps = {}
    with torch.no_grad(), torch.autocast("cuda", dtype=torch.bfloat16):
        for attn, kind in (("ladder", cache), ("sdpa_flash", "contiguous")):
            model.set_attn(attn)
            kv = model.new_cache(3, 170, kind, page_size)
            out = [model(prompt, cache=kv, last_only=True)[0][:, -1]]
            out += [model(tokens[:, t : t + 1], cache=kv)[0][:, -1] for t in range(tokens.shape[1])]
            steps[attn] = torch.stack(out, 1)
    assert rel(steps["ladder"], steps["sdpa_flash"]) < 1e-2
