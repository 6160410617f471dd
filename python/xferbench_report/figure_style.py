"""What every figure of the report shares: matplotlib's Agg backend, one style table (colour per host
memory kind, line style and marker per route, the same in every figure), the size and ratio axes, the panel
layout, and saving as small PNG and SVG with alt text. plots.py (the sweep's figures) and study_plots.py (the
studies') draw with it, so a figure of either looks like the other.
"""

import math
import re
from dataclasses import dataclass
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
from matplotlib.lines import Line2D  # noqa: E402
from matplotlib.ticker import FixedLocator, FuncFormatter, MaxNLocator, NullLocator  # noqa: E402

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
