"""The studies' figures: alloc's cost against size, cpu's GB/s against size, vadd's
phases per strategy, beside's ways at (the workload's slowdown, the copy's GB/s beside it).
Same rules as the sweep's figures (figure_style.py): at most eight curves a panel, a y axis
per panel, log2 size axis, PNG only."""

import math
import statistics

from .beside import TITLE as BESIDE_TITLE
from .figure_style import MAX_CURVES, PALETTE, _legend, _panels, _safe, _save, _suptitle, log_y, plt, size_axis
from .studies import ALLOC, APP, BESIDE, CPU, PHASES


def _split(names):
    """Names over as few panels as keep each at MAX_CURVES or fewer, evenly."""
    k = max(1, math.ceil(len(names) / MAX_CURVES))
    return [names[i::k] for i in range(k)]


def _row(n, ax_w=4.3):
    fig, grid = _panels(1, ncols=n, ax_w=ax_w, ax_h=2.4, wgap=2.0, top=0.6)
    return fig, grid.rows[0]


def _finish(fig, outdir, study, name, title, caption):
    """Titles a study's figure after its file and saves it as study-NAME-<the file's stem>."""
    title = f"{title} ({study.path.name})"
    _suptitle(fig, title)
    return _save(fig, outdir, f"study-{name}-{_safe(study.path.stem)}", title, caption)


def alloc_figure(study, outdir):
    cost = study.doc["cost"]
    names = list(dict.fromkeys(c["strategy"] for c in cost))
    groups = _split(names)
    fig, axes = _row(len(groups))
    sizes = sorted({c["bytes"] for c in cost})
    for i, (ax, group) in enumerate(zip(axes, groups)):
        for name in group:
            xs, ys = [], []
            for n in sizes:
                v = [(c.get("alloc_free_s") or {}).get("median") for c in cost if c["strategy"] == name
                     and c["bytes"] == n]
                v = [x for x in v if x]
                if v:
                    xs.append(n)
                    ys.append(statistics.median(v) * 1e6)
            ax.plot(xs, ys, marker="o", markersize=3.5, linewidth=1.4,
                    color=PALETTE[names.index(name) % len(PALETTE)], label=name)
        size_axis(ax, sizes)
        ax.set_xlabel("")
        log_y(ax)
        ax.set_ylabel("allocate + free (us)")
        ax.set_title(f"strategies, {i + 1} of {len(groups)}" if len(groups) > 1 else "strategies", loc="left")
        _legend(ax)
    return _finish(fig, outdir, study, "alloc", "Allocation cost against size",
                   "Median time to allocate and free one buffer (log-log), per strategy.")


def cpu_figure(study, outdir):
    rows = [r for r in study.doc["results"] if r.get("status") == "ok" and r.get("method") == "memcpy"]
    if not rows:
        return None
    threads = min(r["threads"] for r in rows)
    rows = [r for r in rows if r["threads"] == threads]
    ops = list(dict.fromkeys(r["op"] for r in rows))
    kinds = list(dict.fromkeys(r["host_memory"] for r in rows))
    fig, axes = _row(len(ops), ax_w=3.6)
    sizes = sorted({r["bytes"] for r in rows})
    for ax, op in zip(axes, ops):
        for kind in kinds[:MAX_CURVES]:
            at = sorted((r["bytes"], r["gbps"]) for r in rows if r["op"] == op and r["host_memory"] == kind)
            if at:
                ax.plot([a for a, _ in at], [b for _, b in at], marker="o", markersize=3.5, linewidth=1.4,
                        color=PALETTE[kinds.index(kind) % len(PALETTE)], label=kind)
        size_axis(ax, sizes)
        ax.set_xlabel("")
        ax.set_ylim(bottom=0)
        ax.set_ylabel("GB/s")
        ax.set_title(f"{op} (memcpy, {threads} thread{'s' if threads > 1 else ''})", loc="left")
    _legend(axes[-1])
    return _finish(fig, outdir, study, "cpu", "The CPU writing and reading each kind",
                   "Steady-state GB/s against size per host memory kind: write-combined memory that reads as fast "
                   "as regular memory is not write-combined.")


def app_figure(study, outdir):
    rows = [r for r in study.doc["results"] if r.get("status") == "ok"]
    backends = [b for b in dict.fromkeys(r["backend"] for r in rows)
                if any(r.get("accelerator_saves_s") is not None for r in rows if r["backend"] == b)]
    if not backends:
        return None
    fig, axes = _row(len(backends), ax_w=4.6)
    for ax, b in zip(axes, backends):
        rs = [r for r in rows if r["backend"] == b]
        n = max(r["bytes_per_vector"] for r in rs)
        at = [r for r in rs if r["bytes_per_vector"] == n]
        strategies = [r["strategy"] for r in at]
        left = [0.0] * len(at)
        for i, (key, title) in enumerate(p for p in PHASES if p[0] != "cpu_vadd"):
            widths = [((r.get("phases") or {}).get(key) or {}).get("median_s", 0.0) * 1e3 for r in at]
            if any(widths):
                ax.barh(strategies, widths, left=left, color=PALETTE[i % len(PALETTE)], label=title, height=0.7)
                left = [a + w for a, w in zip(left, widths)]
        cpu = [((r.get("phases") or {}).get("cpu_vadd") or {}).get("median_s") for r in at]
        cpu = [c for c in cpu if c]
        if cpu:
            ax.axvline(statistics.median(cpu) * 1e3, color="0.2", linestyle=(0, (4, 2)), label="CPU vadd")
        ax.invert_yaxis()
        ax.grid(axis="y", visible=False)
        ax.set_xlabel("ms")
        ax.set_title(f"{b}, {n / 2 ** 20:g} MiB per vector", loc="left")
    _legend(axes[-1])
    return _finish(fig, outdir, study, "app", "vadd phase by phase",
                   "Each strategy's phases stacked (median over repeats) at the largest size; dashed: the CPU's "
                   "own vadd of the same data.")


def beside_figure(study, outdir):
    """A panel per workload; each ok record (way) a point at (the workload's slowdown %, the copy's GB/s beside
    it), the bars the ranges over the rounds, as the file has them."""
    ok = [r for r in study.records if r.ok]
    workloads = [w for w in study.workloads if any(r.workload == w for r in ok)]
    if not workloads:
        return None
    ways = list(dict.fromkeys(r.way for r in ok))
    fig, axes = _row(len(workloads), ax_w=3.8)
    handles = {}  # way -> its first point: one legend for every panel
    for ax, w in zip(axes, workloads):
        for r in (r for r in ok if r.workload == w):
            x, y = r.spreads["slowdown"], r.spreads["copy_beside"]
            xs = [100 * v for v in (x.median, x.low, x.high)]
            ys = [v / 1e9 for v in (y.median, y.low, y.high)]
            point = ax.errorbar([xs[0]], [ys[0]], xerr=[[xs[0] - xs[1]], [xs[2] - xs[0]]],
                                yerr=[[ys[0] - ys[1]], [ys[2] - ys[0]]], fmt="o", markersize=5, capsize=3,
                                linewidth=1.2, color=PALETTE[ways.index(r.way) % len(PALETTE)], label=r.way)
            handles.setdefault(r.way, point)
            ax.annotate(r.way, (xs[0], ys[0]), textcoords="offset points", xytext=(6, 4), fontsize=8)
        ax.axvline(0, color="0.3", linewidth=1)
        top = max(r.spreads["copy_beside"].high for r in ok if r.workload == w) / 1e9
        ax.set_ylim(0, (top if top > 0 else 1.0) * 1.15)  # from 0, room above for the labels
        ax.set_xlabel(f"{w}'s slowdown beside the copy (%; < 0: faster)")
        ax.set_ylabel("copy GB/s beside it")
        ax.set_title(f"beside {w}", loc="left")
    _legend(axes[-1], handles=[handles[w] for w in ways])
    left = len(study.records) - len(ok)
    return _finish(fig, outdir, study, "beside", BESIDE_TITLE,
                   "Each way of copying beside each workload: across, how much longer the workload took beside the "
                   "copy than alone (%, negative: faster); up, the copy's GB/s beside the workload; medians over the "
                   "rounds, the bars their range."
                   + (f" Not drawn: {left} records not ok (the tables give why)." if left else ""))


def study_figures(studies, outdir):
    """{study path: FigureFile or None}, drawn in this process (a few small figures)."""
    draw = {ALLOC: alloc_figure, CPU: cpu_figure, APP: app_figure, BESIDE: beside_figure}
    out = {}
    for s in studies:
        try:
            out[s.path] = draw[s.schema](s, outdir)
        finally:
            plt.close("all")
    return out
