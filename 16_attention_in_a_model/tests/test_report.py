"""report.py: the summary keys and the PASS/FAIL of the summary line, from run_model.sh's JSON.
Plain Python: it runs on every machine, with or without PyTorch."""
import json
import subprocess
import sys
from pathlib import Path

REPORT = Path(__file__).resolve().parents[1] / "report.py"


def train_doc(seq, losses, rates):
    runs = [{"attn": a, "tokens_per_s": rates[a], "final_val_loss": losses[a],
             "step_ms": {"median": 1.0, "p10": 0.9, "p90": 1.1, "n": 30}} for a in losses]
    return {"date": "2026-01-01T00:00:00+00:00", "commit": "abc", "gpu_line": "GPU", "timing": "method",
            "config": {"seq": seq, "batch": 2, "head_dim": 128}, "runs": runs}


def decode_case(attn, batch, rate, error=None):
    return {"attn": attn, "batch": batch, "cache_len": 32768, "tokens_per_s": rate, "error": error,
            "step_ms": {"median": 1.0, "p10": 0.9, "p90": 1.1, "n": 30}}


def report(tmp_path, ladder_loss, seed2_loss):
    model, bench = tmp_path / "model", tmp_path / "bench"
    model.mkdir()
    bench.mkdir()
    (model / "train_T8192.json").write_text(json.dumps(train_doc(
        8192, {"ladder": ladder_loss, "sdpa_cudnn": 1.50, "sdpa_flash": 1.501},
        {"ladder": 110.0, "sdpa_cudnn": 100.0, "sdpa_flash": 90.0})))
    (model / "train_T8192_seed2.json").write_text(json.dumps(train_doc(
        8192, {"sdpa_cudnn": seed2_loss}, {"sdpa_cudnn": 100.0})))
    (model / "generate.json").write_text(json.dumps({"decode": [
        decode_case("ladder", 32, 300.0), decode_case("sdpa_flash", 32, 250.0),
        decode_case("sdpa_cudnn", 32, None, error="RuntimeError: no kernel"), decode_case("ladder", 1, 50.0)]}))
    line = subprocess.run([sys.executable, str(REPORT), str(model), str(bench)], check=True, capture_output=True,
                          text=True).stdout.strip()
    summary = json.loads((bench / "16_attention_in_a_model.summary.json").read_text())
    rows = json.loads((bench / "16_attention_in_a_model.json").read_text())["benchmarks"]
    return line, summary, rows


def test_the_keys_are_the_ratios_of_the_runs(tmp_path):
    line, summary, rows = report(tmp_path, ladder_loss=1.502, seed2_loss=1.52)
    assert summary == {"train_vs_sdpa_cudnn": 1.1, "val_loss_rel_diff": round(0.002 / 1.5, 4),
                       "decode_vs_sdpa": 1.2}  # over the fastest SDPA backend that ran
    assert line.startswith("PASS GPT T=8192 B=2: train 110 tok/s = 1.10x SDPA cuDNN")
    names = {r["name"] for r in rows}
    assert "ladder/step=train/T=8192/B=2/d=128" in names and "sdpa_cudnn/step=decode/N_kv=32768/B=32" in names
    assert next(r for r in rows if r["name"].startswith("sdpa_cudnn/step=decode"))["error_occurred"]
    md = (tmp_path / "model" / "report.md").read_text()
    assert "| T=8192 B=2 | `ladder` | 110 |" in md and "T=8192 B=2, seed 2" in md


def test_a_loss_outside_the_seed_spread_fails(tmp_path):
    line, _, _ = report(tmp_path, ladder_loss=1.60, seed2_loss=1.52)
    assert line.startswith("FAIL")
