"""The link and its clock: a link below its ceiling or trained down, points above what the link allows, curves
that collapse at a size, and how sure the medians are."""

from ..units import format_gbps, format_size
from .base import BELOW_CEILING, COLLAPSE, Finding, cite, stand_in


def link_findings(report):
    out = []
    for run in report.runs:
        for a in run.system.get("accelerators") or []:
            if not isinstance(a, dict):
                continue
            cur, mx = a.get("link_current") or {}, a.get("link_max") or {}
            if a.get("degraded") or (cur.get("width") and mx.get("width") and
                                     (cur["width"] < mx["width"] or (cur.get("gen") or 0) < (mx.get("gen") or 0))):
                out.append(Finding(
                    "anomaly", "Link downtrained",
                    f"{a.get('pci_address', '?')} runs at Gen{cur.get('gen')} x{cur.get('width')} of its "
                    f"Gen{mx.get('gen')} x{mx.get('width')} ({a.get('degraded') or 'link_current below link_max'}) "
                    f"in {run.path.name}: every transfer to it is capped.", weight=100))
    for d in ("h2d", "d2h"):
        for g in report.groups:
            got = best_against_ceiling(report, g, d)
            if got is None:
                continue
            best_c, best = got
            share = best_c.gbps(best) / best.link_ceiling_gbps
            below = share < BELOW_CEILING
            out.append(Finding(
                "anomaly" if below else "guide",
                f"{g.name} {d} {'below' if below else 'at'} the link ceiling",
                f"best {format_gbps(best_c.gbps(best))} GB/s ({best_c.route} · {best_c.host_memory}, "
                f"{format_size(best.bytes)}) = {100 * share:.0f}% of the {format_gbps(best.link_ceiling_gbps)} GB/s "
                "the link carries after protocol overhead"
                + (f"; under {100 * BELOW_CEILING:.0f}%: the route, not the link, is the limit." if below else "."),
                cite(best), weight=50 if below else 1))
    return out


def best_against_ceiling(report, group, direction):
    """(curve, point): the group's fastest trusted point of a direction that crosses a link with a known ceiling
    (no latency route), which the link finding holds to that ceiling; None where there is none."""
    best, best_c = None, None
    for c in report.curves:
        if c.group != group or c.direction != direction or not c.link_limit or c.is_latency:
            continue
        for p in c.trusted:
            if p.link_ceiling_gbps and (best is None or c.gbps(p) > best_c.gbps(best)):
                best, best_c = p, c
    return None if best is None else (best_c, best)


def above_ceiling_findings(report):
    above = [(c, p) for c in report.curves + report.part_curves for p in c.above_limit]
    if not above:
        return []
    above.sort(key=lambda cp: -cp[0].gbps(cp[1]) / cp[0].link_limit)
    c, p = above[0]
    curves = len({id(c) for c, _ in above})
    # A caveat on those points (they are kept out of every figure and headline), not a finding about the machine.
    return [Finding("context", "Points above the link ceiling",
                    f"{len(above)} points of {curves} curves run faster than the link carries, so they did not "
                    f"measure a transfer across it; kept out of the figures, peaks and fits. Worst: {c.name} "
                    f"{c.direction} {format_size(p.bytes)} at {format_gbps(c.gbps(p))} GB/s against "
                    f"{format_gbps(c.link_limit)}",
                    cite(*[p for _, p in above[:8]]), weight=90)]


def clock_findings(report):
    """Points whose device clock left out work the wall clock saw (the driver staged part of it outside)."""
    missed = [(c, p) for c in report.curves for p in c.clock_misses_work]
    if not missed:
        return []
    c, p = max(missed, key=lambda cp: cp[1].wall_median_s / cp[1].median_s)
    wall = p.bytes_per_rep / p.wall_median_s / 1e9
    return [Finding("context", "Device clock misses host work",
                    f"{len(missed)} points of {len(dict.fromkeys(id(c) for c, _ in missed))} curves take over "
                    f"twice as long on the wall clock as on the device's events, so their device-clock GB/s "
                    f"overstates what a program gets; kept out of the figures' panels, peaks and fits. Worst: "
                    f"{c.name} {c.direction} {format_size(p.bytes)}: {format_gbps(c.gbps(p))} GB/s on the device "
                    f"clock, {format_gbps(wall)} GB/s on the wall clock",
                    cite(*[q for _, q in missed[:8]]), weight=80)]


def _collapse(c):
    """(factor, best point before, first point after) where the curve falls to under 1/COLLAPSE of the best it
    reached at a smaller size and stays there at the next size too (one size alone is not a collapse); the
    factor is the smaller of the two, so a rerun finds at least as much."""
    pts = c.trusted
    worst = None
    for i in range(1, len(pts) - 1):
        best = max(pts[:i], key=c.gbps)
        a, b = pts[i], pts[i + 1]
        if c.gbps(a) <= 0 or c.gbps(b) <= 0:
            continue
        f = min(c.gbps(best) / c.gbps(a), c.gbps(best) / c.gbps(b))
        if f >= COLLAPSE and (worst is None or f > worst[0]):
            worst = (f, best, a)
    return worst


def collapse_findings(report):
    """Curves whose bandwidth falls at larger sizes: one finding for the accelerators (a fault to look at) and
    one of context for the stand-ins (a CPU falling out of its caches is expected)."""
    found = {True: [], False: []}
    for c in report.curves:
        if c.is_latency:  # its GB/s is one access over the ring's size: no bandwidth to collapse
            continue
        got = _collapse(c)
        if got:
            found[stand_in(c.group)].append((c, *got))
    out = []
    for cpu, rows in found.items():
        if not rows:
            continue
        rows.sort(key=lambda r: -r[1])
        c, f, a, b = rows[0]
        text = (f"{c.name} {c.direction}: {format_gbps(c.gbps(a))} GB/s at {format_size(a.bytes)} falls to "
                f"{format_gbps(c.gbps(b))} GB/s at {format_size(b.bytes)} and stays down ({f:.1f}x)")
        if len(rows) > 1:
            text += f"; {len(rows) - 1} more curves: " + "; ".join(f"{r[0].name} {r[0].direction} ({r[1]:.1f}x)"
                                                                     for r in rows[1:6])
        if cpu:
            title = "Stand-in curves fall at large sizes"
            text += (": the CPU's caches against its DRAM, expected on a CPU device")
        else:
            title = "Curves collapse at large sizes"
        out.append(Finding("context" if cpu else "anomaly", title, text,
                           cite(*[p for r in rows[:4] for p in r[2:]]), weight=f))
    return out


def convergence_findings(report):
    out = []
    by = {}
    for c in report.curves:
        k = by.setdefault(c.group.name, [0, 0, []])
        k[0] += len(c.points)
        k[1] += len(c.not_converged)
        k[2] += c.not_converged
    for name, (n, bad, pts) in by.items():
        if bad and bad / n >= 0.02:
            # How sure the medians are, not a finding about the machine: context (hollow markers in the figures).
            out.append(Finding("context", f"{name}: {100 * bad / n:.0f}% unconverged",
                               f"{bad} of {n} ok points ran out of time before their confidence target (hollow "
                               "markers); their medians are less certain", cite(*pts[:8]), weight=10 * bad / n))
    return out
