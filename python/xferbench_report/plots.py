"""The report's figures, drawn with matplotlib's Agg backend and saved as PNG and SVG.

Over 400 lines on purpose: the figures share one style table (colour per
kind, marker per route) and one panel layout, which a split would duplicate.

Reading the figures: one figure per direction; one panel per backend (per
device, per run where several are shown); colour = host memory kind, line
style and marker = route, the same in every figure. Hollow markers are points
that did not reach their confidence target.
"""

import math
import multiprocessing
import os
import re
from dataclasses import dataclass
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
from matplotlib.lines import Line2D  # noqa: E402
from matplotlib.ticker import FixedLocator, FuncFormatter, MaxNLocator, NullLocator  # noqa: E402

from . import signals  # noqa: E402
from .analysis import direction_title  # noqa: E402
from .units import short_size  # noqa: E402

PALETTE = [
    "#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b", "#e377c2", "#17becf",
    "#bcbd22", "#7f7f7f", "#393b79", "#ad494a", "#637939", "#8c6d31", "#843c39", "#7b4173",
]
# Markers are all closed shapes, so that hollow (not converged) reads as hollow.
STYLES = [
    ("-", "o"), ((0, (5, 2)), "s"), ((0, (1, 1.5)), "^"), ((0, (6, 2, 1, 2)), "D"),
    ((0, (3, 1, 1, 1, 1, 1)), "v"), ((0, (8, 3)), "p"), ((0, (2, 2)), "h"), ((0, (4, 1, 4, 4)), "<"),
]
LIMIT_STYLE = dict(color="0.25", linestyle=(0, (7, 3)), linewidth=1.3)

plt.rcParams.update({
    "font.size": 9,
    "axes.titlesize": 10,
    "axes.grid": True,
    "grid.color": "0.88",
    "grid.linewidth": 0.6,
    "axes.spines.top": False,
    "axes.spines.right": False,
    "legend.fontsize": 8,
})
if "text.parse_math" in plt.rcParams:
    # Labels are data (backend, route, device and file names): a "$" in one is a dollar sign, not the
    # start of mathtext, whose parser raises on anything that is not TeX. No figure here uses mathtext.
    plt.rcParams["text.parse_math"] = False


@dataclass
class FigureFile:
    name: str
    title: str
    caption: str
    png: str  # path relative to the report directory
    width: int  # pixels, so the page lays out before the image arrives
    height: int
    alt: str = ""  # the title and every legend entry: what the picture shows, in words


class Styler:
    """Colour per host memory kind and style per route, fixed across all figures."""

    def __init__(self, kinds, routes):
        self.kinds = list(kinds)
        self.routes = list(routes)

    def color(self, kind):
        i = self.kinds.index(kind) if kind in self.kinds else len(self.kinds)
        return PALETTE[i % len(PALETTE)]

    def style(self, route):
        i = self.routes.index(route) if route in self.routes else len(self.routes)
        return STYLES[i % len(STYLES)]

    def plot(self, ax, curve, xs, ys, hollow=(), label=None, **kw):
        """One curve: anything with route, host_memory and label."""
        ls, marker = self.style(curve.route)
        color = self.color(curve.host_memory)
        (line,) = ax.plot(xs, ys, linestyle=ls, marker=marker, color=color, markersize=4, linewidth=1.4,
                          label=label or curve.label, **kw)
        hx = [x for x, y, h in zip(xs, ys, hollow) if h]
        hy = [y for x, y, h in zip(xs, ys, hollow) if h]
        if hx:
            ax.plot(hx, hy, linestyle="none", marker=marker, markersize=5, markerfacecolor="white",
                    markeredgecolor=color, markeredgewidth=1.2, zorder=line.get_zorder() + 0.1)
        return line


def size_axis(ax, sizes):
    """log2 x axis labelled in binary sizes, at most ~12 labels."""
    lo = math.floor(math.log2(min(sizes)))
    hi = math.ceil(math.log2(max(sizes)))
    if hi == lo:
        lo, hi = lo - 1, hi + 1
    step = max(1, math.ceil((hi - lo) / 12))
    if step > 2 and step % 2:
        step += 1
    start = lo - lo % step
    ticks = [2.0 ** e for e in range(start, hi + 1, step)]
    ax.set_xscale("log", base=2)
    ax.xaxis.set_major_locator(FixedLocator(ticks))
    ax.xaxis.set_major_formatter(FuncFormatter(lambda x, _: short_size(x) if x >= 1 else ""))
    # No minor ticks: every tick is an artist, and they dominated the drawing time.
    ax.xaxis.set_minor_locator(NullLocator())
    pad = 2 ** 0.3
    ax.set_xlim(2.0 ** lo / pad, 2.0 ** hi * pad)
    ax.set_xlabel("transfer size (bytes)")


def _plain_number(y, _=None):
    """0.01, 1, 1000, 1e4, 3e5: short labels without mathtext."""
    if y <= 0:
        return ""
    if 1e-3 <= y < 1e4:
        return f"{y:g}"
    mantissa, exponent = f"{y:.0e}".split("e")  # not .1g: that writes 1e-4 <= y < 1e-3 without an exponent
    return f"{mantissa}e{int(exponent)}"


def log_y(ax, base=10):
    """Log y axis with plain-text labels (the default mathtext labels are slow to
    lay out) and no minor ticks."""
    ax.set_yscale("log", base=base)
    ax.yaxis.set_major_formatter(FuncFormatter(_plain_number))
    ax.yaxis.set_minor_locator(NullLocator())


RATIO_STEPS = [(1,), (1, 3), (1, 2, 5), (1, 1.5, 2, 3, 5, 7), (1, 1.25, 1.5, 2, 2.5, 3, 4, 5, 6, 8),
               (1, 1.1, 1.2, 1.3, 1.4, 1.5, 1.6, 1.8, 2, 2.5, 3, 3.5, 4, 5, 6, 7, 8, 9)]


def ratio_ticks(lo, hi):
    """Readable ticks for a log-scale ratio axis: the coarsest series giving at least 4 ticks in [lo, hi]."""
    lo, hi = min(lo, 0.98), max(hi, 1.02)
    if hi / lo < 2:  # a narrow range: evenly spaced ticks read better
        ticks = MaxNLocator(nbins=6, steps=[1, 2, 2.5, 5, 10]).tick_values(lo, hi)
        return [float(t) for t in ticks if lo / 1.005 <= t <= hi * 1.005 and t > 0] or [1.0]
    for mantissas in RATIO_STEPS:
        ticks = [m * 10.0 ** e for e in range(math.floor(math.log10(lo)) - 1, math.ceil(math.log10(hi)) + 1)
                 for m in mantissas]
        inside = [t for t in ticks if lo / 1.02 <= t <= hi * 1.02]
        if len(inside) >= 4 or mantissas is RATIO_STEPS[-1]:
            if len(inside) > 10:  # thin out, keeping 1x
                k = math.ceil(len(inside) / 10)
                one = min(range(len(inside)), key=lambda i: abs(inside[i] - 1))
                inside = [t for i, t in enumerate(inside) if (i - one) % k == 0]
            return inside
    return [1.0]


def ratio_axis(ax, values):
    """Log y axis for time ratios, with a line at 1x."""
    values = [v for v in values if v > 0 and math.isfinite(v)]
    lo, hi = (min(values), max(values)) if values else (1.0, 1.0)
    ax.set_yscale("log")
    ax.yaxis.set_major_locator(FixedLocator(ratio_ticks(lo, hi)))
    ax.yaxis.set_major_formatter(FuncFormatter(lambda y, _: f"{_plain_number(float(f'{y:.3g}'))}x"))
    ax.yaxis.set_minor_locator(NullLocator())
    lo, hi = min(lo, 0.98), max(hi, 1.02)
    pad = (hi / lo) ** 0.06
    ax.set_ylim(lo / pad, hi * pad)
    ax.axhline(1.0, color="0.3", linewidth=1)


def _legend(ax, handles=None, extra=()):
    handles = list(handles if handles is not None else ax.get_legend_handles_labels()[0]) + list(extra)
    if not handles:
        return
    ncol = 1 if len(handles) <= 20 else 2
    ax.legend(handles=handles, loc="upper left", bbox_to_anchor=(1.01, 1.0), frameon=False, ncol=ncol,
              borderaxespad=0.0, handlelength=3.2)


def _hollow_handle():
    return Line2D([], [], linestyle="none", marker="o", markersize=5, markerfacecolor="white",
                  markeredgecolor="0.3", label="hollow marker: not converged")


DPI = 80  # small files: the report is committed (docs/report) and every figure is a PNG


def _alt(fig, title):
    """The figure in words: its panels' titles and its legends' entries (for a reader without the image,
    and for a test)."""
    panels, labels = [], []
    for ax in fig.axes:
        if not ax.get_visible():
            continue
        t = ax.get_title(loc="left")
        if t and t not in panels:
            panels.append(t.replace("\n", " "))
        leg = ax.get_legend()
        if leg:
            labels += [x.get_text() for x in leg.get_texts() if x.get_text() not in labels]
    text = title
    if panels:
        text += ". Panels: " + "; ".join(panels)
    if labels:
        text += ". Legend: " + "; ".join(labels)
    return text


def _shrink(png):
    """A 256-colour palette: a figure has a dozen colours plus antialiasing, and the file is a third the size
    (the committed report is a few MB). Pillow comes with matplotlib; octree keeps the colours exact."""
    from PIL import Image

    with Image.open(png) as im:
        q = im.convert("RGB").quantize(colors=256, method=Image.Quantize.FASTOCTREE, dither=Image.Dither.NONE)
    q.save(png, optimize=True)


def _save(fig, outdir, name, title, caption):
    outdir = Path(outdir)
    outdir.mkdir(parents=True, exist_ok=True)
    png = outdir / f"{name}.png"
    # The tight box takes in the legends that sit outside the axes.
    bbox = fig.get_tightbbox(fig.canvas.get_renderer()).padded(0.08)
    alt = _alt(fig, title)
    fig.savefig(png, dpi=DPI, bbox_inches=bbox, metadata={"Software": None})
    plt.close(fig)
    _shrink(png)
    width, height = round(bbox.width * DPI), round(bbox.height * DPI)
    return FigureFile(name, title, caption, f"{outdir.name}/{png.name}", width, height, alt)


def _safe(name):
    return re.sub(r"[^A-Za-z0-9_.-]", "_", name)


def _panels(nrows, ncols=1, ax_w=8.0, ax_h=3.3, wgap=1.0, hgap=0.95, top=0.75):
    """A grid of axes with fixed geometry in inches (cheaper and steadier than
    tight_layout); legends go outside on the right and the saved image's tight
    box takes them in."""
    left, right, bottom = 0.75, 0.1, 0.55
    fig_w = left + ncols * ax_w + (ncols - 1) * wgap + right
    fig_h = top + nrows * ax_h + (nrows - 1) * hgap + bottom
    fig = plt.figure(figsize=(fig_w, fig_h))
    axes = [[fig.add_axes(((left + c * (ax_w + wgap)) / fig_w, (bottom + (nrows - 1 - r) * (ax_h + hgap)) / fig_h,
                           ax_w / fig_w, ax_h / fig_h)) for c in range(ncols)] for r in range(nrows)]
    return fig, _Grid(axes)


class _Grid:
    """axes[:, 0] and iteration over rows, like plt.subplots' array."""

    def __init__(self, rows):
        self.rows = rows

    def __getitem__(self, idx):
        r, c = idx
        return [row[c] for row in self.rows[r]] if isinstance(r, slice) else self.rows[r][c]

    def __iter__(self):
        return iter(self.rows)


def _suptitle(fig, title):
    fig.suptitle(title, x=0.75 / fig.get_figwidth(), y=1 - 0.08 / fig.get_figheight(), ha="left", va="top",
                 fontsize=12, fontweight="bold")


MAX_CURVES = 8  # per panel: more and the colours stop telling curves apart


def facets(report, direction):
    """(group, route, curves) per panel: one backend and route each, at most MAX_CURVES host memory kinds
    (a route with more is split evenly over several panels)."""
    out = []
    for g in report.groups_for(direction):
        gc = report.curves_for(direction, g)
        for route in dict.fromkeys(c.route for c in gc):
            rc = [c for c in gc if c.route == route and c.trusted]
            k = math.ceil(len(rc) / MAX_CURVES)  # 0 where every point is suspect: no panel
            for i in range(k):
                out.append((g, route + (f" ({i + 1}/{k})" if k > 1 else ""), rc[i::k]))
    return out


def _facet_grid(n, ncols=2):
    nrows = math.ceil(n / ncols)
    fig, grid = _panels(nrows, ncols=min(ncols, n), ax_w=4.3, ax_h=2.3, wgap=2.3, hgap=0.75, top=0.6)
    axes = [ax for row in grid for ax in row]
    for ax in axes[n:]:
        ax.set_visible(False)
    return fig, axes[:n]


def _ceiling(curves):
    """What the link carries after protocol overhead where the points say (the tool computes it from the
    link's payload size), else its raw rate; None off the link."""
    exact = [p.link_ceiling_gbps for c in curves if c.link_limit and not c.part for p in c.points
             if p.link_ceiling_gbps]
    if exact:
        return max(exact)
    return next((c.link_limit for c in curves if c.link_limit), None)


def _suspect_count(curves):
    return sum(len(c.points) - len(c.trusted) for c in curves)


def _suspect_panel(ax, curves, styler, sizes):
    """The points left out of the other panels (above the ceiling, or a device clock that missed work), on
    their own scale so they flatten nothing."""
    trusted = {id(p) for c in curves for p in c.trusted}
    for c in curves[:MAX_CURVES]:
        pts = [p for p in c.points if id(p) not in trusted]
        styler.plot(ax, c, [p.bytes for p in pts], [c.gbps(p) for p in pts], label=f"{c.group.name} · {c.label}")
    limit = _ceiling(curves)
    if limit:
        ax.axhline(limit, label=f"link ceiling {limit:.1f} GB/s", **LIMIT_STYLE)
    size_axis(ax, sizes)
    ax.set_xlabel("")
    log_y(ax)
    ax.set_ylabel("GB/s (log)")
    more = f", first {MAX_CURVES} of {len(curves)} curves" if len(curves) > MAX_CURVES else ""
    ax.set_title(f"suspect points, not in the other panels{more}", loc="left")
    _legend(ax)


def bandwidth_figure(report, direction, styler, outdir):
    panels = facets(report, direction)
    curves = report.curves_for(direction)
    if not panels and not any(c.points for c in curves):
        return None
    sizes = [p.bytes for c in curves for p in c.points]
    suspects = [c for c in curves if len(c.trusted) < len(c.points)]
    fig, axes = _facet_grid(len(panels) + bool(suspects))
    if suspects:
        _suspect_panel(axes[-1], suspects, styler, sizes)
    for ax, (g, route, cs) in zip(axes, panels):
        # Each panel scales to its own curves and link; suspect points (above the link, a clock that
        # missed work) are left out here and listed in the findings.
        top = max([c.gbps(p) for c in cs for p in c.trusted] + [c.link_limit or 0 for c in cs])
        any_hollow = any(not p.converged for c in cs for p in c.trusted)
        for c in cs:
            pts = c.trusted
            styler.plot(ax, c, [p.bytes for p in pts], [c.gbps(p) for p in pts], [not p.converged for p in pts],
                        label=c.host_memory)
        limit = _ceiling(cs)
        if limit:
            ax.axhline(limit, label=f"link ceiling {limit:.1f} GB/s", **LIMIT_STYLE)
        size_axis(ax, sizes)
        ax.set_xlabel("")
        ax.set_ylim(0, (top if top > 0 else 1.0) * 1.08)
        ax.set_ylabel("GB/s")
        ax.set_title(f"{g.name} · {route}", loc="left")
        _legend(ax, extra=[_hollow_handle()] if any_hollow else ())
    title = f"Bandwidth, {direction_title(direction)}"
    _suptitle(fig, title)
    caption = ("GB/s (1e9 B/s) = bytes moved per transfer / median time, against the transfer size (log2); one "
               "panel per backend and route, colour = host memory kind, each panel on its own y scale. Hollow "
               "markers did not converge.")
    if any(c.link_limit for c in curves):
        caption += " Dashed grey: the link's ceiling."
    n = _suspect_count(curves)
    if n:
        caption += f" {n} suspect points (above the ceiling, or a device clock that missed work) are left out."
    return _save(fig, outdir, f"bandwidth-{_safe(direction)}", title, caption)


def latency_figure(report, direction, styler, outdir):
    panels = facets(report, direction)
    if not panels:
        return None
    sizes = [p.bytes for c in report.curves_for(direction) for p in c.points]
    fig, axes = _facet_grid(len(panels))
    for ax, (g, route, cs) in zip(axes, panels):
        any_hollow = any(not p.converged for c in cs for p in c.trusted)
        for c in cs:
            pts = c.trusted
            styler.plot(ax, c, [p.bytes for p in pts], [p.median_s * 1e6 for p in pts],
                        [not p.converged for p in pts], label=c.host_memory)
        ys = [p.median_s * 1e6 for c in cs for p in c.trusted]
        limited = [c for c in cs if c.link_limit]
        if limited:
            c = limited[0]
            k = c.points[0].bytes_per_rep / c.points[0].bytes
            xs = sorted(set(sizes))
            ax.plot(xs, [k * x / (c.link_limit * 1e9) * 1e6 for x in xs], label="time at the link ceiling",
                    **LIMIT_STYLE)
        size_axis(ax, sizes)
        ax.set_xlabel("")
        log_y(ax)
        ax.set_ylim(min(ys) / 1.6, max(ys) * 1.6)
        ax.set_ylabel("us per transfer")
        ax.set_title(f"{g.name} · {route}", loc="left")
        _legend(ax, extra=[_hollow_handle()] if any_hollow else ())
    title = f"Time per transfer, {direction_title(direction)}"
    _suptitle(fig, title)
    caption = ("Median time of one transfer (log-log), panels as above. The flat part on the left is the fixed cost "
               "of a transfer; the slope on the right is bandwidth.")
    return _save(fig, outdir, f"latency-{_safe(direction)}", title, caption)


def overview_figure(report, outdir):
    """The first picture: for host-to-device and device-to-host, the best each backend reaches at each size
    (any route and kind, suspect points left out), against the link ceiling."""
    dirs = [d for d in ("h2d", "d2h") if d in report.directions] or report.directions[:2]
    if not dirs:
        return None
    fig, grid = _panels(1, ncols=len(dirs), ax_w=4.4, ax_h=2.2, wgap=0.7, top=0.45)
    # A CPU "device" copies at cache speed and would flatten every link-bound curve: devices only, where any.
    groups = [g for g in report.groups if g.device_type != "cpu"] or report.groups
    for ax, d in zip(grid.rows[0], dirs):
        limit = _ceiling(report.curves_for(d))
        for i, g in enumerate(groups):
            best = {}
            for c in report.curves_for(d, g):
                for p in c.trusted:
                    if c.gbps(p) > best.get(p.bytes, 0):
                        best[p.bytes] = c.gbps(p)
            if best:
                xs = sorted(best)
                ax.plot(xs, [best[x] for x in xs], marker="o", markersize=3.5, linewidth=1.6,
                        color=PALETTE[i % len(PALETTE)], label=g.name)
        if limit:
            ax.axhline(limit, label=f"link ceiling {limit:.1f}", **LIMIT_STYLE)
        size_axis(ax, [p.bytes for c in report.curves_for(d) for p in c.points])
        ax.set_xlabel("")
        ax.set_ylim(bottom=0)
        ax.set_ylabel("best GB/s")
        ax.set_title(direction_title(d), loc="left")
    _legend(grid.rows[0][-1])  # outside on the right: inside it hid the ceiling and the small sizes
    title = "Best bandwidth per backend"
    caption = ("The fastest route and host memory kind of each backend at each size (log2 size axis), suspect "
               "points left out; the panels below break this down by route and kind.")
    left = [g.name for g in report.groups if g not in groups]
    if left:
        caption += f" Not drawn here (no link crossed): {', '.join(left)}."
    return _save(fig, outdir, "overview", title, caption)


def first_use_figure(report, direction, styler, outdir):
    curves = [c for c in report.curves_for(direction) if any(p.first_use for p in c.points)]
    if not curves:
        return None
    # One row per backend and route (at most MAX_CURVES kinds), like the bandwidth figures.
    with_first_use = {id(c) for c in curves}
    rows = [(g, route, [c for c in cs if id(c) in with_first_use]) for g, route, cs in facets(report, direction)]
    rows = [r for r in rows if r[2]]
    if not rows:
        return None
    sizes = [p.bytes for c in curves for p in c.points]
    fig, axes = _panels(len(rows), ncols=3, ax_w=3.1, ax_h=2.3, wgap=0.85, hgap=0.95, top=0.95)
    be = [b for b in report.break_even if b.direction == direction]
    for row, (g, route, cs) in zip(axes, rows):
        ax_setup, ax_first, ax_be = row
        handles = []
        for c in cs:
            pts = [p for p in c.points if p.first_use]
            xs = [p.bytes for p in pts]
            handles.append(styler.plot(ax_setup, c, xs, [(p.first_use.alloc_s + p.first_use.touch_s) * 1e6
                                                          for p in pts], label=c.host_memory))
            styler.plot(ax_first, c, xs, [p.first_use.first_transfer_s / p.median_s for p in pts])
        for b in be:
            if b.group != g or b.host_memory not in {c.host_memory for c in cs} or b.route != cs[0].route:
                continue
            # "never" is a gap in the line, not a point.
            if any(math.isfinite(v) for v in b.by_size.values()):
                styler.plot(ax_be, b, list(b.by_size), [v if math.isfinite(v) else math.nan
                                                        for v in b.by_size.values()])
        for ax in row:
            size_axis(ax, sizes)
        log_y(ax_setup)
        ax_setup.set_ylabel("allocate + pin + first touch (us)")
        ax_setup.set_title(f"{g.name} · {route}\nsetup of a fresh buffer", loc="left")
        ratio_axis(ax_first, [l for line in ax_first.lines for l in line.get_ydata()])
        ax_first.set_ylabel("first transfer / steady-state transfer")
        ax_first.set_title("first transfer from a fresh buffer", loc="left")
        log_y(ax_be)
        ax_be.set_ylabel("transfers to pay off")
        baseline = next((b.baseline for b in be if b.group == g and b.route == cs[0].route), None)
        ax_be.set_title(f"break-even against {baseline}" if baseline else "break-even (one kind only)", loc="left")
        if not ax_be.lines:
            ax_be.text(0.5, 0.5, "no kind pays off\nagainst the baseline" if baseline else "nothing to compare",
                       transform=ax_be.transAxes, ha="center", va="center", color="0.4")
        _legend(ax_be, handles=handles)
    title = f"First use, {direction_title(direction)}"
    _suptitle(fig, title)
    caption = ("Left: one-off cost of allocating (and pinning or registering) a buffer and writing it once. "
               "Middle: the first transfer from that fresh buffer against the steady-state median. Right: how many "
               "transfers a kind needs before its costlier setup is paid back by faster transfers, against the "
               "baseline kind; sizes where it never pays off are left out.")
    return _save(fig, outdir, f"first-use-{_safe(direction)}", title, caption)


def api_figure(report, cmp, styler, outdir):
    has_matched = any(pc.matched for pc in cmp.pairs)
    if has_matched:
        fig, axes = _panels(1, ncols=2, ax_w=5.6, ax_h=3.6, wgap=0.9)
    else:
        fig, axes = _panels(1, ax_h=3.6)
    ax = axes[0, 0]
    sizes = [n for pc in cmp.pairs for n in pc.sizes]
    for i, pc in enumerate(cmp.pairs):
        xs = pc.sizes
        ax.plot(xs, [pc.ratio[n] for n in xs], marker="o", markersize=4, linewidth=1.8,
                color=PALETTE[(i + 10) % len(PALETTE)] if i else "#000000",
                label=f"{pc.other.name} / {cmp.reference.name}")
    size_axis(ax, sizes)
    ratio_axis(ax, [v for pc in cmp.pairs for v in pc.ratio.values()])
    ax.set_ylabel("time ratio (above 1x: slower)")
    ax.set_title(f"fastest route and kind of each, against {cmp.reference.name}", loc="left")
    _legend(ax) if not has_matched else ax.legend(loc="best", frameon=False)
    if has_matched:
        ax2 = axes[0, 1]
        markers = ["o", "s", "^", "D", "v"]
        for i, pc in enumerate(cmp.pairs):
            for route, kind, r in pc.matched:
                xs = sorted(r)
                ls, _ = styler.style(route)
                label = f"{route} · {kind}" + (f" ({pc.other.name})" if len(cmp.pairs) > 1 else "")
                ax2.plot(xs, [r[n] for n in xs], linestyle=ls, marker=markers[i % len(markers)], markersize=3.5,
                         linewidth=1.2, color=styler.color(kind), label=label)
        size_axis(ax2, sizes)
        ratio_axis(ax2, [v for pc in cmp.pairs for _, _, r in pc.matched for v in r.values()])
        names = ", ".join(pc.other.name for pc in cmp.pairs if pc.matched)
        ax2.set_title(f"same route and kind: {names} / {cmp.reference.name}", loc="left")
        _legend(ax2)
    title = f"API comparison, {direction_title(cmp.direction)}"
    _suptitle(fig, title)
    caption = (f"Ratio of median times by size against {cmp.reference.name} (log scale; 2x = takes twice as long). "
               "Left: the fastest way each backend has at each size. Right, where present: curves measured through "
               "the same route and host memory kind on both.")
    return _save(fig, outdir, f"api-{_safe(cmp.direction)}", title, caption)


_SHARED = {}  # the report, handed to forked workers by inheritance rather than pickling


def _draw(task):
    section, index, outdir = task
    report = _SHARED["report"]
    styler = Styler(report.kinds, report.routes)
    if section == "api":
        return section, api_figure(report, report.api[index], styler, outdir)
    if section == "overview":
        return section, overview_figure(report, outdir)
    draw = {"bandwidth": bandwidth_figure, "latency": latency_figure, "first_use": first_use_figure}[section]
    return section, draw(report, report.directions[index], styler, outdir)


def default_jobs():
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:
        return os.cpu_count() or 1


def make_figures(report, outdir, jobs=None):
    """All figures, in report order: {section: [FigureFile]}.

    Figures are independent, so with jobs > 1 they are drawn in forked worker
    processes (where the platform forks; elsewhere one after another)."""
    tasks = [(section, i, str(outdir)) for i in range(len(report.directions))
             for section in ("bandwidth", "latency", "first_use")]
    tasks += [("api", i, str(outdir)) for i in range(len(report.api))]
    tasks.insert(0, ("overview", 0, str(outdir)))
    jobs = min(jobs or default_jobs(), len(tasks))
    _SHARED["report"] = report
    pool = None
    try:
        if jobs > 1 and "fork" in multiprocessing.get_all_start_methods():
            Path(outdir).mkdir(parents=True, exist_ok=True)
            # Forked with the signals held, so that no worker meets one before worker_defaults takes them over;
            # one that arrived meanwhile is raised as the block ends, when pool is already named for the finally.
            with signals.held():
                pool = multiprocessing.get_context("fork").Pool(jobs, initializer=signals.worker_defaults)
            results = pool.map(_draw, tasks, chunksize=1)
        else:
            results = [_draw(t) for t in tasks]
    finally:
        if pool is not None:  # ends and joins the workers (as leaving `with pool` did) before render cleans up
            pool.terminate()
        _SHARED.clear()
    out = {"overview": [], "bandwidth": [], "latency": [], "first_use": [], "api": []}
    for section, fig in results:
        if fig is not None:
            out[section].append(fig)
    return out
