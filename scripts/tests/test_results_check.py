"""scripts/results.py --check: the committed publication regenerates byte for byte from the files
results/publication.json names, and a hand edit of a published figure fails the check.

    python3 -m pytest -q scripts/tests

Each test checks a copy of the repository's published files (results/, the README.md files) with
`results.py --check --tree COPY`, after editing one thing in the copy. Needs numpy and matplotlib only.
"""
import json
import pathlib
import re
import shutil
import subprocess
import sys

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]
RESULTS = [sys.executable, str(ROOT / "scripts" / "results.py")]


@pytest.fixture(scope="module")
def published(tmp_path_factory):
    """One copy of what --check reads: results/ and every README.md with blocks."""
    tree = tmp_path_factory.mktemp("published")
    shutil.copytree(ROOT / "results", tree / "results")
    for readme in [ROOT / "README.md", *ROOT.glob("[0-9][0-9]_*/README.md")]:
        dest = tree / readme.relative_to(ROOT)
        dest.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(readme, dest)
    return tree


@pytest.fixture
def tree(published, tmp_path):
    copy = tmp_path / "tree"
    shutil.copytree(published, copy)
    return copy


def check(tree):
    return subprocess.run(RESULTS + ["--check", "--tree", str(tree)], capture_output=True, text=True, timeout=300)


def problems(r):
    """The differences --check names, one per line."""
    return [line.strip() for line in r.stderr.splitlines() if line.startswith("  ")]


def edit(path, old, new):
    text = path.read_text()
    assert old in text, f"{path}: {old!r} not found"
    path.write_text(text.replace(old, new, 1))


def test_the_committed_publication_reproduces_itself(tree):
    r = check(tree)
    assert r.returncode == 0, r.stderr
    assert "regenerate byte for byte" in r.stdout


def test_a_table_number_edited_by_hand_fails(tree):
    table = tree / "results" / "09_tensor_core_matmul" / "table.md"
    edit(table, "| 634.8 (0.99x) |", "| 644.8 (1.01x) |")
    r = check(tree)
    assert r.returncode == 1
    assert problems(r) == ["results/09_tensor_core_matmul/table.md: differs from its regeneration"]


def test_a_readme_block_edited_by_hand_fails(tree):
    readme = tree / "03_matmul_tiled" / "README.md"
    text = readme.read_text()
    block = re.search(r"<!-- results:03_matmul_tiled -->.*?<!-- /results:03_matmul_tiled -->", text, re.S).group(0)
    number = re.search(r"\d+\.\d \(0\.\d\dx\)", block).group(0)
    readme.write_text(text.replace(block, block.replace(number, "99.9 (0.99x)", 1)))
    r = check(tree)
    assert r.returncode == 1
    assert problems(r) == ["03_matmul_tiled/README.md: block results:03_matmul_tiled differs from its regeneration"]


def test_a_summary_value_edited_by_hand_fails(tree):
    path = tree / "results" / "summary.json"
    doc = json.loads(path.read_text())
    doc["chapters"]["04_online_softmax"]["vs_copy"] = 0.801  # past its target, by hand
    path.write_text(json.dumps(doc, indent=1) + "\n")
    r = check(tree)
    assert r.returncode == 1
    assert problems(r) == ["results/summary.json: differs from its regeneration"]


def test_a_headline_edited_by_hand_fails(tree):
    # Each chapter's headline (its table's headline row, summary.json ratios, targets met) is results/README.md's.
    edit(tree / "results" / "README.md", "vs_cublas_bf16 0.995", "vs_cublas_bf16 1.042")
    r = check(tree)
    assert r.returncode == 1
    assert problems(r) == ["results/README.md: differs from its regeneration"]


def test_a_headline_cell_left_in_the_top_readme_fails(tree):
    # The top README shows no figure of its own any more: a cell typed back into it is nobody's to regenerate.
    edit(tree / "README.md", "## The chapters\n", "## The chapters\n\n<!-- r:09_tensor_core_matmul -->634.8<!-- /r -->\n")
    r = check(tree)
    assert r.returncode == 1
    assert any("README.md: block r:09_tensor_core_matmul is not regenerated" in p for p in problems(r))


def test_a_missing_block_marker_fails(tree):
    edit(tree / "12_fa3_hopper" / "README.md", "<!-- results:12_fa3_hopper:fp8d256 -->", "")  # its table's
    edit(tree / "05_fa1_forward" / "README.md", "<!-- results:05_fa1_forward -->", "")  # results.py's own
    r = check(tree)
    assert r.returncode == 1
    assert "<!-- results:12_fa3_hopper:fp8d256 -->" in r.stderr
    assert "05_fa1_forward/README.md has no <!-- results:05_fa1_forward -->" in r.stderr


def test_a_missing_input_fails(tree):
    (tree / "results" / "logs" / "cd367e32ce0a" / "d256" / "bench256.json").unlink()
    r = check(tree)
    assert r.returncode == 1
    assert "bench256.json" in r.stderr
