"""Several devices: the aggregate at once against each alone, the peer matrix, and a run with no
accelerator at all."""

import statistics

from ..units import format_gbps, format_size
from .base import AT_ONCE_SCALES, Finding, PEER_SLOW, _range, cite, stand_in


def at_once_findings(report):
    """`sweep --together`: the devices' aggregate at once against the sum of their figures alone, at the largest size
    the aggregate was measured, per backend and direction: the route and kind that moved the most in all, and the
    one that scaled worst where it differs. Each device's share at once says whether they shared evenly."""
    curves = {(c.group.run_label, c.group.backend, c.group.device_index, c.group.at_once, c.route, c.direction,
               c.host_memory): c for c in report.curves}

    def at(run, backend, index, role, c, n):
        other = curves.get((run, backend, index, role, c.route, c.direction, c.host_memory))
        return next((p for p in other.trusted if p.bytes == n), None) if other else None

    rows = {}  # (run, backend, direction) -> [(aggregate curve, point, alone points, at-once points)]
    for c in report.curves:
        g = c.group
        if g.at_once != "aggregate" or not c.trusted:
            continue
        p = c.trusted[-1]  # the largest size: the least fixed cost
        alone = [at(g.run_label, g.backend, d, "", c, p.bytes) for d in g.at_once_devices]
        shares = [at(g.run_label, g.backend, d, "device", c, p.bytes) for d in g.at_once_devices]
        rows.setdefault((g.run_label, g.backend, c.direction), []).append((c, p, alone, shares))
    out = []
    for (_, backend, d), got in rows.items():
        def ratio(row):
            c, p, alone, _ = row
            return c.gbps(p) / sum(a.gbps for a in alone) if all(alone) else None

        best = max(got, key=lambda row: row[0].gbps(row[1]))
        c, p, alone, shares = best
        n = len(c.group.at_once_devices)
        text = (f"{n} devices at once move {format_gbps(c.gbps(p))} GB/s in all ({c.route} · {c.host_memory}, "
                f"{format_size(p.bytes)})")
        r = ratio(best)
        if r is not None:
            text += (f", {100 * r:.0f}% of the {format_gbps(sum(a.gbps for a in alone))} GB/s they reach one at a "
                     f"time ({_range([a.gbps for a in alone])} each)")
        else:
            text += "; one at a time was not measured (--together-only), so there is no sum to hold it to"
        if all(shares):
            text += f"; at once each ran {_range([s.gbps for s in shares])}"
        evidence = [p] + [a for a in alone if a] + [s for s in shares if s]
        short = r is not None and r < AT_ONCE_SCALES
        if short:
            text += ": something they share (host memory, the root complex, the CPUs) is the limit, not their links"
        text += "."
        rated = [row for row in got if ratio(row) is not None]
        worst = min(rated, key=ratio, default=None)
        if worst is not None and worst is not best and ratio(worst) < AT_ONCE_SCALES:
            wc, wp, walone, _ = worst
            text += (f" Scales least: {wc.route} · {wc.host_memory}, {format_gbps(wc.gbps(wp))} GB/s in all against "
                     f"{format_gbps(sum(a.gbps for a in walone))} alone ({100 * ratio(worst):.0f}%).")
            evidence.append(wp)
        title = f"{backend} {d}, {n} devices at once" + (f": {100 * r:.0f}% of their sum alone" if r is not None else "")
        out.append(Finding("anomaly" if short else "guide", title, text, cite(*evidence),
                           weight=40 * (1 - r) if short else 2))
    return out


def peer_matrix(report):
    """`xferbench peer` files: per (run, backend), {(source, destination): (curve, point)} at the largest size every
    pair of the matrix measured."""
    out = {}
    for c in report.curves:
        for p in c.trusted:
            if p.peer_device_index is not None:
                out.setdefault((c.group.run_label, c.group.backend), {}).setdefault(
                    (c.group.device_index, p.peer_device_index), {})[p.bytes] = (c, p)
    matrices = {}
    for key, pairs in out.items():
        common = set.intersection(*(set(by) for by in pairs.values()))
        if common:
            n = max(common)
            matrices[key] = {pair: by[n] for pair, by in pairs.items()}
    return matrices


def peer_findings(report):
    """The peer matrix: the copies between two devices (the range, and how they travelled) and within one; a pair
    under PEER_SLOW of the pairs' median is named: its devices are joined differently from the rest, or its link is
    degraded."""
    out = []
    for (_, backend), m in peer_matrix(report).items():
        between = {pair: cp for pair, cp in m.items() if pair[0] != pair[1]}
        within = [cp for pair, cp in m.items() if pair[0] == pair[1]]
        size = format_size(next(iter(m.values()))[1].bytes)
        devices = len({d for pair in m for d in pair})
        parts = []
        if between:
            rates = [c.gbps(p) for c, p in between.values()]
            paths = sorted({p.peer_path for _, p in between.values() if p.peer_path})
            parts.append(f"between two devices {_range(rates)} GB/s ({size} copies"
                         + (f"; {', '.join(paths)}" if paths else "") + ")")
        if within:
            parts.append(f"within one device {_range([c.gbps(p) for c, p in within])} GB/s")
        text = "; ".join(parts)
        slow = []
        if len(between) >= 3:
            median = statistics.median(c.gbps(p) for c, p in between.values())
            slow = sorted(((pair, cp) for pair, cp in between.items() if cp[0].gbps(cp[1]) < PEER_SLOW * median),
                          key=lambda x: x[1][0].gbps(x[1][1]))
            if slow:
                (a, b), (c, p) = slow[0]
                text += (f". {len(slow)} of {len(between)} pairs run under {100 * PEER_SLOW:.0f}% of the pairs' median "
                         f"({format_gbps(median)} GB/s); the slowest, dev{a} to dev{b}, at {format_gbps(c.gbps(p))}"
                         + (f" ({p.peer_path})" if p.peer_path else "")
                         + ": those devices are joined differently from the rest (nvidia-smi topo -m shows how)")
        evidence = [cp[1] for _, cp in slow[:4]] or [p for _, p in list(m.values())[:4]]
        out.append(Finding("anomaly" if slow else "guide", f"{backend} peer matrix ({devices} devices)", text + ".",
                           cite(*evidence), weight=30 if slow else 2))
    return out


def stand_in_findings(report):
    """A run without any accelerator says so first: every figure is the host's memory system."""
    alone = [g for g in report.groups if not g.at_once]
    if not alone or any(not stand_in(g) for g in alone):
        return []
    names = ", ".join(dict.fromkeys(g.backend for g in alone))
    return [Finding("guide", "No accelerator measured",
                    f"every device here is a CPU ({names}): the figures are this host's memory system through each "
                    f"API, not a link to a device, so none of them is a finding about transfers; run xferbench where "
                    f"a GPU or FPGA is installed to measure one", weight=0.5)]
