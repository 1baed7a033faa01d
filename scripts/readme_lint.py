#!/usr/bin/env python3
"""Checks that every chapter README reads as a lesson, and that no markdown link of the repository is broken.

    scripts/readme_lint.py            # check; exit 1 naming every problem
    scripts/readme_lint.py --report   # also print the table: chapter, prose words, minutes, sections present

A chapter README's *core* is everything above its `## Going further` heading (the whole file when it has
none); what a learner reads in one sitting. Its *prose words* are the words outside fenced and indented
code blocks, tables, HTML comments and the generated blocks (`<!-- results:... -->`, `<!-- runs-on -->`
and the other `<!-- name --> ... <!-- /name -->` pairs scripts write); at 150 words a minute they give the
reading time. Words inside folded answers (`<details>`) count: they are prose, read when opened.

For the chapters in DONE (rewritten to the skeleton; add a chapter here when its README is):
  - every heading of SKELETON is a `## ` heading of the README, in that order (other `## ` headings may
    stand between them; a heading may go on after its name, as in `## The numbers (H200)`);
  - the core is at most MAX_WORDS prose words (about 20 minutes);
  - the core, outside its generated blocks, names no commit (7 to 40 hex digits with a digit and a letter),
    no `results/logs` path, and none of the words in FORBIDDEN outside inline code (`--target` is a flag):
    those belong to the chapter's WORKLOG.md.
The other chapters are only reported.

For every markdown file (MARKDOWN), every relative link (`[text](path)`, `![alt](path)`, `<img src>`,
`<a href>`) outside code must name a file or folder that exists; a `#anchor` into a markdown file must name
one of its headings (GitHub's slugs) or an `<a id>`/`<a name>` in it.
"""
import argparse
import pathlib
import re
import sys

ROOT = pathlib.Path(__file__).resolve().parent.parent

SKELETON = ("Runs on", "The one idea", "What changed since the previous chapter", "Run it", "Read the code",
            "The numbers", "Exercises", "Going further")
DONE = ("01_vector_add", "02_matmul_naive", "03_matmul_tiled", "04_online_softmax", "05_fa1_forward",
        "06_fa2_forward", "07_fa_backward", "08_spilling_study", "09_tensor_core_matmul",
        "10_fa2_tensor_cores", "11_flash_decoding", "12_fa3_hopper", "13_ring_attention", "14_fa3_backward", "15_attention_variants", "16_attention_in_a_model")
MAX_WORDS = 3000
WORDS_PER_MINUTE = 150
# Words of the project's own bookkeeping, not of the lesson (case-insensitive, whole words).
FORBIDDEN = (r"moonshots?", r"targets?", r"issues?", r"publications? before")
HASH = re.compile(r"(?<![\w./-])(?=[0-9a-f]*[0-9])(?=[0-9a-f]*[a-f])[0-9a-f]{7,40}(?![\w-])")


def chapters(root=ROOT):
    return sorted(p.parent for p in root.glob("[0-9][0-9]_*/README.md"))


def markdown_files(root=ROOT):
    """Every markdown page a reader opens: the root's, the chapters' (any depth), results/README.md."""
    pages = set(root.glob("*.md")) | set(root.glob("[0-9][0-9]_*/**/*.md"))
    if (root / "results" / "README.md").exists():
        pages.add(root / "results" / "README.md")
    return sorted(p for p in pages if not any(part.startswith(("build", ".")) for part in p.relative_to(root).parts))


# ---- reading a page ----

GENERATED = re.compile(r"<!--\s*([\w:./-]+)\s*-->.*?<!--\s*/\1\s*-->", re.S)
COMMENT = re.compile(r"<!--.*?-->", re.S)


def without_generated(text):
    """The text with every generated block (<!-- name --> ... <!-- /name -->, the r: cells too) and every
    other HTML comment removed."""
    text = re.sub(r"<!-- r:\w+ -->.*?<!-- /r -->", " ", text, flags=re.S)
    return COMMENT.sub(" ", GENERATED.sub(" ", text))


def prose_lines(text):
    """The lines of text outside code blocks (fenced, or indented by 4 spaces after a blank line outside a
    list), as (line number, line); code lines come back as ''."""
    out, fence, indented, in_list, blank = [], None, False, False, True
    for n, line in enumerate(text.splitlines(), 1):
        stripped = line.strip()
        if fence:
            if stripped.startswith(fence):
                fence = None
            out.append((n, ""))
            continue
        m = re.match(r"(`{3,}|~{3,})", stripped)
        if m:
            fence = m.group(1)
            out.append((n, ""))
            blank = False
            continue
        if indented and (line.startswith(("    ", "\t")) or not stripped):
            out.append((n, ""))
            continue
        indented = False
        if line.startswith(("    ", "\t")) and blank and not in_list:
            indented = True
            out.append((n, ""))
            continue
        if not stripped:
            blank = True
            out.append((n, line))
            continue
        if re.match(r"\s{0,3}([-*+]|\d+[.)])\s", line):
            in_list = True
        elif not line.startswith(" ") and blank:
            in_list = False
        blank = False
        out.append((n, line))
    return out


def core(text):
    """The part of a chapter README above its `## Going further` heading."""
    for n, line in prose_lines(text):
        if re.match(r"## Going further\b", line):
            return "\n".join(text.splitlines()[:n - 1]) + "\n"
    return text


def prose(text):
    """The prose of a page: no code blocks, tables, comments or generated blocks."""
    lines = [line for _, line in prose_lines(without_generated(text))]
    return "\n".join("" if line.lstrip().startswith("|") else line for line in lines)


def words(text):
    """The prose words of a page (link targets and HTML tags not counted)."""
    body = prose(text)
    body = re.sub(r"!?\[([^\]]*)\]\([^)]*\)", r"\1", body)  # [text](target) -> text
    body = re.sub(r"<[A-Za-z/!][^>]*>", " ", body)  # tags only: a bare "<" in prose (a < b) is a word
    return [w for w in body.split() if re.search(r"\w", w)]


def folded_words(text):
    """The prose words inside <details> blocks (the folded answers)."""
    body = prose(text)
    return sum(len(words(m.group(0))) for m in re.finditer(r"<details>.*?</details>", body, re.S))


def headings(text, level=2):
    marks = "#" * level + " "
    return [line[len(marks):].strip() for _, line in prose_lines(text) if line.startswith(marks)]


def skeleton_present(text):
    """The skeleton's headings found in order (a heading matches its name, alone or followed by more)."""
    found, names = [], headings(text)
    i = 0
    for name in SKELETON:
        for j in range(i, len(names)):
            if re.match(re.escape(name) + r"(\b|$)", names[j]):
                found.append(name)
                i = j + 1
                break
    return found


# ---- the checks ----

def core_problems(text):
    """What a done chapter's core must not contain, outside its generated blocks and code."""
    body = "\n".join(line for _, line in prose_lines(without_generated(core(text))))
    problems = []
    for m in HASH.finditer(body):
        problems.append(f"a commit hash in the core: {m.group(0)} (it belongs in WORKLOG.md)")
    for m in re.finditer(r"results/logs\b", body):
        problems.append("a results/logs path in the core (it belongs in WORKLOG.md)")
    text = re.sub(r"`[^`\n]*`", "", body)  # a command's --target is not the word
    for pattern in FORBIDDEN:
        for m in re.finditer(r"\b" + pattern + r"\b", text, re.I):
            line = text[:m.start()].count("\n") + 1
            problems.append(f"the word '{m.group(0)}' in the core (line {line} of the core)")
    return problems


def chapter_row(readme):
    text = readme.read_text()
    c = core(text)
    n = len(words(c))
    return dict(chapter=readme.parent.name, words=n, minutes=n / WORDS_PER_MINUTE, folded=folded_words(c),
                sections=skeleton_present(text), has_going_further=c != text)


def chapter_problems(readme):
    text = readme.read_text()
    row = chapter_row(readme)
    where = readme.relative_to(readme.parents[1])
    problems = []
    names = headings(text)
    for name in SKELETON:
        if not any(re.match(re.escape(name) + r"(\b|$)", h) for h in names):
            problems.append(f"{where}: no '## {name}' section")
    if len(row["sections"]) == len(SKELETON) or all(
            any(re.match(re.escape(s) + r"(\b|$)", h) for h in names) for s in SKELETON):
        if row["sections"] != list(SKELETON):
            problems.append(f"{where}: the skeleton's sections are out of order (found in order: "
                            f"{', '.join(row['sections'])})")
    if row["words"] > MAX_WORDS:
        problems.append(f"{where}: the core has {row['words']} prose words, more than {MAX_WORDS} "
                        f"(~{MAX_WORDS // WORDS_PER_MINUTE} minutes): move the rest to WORKLOG.md")
    problems += [f"{where}: {p}" for p in core_problems(text)]
    return problems


def slug(heading):
    """GitHub's anchor for a heading: lower case, markup and punctuation dropped, spaces to hyphens."""
    h = re.sub(r"!?\[([^\]]*)\]\([^)]*\)", r"\1", heading.strip())
    h = re.sub(r"<[^>]+>", "", h).lower()
    h = re.sub(r"[^\w\- ]", "", h)
    return h.replace(" ", "-")


def anchors(page):
    text = page.read_text()
    seen, out = {}, set()
    for _, line in prose_lines(text):
        m = re.match(r"#{1,6}\s+(.*?)\s*#*\s*$", line)
        if m:
            s = slug(m.group(1))
            k = seen.get(s, 0)
            out.add(s if k == 0 else f"{s}-{k}")
            seen[s] = k + 1
    out |= set(re.findall(r"<a\s+(?:id|name)=\"([^\"]+)\"", text))
    return out


LINK = re.compile(r"!?\[(?:[^\[\]]|\[[^\]]*\])*\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)"
                  r"|<(?:img|a)\s[^>]*?(?:src|href)=\"([^\"]+)\"")


def links(page):
    """[(line number, target)] of the page's links outside code (inline code spans included)."""
    out = []
    for n, line in prose_lines(page.read_text()):
        line = re.sub(r"`[^`]*`", "", line)
        for m in LINK.finditer(line):
            out.append((n, m.group(1) or m.group(2)))
    return out


def link_problems(page, root=ROOT):
    problems, where = [], page.relative_to(root)
    for n, target in links(page):
        if re.match(r"^[a-z][a-z0-9+.-]*:", target, re.I):  # https:, mailto:, ...
            continue
        path, _, anchor = target.partition("#")
        dest = (page.parent / path).resolve() if path else page
        if path and not dest.exists():
            problems.append(f"{where}:{n}: link to {target}: {path} does not exist")
        elif anchor and dest.is_file() and dest.suffix == ".md" and anchor not in anchors(dest):
            problems.append(f"{where}:{n}: link to {target}: {dest.relative_to(root)} has no heading #{anchor}")
    return problems


def lint(root=ROOT):
    """(problems, the per-chapter rows)."""
    problems, rows = [], []
    for chapter in chapters(root):
        readme = chapter / "README.md"
        rows.append(chapter_row(readme))
        if chapter.name in DONE:
            problems += chapter_problems(readme)
    for page in markdown_files(root):
        problems += link_problems(page, root)
    return problems, rows


def report(rows):
    lines = [f"{'chapter':<26} {'prose words':>11} {'minutes':>8} {'in answers':>10}  sections (of {len(SKELETON)})",
             "-" * 80]
    for r in rows:
        done = "done" if r["chapter"] in DONE else "    "
        lines.append(f"{r['chapter']:<26} {r['words']:>11} {r['minutes']:>8.1f} {r['folded']:>10}  "
                     f"{len(r['sections'])}/{len(SKELETON)} {done}"
                     f"{'' if r['has_going_further'] else '  (no Going further: the whole file is the core)'}")
    return "\n".join(lines)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--report", action="store_true", help="print the per-chapter table as well")
    args = ap.parse_args()
    problems, rows = lint()
    if args.report:
        print(report(rows))
        print(f"\n{WORDS_PER_MINUTE} prose words a minute; the core is at most {MAX_WORDS} words in the chapters "
              f"marked done ({len(DONE)} of {len(rows)}).")
    for p in problems:
        print(f"readme_lint: {p}", file=sys.stderr)
    if not problems:
        print(f"readme_lint: {len(DONE)} chapters follow the skeleton; every relative link of "
              f"{len(markdown_files())} markdown files resolves")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
