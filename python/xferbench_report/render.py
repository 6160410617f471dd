"""`render`: result files -> DIR/index.html, DIR/summary.md, DIR/plots/*.png|svg; a trace file -> a page of its
own (trace.py), DIR/trace-NAME.html and .md, or index.html and summary.md where it is the only file.

Everything is written into a fresh temporary directory beside DIR and moved
into place only when complete, so an error never leaves half a report (and a
previous report at DIR stays as it was).
"""

import math
from pathlib import Path

from . import __version__
from .analysis import analyze, direction_sort_key, direction_title, is_transfer_part
from .blocks import block_sets, blocks_section
from .document import Document, to_html, to_markdown
from .errors import BadInput, MissingDependency
from .output import write_dir
from .findings import order, peer_matrix, render_findings, sweep_findings
from .inputs import sort_inputs
from .settings import settings_section
from .studies import render_studies, study_findings
from .trace import index_section, page_document, trace_figure
from .units import format_gbps, format_size, format_time, format_us

REPORT_FILES = ("index.html", "summary.md")
# A cost model that misses the measurements by more than this (RMS, relative) describes nothing: the table
# says so instead of printing its L and B.
MAX_FIT_ERROR = 0.25


def pick_sizes(sizes, k=6):
    """Up to k sizes spread evenly (in log scale) over a sorted list, ends included."""
    sizes = sorted(set(sizes))
    if len(sizes) <= k:
        return sizes
    lo, hi = math.log2(sizes[0]), math.log2(sizes[-1])
    picked = []
    for i in range(k):
        target = lo + (hi - lo) * i / (k - 1)
        best = min(sizes, key=lambda s: abs(math.log2(s) - target))
        if best not in picked:
            picked.append(best)
    return sorted(picked)


def _runs_section(doc, report):
    doc.heading(1, "Runs and system", "runs")
    rows = []
    for run in report.runs:
        s = run.system
        accs = []
        for a in s.get("accelerators") or []:
            if not isinstance(a, dict):
                continue
            cur, mx = a.get("link_current") or {}, a.get("link_max") or {}
            text = f"{a.get('vendor_name') or a.get('vendor', '?')} {a.get('pci_address', '')}"
            if mx.get("gen"):
                text += f": PCIe Gen{mx.get('gen')} x{mx.get('width')} (now Gen{cur.get('gen')} x{cur.get('width')})"
            if a.get("link_gbps_per_direction"):
                text += f", {a['link_gbps_per_direction']:.1f} GB/s per direction raw"
            ceil = a.get("ceiling_gbps") or {}
            if ceil.get("h2d") and ceil.get("d2h"):
                text += (f"; ceilings after TLP overhead h2d {ceil['h2d']:.1f}, d2h {ceil['d2h']:.1f} GB/s "
                         f"(max payload {a.get('max_payload_bytes')} B)")
            elif a.get("config_space") and a.get("config_space") != "ok":
                text += f"; {a['config_space']}"
            if a.get("degraded"):
                text += f"; BELOW ITS BEST: {a['degraded']}"
            accs.append(text)
        pts = run.points + run.block_points  # a `sweep --blocks` run holds only block points
        mem = s.get("memory_bytes")
        rows.append([
            run.path.name,
            f"{run.tool.get('name', '?')} {run.tool.get('version', '')}".strip(),
            run.started_at or "-",
            f"{s.get('hostname', '?')}: {s.get('cpu_model', '?')} ({s.get('logical_cpus', '?')} CPUs"
            + (f", {format_size(mem)}" if isinstance(mem, int) and mem > 0 else "") + ")",
            f"{s.get('os', '?')}, {s.get('kernel', '?')}",
            "; ".join(accs) or "none found",
            ", ".join(sorted({p.backend for p in pts})),
            f"{sum(p.ok for p in pts)} / {sum(p.status == 'skipped' for p in pts)} / "
            f"{sum(p.status == 'failed' for p in pts)}",
        ])
    doc.table(["file", "tool", "started (UTC)", "host", "OS", "accelerators", "backends", "ok / skipped / failed"],
              rows)
    for run in report.runs:
        argv = run.config.get("argv")
        if isinstance(argv, list) and argv:
            doc.para(f"{run.path.name} was measured with:", "small")
            doc.code(" ".join(str(a) for a in argv))
        if run.interrupted:
            doc.para(f"{run.path.name}: the run was interrupted; it holds only the points completed before.", "note")
    c = report.counts
    if c.get("not_converged"):
        doc.para(f"{c['not_converged']} ok points did not reach their confidence target (their time budget ran out "
                 "first): hollow markers in the figures, listed under 'Points that did not converge'.", "note")
    if c.get("unverified"):
        doc.para(f"{c['unverified']} ok points were not verified (data not checked).", "note")
    above = [(cv, p) for cv in report.curves + report.part_curves for p in cv.above_limit]
    if above:
        doc.para(f"{len(above)} points exceed the link's theoretical limit; check them (a timer or accounting "
                 "problem, or a route that does not cross the link): "
                 + "; ".join(f"{cv.name} {cv.direction} {format_size(p.bytes)} {cv.gbps(p):.1f} GB/s"
                             for cv, p in above[:8]) + (" ..." if len(above) > 8 else ""), "note")
    settings_section(doc, report.runs)


def _notes(curve):
    notes = []
    if curve.not_converged:
        notes.append(f"{len(curve.not_converged)} not converged")
    if curve.unverified:
        notes.append(f"{len(curve.unverified)} unverified")
    if curve.above_limit:
        notes.append(f"ABOVE LINK LIMIT at {len(curve.above_limit)} sizes (left out of the peak and the fit)")
    if curve.clock_misses_work:
        notes.append(f"DEVICE CLOCK MISSES HOST WORK at {len(curve.clock_misses_work)} sizes (left out of the peak "
                     "and the fit; see the clocks section)")
    if curve.fit and curve.fit.constrained and not curve.is_latency:
        notes.append(f"fit with {curve.fit.constrained}")
    if len(curve.points) == 1:
        notes.append("one size only")
    return ", ".join(notes)


def _peer_section(doc, report):
    """`xferbench peer`: the matrix, a row per source device and a column per destination."""
    matrices = peer_matrix(report)
    if not matrices:
        return
    doc.heading(1, "Peer matrix", "peer")
    doc.para("GB/s of one copy from the row's device memory to the column's (the diagonal: within one device), "
             "at the largest size every pair measured; how each copy travelled is its point's peer_path.")
    for (run, backend), m in matrices.items():
        devices = sorted({d for pair in m for d in pair})
        rows = [[f"dev{a}"] + [format_gbps(m[(a, b)][0].gbps(m[(a, b)][1])) if (a, b) in m else "-" for b in devices]
                for a in devices]
        size = format_size(next(iter(m.values()))[1].bytes)
        label = backend if len(report.runs) == 1 else f"{backend} [{run}]"
        doc.table([f"{label}, {size}: from (row) to (column)"] + [f"dev{b}" for b in devices], rows,
                  align="l" + "r" * len(devices))


def _peaks_section(doc, report):
    doc.heading(1, "Peaks and cost model", "peaks")
    doc.para("Per curve (backend, route, host memory kind, direction): the peak bandwidth and the size where it is "
             "reached, the smallest size that reaches half of that peak, the time of the smallest transfer, and the "
             "cost model t(n) = L + n / B fitted to all sizes (least squares on relative error, n = bytes moved per "
             "transfer), with the RMS and worst relative deviation of the measurements from it. A large fit error "
             "means one line does not describe the curve (caches, a protocol change at some size).")
    for d in report.directions:
        # Latency routes have no peak bandwidth or cost model: their own table below gives their times.
        curves = [c for c in report.curves + report.part_curves if c.direction == d and not c.is_latency]
        if not curves:
            continue
        doc.heading(2, f"{direction_title(d)}")
        rows, marks = [], []
        curves.sort(key=lambda c: (report.groups.index(c.group), report.routes.index(c.route),
                                   report.kinds.index(c.host_memory), c.part))
        for c in curves:
            peak, half, first = c.peak, c.half_peak, c.points[0]
            step = c.part and not is_transfer_part(c.part)  # a step of a transfer: its time, not a bandwidth
            f = c.fit if c.fit and not step and c.fit.rms_rel_err <= MAX_FIT_ERROR else None
            notes = _notes(c)
            if step:
                notes = "a step of the transfer, not a transfer: times only" + (f", {notes}" if notes else "")
            elif c.fit and f is None:
                notes = (f"no model: one line misses the points by {100 * c.fit.rms_rel_err:.0f}% rms"
                         + (f", {notes}" if notes else ""))
            rows.append([
                c.group.name, c.route, c.host_memory + (f" ({c.part} part)" if c.part else ""),
                format_gbps(c.gbps(peak)) if peak and not step else "-",
                f"{100 * c.gbps(peak) / peak.link_ceiling_gbps:.0f}%" if peak and peak.link_ceiling_gbps
                and not c.part else "-",
                format_size(peak.bytes) if peak and not step else "-",
                format_size(half.bytes) if half and not step else "-",
                f"{format_time(c.time(first))} @ {format_size(first.bytes)}",
                format_us(f.latency_s) if f else "-",
                (format_gbps(f.bandwidth_gbps) if math.isfinite(f.bandwidth_bps) else "unresolved") if f else "-",
                f"{100 * f.rms_rel_err:.1f}% / {100 * f.max_rel_err:.0f}%" if f else "-",
                notes,
            ])
            marks.append("warn" if c.above_limit or c.clock_misses_work else "")
        doc.table(["backend", "route", "host memory", "peak GB/s", "of link ceiling", "at size", "half peak from",
                   "smallest transfer", "L (us)", "B (GB/s)", "fit error rms / max", "notes"], rows,
                  align="lllrrrrrrrrl", row_marks=marks)
    _latency_table(doc, report)


def _latency_table(doc, report):
    """Latency routes (the file's catalogue, family latency): the median time of one repetition at each size."""
    curves = [c for c in report.curves if c.is_latency]
    if not curves:
        return
    doc.heading(2, "Latency routes")
    doc.para("Routes whose points are latencies, not transfers (the result file's catalogue says so): each cell is "
             "the median time of one repetition (a dependent load through the route, or a store's round trip; the "
             "route's description in the file says which) at that size. No bandwidth is shown for them.")
    sizes = pick_sizes([p.bytes for c in curves for p in c.trusted], 6)
    rows, marks = [], []
    for c in curves:
        at = {p.bytes: p for p in c.trusted}
        rows.append([c.group.name, c.route, c.direction, c.host_memory]
                    + [format_time(c.time(at[n])) if n in at else "-" for n in sizes] + [_notes(c)])
        marks.append("warn" if c.above_limit or c.clock_misses_work else "")
    doc.table(["backend", "route", "direction", "host memory"] + [format_size(n) for n in sizes] + ["notes"], rows,
              align="llll" + "r" * len(sizes) + "l", row_marks=marks)


def _figures_section(doc, title, anchor, figures, intro):
    doc.heading(1, title, anchor)
    doc.para(intro)
    for f in figures:
        doc.figure(f)


def _first_use_section(doc, report, figures):
    doc.heading(1, "First use and break-even", "first-use")
    doc.para("First use is not steady state: allocating a buffer (and pinning or registering it), writing it the "
             "first time and its first transfer are measured once per point and never mixed into the samples. "
             "Break-even: cost of N transfers from a fresh buffer = allocate + touch + first transfer + (N - 1) x "
             "median; the number is the smallest N from which a kind with a costlier setup is cheaper overall than "
             "the baseline kind (pageable where measured). 'from the 1st': never costlier; 'never': its transfers "
             "are not faster beyond both points' measured spread (p5..p95 of the samples), so the setup never pays.")
    for f in figures:
        doc.figure(f)
    # Setup costs per backend, route and kind, from one direction (they do not depend on it).
    picked, seen = [], set()
    for c in sorted(report.curves, key=lambda c: (report.groups.index(c.group), direction_sort_key(c.direction))):
        key = (c.group, c.route, c.host_memory)
        if key not in seen and any(p.first_use for p in c.points):
            seen.add(key)
            picked.append(c)
    sizes = pick_sizes([p.bytes for c in picked for p in c.points if p.first_use], 4)
    rows = []
    for c in picked:
        at = {p.bytes: p for p in c.points if p.first_use}
        cells = []
        for n in sizes:
            p = at.get(n)
            fu = p.first_use if p else None
            cells.append("-" if not p else f"{format_time(fu.alloc_s + fu.touch_s)} + {format_time(fu.first_transfer_s)}"
                         f" ({format_time(p.median_s)})")
        rows.append([c.group.name, c.route, c.host_memory, c.direction] + cells)
    doc.heading(2, "Setup and first transfer against steady state")
    doc.table(["backend", "route", "host memory", "direction"] + [format_size(n) for n in sizes], rows,
              align="llll" + "r" * len(sizes),
              caption="Each cell: allocate + touch, + the first transfer, (the steady-state median) at that size.")
    if report.break_even:
        sizes = pick_sizes([n for b in report.break_even for n in b.by_size], 6)
        rows = []
        for b in report.break_even:
            cells = []
            for n in sizes:
                v = b.by_size.get(n)
                cells.append("-" if v is None else "never" if math.isinf(v) else "from the 1st" if v == 1 else
                             f"{v:,}")
            rows.append([b.group.name, b.route, b.direction, f"{b.host_memory} vs {b.baseline}"] + cells)
        doc.heading(2, "Break-even: transfers until a costlier kind pays for itself")
        doc.table(["backend", "route", "direction", "kind"] + [format_size(n) for n in sizes], rows,
                  align="llll" + "r" * len(sizes))


def _api_section(doc, report, figures):
    doc.heading(1, "API comparison", "api")
    if not report.api:
        doc.para("Only one backend ran each direction here: nothing to compare.")
        return
    doc.para("Where several backends (or runs) measured the same sizes: the fastest each has at each size (any "
             "route and host memory kind) and the ratio of its median time to the reference's. Above 1x: slower "
             "than the reference.")
    by_dir = {f.name: f for f in figures}
    for cmp in report.api:
        doc.heading(2, direction_title(cmp.direction))
        fig = by_dir.get(f"api-{cmp.direction}")
        if fig:
            doc.figure(fig)
        sizes = sorted({n for pc in cmp.pairs for n in pc.sizes})
        headers = ["size", f"{cmp.reference.name} (reference)"]
        for pc in cmp.pairs:
            headers += [pc.other.name, "ratio"]
        rows = []
        for n in sizes:
            ref = cmp.best[cmp.reference].get(n)
            row = [format_size(n), _best_cell(ref)]
            for pc in cmp.pairs:
                other = cmp.best[pc.other].get(n)
                row += [_best_cell(other), f"{pc.ratio[n]:.3g}x" if n in pc.ratio else "-"]
            rows.append(row)
        doc.table(headers, rows, align="lr" + "rr" * len(cmp.pairs))


def _best_cell(p):
    return "-" if p is None else f"{format_time(p.median_s)} ({p.route} · {p.host_memory})"


def _clock_section(doc, report):
    curves = [c for c in report.curves if c.points and c.points[0].timer == "event"]
    rows = []
    for c in curves:
        p = c.points[0]
        if p.wall_median_s is None:
            continue
        rows.append([c.group.name, c.route, c.direction, c.host_memory, format_size(p.bytes),
                     format_time(p.median_s), format_time(p.wall_median_s),
                     format_time(p.wall_median_s - p.median_s)])
    missed = [(c, p) for c in curves for p in c.clock_misses_work]
    if not rows and not missed:
        return
    doc.heading(1, "Device clock against wall clock", "clocks")
    if rows:
        doc.para("For curves timed by device events: at the smallest size, the device's view and the host wall "
                 "clock's view of one transfer. The difference is the API's own overhead per transfer.")
        doc.table(["backend", "route", "direction", "host memory", "size", "device events", "wall clock",
                   "difference"], rows, align="lllllrrr")
    if missed:
        doc.para(f"Where the device's clock leaves work out: {len(missed)} points the run found its wall clock "
                 "took far longer than the device events (over twice, from 1 MiB: src/core/result.cpp), left out of "
                 "peaks and fits. The driver did part of the "
                 "transfer outside the profiled command (staging pageable memory through its own pinned buffer is "
                 "the usual cause), so the GB/s on the device clock overstates what a program sees; the wall "
                 "clock's figure is beside it.", "note")
        doc.table(["backend", "route", "direction", "host memory", "size", "GB/s, device events", "GB/s, wall clock"],
                  [[c.group.name, c.route, c.direction, c.host_memory, format_size(p.bytes), format_gbps(c.gbps(p)),
                    format_gbps(p.bytes_per_rep / p.wall_median_s / 1e9)] for c, p in missed],
                  align="lllllrr", row_marks=["warn"] * len(missed))



def _emulated_section(doc, report):
    """Points measured under emulation (XRT's no-op shim): the API's own cost per call, apart from every curve."""
    if not report.emulated:
        return
    doc.heading(1, "Emulated points (no data crossed a link)", "emulated")
    doc.para("These ran under an emulation mode: the device's DMA moved nothing, so their times are what the API "
             "costs per call, not bandwidth. They are in no curve, peak, plot or model.", "note")
    groups = {}
    for p in report.emulated:
        groups.setdefault((p.backend, p.emulation, p.route, p.direction, p.host_memory), []).append(p)
    rows = []
    for (backend, mode, route, d, kind), pts in groups.items():
        pts = sorted(pts, key=lambda p: p.bytes)
        lo, hi = pts[0], pts[-1]
        rows.append([backend, mode, route, d, kind, f"{format_size(lo.bytes)}: {format_time(lo.median_s)}",
                     f"{format_size(hi.bytes)}: {format_time(hi.median_s)}", str(len(pts))])
    doc.table(["backend", "emulation", "route", "direction", "host memory", "smallest: time per call",
               "largest: time per call", "sizes"], rows, align="lllllrrr")


def _problems_section(doc, report):
    doc.heading(1, "Skipped and failed points", "problems")
    if not report.problems:
        doc.para("None: every point ran.")
    else:
        rows, marks = [], []
        for pr in report.problems:
            sizes = pr.sizes
            where = (format_size(sizes[0]) if len(sizes) == 1 else
                     f"{format_size(min(sizes))} to {format_size(max(sizes))} ({len(sizes)} sizes)")
            rows.append([pr.group_name, pr.route, pr.direction, pr.host_memory, pr.status, where, pr.reason or "-"])
            marks.append("warn" if pr.status == "failed" else "")
        doc.table(["backend", "route", "direction", "host memory", "status", "sizes", "reason"], rows,
                  row_marks=marks)
    doc.heading(1, "Points that did not converge", "not-converged")
    rows = []
    for c in report.curves:
        cells = []
        for p in c.not_converged:
            n = p.stats.get("count") if p.stats else len(p.samples_s)
            ci = f"unbounded, {n} samples" if p.ci_rel is None else f"+/-{100 * p.ci_rel:.1f}%, {n} samples"
            cells.append(f"{format_size(p.bytes)} ({ci})")
        if cells:
            rows.append([c.group.name, c.route, c.direction, c.host_memory, "; ".join(cells)])
    if rows:
        doc.para("Their time budget ran out before the 95% confidence interval of the median was within the target "
                 "(unbounded: too few samples to bound it). Their medians are reported, but are less certain than "
                 "the rest.")
        doc.table(["backend", "route", "direction", "host memory", "sizes (CI of the median, samples)"], rows)
    else:
        doc.para("None: every ok point reached its confidence target.")


def _has_sweep(report):
    """Whether the files hold plain sweep points (a `sweep --blocks` run holds only block points)."""
    return any(r.points for r in report.runs)


def _summary(report, studies):
    """One line: which machine, what was measured, how much of it ran."""
    systems = [r.system for r in (report.runs if report else [])] + [s.system for s in studies]
    s = next((x for x in systems if x), {})
    accs = [a for a in s.get("accelerators") or [] if isinstance(a, dict)]
    what = f"{s.get('hostname', '?')}: {s.get('cpu_model', '?')}"
    if accs:
        a = accs[0]
        mx = a.get("link_max") or {}
        what += f"; {a.get('vendor_name') or a.get('vendor', '?')} {a.get('pci_address', '')}"
        if mx.get("gen"):
            what += f" on PCIe Gen{mx['gen']} x{mx.get('width')}"
    parts = [what]
    if report:
        c = report.counts
        if _has_sweep(report):
            names = [g.name for g in report.groups] or sorted({p.backend for r in report.runs for p in r.points})
            parts.append(f"{len(names)} backend{'' if len(names) == 1 else 's'} ({', '.join(names)}), "
                         f"{c['ok']} ok / {c['skipped']} skipped / {c['failed']} failed points"
                         + (f" ({c['emulated']} ok under emulation, listed apart)" if c.get("emulated") else ""))
        blocks = [p for r in report.runs for p in r.block_points]
        if blocks:
            counts = ", ".join(f"{n} {status}" for status in ("ok", "skipped", "failed")
                               if (n := sum(p.status == status for p in blocks)))
            parts.append(("" if _has_sweep(report) else "A many-blocks run (xferbench sweep --blocks): ")
                         + f"{len(blocks)} block points of {', '.join(sorted({p.backend for p in blocks}))} "
                         f"({counts}), under 'Many small blocks'")
    if studies:
        parts.append("studies: " + ", ".join(st.path.name for st in studies))
    return ". ".join(parts) + "."


def build_document(report, figures, title=None, studies=(), findings=None):
    doc = Document(title or "xferbench report")
    names = [r.path.name for r in (report.runs if report else [])] + [s.path.name for s in studies]
    if findings is None:
        findings = order((sweep_findings(report) if report else []) + study_findings(studies))
    overview = (figures.get("overview") or [None])[0]
    study_figs = dict(figures.get("studies") or {})
    if overview is None:  # studies alone: the first study's figure goes on the first screen, and only there
        first = next((k for k, f in study_figs.items() if f), None)
        if first is not None:
            overview = study_figs.pop(first)
    render_findings(doc, findings, overview, _summary(report, studies))
    doc.para(f"Made by xferbench-report {__version__} from {', '.join(names)}. "
             "GB/s are 1e9 bytes per second; sizes are binary (1 KiB = 1024 B). Every figure uses the median of "
             "each point's samples.", "small")
    if report is None:
        render_studies(doc, studies, study_figs)
        return doc
    for run in report.runs:
        for a in run.system.get("accelerators") or []:
            if isinstance(a, dict) and a.get("degraded"):
                doc.para(f"Link {a.get('pci_address', '?')} ran below its best ({a['degraded']}) in {run.path.name}: "
                         "every transfer to that device is capped. A width below the maximum is a slot, riser or "
                         "seating problem; a GPU may also lower its link speed while idle.", "note")
    # A section with nothing of these files in it is left out (a `sweep --blocks` run has no curves).
    if figures["bandwidth"]:
        _figures_section(doc, "Bandwidth against size", "bandwidth", figures["bandwidth"],
                         "One figure per direction; one panel per backend and route, colour = host memory kind (the "
                         "same in every figure).")
    if figures["latency"]:
        _figures_section(doc, "Time per transfer", "latency", figures["latency"],
                         "The same points as time per transfer, log-log: small transfers show the fixed cost, "
                         "large ones the bandwidth.")
    blocks_section(doc, block_sets(report.runs), figures.get("blocks") or [])
    render_studies(doc, studies, study_figs)
    if figures["first_use"]:
        _first_use_section(doc, report, figures["first_use"])
    if report.curves:
        _api_section(doc, report, figures["api"])
        _peaks_section(doc, report)
    _peer_section(doc, report)
    _runs_section(doc, report)
    _clock_section(doc, report)
    _emulated_section(doc, report)
    if _has_sweep(report):
        _problems_section(doc, report)
    return doc


def check_output_dir(out):
    """Refuses to replace anything that is not an earlier report (exit 2, before any work)."""
    out = Path(out)
    if out.exists() and not out.is_dir():
        raise BadInput(f"{out}: exists and is not a directory")
    if out.is_dir():
        entries = list(out.iterdir())
        if entries and not all((out / f).exists() for f in REPORT_FILES):
            raise BadInput(f"{out}: exists and is not an xferbench report (no index.html and summary.md); "
                           "give a new or empty directory")


def judge(paths, reference=None, mixed_machines=False, traces=False):
    """The files read, analysed and judged: (inputs, report or None, ordered findings). BadInput when no file is
    usable (one line per file). Trace files are read where `traces` (render), else refused."""
    got = sort_inputs(paths, mixed_machines=mixed_machines, traces=traces)
    if not got.runs and not got.studies and not got.traces:
        raise BadInput("\n".join(got.refused))  # one line per file
    backends = sorted({p.backend for r in got.runs for p in r.points})
    if reference is not None and reference not in backends:
        raise BadInput(f"--reference {reference}: no such backend in the files (they have "
                       f"{', '.join(backends) if backends else 'no sweep'})")
    report = analyze(got.runs, reference_backend=reference) if got.runs else None
    return got, report, order((sweep_findings(report) if report else []) + study_findings(got.studies))


def render(paths, out, title=None, reference=None, jobs=None, mixed_machines=False, refused=None, traces=None):
    """Writes the report; returns (output path, number of figures, findings).

    Files that cannot be used are left out with one line each appended to
    `refused` (a list the caller passes); when none is usable, BadInput.
    Each trace file is a page of its own (trace.py): index.html and summary.md
    where it is the only file, else trace-NAME.html and .md, which the index
    links to; the traces read are appended to `traces` where the caller passes a list."""
    out = Path(out)
    check_output_dir(out)
    got, report, findings = judge(paths, reference=reference, mixed_machines=mixed_machines, traces=True)
    if refused is not None:
        refused.extend(got.refused)
    if traces is not None:
        traces.extend(got.traces)
    try:
        from . import plots  # matplotlib only when rendering, and asked for before any work is written
    except ImportError as e:  # matplotlib absent, or installed without what it imports (pillow, numpy)
        if (e.name or "").startswith(__package__):
            raise
        raise MissingDependency("render", "matplotlib", e) from None

    def fill(tmp):
        figures = plots.make_figures(report, tmp / "plots", jobs=jobs) if report else {}
        if got.studies:
            from .study_plots import study_figures

            figures["studies"] = study_figures(got.studies, tmp / "plots")
        pages = []
        for t in got.traces:
            fig = trace_figure(t, tmp / "plots")
            figures.setdefault("traces", []).extend([fig] if fig else [])
            pages.append((t, page_document(t, fig)))
        if report or got.studies:
            doc = build_document(report, figures, title, got.studies, findings)
        elif len(pages) == 1:  # a trace alone: its page is the report
            doc = pages.pop()[1]
        else:
            doc = Document(title or "xferbench report")
        if pages:
            index_section(doc, [t for t, _ in pages])
        for t, page in pages:
            (tmp / f"{t.page}.html").write_text(to_html(page), encoding="utf-8")
            (tmp / f"{t.page}.md").write_text(to_markdown(page), encoding="utf-8")
        (tmp / "index.html").write_text(to_html(doc), encoding="utf-8")
        (tmp / "summary.md").write_text(to_markdown(doc), encoding="utf-8")
        made.update(figures)

    # Built beside the target and swapped in whole; a link given as DIR stays a link (output.py).
    made = {}
    write_dir(out, fill)
    figures = made
    nfig = sum(len(v) for k, v in figures.items() if k != "studies")
    nfig += sum(1 for f in figures.get("studies", {}).values() if f)
    return out, nfig, findings
