"""The documentation's links resolve, and the committed evidence stays small (issue 55).

Every relative Markdown link or image in README.md and docs/**/*.md (result folders' READMEs and the decision
records included), `[text](path)` or `[text](path#anchor)`, must name a file or directory that exists; an anchor
into a Markdown file must name one of its headings. Links in code (fenced blocks, `inline code`) are text, not
links. Web links are not followed.

The tracked bytes under docs/results stay at most 6 MB and, in a git checkout, what `git archive HEAD` writes
at most 10 MB: a result is committed compressed and few (docs/layout.md, "Where a result goes").
"""

import re
import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
RESULTS_LIMIT = 6_000_000
ARCHIVE_LIMIT = 10_000_000

FENCE = re.compile(r"^\s{0,3}(```|~~~)")
CODE_SPAN = re.compile(r"(`+).*?\1")
# [text](target) and ![alt](target): the target up to white space or the closing parenthesis (a title after it
# is allowed); <target> for one with spaces.
INLINE = re.compile(r"\]\(\s*(<[^>]*>|[^)\s]+)(?:\s+[\"'(][^)]*)?\)")
REFERENCE = re.compile(r"^\s{0,3}\[[^\]]+\]:\s*(<[^>]*>|\S+)")
SCHEME = re.compile(r"^[a-zA-Z][a-zA-Z0-9+.-]*:")


def doc_files(root=ROOT):
    """README.md and every Markdown file under docs/, as the reader meets them."""
    return [root / "README.md"] + sorted((root / "docs").rglob("*.md"))


def links(text):
    """(line number, target) of each link in a Markdown text, leaving code out."""
    found, fenced = [], False
    for n, line in enumerate(text.splitlines(), 1):
        if FENCE.match(line):
            fenced = not fenced
            continue
        if fenced:
            continue
        targets = INLINE.findall(CODE_SPAN.sub("", line)) + REFERENCE.findall(line)
        found += [(n, t[1:-1] if t.startswith("<") else t) for t in targets]
    return found


def slug(heading):
    """GitHub's anchor for a heading: lower case, punctuation dropped, spaces to hyphens."""
    text = CODE_SPAN.sub(lambda m: m.group(0).strip("`"), heading.strip())
    text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", text)
    return re.sub(r"[^\w\- ]", "", text.lower()).replace(" ", "-")


def anchors(path):
    names, seen, fenced = set(), {}, False
    for line in path.read_text(encoding="utf-8").splitlines():
        if FENCE.match(line):
            fenced = not fenced
        elif not fenced and (m := re.match(r"^\s{0,3}#{1,6}\s+(.*?)\s*#*\s*$", line)):
            s = slug(m.group(1))
            names.add(s if s not in seen else f"{s}-{seen[s]}")
            seen[s] = seen.get(s, 0) + 1
        names.update(re.findall(r"<a\s+(?:name|id)=\"([^\"]+)\"", line))
    return names


def broken_links(doc, root=ROOT):
    """One line per link of `doc` that does not resolve: 'file:line: target (why)'."""
    problems = []
    for n, target in links(doc.read_text(encoding="utf-8")):
        if SCHEME.match(target):
            continue
        part, _, anchor = target.partition("#")
        dest = (root / part.lstrip("/")) if part.startswith("/") else (doc.parent / part) if part else doc
        where = f"{doc.relative_to(root)}:{n}: {target}"
        if not dest.exists():
            problems.append(f"{where} (no such file or directory)")
        elif anchor and dest.is_file() and dest.suffix == ".md" and anchor not in anchors(dest):
            problems.append(f"{where} (no heading #{anchor} in {dest.name})")
    return problems


def test_every_link_in_the_docs_resolves():
    docs = doc_files()
    assert len(docs) > 10
    problems = [p for d in docs for p in broken_links(d)]
    assert not problems, "\n".join(problems)


def test_a_broken_link_is_caught(tmp_path):
    (tmp_path / "docs" / "results" / "m").mkdir(parents=True)
    (tmp_path / "docs" / "here.md").write_text("# Here\n\n## The ceiling, read (PCIe)\n")
    (tmp_path / "docs" / "results" / "m" / "README.md").write_text(
        "[up](../../here.md#the-ceiling-read-pcie) and ![a plot](plot.png)\n")
    (tmp_path / "README.md").write_text(
        "[fine](docs/here.md), [folder](docs/results/m/), [web](https://example.com/x.png), [self](#top)\n"
        "[gone](docs/report/index.html) and [bad anchor](docs/here.md#nowhere)\n"
        "```sh\ncat [not a link](nowhere.md)\n```\n"
        "`[code](nowhere.md)` is code\n"
        "# Top\n")
    problems = [p for d in doc_files(tmp_path) for p in broken_links(d, tmp_path)]
    assert problems == [
        "README.md:2: docs/report/index.html (no such file or directory)",
        "README.md:2: docs/here.md#nowhere (no heading #nowhere in here.md)",
        "docs/results/m/README.md:1: plot.png (no such file or directory)",
    ]


def test_a_reference_definition_is_a_link():
    assert links("[x]: docs/a.md\n  [y]: <b c.md>\n") == [(1, "docs/a.md"), (2, "b c.md")]


def _git(*args):
    return subprocess.run(["git", "-C", str(ROOT), *args], capture_output=True, timeout=300)


def _in_a_checkout():
    if not shutil.which("git"):
        return "no git on this machine"
    if _git("rev-parse", "--verify", "-q", "HEAD").returncode != 0:
        return f"{ROOT} is not a git checkout with a commit"
    return ""


def test_the_committed_results_stay_small():
    if _in_a_checkout():
        files = [ROOT / f for f in _git("ls-files", "-z", "docs/results").stdout.decode().split("\0") if f]
    else:
        files = [f for f in (ROOT / "docs" / "results").rglob("*") if f.is_file()]
    size = sum(f.stat().st_size for f in files if f.is_file())
    assert size <= RESULTS_LIMIT, f"docs/results holds {size:,} bytes (at most {RESULTS_LIMIT:,}): prune and compress"


def test_the_tree_stays_small():
    why = _in_a_checkout()
    if why:
        pytest.skip(why)
    if _git("status", "--porcelain", "--untracked-files=no").stdout.strip():
        # A copy of the tree beside a .git it did not come from (the GPU machine's), or changes not
        # committed yet: HEAD's archive is not this tree's size. A clean clone (CI) measures it.
        pytest.skip("the tracked files differ from HEAD: HEAD's size is not this tree's")
    archive = _git("archive", "HEAD")
    assert archive.returncode == 0, archive.stderr.decode()
    size = len(archive.stdout)
    assert size <= ARCHIVE_LIMIT, f"`git archive HEAD` writes {size:,} bytes (at most {ARCHIVE_LIMIT:,})"
