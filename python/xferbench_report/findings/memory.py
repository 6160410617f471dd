"""Host memory: what misalignment, pinning and staging cost or buy on this machine."""

import math
import statistics

from ..catalogue import API_COPY, STAGED_COPIER
from ..spread import clearly_faster
from ..units import format_gbps, format_size
from .base import (
    BANDWIDTH_MIN_BYTES, CONFIRMING_SIZES, Finding, MISALIGN_MIN, MISALIGN_MIN_BYTES, PIN_PAYS, STAGED_PAYS,
    _curves_by, _fastest_by_size, _kind, _pays_from, _points_at, _runs, _times, _wall, cite, quote_wall_gbps, stand_in
)


def _misalignment(a, u):
    """(median ratio, sizes, aligned point, unaligned point at the middle size) where the unaligned curve is
    clearly slower by MISALIGN_MIN at CONFIRMING_SIZES neighbouring sizes of a page and more; else None."""
    at = {p.bytes: p for p in a.trusted}
    un = {p.bytes: p for p in u.trusted}
    # Below a page the offset decides nothing a reader can act on, and the times are the API's own.
    common = sorted(n for n in set(at) & set(un) if n >= MISALIGN_MIN_BYTES)
    holding = {n for n in common if clearly_faster(at[n], un[n]) and un[n].median_s / at[n].median_s >= MISALIGN_MIN}
    run = _runs(holding, common)
    if len(run) < CONFIRMING_SIZES:
        return None
    ratios = sorted(un[n].median_s / at[n].median_s for n in run)
    mid = run[len(run) // 2]
    return statistics.median(ratios), run, at[mid], un[mid]


def misalignment_findings(report):
    """A buffer off a page boundary against an aligned one: one finding for the accelerators and one of context
    for the stand-ins, each naming the curves where it holds. It must hold on two routes of one backend and
    direction at least, each with buffers of its own (the second route is the measurement again): on the H100
    one route's pair at a time flipped between two runs, as a pageable point's speed there depends on its
    preparation (opencl:nvidia copy-async d2h at 4 KiB: 13.9 us aligned in one run, 31.9 in the other)."""
    per_route = {}
    for (g, route, d), cs in _curves_by(report, lambda c: (c.group, c.route, c.direction)).items():
        kinds = {c.host_memory: c for c in cs}
        for u in cs:
            # The kind the catalogue says is another's memory off a page boundary, against that other.
            a = kinds.get(u.kind_info.offset_of)
            if a and (got := _misalignment(a, u)):
                per_route.setdefault((g, d), []).append((g, route, d, a, u, *got))
    rows = {True: [], False: []}
    for (g, _), found in per_route.items():
        if len(found) >= 2:
            rows[stand_in(g)] += found
    out = []
    for cpu, found in rows.items():
        if not found:
            continue
        found.sort(key=lambda r: -r[5])
        g, route, d, a, u, r, run, q, p = found[0]
        text = (f"{g.name} {route} {d}: a buffer {_offset(p)} off a page boundary takes {r:.2f}x the time of an "
                f"aligned one (median over {format_size(run[0])} to {format_size(run[-1])}; at "
                f"{format_size(p.bytes)} {format_gbps(u.gbps(p))} against {format_gbps(a.gbps(q))} GB/s): allocate "
                f"transfer buffers page-aligned")
        if len(found) > 1:
            text += "; also " + ", ".join(f"{x[0].name} {x[1]} {x[2]} ({x[5]:.2f}x)" for x in found[1:5])
        if cpu:
            text += ". On a CPU device this is the CPU's copy, not a DMA rule"
        out.append(Finding("context" if cpu else "guide",
                           "Stand-ins: unaligned buffers copy slower" if cpu else "Unaligned buffers are slower",
                           text, cite(q, p), weight=r))
    return out


def _offset(p):
    off = p.run.config.get("unaligned_offset")
    return f"{off} B" if isinstance(off, int) else "some bytes"


def pinned_break_even_findings(report):
    """From which size pinned memory pays for its allocation, and after how many reuses."""
    out = []
    for b in report.break_even:
        # The API's own allocation its resource declares page-locked: what the finding calls pinned memory.
        pinned = b.kind_info.api_pinned and b.kind_info.pinned is True
        if not pinned or b.direction not in ("h2d", "d2h") or b.route_info.role not in API_COPY:
            continue
        finite = [(n, v) for n, v in b.by_size.items() if math.isfinite(v)]
        if not finite:
            text = (f"never pays for its allocation against {b.baseline} at any measured size "
                    f"({format_size(min(b.by_size))} to {format_size(max(b.by_size))})")
            pts = []
        else:
            n0, v0 = finite[0]
            big = finite[-1]
            text = (f"pays for its allocation against {b.baseline} from {format_size(n0)} after {_times(v0)}; "
                    f"at {format_size(big[0])} after {_times(big[1])}")
            pts = _points_at(report, b.group, b.route, b.direction, (b.host_memory, b.baseline), (n0, big[0]))
        out.append(Finding(_kind(b.group, "guide"), f"Pinned break-even ({b.group.name} {b.route} {b.direction})", text,
                           cite(*pts), weight=2))
    return out[:4]


# What "pageable", "pinned" and "staged" mean where a finding or a table sets them side by side, by the catalogue:
# the API's own copy of the program's plain memory, of memory its copy engine moves in place, and libxfer's staged
# copier of the plain memory.
def pageable_copy(curve):
    return curve.route_info.role in API_COPY and curve.kind_info.program_default


def pinned_copy(curve):
    return curve.route_info.role in API_COPY and curve.kind_info.dma_direct


def staged_copy(curve):
    return curve.route_info.role == STAGED_COPIER and curve.kind_info.program_default


def pin_or_stage_findings(report):
    """The fact a user of an accelerator most needs: from which size a pageable buffer costs them, what pinned
    memory and the staged copier buy there, in this machine's own numbers (the wall clock, what a program waits
    for). One finding per device and direction, from the first backend (in the run's order) that measured both."""
    out, seen = [], set()
    devices = len({g.device_index for g in report.groups if not stand_in(g) and not g.at_once})
    for g in report.groups:
        if stand_in(g) or g.at_once:
            continue
        for d in ("h2d", "d2h"):
            if (g.device_index, d) in seen:
                continue
            cs = [c for c in report.curves if c.group == g and c.direction == d and not c.part]
            def fastest(keep):
                return _fastest_by_size((c for c in cs if keep(c)), BANDWIDTH_MIN_BYTES)

            pageable = fastest(pageable_copy)
            pinned = fastest(pinned_copy)
            staged = fastest(staged_copy)
            start = _pays_from(pinned, pageable, PIN_PAYS)
            if start is None:
                continue
            seen.add((g.device_index, d))
            n = max(set(pinned) & set(pageable))
            pin, page = pinned[n], pageable[n]
            gain = _wall(page) / _wall(pin)
            kind = next(c.host_memory for c in cs if pin in c.points)
            text = (f"from {format_size(start)} on a pageable buffer costs: at {format_size(n)} it moves "
                    f"{quote_wall_gbps(page)} GB/s where {kind} memory moves {quote_wall_gbps(pin)} "
                    f"({gain:.1f}x, {g.backend})")
            evidence = [page, pin]
            s_start = _pays_from(staged, pageable, STAGED_PAYS)
            if s_start is not None and n in staged:
                st = staged[n]
                text += (f"; the staged copier moves it at {quote_wall_gbps(st)} GB/s "
                         f"({100 * _wall(pin) / _wall(st):.0f}% of pinned) from {format_size(s_start)} on. Pin "
                         f"the buffers of {format_size(start)} and more that a program reuses; move the others "
                         f"through the staged copier")
                evidence.append(st)
            elif staged:
                text += (f"; the staged copier is not clearly faster than the plain copy here. Pin the buffers of "
                         f"{format_size(start)} and more that a program reuses")
            else:
                text += f". Pin the buffers of {format_size(start)} and more that a program reuses"
            where = f"{d}, device {g.device_index}" if devices > 1 else d
            out.append(Finding("guide", f"Pin or stage large buffers ({where})", text + ".", cite(*evidence),
                               weight=gain))
    return out
