"""xferbench-report fleet DIR: merge the per-rank files of `xferbench fleet --out-dir DIR`
(ranks started by a launcher without MPI) into one fleet result file, and judge it the way
rank 0 does over MPI (src/core/fleet.cpp; docs/fleet.md): outliers against the fleet median
with the median absolute deviation, against each link's ceiling, links below their best,
failed points, missing ranks, ranks that disagree. Each rank is judged, and tabulated, by the
median of its repeats of a test (`xferbench fleet --repeat`, each point's `fleet.repeat`), and
called slow only when its best repeat is slow too; a file
from before --repeat has one point per rank, phase and test (repeat 0), its own median.

Exit codes are the fleet command's: 0 healthy, 2 bad input, 3 unhealthy, 4 a rank missing,
5 ranks disagree, 6 more ranks on a node than devices.
"""

import glob
import json
import os
import statistics

from . import SCHEMA
from .errors import BadInput
from .output import write_output

EXIT_UNHEALTHY, EXIT_MISSING, EXIT_DISAGREE, EXIT_TOO_MANY = 3, 4, 5, 6
TESTS = ("h2d-pinned", "d2h-pinned", "bidir-pinned", "latency-4B", "h2d-pageable")


def _test_of(p):
    if p["bytes"] <= 64:
        return "latency-4B"
    kind = "pageable" if p["host_memory"] == "pageable" else "pinned"
    return f"{p['direction']}-{kind}"


def _figure(p, latency):
    return p.get("latency_us", 0.0) if latency else p.get("gbps", 0.0)


def _worse_than(x, ref, latency):
    """By how much figure x is worse than ref: lower GB/s, higher latency."""
    return x - ref if latency else ref - x


def _repeat_figures(points):
    """(rank, phase, test) -> the figures of its ok points, one per repeat."""
    by = {}
    for p in points:
        if p.get("status") == "ok" and "fleet" in p:
            t = _test_of(p)
            by.setdefault((p["fleet"]["rank"], p["fleet"]["phase"], t), []).append(_figure(p, t.startswith("latency")))
    return by


def _load_rank_file(path):
    try:
        with open(path) as f:
            doc = json.load(f)
    except (OSError, ValueError) as e:
        raise BadInput(f"{path}: cannot read a fleet rank file: {e}")
    if doc.get("schema") != SCHEMA or "fleet" not in doc or not doc["fleet"].get("ranks"):
        raise BadInput(f"{path}: not a fleet rank file (schema {SCHEMA} with a 'fleet' section)")
    return doc


def find_outliers(ranks, points, mad_k=3.0, tolerance=0.10, min_ceiling=0.5, baseline_points=None):
    """The findings, as src/core/fleet.cpp's find_outliers makes them."""
    out = []

    def figures(repeats):
        # (phase, test) -> each rank's median of its repeats: one low repeat moves neither.
        by = {}
        for (_, phase, t), v in repeats.items():
            by.setdefault((phase, t), []).append(statistics.median(v))
        return by

    mine = _repeat_figures(points)
    fleet_fig = figures(mine)
    base_fig = figures(_repeat_figures(baseline_points)) if baseline_points is not None else None

    def where(r, p=None, test=""):
        return {"rank": r["rank"], "node": r["node"], "device": r["device"],
                "phase": p["fleet"]["phase"] if p and "fleet" in p else "",
                "test": _test_of(p) if p else test, "value": 0.0, "reference": 0.0}

    by_rank = {}
    for p in points:
        if "fleet" in p:
            by_rank.setdefault(p["fleet"]["rank"], []).append(p)
    for r in ranks:
        if r.get("status") != "ok":
            out.append({**where(r), "why": f"rank {r['rank']} reported an error: {r.get('reason', '')}"})
        # Width only, as src/core/fleet.cpp: an idle GPU lowers its link's generation to save power.
        link = r.get("link") or {}
        cur, top = link.get("link_current", {}).get("width", 0), link.get("link_max", {}).get("width", 0)
        if cur and top and cur < top:
            out.append({**where(r, test="link"),
                        "why": f"PCIe link {link.get('pci_address', '?')} trained to fewer lanes than it has: "
                               f"x{cur} of x{top}"})
        judged = set()
        for p in by_rank.get(r["rank"], []):
            f = where(r, p)
            # Every failed repeat is a finding of its own: a failure is no noise.
            if p.get("status") == "failed":
                out.append({**f, "why": f"health point failed: {p.get('reason', '')}"})
                continue
            if p.get("status") != "ok" or (f["phase"], f["test"]) in judged:
                continue
            # The rest is judged once per (phase, test), on the median of the rank's repeats.
            judged.add((f["phase"], f["test"]))
            repeats = mine[(r["rank"], f["phase"], f["test"])]
            latency = f["test"].startswith("latency")
            v = statistics.median(repeats)
            # The best repeat must be slow too: interference only slows a transfer, so a healthy
            # card that met a busy moment still has a good repeat (docs/fleet.md).
            best = min(repeats) if latency else max(repeats)
            f["value"] = v
            unit = "us" if latency else "GB/s"
            text = f"{f['test']} {v:.3g} {unit}" + (
                f" (median of {len(repeats)}; best {best:.3g})" if len(repeats) > 1 else "")
            allv = fleet_fig.get((f["phase"], f["test"]), [])
            if len(allv) >= 3:
                m = statistics.median(allv)
                sigma = 1.4826 * statistics.median([abs(x - m) for x in allv])
                worse = _worse_than(v, m, latency)
                if worse > mad_k * sigma and worse > tolerance * m and _worse_than(best, m, latency) > tolerance * m:
                    out.append({**f, "reference": m,
                                "why": f"{text} is {100 * worse / m:.0f}% "
                                       f"{'above' if latency else 'below'} the fleet median {m:.3g} "
                                       f"(MAD {sigma / 1.4826:.3g}, {len(allv)} ranks)"})
            ceiling = p.get("link_ceiling_gbps", 0)
            if not latency and p["host_memory"] != "pageable" and ceiling > 0 and best < min_ceiling * ceiling:
                out.append({**f, "reference": ceiling,
                            "why": f"{text} is {100 * v / ceiling:.0f}% of the link's ceiling "
                                   f"{ceiling:.3g} GB/s (below {100 * min_ceiling:.0f}%)"})
            if base_fig is not None and base_fig.get((f["phase"], f["test"])):
                m = statistics.median(base_fig[(f["phase"], f["test"])])
                worse = _worse_than(v, m, latency)
                if worse > tolerance * m and _worse_than(best, m, latency) > tolerance * m:
                    out.append({**f, "reference": m,
                                "why": f"{text} is {100 * worse / m:.0f}% "
                                       f"{'above' if latency else 'below'} the baseline's median {m:.3g}"})
    return out


def merge_dir(directory, mad_k=3.0, tolerance=0.10, min_ceiling=0.5, baseline=None):
    """The merged fleet document, its exit code, and the text to print."""
    paths = sorted(glob.glob(os.path.join(directory, "rank-*.json")))
    if not paths:
        raise BadInput(f"{directory}: no rank-*.json files (written by `xferbench fleet --out-dir {directory}`)")
    docs = [_load_rank_file(p) for p in paths]
    ranks, points, problems = [], [], []
    seen = {}
    for path, d in zip(paths, docs):
        for r in d["fleet"]["ranks"]:
            if r["rank"] in seen:
                problems.append(f"rank {r['rank']} reported twice ({seen[r['rank']]} and {path})")
                continue
            seen[r["rank"]] = path
            ranks.append(r)
        points.extend(d.get("results", []))
    ranks.sort(key=lambda r: r["rank"])
    size = max(r["size"] for r in ranks)
    missing = sorted(set(range(size)) - set(seen))
    first = ranks[0]
    disagree = too_many = False
    for r in ranks:
        if r["version"] != first["version"]:
            disagree = True
            problems.append(f"rank {r['rank']} on {r['node']} runs xferbench {r['version']}, "
                            f"rank {first['rank']} runs {first['version']}")
        elif r["options"] != first["options"]:
            disagree = True
            problems.append(f"rank {r['rank']} on {r['node']} was given other options than rank {first['rank']}: "
                            f"'{r['options']}' against '{first['options']}'")
        if r["status"] == "too many ranks":
            too_many = True
            problems.append(f"rank {r['rank']} on {r['node']}: {r['reason']}")
    if missing:
        s = "" if len(missing) == 1 else "s"
        problems.append(f"{len(missing)} of {size} rank{s} missing ({', '.join(map(str, missing))}): no file in "
                        f"{directory}; the other ranks' results are kept")
    baseline_points = None
    if baseline:
        try:
            with open(baseline) as f:
                baseline_points = json.load(f)["results"]
        except (OSError, ValueError, KeyError) as e:
            raise BadInput(f"--baseline {baseline}: not a fleet result file: {e}")
    findings = find_outliers(ranks, points, mad_k, tolerance, min_ceiling, baseline_points)
    code = (EXIT_DISAGREE if disagree else EXIT_TOO_MANY if too_many else EXIT_MISSING if missing
            else EXIT_UNHEALTHY if findings else 0)
    doc = dict(docs[0])
    doc["config"] = dict(doc.get("config", {}), merged_from=[os.path.basename(p) for p in paths])
    doc["fleet"] = {"findings": findings, "problems": problems, "missing_ranks": missing, "healthy": code == 0,
                    "exit_code": code, "ranks": ranks}
    doc["results"] = points
    return doc, code, fleet_text(doc)


def fleet_text(doc):
    """The verdict, problems and outliers first, then the node x device table."""
    fl = doc["fleet"]
    lines = []
    if fl["exit_code"] == 0:
        lines.append(f"fleet healthy: {len(fl['ranks'])} ranks")
    else:
        first = fl["problems"][0] if fl["problems"] else fl["findings"][0]["why"]
        lines.append(f"fleet unhealthy (exit {fl['exit_code']}): {first}")
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
        f" {('latency-4B us' if t == 'latency-4B' else t):>13}" for t in TESTS)
    rows = [head]
    for key in sorted(cells, key=lambda k: (k[0], k[1], k[3] != "alone")):
        node, rank, dev, phase = key
        rows.append(f"{node:<20} {rank:>4} {dev:>6} {phase:<9}" + "".join(
            f" {cells[key].get(t, '-'):>13}" for t in TESTS))
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
    cols = [(ph, t) for ph in ("alone", "together") for t in TESTS]
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
