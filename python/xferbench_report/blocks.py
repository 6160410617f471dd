"""The many-blocks workload (`xferbench sweep --blocks`, docs/blocks.md): its points grouped into sets (one array
size moved one direction from one host memory kind on one device), each way's GB/s against the block size, the
winner at each block size, its figure and its section of the report.

A way "wins" at a block size where its point is faster than every other way's beyond the noise (beyond_noise
against the runner-up); elsewhere there is no winner at that size, and the table says why: within the noise, or
too few samples to tell. blocks-auto (the library's choice) and blocks-contiguous (one copy of the whole array: the
ceiling) are shown beside the ways and never win."""

from dataclasses import dataclass, field

from .spread import clearly_faster
from .units import format_gbps, format_size

WAYS = ("blocks-loop", "blocks-batch", "blocks-kernel", "blocks-pack")
CHOICE = "blocks-auto"
CONTIGUOUS = "blocks-contiguous"

# Beyond the noise, for two block points (docs/findings.md):
# - each has MIN_SAMPLES samples at least: the spread of one sample is none, and a default `sweep --blocks` once
#   gave most points one sample, so any difference looked beyond it. The sweep takes as many since
#   (block_samples_floor, core/block_route.hpp); an older file's points say nothing.
# - the faster one's p95 is below the slower one's p5 (spread.clearly_faster), and
# - the slower takes WIN_MARGIN times as long at the median: a point's samples share one state of the machine, which
#   moves between runs: the sweep and the block study minutes apart measured the same way at the same block size
#   up to 10% apart, and there the two ways' order turned over between them
#   (docs/decisions/0004-finding-thresholds.md).
MIN_SAMPLES = 5
WIN_MARGIN = 1.10


def beyond_noise(fast, slow):
    """fast is faster than slow beyond the noise (the rule above)."""
    return (min(len(fast.samples_s), len(slow.samples_s)) >= MIN_SAMPLES and clearly_faster(fast, slow)
            and slow.median_s >= WIN_MARGIN * fast.median_s)


def no_winner_why(best, other):
    """Why two points name no winner: too few samples, or within the noise."""
    n = min(len(best.samples_s), len(other.samples_s))
    return f"too few samples ({n})" if n < MIN_SAMPLES else "within the noise"


@dataclass
class BlockSet:
    run: object
    backend: str
    device: str
    device_index: int
    device_type: str
    direction: str
    host_memory: str
    total: int  # bytes of each array
    ways: dict = field(default_factory=dict)  # route -> {block_bytes: point}, the ways and the choice
    contiguous: object = None  # the one-copy point
    skipped: dict = field(default_factory=dict)  # route -> why, for ways that did not run

    @property
    def name(self):
        return (f"{self.backend} dev{self.device_index}, {self.direction}, {self.host_memory}, "
                f"{format_size(self.total)} arrays")

    @property
    def block_sizes(self):
        return sorted({b for pts in self.ways.values() for b in pts})

    def winner(self, block):
        """(winning point, runner-up point) at this block size, or (None, best) where the best two ways are not
        apart beyond the noise; (None, None) where fewer than two ways ran."""
        pts = self.ranked(block)
        if len(pts) < 2:
            return None, None
        return (pts[0], pts[1]) if beyond_noise(pts[0], pts[1]) else (None, pts[0])

    def ranked(self, block):
        """The ways' points at this block size, fastest median first."""
        return sorted((pts[block] for r, pts in self.ways.items() if r in WAYS and block in pts),
                      key=lambda p: p.median_s)


def block_sets(runs):
    """Every run's block points as sets, in the order first met."""
    sets = {}
    for run in runs:
        for p in run.block_points:
            key = (run.path, p.backend, p.device_index, p.direction, p.host_memory, p.bytes)
            s = sets.get(key)
            if s is None:
                s = sets[key] = BlockSet(run, p.backend, p.device, p.device_index, p.device_type, p.direction,
                                         p.host_memory, p.bytes)
            if not p.ok:
                s.skipped.setdefault(p.route, p.reason)
            elif p.route == CONTIGUOUS:
                s.contiguous = p
            else:
                s.ways.setdefault(p.route, {}).setdefault(p.block_bytes, p)
    return [s for s in sets.values() if s.ways]


def routes_of(s):
    """The set's routes in the fixed order (the ways, then the choice): one colour each in every figure."""
    return [r for r in WAYS + (CHOICE,) if r in s.ways]


def blocks_section(doc, sets, figures):
    """The report's section: each figure, then one table per set (GB/s per way and block size, the winner)."""
    if not sets:
        return
    doc.heading(1, "Many small blocks", "blocks")
    doc.para("`xferbench sweep --blocks`: arrays moved as blocks of one size between scattered host and device "
             "places (a fixed-seed list), through each way of libxfer's block copier alone, the copier's own choice "
             "(blocks-auto) and one contiguous copy of the whole array (the ceiling, dashed). GB/s = bytes moved / "
             "median time (wall clock). A way wins at a block size where it is faster than every other beyond the "
             f"noise: {MIN_SAMPLES} samples of each point at least, its 95th percentile sample below the "
             f"runner-up's 5th, and the runner-up's median {WIN_MARGIN:.2f}x its own or more (docs/findings.md).")
    for f in figures:
        doc.figure(f)
    for s in sets:
        routes = routes_of(s)
        rows = []
        for b in s.block_sizes:
            win, other = s.winner(b)
            cells = [format_gbps(s.ways[r][b].gbps) if b in s.ways[r] else "-" for r in routes]
            if win:
                verdict = f"{win.route} ({other.median_s / win.median_s:.2f}x {other.route})"
            elif other:
                verdict = f"{no_winner_why(*s.ranked(b)[:2])}: {', '.join(p.route for p in s.ranked(b)[:2])}"
            else:
                verdict = "-"
            rows.append([format_size(b)] + cells + [verdict])
        doc.heading(2, s.name)
        if s.contiguous:
            doc.para(f"One contiguous copy of the whole array: {format_gbps(s.contiguous.gbps)} GB/s.")
        doc.table(["block"] + routes + ["fastest way"], rows, align="r" + "r" * len(routes) + "l")
        for route, why in s.skipped.items():
            doc.para(f"{route} did not run: {why}", "note")


def block_figure(s, outdir, index):
    """GB/s against block size (log2), a curve per way and the choice; the contiguous copy as a dashed line."""
    from .figure_style import LIMIT_STYLE, PALETTE, _legend, _panels, _save, _suptitle, plt, size_axis  # noqa: F401

    fig, grid = _panels(1)
    ax = grid[0, 0]
    sizes = s.block_sizes
    for i, r in enumerate(routes_of(s)):
        pts = s.ways[r]
        xs = [b for b in sizes if b in pts]
        ax.plot(xs, [pts[b].gbps for b in xs], marker="o", markersize=4, linewidth=1.6 if r != CHOICE else 2.4,
                color="black" if r == CHOICE else PALETTE[i % len(PALETTE)],
                linestyle=(0, (4, 2)) if r == CHOICE else "-", label=r)
    if s.contiguous:
        ax.axhline(s.contiguous.gbps, label=f"{CONTIGUOUS} (one copy)", **LIMIT_STYLE)
    size_axis(ax, sizes)
    ax.set_xlabel("block size")
    ax.set_ylabel("GB/s")
    # Room above the highest curve or the ceiling, so the dashed line is not lost in the frame.
    top = max([p.gbps for pts in s.ways.values() for p in pts.values()] + [s.contiguous.gbps if s.contiguous else 0])
    ax.set_ylim(bottom=0, top=1.1 * top)
    _legend(ax)
    title = f"Many small blocks: {s.name}"
    _suptitle(fig, title)
    caption = ("GB/s against block size per way (bytes moved / median wall time); the dashed line is one contiguous "
               "copy of the same bytes.")
    return _save(fig, outdir, f"blocks-{index}", title, caption)
