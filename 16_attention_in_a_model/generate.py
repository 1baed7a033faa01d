#!/usr/bin/env python3
"""Generation with a KV cache: decode tokens/s of the ladder against SDPA, and a greedy sample of each.

    python3 16_attention_in_a_model/generate.py --attn ladder sdpa_flash --batch 1 32 --cache-len 32768
    python3 16_attention_in_a_model/generate.py --checkpoint ckpt_ladder.pt --out generate.json
    python3 16_attention_in_a_model/generate.py --device cpu --attn sdpa_math --batch 1 2 \\
        --cache-len 256 --new-tokens 4 --layers 2 --width 64 --heads 2 --sample-tokens 16

decode speed  for each --attn and --batch: --cache-len random bytes per sequence are prefilled (timed
              too: one cold call), then one greedy step of one token per sequence is timed by the
              ladder's one method (common/timing.h, in Python in scripts/anchors/torch_anchors.py:
              warm-up of LADDER_WARMUP_MS, --repeats runs, CUDA events, the median), each run against
              exactly --cache-len cached keys (the step's key is forgotten again after it: KVCache.rewind);
              tokens/s = batch / the median step time. On the CPU: --warmup-steps + --new-tokens steps
              of a growing cache, wall clock. A step
              is the whole model run eagerly (embedding, projections, attention against the cache, MLP,
              head, argmax), the same Python for every implementation: at batch 1 the launch overhead
              is part of what is measured. The ladder reads a paged cache (--cache auto), SDPA a
              slice of a contiguous one. A case that fails (no kernel for the shape, out of memory)
              is recorded with its error and the others go on.
sample        the greedy continuation of --prompt with each --attn, printed; the token sequences
              compared with the first --attn's: identical, or the first new token where they part.
              In bf16 two correct implementations may part where the top two logits are within
              rounding of each other; from there on the continuations differ.

Without --checkpoint the weights are random (seeded): the speed does not depend on them, the sample is
noise, and the comparison still means what it says.

--out (JSON): config, torch, cuda, gpu, commit (env LADDER_COMMIT), date; decode: one entry per
(attn, batch) with cache, page_size, cache_len, new_tokens, prefill_ms, step_ms {median, p10, p90, n},
tokens_per_s, peak_memory_bytes, error; samples: attn, cache, prompt, tokens, text, error;
agreement: reference, attn, identical, first_difference.
"""
import argparse
import datetime
import json
import os

import torch

from gpt import ATTN_CHOICES, GPT, GPTConfig, autocast
from train import StepTimer, check_device, provenance, step_stats, timed


def parse_args(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--attn", nargs="+", choices=ATTN_CHOICES, default=["ladder", "sdpa_flash", "sdpa_cudnn"])
    ap.add_argument("--batch", nargs="+", type=int, default=[1, 32])
    ap.add_argument("--cache-len", type=int, default=32768, help="prompt length prefilled before decoding")
    ap.add_argument("--new-tokens", type=int, default=64, help="timed decode steps")
    ap.add_argument("--warmup-steps", type=int, default=5, help="CPU: decode steps before the timed ones")
    ap.add_argument("--repeats", type=int, default=30, help="CUDA: timed decode steps (after the warm-up)")
    ap.add_argument("--cache", choices=("auto", "paged", "contiguous"), default="auto",
                    help="auto: paged for the ladder, contiguous for SDPA")
    ap.add_argument("--page-size", type=int, default=64)
    ap.add_argument("--checkpoint", default=None, help="train.py --save output; else random weights")
    ap.add_argument("--layers", type=int, default=GPTConfig.n_layer,
                    help="model shape without --checkpoint (with --width, --heads)")
    ap.add_argument("--width", type=int, default=GPTConfig.n_embd)
    ap.add_argument("--heads", type=int, default=GPTConfig.n_head)
    ap.add_argument("--prompt", default="ROMEO:")
    ap.add_argument("--sample-tokens", type=int, default=200)
    ap.add_argument("--seed", type=int, default=1337)
    ap.add_argument("--device", default="cuda")
    ap.add_argument("--out", default="generate.json")
    args = ap.parse_args(argv)
    for name in ("cache_len", "new_tokens", "page_size", "sample_tokens"):
        if getattr(args, name) < 1:
            ap.error(f"--{name.replace('_', '-')} must be at least 1")
    if min(args.batch) < 1 or args.warmup_steps < 0:
        ap.error("--batch must be at least 1 and --warmup-steps at least 0")
    check_device(ap, args)
    return args


def load_model(args, device):
    if args.checkpoint:
        ckpt = torch.load(args.checkpoint, map_location="cpu")
        model = GPT(GPTConfig(**{**ckpt["config"], "attn": args.attn[0]}))
        model.load_state_dict(ckpt["model"])
    else:
        torch.manual_seed(args.seed)
        model = GPT(GPTConfig(n_layer=args.layers, n_embd=args.width, n_head=args.heads, attn=args.attn[0]))
    return model.to(device).eval()


def cache_kind(attn, args):
    if args.cache != "auto":
        return args.cache
    return "paged" if attn == "ladder" else "contiguous"


@torch.no_grad()
def time_decode(model, attn, B, args, device):
    """Prefill B random prompts of --cache-len bytes, then time greedy steps of one token each."""
    model.set_attn(attn)
    steps = args.warmup_steps + args.new_tokens
    kind = cache_kind(attn, args)
    case = {"attn": attn, "cache": kind, "page_size": args.page_size if kind == "paged" else None,
            "batch": B, "cache_len": args.cache_len, "new_tokens": args.new_tokens}
    gen = torch.Generator().manual_seed(args.seed)
    prompt = torch.randint(0, 256, (B, args.cache_len), generator=gen).to(device)
    if device.type == "cuda":
        torch.cuda.reset_peak_memory_stats(device)
    with autocast(device):
        kv = model.new_cache(B, args.cache_len + steps, kind, args.page_size)
        timer = StepTimer(device)
        timer.start()
        logits, _ = model(prompt, cache=kv, last_only=True)
        timer.stop()
        tok = logits[:, -1].argmax(-1, keepdim=True)
        if device.type == "cuda":
            def step():
                model(tok, cache=kv)[0][:, -1].argmax(-1)  # the whole step: attention to the next token
                kv.rewind(1)

            step_ms = timed(step, args.repeats)
            prefill_ms = timer.ms()[0]
        else:
            for _ in range(steps):
                timer.start()
                logits, _ = model(tok, cache=kv)
                tok = logits[:, -1].argmax(-1, keepdim=True)
                timer.stop()
            ms = timer.ms()
            prefill_ms, step_ms = ms[0], step_stats(ms[1 + args.warmup_steps :])
    case.update({
        "prefill_ms": prefill_ms,
        "step_ms": step_ms,
        "tokens_per_s": B / (step_ms["median"] / 1e3),
        "peak_memory_bytes": torch.cuda.max_memory_allocated(device) if device.type == "cuda" else None,
        "error": None,
    })
    return case


def first_difference(a, b):
    """Index of the first differing token (over the shorter length), or None when they agree."""
    return next((i for i, (x, y) in enumerate(zip(a, b)) if x != y), None)


def main(argv=None):
    args = parse_args(argv)
    if os.path.dirname(args.out):
        os.makedirs(os.path.dirname(args.out), exist_ok=True)
    device = torch.device(args.device)
    model = load_model(args, device)
    cfg = model.config
    result = {
        "kind": "generate",
        "config": {**{k: v for k, v in vars(args).items() if k != "out"},
                   "model": {"n_layer": cfg.n_layer, "n_embd": cfg.n_embd, "n_head": cfg.n_head,
                             "head_dim": cfg.n_embd // cfg.n_head, "vocab": cfg.vocab},
                   "params": model.num_params()},
        "torch": torch.__version__,
        "cuda": torch.version.cuda,
        "gpu": torch.cuda.get_device_name(device) if device.type == "cuda" else None,
        "commit": os.environ.get("LADDER_COMMIT"),
        **provenance(device, args.repeats),
        "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        "decode": [],
        "samples": [],
        "agreement": [],
    }

    for attn in args.attn:
        for B in args.batch:
            try:
                case = time_decode(model, attn, B, args, device)
                print(f"decode attn={attn} cache={case['cache']} B={B} N={args.cache_len}: "
                      f"{case['tokens_per_s']:.1f} tok/s (step {case['step_ms']['median']:.3f} ms), "
                      f"prefill {case['prefill_ms']:.1f} ms", flush=True)
            except (RuntimeError, NotImplementedError, ValueError) as e:  # out of memory, no kernel
                case = {"attn": attn, "cache": cache_kind(attn, args), "batch": B,
                        "cache_len": args.cache_len, "error": f"{type(e).__name__}: {str(e)[:300]}"}
                print(f"decode attn={attn} B={B}: failed ({case['error'][:120]})", flush=True)
            result["decode"].append(case)
            if device.type == "cuda":
                torch.cuda.empty_cache()

    prompt = torch.tensor([list(args.prompt.encode())], dtype=torch.long, device=device)
    for attn in args.attn:
        model.set_attn(attn)
        kind = cache_kind(attn, args)
        sample = {"attn": attn, "cache": kind, "prompt": args.prompt, "tokens": None, "text": None,
                  "error": None}
        try:
            out = model.generate(prompt, args.sample_tokens, cache=kind, page_size=args.page_size)
            sample["tokens"] = out[0, prompt.shape[1]:].tolist()
            sample["text"] = bytes(sample["tokens"]).decode("utf-8", errors="replace")
            print(f"sample attn={attn} cache={kind}: {args.prompt + sample['text']!r}", flush=True)
        except (RuntimeError, NotImplementedError, ValueError) as e:
            sample["error"] = f"{type(e).__name__}: {str(e)[:300]}"
            print(f"sample attn={attn}: failed ({sample['error'][:120]})", flush=True)
        result["samples"].append(sample)
    done = [s for s in result["samples"] if s["tokens"] is not None]
    for s in done[1:]:
        diff = first_difference(done[0]["tokens"], s["tokens"])
        result["agreement"].append({"reference": done[0]["attn"], "attn": s["attn"],
                                    "identical": diff is None, "first_difference": diff})
        print(f"sample {s['attn']} vs {done[0]['attn']}: " +
              ("identical" if diff is None else f"first differ at new token {diff}"), flush=True)

    with open(args.out, "w") as f:
        json.dump(result, f, indent=1)
    return result


if __name__ == "__main__":
    main()
