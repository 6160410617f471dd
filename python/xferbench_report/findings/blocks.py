"""The many-blocks workload's finding (docs/blocks.md): which way wins at which block size, and by how much.

A way wins a range of block sizes where it beats every other way beyond the noise at each size of it
(blocks.beyond_noise: five samples a point at least, beyond both points' spread, by 10% or more), CONFIRMING_SIZES
neighbouring sizes at least (one size alone is what a rerun contradicts); the factor is over the runner-up at each
size. The library's choice is set beside the best way by the same rule: where it is below the best way beyond the
noise, and at how many sizes it is not. Each size a way is named the winner is a claim (Finding.claims), so two runs'
findings can be compared (`xferbench-report headlines A B`). On a CPU stand-in device (the host backend) the ways are
memcpy loops on one memory system: context, never a headline."""

from ..blocks import CHOICE, MIN_SAMPLES, beyond_noise, block_sets
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
    """How the library's choice did against the best way, by the winners' rule: at how many block sizes it was not
    below the best way beyond the noise, and where it was (with its share of the best). Sizes whose points have too
    few samples to tell are left out."""
    choice = s.ways.get(CHOICE)
    if not choice:
        return "", []
    below, told, pts = [], 0, []
    for b in sorted(choice):
        p = choice[b]
        ranked = s.ranked(b)
        if not ranked or min(len(p.samples_s), len(ranked[0].samples_s)) < MIN_SAMPLES:
            continue
        told += 1
        pts += [p, ranked[0]]
        if beyond_noise(ranked[0], p):
            below.append(f"{format_size(b)} ({100 * ranked[0].median_s / p.median_s:.0f}% of {ranked[0].route})")
    if not told:
        return "", []
    lead = f"; the library's choice ({CHOICE}) was within the noise of the best way at"
    if not below:
        return f"{lead} each of {told} block sizes", pts
    return f"{lead} {told - len(below)} of {told} block sizes, below it at {', '.join(below)}", pts


def block_findings(report):
    out = []
    for s in block_sets(report.runs):
        ranges = _ranges(s)
        if not ranges:
            continue
        parts, evidence, gain, claims = [], [], 1.0, {}
        for route, sizes, pairs in ranges:
            claims.update({f"{s.name} at {format_size(b)}": route for b in sizes})
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
                           evidence + cite(*choice_pts, s.contiguous), weight=gain, claims=claims))
    return out
