"""From loaded runs to what the report shows: curves, peaks, fits, first-use
costs and break-even, API comparison, and the points that did not run.

Which points may enter a peak, a headline or a fit is core's decision, read
from each point's verdict (load.py); the ceiling a curve is held to is the
points' own (link_ceiling_gbps). Nothing here judges a point again."""

import math
from collections import OrderedDict
from dataclasses import dataclass, field
from typing import Optional

from .catalogue import LATENCY
from .model import Fit, fit_cost_model
from .spread import clearly_faster

DIRECTION_ORDER = ["h2d", "d2h", "bidir", "rw", "d2d"]
DIRECTION_TITLES = {
    "h2d": "host to device (h2d)",
    "d2h": "device to host (d2h)",
    "bidir": "both directions at once (bidir, total of both)",
    "rw": "write then read back (rw, the pair)",
    "d2d": "device to device (d2d)",
}


def direction_sort_key(d):
    return (DIRECTION_ORDER.index(d), "") if d in DIRECTION_ORDER else (len(DIRECTION_ORDER), d)


def is_transfer_part(name):
    """bidir's parts are the two directions; other parts (map, unmap, queued_to_end) are steps of one transfer."""
    return name in ("h2d", "d2h")


def direction_title(d):
    return DIRECTION_TITLES.get(d, d)


@dataclass(frozen=True)
class Group:
    """One backend on one device in one run: a panel in the figures, a column in comparisons."""

    run_label: str
    backend: str
    device_index: int
    name: str
    device: str
    device_type: str
    at_once: str = ""  # "device" / "aggregate": `sweep --together`'s points (Point.at_once)
    at_once_devices: tuple = ()


@dataclass
class Curve:
    group: Group
    route: str
    direction: str
    host_memory: str
    points: list  # ok points, ascending size
    part: str = ""  # for bidir: the one direction this curve shows ("h2d", "d2h")
    link_limit: Optional[float] = None  # GB/s this curve cannot exceed, where known
    fit: Optional[Fit] = None

    @property
    def route_info(self):
        """What the run's catalogue says of the route (family, role)."""
        return self.points[0].route_info

    @property
    def kind_info(self):
        """What the run's catalogue says of the host memory kind (traits, properties)."""
        return self.points[0].kind_info

    @property
    def is_latency(self):
        """Whether the points are a latency route's: each the time of one repetition (a dependent load, a store's
        round trip), not a transfer of `bytes`, so no GB/s of theirs means anything. The file's catalogue says
        so (family latency), never the route's name."""
        return self.route_info.family == LATENCY

    @property
    def label(self):
        """Name inside its group's panel."""
        text = f"{self.route} · {self.host_memory}"
        return f"{text} [{self.part} part]" if self.part else text

    @property
    def name(self):
        return f"{self.group.name} · {self.label}"

    def time(self, p):
        return p.parts[self.part]["median_s"] if self.part else p.median_s

    def gbps(self, p):
        return p.parts[self.part]["gbps"] if self.part else p.gbps

    def nbytes(self, p):
        """Bytes one timed repetition moves: what the model fits against."""
        return p.bytes if self.part else p.bytes_per_rep

    @property
    def sizes(self):
        return [p.bytes for p in self.points]

    @property
    def trusted(self):
        """The points a peak, a headline or a model may use: those core's verdict trusts (none faster than
        the link carries, none whose device clock left out work the wall clock saw)."""
        return [p for p in self.points if p.trusted]

    @property
    def clock_misses_work(self):
        """Points whose device clock left out work the wall clock saw, as core found them (a bidir point's
        parts are listed with the point's own curve)."""
        return [] if self.part else [p for p in self.points if p.clock_misses_host_work]

    @property
    def peak(self):
        """The fastest trusted point; None when every point is suspect."""
        return max(self.trusted, key=self.gbps, default=None)

    @property
    def half_peak(self):
        """The smallest trusted size that reaches half the peak bandwidth."""
        if self.peak is None:
            return None
        half = self.gbps(self.peak) / 2
        return next(p for p in self.trusted if self.gbps(p) >= half)

    @property
    def not_converged(self):
        return [p for p in self.points if not p.converged]

    @property
    def unverified(self):
        return [p for p in self.points if not p.verified]

    @property
    def above_limit(self):
        """Points core found above their link's ceiling (listed with the point's own curve, not its parts)."""
        return [] if self.part else [p for p in self.points if p.above_link_limit]


@dataclass
class BreakEven:
    group: Group
    route: str
    direction: str
    host_memory: str
    baseline: str
    by_size: "OrderedDict[int, Optional[float]]"  # bytes -> transfers (1 = from the first; inf = never)
    route_info: object = None  # the catalogue's route and kind (catalogue.RouteInfo, KindInfo)
    kind_info: object = None

    @property
    def label(self):
        return f"{self.route} · {self.host_memory}"


@dataclass
class Problem:
    group_name: str
    route: str
    direction: str
    host_memory: str
    status: str
    reason: str
    sizes: list


@dataclass
class PairComparison:
    reference: Group
    other: Group
    sizes: list  # sizes both ran
    ratio: dict  # bytes -> other's best time / reference's best time
    matched: list  # (route, host_memory, {bytes: ratio}) where both ran the same route and kind


@dataclass
class ApiComparison:
    direction: str
    reference: Group
    groups: list  # every group in the comparison, reference first
    best: dict  # group -> {bytes: fastest ok point at that size}
    pairs: list  # PairComparison for each non-reference group


@dataclass
class Report:
    runs: list
    groups: list
    curves: list
    part_curves: list
    directions: list
    kinds: list  # host memory kinds in order of first appearance (colours)
    routes: list  # routes in order of first appearance (line styles)
    problems: list
    break_even: list
    api: list
    counts: dict = field(default_factory=dict)
    emulated: list = field(default_factory=list)  # ok points measured under emulation, kept out of the curves

    def curves_for(self, direction, group=None):
        return [c for c in self.curves if c.direction == direction and (group is None or c.group == group)]

    def groups_for(self, direction):
        seen = []
        for c in self.curves:
            if c.direction == direction and c.group not in seen:
                seen.append(c.group)
        return seen


def _groups(runs):
    """Names each (run, backend, device, at once) so that names are unique yet short."""
    runs_per_backend = {}
    devices_per_backend = {}
    for run in runs:
        for p in run.points:
            runs_per_backend.setdefault(p.backend, set()).add(run.label)
            if p.at_once != "aggregate":
                devices_per_backend.setdefault((run.label, p.backend), set()).add(p.device_index)
    groups = OrderedDict()
    for run in runs:
        for p in run.points:
            key = _group_key(run, p)
            if key in groups:
                continue
            name = p.backend
            if p.at_once == "aggregate":
                name += f" all {len(p.at_once_devices)} at once"
            elif len(devices_per_backend[(run.label, p.backend)]) > 1:
                name += f" dev{p.device_index}"
            if p.at_once == "device":
                name += f" ({len(p.at_once_devices)} at once)"
            if len(runs_per_backend[p.backend]) > 1:
                name += f" [{run.label}]"
            groups[key] = Group(run.label, p.backend, p.device_index, name, p.device, p.device_type, p.at_once,
                                p.at_once_devices)
    return groups


def _group_key(run, p):
    return (run.label, p.backend, p.device_index, p.at_once)


def _link_limit(points):
    """The ceiling core held the curve's points to (their link in their direction, the sum of the links for
    devices at once); None where none crosses a link."""
    return max((p.link_limit_gbps for p in points if p.link_limit_gbps), default=None)


def _problems(runs, groups):
    out = []
    for run in runs:
        current = None
        for p in run.points:
            if p.ok:
                current = None
                continue
            g = groups[_group_key(run, p)]
            key = (g.name, p.route, p.direction, p.host_memory, p.status, p.reason)
            if current is not None and current[0] == key:
                current[1].sizes.append(p.bytes)
                continue
            problem = Problem(*key, sizes=[p.bytes])
            out.append(problem)
            current = (key, problem)
    return out


def _break_even(curves):
    """For each group/route/direction: after how many transfers each host memory
    kind's costlier setup pays for itself against the baseline kind.

    Cost of N transfers from a fresh buffer = alloc + touch + first transfer + (N - 1) x steady time.
    """
    by_route = OrderedDict()
    for c in curves:
        if any(p.first_use for p in c.points):
            by_route.setdefault((c.group, c.route, c.direction), []).append(c)
    out = []
    for (group, route, direction), cs in by_route.items():
        if len(cs) < 2:
            continue
        baseline = next((c for c in cs if c.kind_info.program_default), None)
        if baseline is None:
            # The kind whose setup is cheapest at the smallest size it measured.
            baseline = min(cs, key=lambda c: _setup(next(p for p in c.points if p.first_use)))
        base_at = {p.bytes: p for p in baseline.points if p.first_use}
        for c in cs:
            if c is baseline:
                continue
            by_size = OrderedDict()
            for p in c.points:
                b = base_at.get(p.bytes)
                if p.first_use and b:
                    by_size[p.bytes] = break_even_transfers(_setup(b), b.median_s, _setup(p), p.median_s,
                                                            clearly_faster(p, b))
            if by_size:
                out.append(BreakEven(group, route, direction, c.host_memory, baseline.host_memory, by_size,
                                     c.route_info, c.kind_info))
    return out


def _setup(p):
    """One-off cost of a fresh buffer beyond a steady-state transfer."""
    f = p.first_use
    return f.alloc_s + f.touch_s + f.first_transfer_s - p.median_s


def break_even_transfers(setup_base, t_base, setup_new, t_new, faster=None):
    """Smallest N for which setup_new + N t_new <= setup_base + N t_base.

    1: the new kind is never worse; math.inf: it never pays for itself.
    faster=False says the new kind's transfers are not faster beyond the
    measured spread, so a costlier setup never pays (rather than after a
    number of transfers that only noise decided).
    """
    if setup_new <= setup_base and t_new <= t_base:
        return 1
    if t_new >= t_base or faster is False:
        return math.inf
    return max(1, math.ceil((setup_new - setup_base) / (t_base - t_new)))


def _api(curves, groups_order, reference_backend=None):
    # A latency route's time is one access, not a transfer of that size: it is no backend's fastest transfer.
    curves = [c for c in curves if not c.is_latency]
    out = []
    directions = sorted({c.direction for c in curves}, key=direction_sort_key)
    for d in directions:
        best = OrderedDict()
        for g in groups_order:
            for c in curves:
                if c.direction != d or c.group != g:
                    continue
                sizes = best.setdefault(g, {})
                for p in c.points:
                    if p.bytes not in sizes or p.median_s < sizes[p.bytes].median_s:
                        sizes[p.bytes] = p
        if len(best) < 2:
            continue
        gs = list(best)
        ref = next((g for g in gs if g.backend == reference_backend), gs[0])
        gs.remove(ref)
        gs.insert(0, ref)
        pairs = []
        for g in gs[1:]:
            common = sorted(set(best[ref]) & set(best[g]))
            if not common:
                continue
            ratio = {n: best[g][n].median_s / best[ref][n].median_s for n in common}
            matched = []
            for rc in curves:
                if rc.group != ref or rc.direction != d:
                    continue
                for oc in curves:
                    if oc.group == g and oc.direction == d and (oc.route, oc.host_memory) == (rc.route, rc.host_memory):
                        rt = {p.bytes: p.median_s for p in rc.points}
                        r = {p.bytes: p.median_s / rt[p.bytes] for p in oc.points if p.bytes in rt}
                        if r:
                            matched.append((rc.route, rc.host_memory, r))
            pairs.append(PairComparison(ref, g, common, ratio, matched))
        if pairs:
            out.append(ApiComparison(d, ref, [ref] + [p.other for p in pairs], best, pairs))
    return out


def analyze(runs, reference_backend=None):
    groups = _groups(runs)
    curves = OrderedDict()
    kinds, routes = [], []
    emulated = []
    for run in runs:
        for p in run.points:
            if p.host_memory not in kinds:
                kinds.append(p.host_memory)
            if p.route not in routes:
                routes.append(p.route)
            if not p.ok:
                continue
            if p.emulation:
                emulated.append(p)
                continue
            g = groups[_group_key(run, p)]
            route = p.curve_route
            if route not in routes:
                routes.append(route)
            key = (g, route, p.direction, p.host_memory)
            if key not in curves:
                curves[key] = Curve(g, route, p.direction, p.host_memory, [])
            curves[key].points.append(p)
    ordered = []
    group_list = list(groups.values())
    for c in curves.values():
        # The same size twice in one run (a repeated sweep): keep the first.
        seen = {}
        for p in c.points:
            seen.setdefault(p.bytes, p)
        c.points = sorted(seen.values(), key=lambda p: p.bytes)
        c.link_limit = _link_limit(c.points)
        c.fit = fit_cost_model([c.nbytes(p) for p in c.trusted], [c.time(p) for p in c.trusted])
        ordered.append(c)
    ordered.sort(key=lambda c: (group_list.index(c.group), direction_sort_key(c.direction),
                                routes.index(c.route), kinds.index(c.host_memory)))
    part_curves = []
    for c in ordered:
        names = sorted({n for p in c.points for n in p.parts}, key=direction_sort_key)
        for name in names:
            pts = [p for p in c.points if name in p.parts]
            # A part that is a direction (bidir's h2d, d2h) crosses its own lanes, half of bidir's ceiling; a
            # sub-step (OpenCL's map, unmap) is a time, not a transfer of its own, so no link bounds it.
            limit = c.link_limit / 2 if c.link_limit and c.direction == "bidir" and is_transfer_part(name) else None
            pc = Curve(c.group, c.route, c.direction, c.host_memory, pts, part=name, link_limit=limit)
            pc.fit = fit_cost_model([pc.nbytes(p) for p in pc.trusted], [pc.time(p) for p in pc.trusted])
            part_curves.append(pc)
    all_points = [p for r in runs for p in r.points]
    counts = {s: sum(p.status == s for p in all_points) for s in ("ok", "skipped", "failed")}
    counts["not_converged"] = sum(1 for p in all_points if p.ok and not p.converged)
    counts["unverified"] = sum(1 for p in all_points if p.ok and not p.verified)
    counts["emulated"] = len(emulated)
    return Report(
        runs=runs,
        groups=[g for g in group_list if any(c.group == g for c in ordered)],
        curves=ordered,
        part_curves=part_curves,
        directions=sorted({c.direction for c in ordered}, key=direction_sort_key),
        kinds=kinds,
        routes=routes,
        problems=_problems(runs, groups),
        break_even=_break_even(ordered),
        api=_api(ordered, group_list, reference_backend),
        counts=counts,
        emulated=emulated,
    )
