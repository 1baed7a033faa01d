"""chosen.py: every configuration the companion uses, compiled for a T4 (sm_75, 64 KiB of shared memory per
block) and an RTX 30 (sm_86, 99 KiB), fits. No GPU needed: Triton cross-compiles with the ptxas it ships.
Run as a learner runs it (a subprocess, without TRITON_INTERPRET, which would replace the compiler)."""
import json
import os
import subprocess
import sys

import pytest

pytest.importorskip("torch", reason="PyTorch is not installed: the companion's tests need it")
pytest.importorskip("triton", reason="Triton is not installed: the companion's tests need it")

CHOSEN = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "chosen.py")


def run_chosen(tmp_path, *args):
    out = tmp_path / "rows.json"
    env = {k: v for k, v in os.environ.items() if k != "TRITON_INTERPRET"}
    r = subprocess.run([sys.executable, CHOSEN, "--no-registers", "--json", str(out), *args], env=env,
                       capture_output=True, text=True, timeout=600)
    if r.returncode not in (0, 1) or not out.exists():
        last = (r.stderr.strip().splitlines() or ["(no output)"])[-1]
        pytest.skip(f"Triton could not compile for another GPU here: {last[:300]}")
    return r, json.loads(out.read_text())


@pytest.mark.no_device
def test_attention_configs_fit_a_t4_and_an_rtx30(tmp_path):
    r, rows = run_chosen(tmp_path, "--target", "86,75")
    assert {(x["target"], x["kernel"], x["d"]) for x in rows} >= {("sm_75", "dkdv", 128), ("sm_86", "fwd", 64)}
    too_big = [x for x in rows if x["shared"] > x["limit"]]
    assert r.returncode == 0 and not too_big, r.stdout
    assert not any(x["wgmma"] for x in rows), "wgmma exists on sm_90 only"


@pytest.mark.no_device
def test_matmul_sweep_fits_a_t4(tmp_path):
    r, rows = run_chosen(tmp_path, "--matmul", "--target", "75")
    assert len(rows) >= 6 and r.returncode == 0 and all(x["shared"] <= 64 << 10 for x in rows), r.stdout
