"""Source comments say what a value does and cite its decision record; they do not retell the runs.

No comment in the source trees may name a committed result folder (docs/results/...), the commit
of a run (a hex sha of 7 to 40 characters) or a machine model (H100, H200, ...): those belong in
docs/decisions/, which the comments cite (docs/decisions/README.md). A decision record a comment
cites must exist.
"""
import io
import os
import re
import subprocess
import tokenize
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

# The trees whose comments are held to the rule, and every CMakeLists.txt outside tests/.
TREES = ("src", "include", "apps", "python/xferbench", "python/xferbench_report", "python/native", "examples",
         "bench", "scripts", "cmake")
C_LIKE = (".cpp", ".hpp", ".h", ".cc", ".c", ".cu", ".cuh", ".comp", ".cl", ".cpp.in", ".hpp.in")
HASH = (".py", ".sh", ".cmake", ".cmake.in", "CMakeLists.txt", "xferbench-report.in")

# A committed result folder: anything under docs/results/, or a machine's folder of it named alone
# ("results/ci-vm/..."). An output folder a script writes ("results/gate/", "results/<timestamp>/") is not one.
RESULT_FOLDER = re.compile(
    r"docs/results\b|(?<![\w$/.-])results/(?:(?:ci-vm|default-run|h100|h200|a100)(?![\w-])|nvidia-|amd-)",
    re.IGNORECASE)
# A commit: 7 to 40 hex digits standing alone, at least one a digit and one a letter ("0x..." constants are
# one word with their prefix, so they never stand alone).
SHA = re.compile(r"(?<!\w)(?=[0-9a-f]*[0-9])(?=[0-9a-f]*[a-f])[0-9a-f]{7,40}(?!\w)")
# A machine model.
MACHINE = re.compile(
    r"(?<![A-Za-z0-9])(?:[HAB][128]00|V100|G[HB][12]00|MI[1-3][05]0X?|Hopper|Blackwell)(?![A-Za-z0-9])",
    re.IGNORECASE)
DECISION = re.compile(r"docs/decisions/(\d{4}-[A-Za-z0-9._-]+?\.md)")


def offences(comment):
    """What the rule finds in one comment's text: a list of (what, matched text)."""
    out = [("result folder", m.group(0)) for m in RESULT_FOLDER.finditer(comment)]
    out += [("commit", m.group(0)) for m in SHA.finditer(comment)]
    out += [("machine model", m.group(0)) for m in MACHINE.finditer(comment)]
    return out


def _c_comments(text):
    """(line, text) of every // and /* */ comment in C, C++, CUDA, GLSL or OpenCL source, strings skipped."""
    out = []
    i, line, n = 0, 1, len(text)
    while i < n:
        c = text[i]
        if c == "\n":
            line += 1
            i += 1
        elif text.startswith("//", i):
            end = text.find("\n", i)
            end = n if end < 0 else end
            out.append((line, text[i + 2:end]))
            i = end
        elif text.startswith("/*", i):
            end = text.find("*/", i + 2)
            end = n if end < 0 else end
            for k, part in enumerate(text[i + 2:end].split("\n")):
                out.append((line + k, part))
            line += text.count("\n", i, end)
            i = end + 2
        elif c == "R" and i + 1 < n and text[i + 1] == '"' and (i == 0 or not (text[i - 1].isalnum()
                                                                                or text[i - 1] == "_")):
            open_paren = text.find("(", i + 2)
            delim = text[i + 2:open_paren]
            end = text.find(")" + delim + '"', open_paren)
            end = n if end < 0 else end + len(delim) + 2
            line += text.count("\n", i, end)
            i = end
        elif c == '"' or (c == "'" and not (i > 0 and text[i - 1].isalnum())):  # 1'000 is a number
            j = i + 1
            while j < n and text[j] != c and text[j] != "\n":
                j += 2 if text[j] == "\\" else 1
            i = j + 1
        else:
            i += 1
    return out


def _hash_comments(text, python):
    """(line, text) of every # comment (a shebang is none) in Python, shell or CMake."""
    if python:
        try:
            return [(t.start[0], t.string[1:]) for t in tokenize.generate_tokens(io.StringIO(text).readline)
                    if t.type == tokenize.COMMENT and not (t.start[0] == 1 and t.string.startswith("#!"))]
        except (tokenize.TokenError, SyntaxError):
            pass
    out = []
    for number, raw in enumerate(text.splitlines(), 1):
        if number == 1 and raw.startswith("#!"):
            continue
        quote = None
        for k, c in enumerate(raw):
            if quote:
                if c == "\\" and quote == '"':
                    continue
                if c == quote:
                    quote = None
            elif c in "'\"":
                quote = c
            elif c == "#" and (k == 0 or raw[k - 1] in " \t;(|&"):
                out.append((number, raw[k + 1:]))
                break
    return out


def comments(path, text):
    """(line, text) of each comment in `text`, read as the language `path` names; [] for another file."""
    name = str(path)
    if name.endswith(C_LIKE):
        return _c_comments(text)
    if name.endswith(HASH):
        return _hash_comments(text, name.endswith(".py"))
    return []


def source_files():
    """The tracked files of TREES and every CMakeLists.txt outside tests/ (walks the directories outside git)."""
    try:
        listed = subprocess.run(["git", "ls-files", "-z", "--", *TREES, "CMakeLists.txt", "*/CMakeLists.txt"],
                                cwd=ROOT, capture_output=True, text=True, check=True, timeout=60).stdout
        files = [f for f in listed.split("\0") if f]
    except (OSError, subprocess.CalledProcessError):
        files = []
    if not files:
        for top in (*TREES, "python"):
            for dirpath, dirnames, names in os.walk(ROOT / top):
                dirnames[:] = [d for d in dirnames if d not in ("__pycache__", ".git")]
                files += [os.path.relpath(os.path.join(dirpath, f), ROOT) for f in names]
        files.append("CMakeLists.txt")
    keep = []
    for f in sorted(set(files)):
        f = f.replace(os.sep, "/")
        in_trees = any(f == t or f.startswith(t + "/") for t in TREES)
        cmake_list = f.endswith("CMakeLists.txt") and not f.startswith("tests/")
        if (in_trees or cmake_list) and (ROOT / f).is_file():
            keep.append(f)
    return keep


def find_offences(files):
    """'file:line: what "text"' for every offending comment of `files` (paths relative to ROOT)."""
    found = []
    for f in files:
        text = (ROOT / f).read_text(encoding="utf-8", errors="replace")
        for line, comment in comments(f, text):
            for what, hit in offences(comment):
                found.append(f"{f}:{line}: {what} {hit!r}: {comment.strip()[:120]}")
    return found


def test_no_comment_names_a_result_folder_a_commit_or_a_machine():
    files = source_files()
    assert len(files) > 100, files  # the trees were found
    found = find_offences(files)
    assert not found, ("comments say what a value does and cite docs/decisions/, not the runs:\n"
                       + "\n".join(found))


@pytest.mark.parametrize("path, text, line", [
    ("src/x.cpp", 'int a = 1;\n// on the H100 machine 4 threads ran 31 GB/s\n', 2),
    ("src/x.cpp", "/* a ring of 8\n   (docs/results/h100/staged/ring/) */\nint b;\n", 2),
    ("src/x.hpp", 'const char* s = "no // comment here";  // measured at 5b9e691\n', 1),
    ("src/x.cu", "__global__ void k() {}  // GH200 and MI300X differ\n", 1),
    ("python/xferbench/x.py", "x = 1  # see results/ci-vm/blocks-call-overhead/\n", 1),
    ("python/xferbench/x.py", "#!/usr/bin/env python3\n\n# a nvidia-h100-x4 machine\n", 3),
    ("scripts/x.sh", "#!/bin/bash\necho '# not a comment'\n# gate at a73ff18 took 565 s\n", 3),
    ("cmake/x.cmake", 'set(A "x")  # study-811093b\n', 1),
    ("CMakeLists.txt", "# Hopper machines\nproject(x)\n", 1),
    ("src/x.cpp", "// two runs on the H200.\n", 1),
    ("bench/x.sh", "# (first-773da17/)\n", 1),
])
def test_the_checker_catches_an_offending_comment(path, text, line):
    found = [(n, offences(c)) for n, c in comments(path, text) if offences(c)]
    assert [n for n, _ in found] == [line], found


@pytest.mark.parametrize("path, text", [
    ("src/x.cpp", 'auto h = 0x9e3779b97f4a7c15ull;  // the golden ratio, 2^64 / phi\nint n = 1\'000;\n'),
    ("src/x.cpp", 'const char* u = "https://example.org/H100/5b9e691";  // 16777216 bytes\n'),
    ("src/x.cpp", 'auto r = R"(// H100 in a raw string)";  // see docs/decisions/0001-staged-copier-shape.md\n'),
    ("scripts/x.sh", "#!/bin/bash\nOUT=${OUT:-results/gate}  # writes under results/<timestamp>/\nn=${#a}\n"),
    ("python/xferbench/x.py", 's = "# deadbeef5 H100"  # a docstring is no comment\n'),
])
def test_the_checker_leaves_what_is_no_offence(path, text):
    assert [c for _, c in comments(path, text) if offences(c)] == []


def test_every_decision_record_a_comment_cites_exists():
    cited = {}
    for f in source_files():
        text = (ROOT / f).read_text(encoding="utf-8", errors="replace")
        for line, comment in comments(f, text):
            for m in DECISION.finditer(comment):
                cited.setdefault(m.group(1), f"{f}:{line}")
    assert cited, "no comment cites a decision record"
    missing = {name: where for name, where in cited.items() if not (ROOT / "docs/decisions" / name).is_file()}
    assert not missing, missing
