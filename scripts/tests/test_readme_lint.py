"""scripts/readme_lint.py: every chapter README reads as a lesson (the skeleton, about 20 minutes, no
bookkeeping in its core) and no markdown link of the repository is broken.

    python3 -m pytest -q scripts/tests

The first test checks the repository itself; the others check the rules on small pages written here.
"""
import pathlib
import subprocess
import sys

ROOT = pathlib.Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "scripts"))
import readme_lint as lint  # noqa: E402

SKELETON = "\n".join(f"## {name}\n\nSome words here.\n" for name in lint.SKELETON)


def page(tmp_path, text, name="01_demo/README.md"):
    path = tmp_path / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


def test_the_repository_passes():
    problems, rows = lint.lint()
    assert problems == [], "\n".join(problems)
    assert len(rows) == 16
    for r in rows:
        if r["chapter"] in lint.DONE:
            assert r["sections"] == list(lint.SKELETON) and r["words"] <= lint.MAX_WORDS, r


def test_report_prints_one_row_per_chapter():
    r = subprocess.run([sys.executable, str(ROOT / "scripts" / "readme_lint.py"), "--report"], capture_output=True,
                       text=True)
    assert r.returncode == 0, r.stderr
    rows = [line for line in r.stdout.splitlines() if line[:2].isdigit() and line[2] == "_"]
    assert len(rows) == 16 and rows[0].startswith("01_vector_add")
    assert "prose words" in r.stdout and "minutes" in r.stdout


def test_prose_words_leave_out_code_tables_comments_and_generated_blocks():
    text = "\n".join([
        "# Title here", "", "one two three", "",
        "```", "not counted at all", "```", "",
        "    indented code is not counted", "",
        "| a | table | row |", "|---|---|---|", "",
        "<!-- a comment is not counted -->", "",
        "<!-- results:01_demo -->", "generated words are not counted", "<!-- /results:01_demo -->", "",
        "<!-- runs-on -->", "- nor the runs-on block", "<!-- /runs-on -->", "",
        "a [link text](https://example.com/x/y) counts its text only",
    ])
    assert lint.words(text) == ["Title", "here", "one", "two", "three", "a", "link", "text", "counts", "its",
                                "text", "only"]


def test_list_continuations_are_prose_not_code():
    text = "1. an item\n   that goes on\n\n   and a second paragraph of it\n"
    assert len(lint.words(text)) == 12  # the item's number is a word too


def test_the_core_ends_at_going_further():
    text = "## The one idea\n\nfirst words\n\n## Going further\n\nmoonshot targets issue 0123abcdef\n"
    assert "moonshot" not in lint.core(text)
    assert lint.core_problems(text) == []


def test_a_done_chapter_needs_every_section_in_order(tmp_path):
    good = page(tmp_path, "# 01\n\n" + SKELETON)
    assert lint.chapter_problems(good) == []
    missing = page(tmp_path, "# 01\n\n" + SKELETON.replace("## Read the code", "## Read this"))
    assert any("no '## Read the code' section" in p for p in lint.chapter_problems(missing))
    swapped = SKELETON.replace("## Run it", "## TMP").replace("## The one idea", "## Run it").replace(
        "## TMP", "## The one idea")
    assert any("out of order" in p for p in lint.chapter_problems(page(tmp_path, "# 01\n\n" + swapped)))


def test_a_heading_may_go_on_after_its_name(tmp_path):
    text = "# 01\n\n" + SKELETON.replace("## The numbers", "## The numbers (H200)")
    assert lint.chapter_problems(page(tmp_path, text)) == []


def test_a_long_core_is_refused(tmp_path):
    text = "# 01\n\n" + SKELETON.replace("## Exercises", "word " * (lint.MAX_WORDS + 1) + "\n\n## Exercises")
    assert any("prose words, more than" in p for p in lint.chapter_problems(page(tmp_path, text)))


def test_bookkeeping_in_the_core_is_refused():
    core = ("## The one idea\n\nSee commit e2caadafac6c and results/logs/x.log; the target was met, "
            "the moonshot missed, as the issue said; the publication before it too.\n")
    found = " ".join(lint.core_problems(core))
    for what in ("e2caadafac6c", "results/logs", "'target'", "'moonshot'", "'issue'", "'publication before'"):
        assert what in found, what


def test_what_is_not_bookkeeping_passes():
    core = ("## Run it\n\n`cmake --build build --target 01_demo_test` builds 4096 x 4096 in 1234567 steps; a "
            "deadbeef-free sentence with 0x7FFFFFFF and 3126.4 GB/s.\n\n"
            "<!-- results:01_demo -->\ncommit e2caadafac6c (generated: the results block names its run)\n"
            "<!-- /results:01_demo -->\n")
    assert lint.core_problems(core) == []


def test_relative_links_must_resolve(tmp_path):
    (tmp_path / "GLOSSARY.md").write_text("# Glossary\n\n### Warp (a group)\n\n32 threads.\n")
    p = page(tmp_path, "\n".join([
        "[ok](../GLOSSARY.md) [ok anchor](../GLOSSARY.md#warp-a-group) [web](https://example.com/nowhere)",
        "[missing](../NOPE.md) [bad anchor](../GLOSSARY.md#nowhere) ![figure](figures/none.png)",
        "`[in code](../ALSO_NOPE.md)` [self](#local) and <img src=\"figures/gone.png\">",
        "", "```", "[in a block](../BLOCK_NOPE.md)", "```", "", "## Local", ""]))
    problems = " ".join(lint.link_problems(p, tmp_path))
    assert "../NOPE.md does not exist" in problems
    assert "has no heading #nowhere" in problems
    assert "figures/none.png does not exist" in problems and "figures/gone.png does not exist" in problems
    for fine in ("ALSO_NOPE", "BLOCK_NOPE", "example.com", "#warp-a-group", "#local"):
        assert fine not in problems, fine


def test_github_slugs():
    assert lint.slug("What changed since the previous chapter") == "what-changed-since-the-previous-chapter"
    assert lint.slug("1. `smem_tiled_T`: the PMPP kernel, with edges") == "1-smem_tiled_t-the-pmpp-kernel-with-edges"
    assert lint.slug("Barrier (__syncthreads)") == "barrier-__syncthreads"
