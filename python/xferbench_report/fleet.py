"""xferbench-report fleet DIR: merge the per-rank files of `xferbench fleet --out-dir DIR`
(ranks started by a launcher without MPI) into one fleet result file, judged the way rank 0
judges over MPI: by the xferbench binary (`xferbench fleet --merge DIR`), whose judge
(src/core/fleet.cpp; docs/fleet.md) is the one definition of an outlier. This module reads the
verdict from the file (fleet.exit_code, fleet.findings, each rank's verdict and why) and renders
it: the text, the node x device table and its SVG, each cell the median of the rank's repeats
(`xferbench fleet --repeat`); a file from before --repeat has one point per rank, phase and test.

Exit codes are the fleet command's: 0 healthy, 2 bad input, 3 unhealthy, 4 a rank missing,
5 ranks disagree, 6 more ranks on a node than devices.
"""

import json
import os
import shutil
import statistics
import subprocess
import tempfile

from . import legacy
from .errors import BadInput
from .load import _Fields, read_document, _string, load_run
from .output import write_output

def _tests(doc):
    """The health set's test names as the C++ tool wrote them (fleet.tests), in its order."""
    return doc["fleet"].get("tests") or legacy.FLEET_TESTS


def _test_of(p):
    """The health test a point measured, as its file says (fleet.test); legacy.py for older files."""
    return p["fleet"].get("test") or legacy.fleet_test_of(p)


def _figure(p, latency):
    return p.get("latency_us", 0.0) if latency else p.get("gbps", 0.0)


def _xferbench():
    exe = os.environ.get("XFERBENCH_BIN") or shutil.which("xferbench")
    if not exe:
        raise BadInput("merging rank files needs the xferbench binary, whose judge (src/core/fleet.cpp) is the fleet's "
                       "one definition of an outlier: put xferbench on PATH or set XFERBENCH_BIN")
    return exe


def merge_dir(directory, mad_k=3.0, tolerance=0.10, min_ceiling=0.5, baseline=None):
    """The merged fleet document, its exit code, and the text to print. The ranks are merged and
    judged by `xferbench fleet --merge DIR` (src/core/fleet.cpp); this reads its verdict from the file."""
    with tempfile.TemporaryDirectory(prefix="xferbench-fleet-") as tmp:
        out = os.path.join(tmp, "fleet.json")
        cmd = [_xferbench(), "fleet", "--merge", directory, "--json", out, "--mad-k", repr(mad_k),
               "--tolerance", repr(tolerance), "--min-ceiling", repr(min_ceiling)]
        if baseline:
            cmd += ["--baseline", baseline]
        p = subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        if not os.path.exists(out):
            lines = [line for line in p.stderr.splitlines() if line.startswith("xferbench:")] or p.stderr.splitlines()
            why = lines[0].removeprefix("xferbench: ").removeprefix("error: ") if lines else f"exit {p.returncode}"
            # The binary names the option or the file at fault; a bare reason is the directory's.
            raise BadInput(why if why.startswith(("--", directory)) else f"{directory}: {why}")
        with open(out) as f:
            doc = json.load(f)
    return doc, doc["fleet"]["exit_code"], fleet_text(doc)


# The fleet command's verdicts (docs/fleet.md), and 128 + a signal for an interrupted run.
EXIT_CODES = (0, 2, 3, 4, 5, 6)
VERDICTS = ("healthy", "unhealthy", "interrupted")


def read_fleet_file(path):
    """A fleet result file whose verdict the report shows and exits with: its points checked as any
    result file's (load.py: types, finiteness, ranges), then the verdict's own fields, so that a file
    with an Infinity, a rank outside its job or an exit code the fleet never gives is one line
    naming the field (BadInput), never a verdict read from it."""
    doc = read_document(path)
    load_run(path, require_ok=False, doc=doc, fleet=True)
    fl = _Fields(path, "", doc).object("fleet")
    code = fl.integer("exit_code", required=True)
    if code not in EXIT_CODES and not 128 < code < 192:
        fl.fail(f"not an exit code of the fleet command: {code}", "exit_code")
    if fl.flag("healthy", code == 0) != (code == 0):
        fl.fail(f"contradicts exit_code {code}", "healthy")
    for i, test in enumerate(fl.array("tests") or []):
        _string(path, f"{fl.at('tests')}[{i}]", test)
    for i, raw in enumerate(doc["results"]):
        tag = _Fields(path, f"results[{i}]", raw).object("fleet")
        if tag:
            tag.string("test")
    for i, problem in enumerate(fl.array("problems", required=True)):
        _string(path, f"{fl.at('problems')}[{i}]", problem)
    for i, raw in enumerate(fl.array("findings", required=True)):
        f = _Fields(path, f"{fl.at('findings')}[{i}]", raw)
        f.integer("rank", required=True, nonnegative=True)
        for key in ("node", "phase", "test", "why"):
            f.string(key, required=True)
        f.integer("device", required=True)
        f.number("value", required=True)
        f.number("reference", required=True)
    if code != 0 and not fl.raw["problems"] and not fl.raw["findings"]:
        fl.fail(f"exit_code {code} with no problem and no finding to say why")
    sizes = []
    for i, raw in enumerate(fl.array("ranks", required=True)):
        r = _Fields(path, f"{fl.at('ranks')}[{i}]", raw)
        rank, size = r.integer("rank", required=True, nonnegative=True), r.integer("size", required=True, positive=True)
        if rank >= size:
            r.fail(f"rank {rank} of {size} is outside the job (ranks 0 to {size - 1})")
        r.string("node", required=True)
        r.string("verdict", choices=VERDICTS)
        sizes.append(size)
    missing = fl.array("missing_ranks") or []
    if sizes and len(sizes) + len(missing) < max(sizes):
        # One rank's own file of `fleet --out-dir`: its verdict is that rank's alone, not the fleet's.
        raise BadInput(f"{path}: a rank file ({len(sizes)} of {max(sizes)} ranks), not a merged fleet file: "
                       f"merge the directory, xferbench-report fleet {os.path.dirname(path) or '.'}")
    return doc


def fleet_text(doc):
    """The verdict, problems and outliers first, then the node x device table."""
    fl = doc["fleet"]
    lines = []
    if fl["exit_code"] == 0:
        lines.append(f"fleet healthy: {len(fl['ranks'])} ranks")
    else:
        first = fl["problems"][0] if fl["problems"] else fl["findings"][0]["why"]
        # An interrupted run is partial, not a verdict on the fleet (the C++ judge sets the flag).
        state = "run interrupted" if fl.get("interrupted") else "unhealthy"
        lines.append(f"fleet {state} (exit {fl['exit_code']}): {first}")
    lines += [f"problem: {p}" for p in fl["problems"]]
    for f in fl["findings"]:
        phase = f" ({f['phase']})" if f["phase"] else ""
        label = "outlier" if f["reference"] > 0 else "unhealthy"
        lines.append(f"{label}: rank {f['rank']} node {f['node']} device {f['device']}{phase}: {f['why']}")
    lines.append(node_device_table(doc))
    return "\n".join(lines) + "\n"


def node_device_table(doc):
    """One row per node, rank and phase, a column per health test, each cell the median of the
    rank's repeats (or the status of a repeat that did not measure); outlying cells marked '!'."""
    flagged = {(f["rank"], f["phase"], f["test"]) for f in doc["fleet"]["findings"]}
    ok, status = {}, {}
    for p in doc["results"]:
        if "fleet" not in p:
            continue
        key = (p["fleet"]["node"], p["fleet"]["rank"], p.get("device_index", -1), p["fleet"]["phase"])
        t = _test_of(p)
        if p["status"] == "ok":
            ok.setdefault(key, {}).setdefault(t, []).append(_figure(p, t.startswith("latency")))
        else:
            status.setdefault(key, {}).setdefault(t, p["status"])
    cells = {}
    for key in set(ok) | set(status):
        for t in set(ok.get(key, {})) | set(status.get(key, {})):
            v = status.get(key, {}).get(t) or f"{statistics.median(ok[key][t]):.3g}"
            cells.setdefault(key, {})[t] = v + ("!" if (key[1], key[3], t) in flagged else "")
    head = f"{'node':<20} {'rank':>4} {'device':>6} {'phase':<9}" + "".join(
        f" {(t + ' us' if t.startswith('latency') else t):>13}" for t in _tests(doc))
    rows = [head]
    for key in sorted(cells, key=lambda k: (k[0], k[1], k[3] != "alone")):
        node, rank, dev, phase = key
        rows.append(f"{node:<20} {rank:>4} {dev:>6} {phase:<9}" + "".join(
            f" {cells[key].get(t, '-'):>13}" for t in _tests(doc)))
    return "\n".join(rows)


def write_json(doc, path):
    write_text(path, json.dumps(doc, indent=2) + "\n")


def write_text(path, text):
    """By the package's one rule for outputs (output.py): a file whole or not at all, a device, FIFO or
    "-" in place, a link's target written and the link kept; OutputError when it cannot be written."""
    write_output(path, text)


def node_device_svg(doc):
    """The node x device view as an SVG heat map: a row per node, rank and device, a column per phase
    and test; each cell's colour is its figure against the fleet median of its column (red worse,
    green better), outliers outlined. Plain SVG text: no plotting library needed on a cluster's node."""
    from html import escape

    flagged = {(f["rank"], f["phase"], f["test"]) for f in doc["fleet"]["findings"]}
    cols = [(ph, t) for ph in ("alone", "together") for t in _tests(doc)]
    repeats, rows = {}, set()
    for p in doc["results"]:
        if "fleet" not in p or p.get("status") != "ok":
            continue
        t = _test_of(p)
        row = (p["fleet"]["node"], p["fleet"]["rank"], p.get("device_index", -1))
        rows.add(row)
        repeats.setdefault((row, p["fleet"]["phase"], t), []).append(_figure(p, t.startswith("latency")))
    cells = {k: statistics.median(v) for k, v in repeats.items()}  # each rank by the median of its repeats
    rows = sorted(rows)
    medians = {}
    for ph, t in cols:
        vals = [v for (r, p, tt), v in cells.items() if p == ph and tt == t]
        if vals:
            medians[(ph, t)] = statistics.median(vals)
    cw, ch, left, top = 96, 22, 230, 52
    w, h = left + cw * len(cols) + 10, top + ch * len(rows) + 30
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{w}" height="{h}" font-family="sans-serif" font-size="11">',
           f'<text x="4" y="14" font-size="13">fleet: node x device (colour: against the column\'s median; '
           f'outlined: outlier)</text>']
    for i, (ph, t) in enumerate(cols):
        x = left + i * cw
        out.append(f'<text x="{x + 4}" y="{top - 20}">{ph}</text><text x="{x + 4}" y="{top - 6}">{escape(t)}</text>')
    for j, row in enumerate(rows):
        y = top + j * ch
        out.append(f'<text x="4" y="{y + 15}">{escape(str(row[0]))} rank {row[1]} dev {row[2]}</text>')
        for i, (ph, t) in enumerate(cols):
            x = left + i * cw
            v = cells.get((row, ph, t))
            m = medians.get((ph, t))
            if v is None or not m:
                out.append(f'<rect x="{x}" y="{y}" width="{cw - 2}" height="{ch - 2}" fill="#eee"/>')
                continue
            ratio = (m / v if t.startswith("latency") else v / m) if v else 0.0
            # 1.0 white; worse toward red, better toward green (saturating at 50% either way)
            k = max(-1.0, min(1.0, (ratio - 1) * 2))
            r, g, b = (255, int(255 * (1 + k)), int(255 * (1 + k))) if k < 0 else (int(255 * (1 - k)), 255, int(255 * (1 - k)))
            stroke = ' stroke="#c00" stroke-width="2"' if (row[1], ph, t) in flagged else ""
            out.append(f'<rect x="{x}" y="{y}" width="{cw - 2}" height="{ch - 2}" fill="rgb({r},{g},{b})"{stroke}/>'
                       f'<text x="{x + 4}" y="{y + 15}">{v:.3g}</text>')
    out.append(f'<text x="4" y="{h - 8}">GB/s; latency-4B in microseconds</text></svg>')
    return "\n".join(out) + "\n"
