"""The many-blocks workload's finding (docs/blocks.md): which way wins at which block size, and by how much.

A way wins a range of block sizes where it beats every other way beyond the samples' spread at each size of it,
CONFIRMING_SIZES neighbouring sizes at least (one size alone is what a rerun contradicts); the factor is over the
runner-up at each size. The library's choice is set beside the best way at each size. On a CPU stand-in device
(the host backend) the ways are memcpy loops on one memory system: context, never a headline."""

from ..blocks import CHOICE, block_sets
from ..units import format_gbps, format_size
from .base import CONFIRMING_SIZES, Finding, _range, cite


def _ranges(s):
    """[(route, [block sizes], [(winner, runner-up) per size])]: each run of neighbouring block sizes one way won."""
    out, cur = [], None
    for b in s.block_sizes:
        win, other = s.winner(b)
        if win and cur and cur[0] == win.route:
            cur[1].append(b)
            cur[2].append((win, other))
            continue
        cur = (win.route, [b], [(win, other)]) if win else None
        if cur:
            out.append(cur)
    return [r for r in out if len(r[1]) >= CONFIRMING_SIZES]


def _span(sizes):
    return format_size(sizes[0]) if len(sizes) == 1 else f"{format_size(sizes[0])} to {format_size(sizes[-1])}"


def _choice_text(s):
    """How the library's choice did against the best way at each size: its share of the best, as a range."""
    choice = s.ways.get(CHOICE)
    if not choice:
        return "", []
    shares, pts = [], []
    for b, p in choice.items():
        best = min((pts_[b] for r, pts_ in s.ways.items() if r != CHOICE and b in pts_), key=lambda q: q.median_s,
                   default=None)
        if best:
            shares.append(best.median_s / p.median_s)
            pts.append(p)
    if not shares:
        return "", []
    lo, hi = min(shares), max(shares)
    return f"; the library's choice ({CHOICE}) ran at {100 * lo:.0f}-{100 * hi:.0f}% of the best way", pts


def block_findings(report):
    out = []
    for s in block_sets(report.runs):
        ranges = _ranges(s)
        if not ranges:
            continue
        parts, evidence, gain = [], [], 1.0
        for route, sizes, pairs in ranges:
            factors = [other.median_s / win.median_s for win, other in pairs]
            runners = sorted({other.route for _, other in pairs})
            parts.append(f"{route} from {_span(sizes)} ({_range([f for f in factors])}x the next way, "
                         f"{', '.join(runners)})")
            evidence += cite(*[p for pair in pairs for p in pair])
            gain = max(gain, max(factors))
        choice, choice_pts = _choice_text(s)
        ceiling = (f"; one contiguous copy of the same bytes moves {format_gbps(s.contiguous.gbps)} GB/s"
                   if s.contiguous else "")
        stand_in = s.device_type == "cpu"
        text = (f"{s.name}: " + "; ".join(parts) + choice + ceiling + "."
                + (" A CPU stand-in device: the ways are copies within host memory, not over a link." if stand_in
                   else " Move blocks of these sizes that way (xferbench.copy_blocks picks it when its calibration "
                        "agrees)."))
        out.append(Finding("context" if stand_in else "guide",
                           f"Fastest way to move many blocks ({s.backend}, {s.direction}, {s.host_memory})", text,
                           evidence + cite(*choice_pts, s.contiguous), weight=gain))
    return out
