"""Findings: what the data says a reader should know, computed from the analysed
sweep (and the studies, see studies.py), each with its numbers and the points it
rests on. Nothing here is written by hand: every sentence is filled in from a
measurement, and a finding whose measurements are absent is simply not made.

A finding names its evidence as "file#index" (the point's position in the
result file's results array), so a reader can check the number in the JSON.

What may headline (docs/findings.md): a finding that rests on a comparison holds
beyond the raw samples' spread at two neighbouring sizes at least, so an
immediate rerun repeats it; expected physics (a CPU falling out of its caches),
a CPU stand-in device and a measurement caveat are "context": listed, never a
headline. Titles carry no numbers, so two runs' headlines compare by title.
"""

import dataclasses
import math
import statistics
from dataclasses import dataclass, field

from .spread import clearly_faster
from .units import format_gbps, format_size, format_time

# A link is "below its ceiling" when the best trusted point of a direction
# reaches less than this share of the ceiling the tool computed for the link.
BELOW_CEILING = 0.85
# A curve "collapses" where a larger size runs at less than 1/COLLAPSE of the
# best bandwidth the curve reached at a smaller size.
COLLAPSE = 4.0
# Misalignment is reported where the unaligned kind takes this much longer.
MISALIGN_MIN = 1.10
MISALIGN_MIN_BYTES = 4096
# A peer pair is "slow" below this share of the median of the pairs between two devices.
PEER_SLOW = 0.8
# Devices at once "scale" when their aggregate reaches this share of the sum of their figures alone.
AT_ONCE_SCALES = 0.8


# Two neighbouring sizes at least: one size alone is what a rerun contradicts.
CONFIRMING_SIZES = 2
# Pinned memory "pays" where it moves at least twice the pageable rate, the staged copier where it moves a quarter
# more, at every size from there on, in the bandwidth regime (64 KiB and up; below it the call's own cost rules, the
# API overhead finding's subject). Nearer thresholds moved the start a size between two runs on the H200
# (docs/results/default-run/).
PIN_PAYS = 2.0
STAGED_PAYS = 1.25
BANDWIDTH_MIN_BYTES = 64 << 10


@dataclass
class Finding:
    # "anomaly" (look at this), "guide" (what to do), or "context" (expected
    # behaviour, a stand-in device, a caveat on some points: never a headline)
    kind: str
    title: str  # a short name for the list
    text: str  # the sentence with its numbers
    evidence: list = field(default_factory=list)  # "file#index" of the points it rests on
    weight: float = 0.0  # orders the list within its kind (larger first)

    def line(self):
        return f"{self.title}: {self.text}"


def cite(*points):
    return [f"{p.run.path.name}#{p.index}" for p in points if p is not None]


def stand_in(group):
    """A CPU device (the host reference, OpenCL on PoCL, Vulkan on lavapipe): its figures are the host's memory
    system, not a link, so what they show is context."""
    return group.device_type == "cpu"


def _kind(group, kind):
    return "context" if stand_in(group) else kind


def _runs(holding, sizes):
    """The longest run of neighbouring sizes (consecutive in `sizes`) all in `holding`."""
    best, cur = [], []
    for n in sizes:
        cur = cur + [n] if n in holding else []
        if len(cur) > len(best):
            best = cur
    return best


def _wall(p):
    """What a program waits for: the wall clock where the point has one (device
    events leave out the API's own work, and backends time differently)."""
    return p.wall_median_s or p.median_s


def _curves_by(report, key):
    out = {}
    for c in report.curves:
        out.setdefault(key(c), []).append(c)
    return out


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
            cs = [c for c in report.curves if c.group == g and c.direction == d and c.link_limit]
            best, best_c = None, None
            for c in cs:
                for p in c.trusted:
                    if p.link_ceiling_gbps and (best is None or c.gbps(p) > c.gbps(best)):
                        best, best_c = p, c
            if best is None:
                continue
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
        a, u = kinds.get("pageable"), kinds.get("pageable-unaligned")
        if a and u and (got := _misalignment(a, u)):
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
        if b.host_memory != "pinned" or b.direction not in ("h2d", "d2h") or not b.route.startswith("copy"):
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


def _times(n):
    return "1 transfer" if n == 1 else f"{n:,} transfers"


def _points_at(report, group, route, direction, kinds, sizes):
    pts = []
    for c in report.curves:
        if c.group == group and c.route == route and c.direction == direction and c.host_memory in kinds:
            pts += [p for p in c.points if p.bytes in sizes]
    return pts


def _crossover(faster, slower):
    """Smallest size from which every common size has `faster` clearly faster by STAGED_PAYS, at CONFIRMING_SIZES
    sizes at least; None if never. (Without the margin, a start at a size where the two were close moved from
    1 MiB to 16 MiB between two runs on the H200.)"""
    fa = {p.bytes: p for p in faster.trusted}
    sl = {p.bytes: p for p in slower.trusted}
    start = _pays_from(fa, sl, STAGED_PAYS, time=lambda p: p.median_s)
    return start, fa, sl, sorted(set(fa) & set(sl))


def route_crossover_findings(report):
    """Staged copy against the plain pageable copy; a kernel reading host memory against a copy."""
    out = []
    by = _curves_by(report, lambda c: (c.group, c.direction))
    for (g, d), cs in by.items():
        if d not in ("h2d", "d2h"):
            continue
        staged = [c for c in cs if "staged" in c.route and c.host_memory == "pageable"]
        plain = next((c for c in cs if c.route == "copy-sync" and c.host_memory == "pageable"), None)
        # The driver's own answer to pageable memory (cudaMemcpyBatchAsync with
        # the any-order hint), set against libxfer's and the plain call.
        batch = next((c for c in cs if c.route == "batch-any-order" and c.host_memory == "pageable"), None)
        for s in staged:
            if plain:
                # Detail: "Pin or stage large buffers" says it with a margin (STAGED_PAYS); without one the start
                # moved from 1 MiB to 16 MiB between two runs on the H200.
                out += [dataclasses.replace(f, kind="context")
                        for f in _crossover_finding(g, d, s, plain, "staged copy beats the plain pageable copy")]
            if batch:
                out += _crossover_finding(g, d, s, batch, "staged copy beats the driver's batched copy")
        if batch and plain:
            out += _crossover_finding(g, d, batch, plain, "the driver's batched copy beats the plain pageable copy")
        kernels = [c for c in cs if c.route == "kernel-host"]
        for k in kernels:
            copy = next((c for c in cs if c.route == "copy-async" and c.host_memory == k.host_memory), None)
            if copy and k.host_memory in ("pinned", "alloc-host-ptr"):
                out += _crossover_finding(g, d, k, copy, "a kernel reading host memory beats a copy", below=True)
    return out


def _crossover_finding(g, d, a, b, what, below=False):
    start, fa, sl, common = _crossover(a, b)
    wins = [n for n in common if clearly_faster(fa[n], sl[n])]
    label = f"{g.name} {d}: {a.route} vs {b.route} ({a.host_memory}"
    label += ")" if a.host_memory == b.host_memory else f" vs {b.host_memory})"
    if not common:
        return []
    if below and len(_runs(set(wins), common)) >= CONFIRMING_SIZES:
        hi = max(wins)
        text = (f"{what} up to {format_size(hi)} ({format_time(fa[hi].median_s)} against "
                f"{format_time(sl[hi].median_s)}), at {len(wins)} of {len(common)} sizes")
        return [Finding(_kind(g, "guide"), f"Crossover: {label}", text, cite(fa[hi], sl[hi]), weight=3)]
    if start is not None and not below:
        text = (f"{what} from {format_size(start)} on ({format_time(fa[start].median_s)} against "
                f"{format_time(sl[start].median_s)} there)")
        return [Finding(_kind(g, "guide"), f"Crossover: {label}", text, cite(fa[start], sl[start]), weight=3)]
    # Nothing to act on: context, so that a crossover one run finds at its edge is never contradicted by a headline.
    return [Finding("context", f"No crossover: {label}",
                    f"{what.split(' beats ')[0]} is not faster beyond the spread at any of "
                    f"{format_size(common[0])} to {format_size(common[-1])}", [], weight=1)]


def api_overhead_findings(report):
    """The seed's question: what a generic API (OpenCL) costs against the vendor's (CUDA) for small transfers."""
    rows = {}  # OpenCL backend -> [(ratio, route, direction, bytes, its point, CUDA's point, CUDA backend)]
    by = _curves_by(report, lambda c: (c.direction, c.route))
    for (d, route), cs in by.items():
        if d not in ("h2d", "d2h"):
            continue
        best = {}  # backend -> fastest point at the smallest common size
        smallest = {}
        for c in cs:
            if not c.points:
                continue
            smallest.setdefault(c.group.backend, set()).update(p.bytes for p in c.points)
        ocl = [b for b in smallest if b.startswith("opencl")]
        cuda = [b for b in smallest if b.startswith("cuda")]
        if not ocl or not cuda:
            continue
        common = set.intersection(*(smallest[b] for b in ocl + cuda))
        if not common:
            continue
        n = min(common)
        for c in cs:
            for p in c.points:
                if p.bytes == n and (c.group.backend not in best or _wall(p) < _wall(best[c.group.backend])):
                    best[c.group.backend] = p
        ref = min(cuda, key=lambda b: _wall(best[b]))
        for o in ocl:
            # Only beyond both points' spread: a tie is no overhead to report.
            if clearly_faster(best[ref], best[o]):
                rows.setdefault(o, []).append((_wall(best[o]) / _wall(best[ref]), route, d, n, best[o], best[ref], ref))
    # One finding per OpenCL platform, its title without the route or the CUDA API that won (either may change
    # from run to run when two are close): the largest cost in the text, the others after it.
    out = []
    for o, found in rows.items():
        found.sort(key=lambda r: -r[0])
        r, route, d, n, po, pr, ref = found[0]
        text = (f"a {format_size(n)} {route} {d} costs {format_time(_wall(po))} through {o} against "
                f"{format_time(_wall(pr))} through {ref} on the wall clock ({r:.2f}x), fastest host memory kind of "
                f"each: for many small transfers, the vendor's API")
        if len(found) > 1:
            text += "; also " + ", ".join(f"{x[1]} {x[2]} {x[0]:.2f}x" for x in found[1:])
        out.append(Finding("guide", f"API overhead: {o} against CUDA", text, cite(po, pr), weight=r))
    return out


def _api(backend):
    """The API a backend speaks, for the same-device comparisons."""
    for prefix, name in (("xrt", "XRT"), ("opencl", "OpenCL"), ("vulkan", "Vulkan"), ("cuda", "CUDA")):
        if backend.startswith(prefix):
            return name
    return None


# A generic API against the vendor's on one device: seed 002's OpenCL against XRT, and issue 18's Vulkan
# against CUDA.
API_PAIRS = (("OpenCL", "XRT"), ("Vulkan", "CUDA"))


def api_pair_findings(report):
    """A generic API against the vendor's on the same device (the same PCI address): the cost of one small
    transfer on the wall clock, and the peak, each API's best route and kind. The CPU's own stores and loads
    (routes cpu-*) are left out: their time ends before the device has the data, unlike a copy's."""
    by = {}
    for c in report.curves:
        pci = next((p.device_pci for p in c.points if p.device_pci), "")
        api = _api(c.group.backend)
        if pci and api and c.direction in ("h2d", "d2h") and not c.part and not c.route.startswith("cpu-"):
            by.setdefault((pci, c.direction), {}).setdefault(api, []).append(c)
    out = []
    for (pci, d), apis in by.items():
        for generic, vendor in API_PAIRS:
            if generic not in apis or vendor not in apis:
                continue
            pts = {a: [(c, p) for c in apis[a] for p in c.trusted] for a in (generic, vendor)}
            common = set.intersection(*({p.bytes for _, p in v} for v in pts.values()))
            if not common:
                continue
            n = min(common)
            small = {a: min((cp for cp in v if cp[1].bytes == n), key=lambda cp: _wall(cp[1])) for a, v in pts.items()}
            peak = {a: max(v, key=lambda cp: cp[0].gbps(cp[1])) for a, v in pts.items()}

            def best(a):
                c, p = peak[a]
                return f"{a} {format_gbps(c.gbps(p))} GB/s ({c.route}, {c.host_memory}, {format_size(p.bytes)})"

            text = (f"one {format_size(n)} transfer costs {format_time(_wall(small[generic][1]))} through {generic} "
                    f"and {format_time(_wall(small[vendor][1]))} through {vendor} on the wall clock; peaks: "
                    f"{best(generic)}, {best(vendor)}")
            out.append(Finding("guide", f"{generic} against {vendor} ({pci} {d})", text,
                               cite(small[generic][1], small[vendor][1], peak[generic][1], peak[vendor][1]), weight=3))
    return out


# A CPU store into device memory through the BAR (Vulkan's device-local-host-visible memory) against CUDA's copy.
BAR_KIND = "device-local-host-visible"
BAR_STORE_ROUTES = ("cpu-store", "cpu-store-nt")  # the CPU's time to store N bytes (and fence): bandwidth by size
BAR_LATENCY_ROUTES = ("cpu-store-latency", "cpu-store-nt-latency")  # until a device reader answers: a round trip
CUDA_COPY_ROUTES = ("copy-sync", "copy-async")
CUDA_COPY_KINDS = ("pinned", "pinned-wc")


def bar_store_findings(report):
    """Issue 18: where a CPU store into device memory through the BAR beats CUDA's copy of the same size (pinned
    memory, the wall clock: what a program waits for), on the same GPU (the same PCI address). The BAR's time at a
    size is the round trip of cpu-store-latency where that size was measured (the store made visible to a device
    reader plus the reader's answer: an upper bound), else the CPU's time to store it (cpu-store) plus the smallest
    measured store's round trip (the last bytes' way to the reader, bounded above). No latency, no CUDA copy: no
    finding."""
    sides = {}  # pci -> {"latency"|"store"|"cuda": {bytes: (curve, point)}}
    for c in report.curves:
        if c.direction != "h2d" or c.part:
            continue
        b = c.group.backend
        if b.startswith("vulkan") and c.host_memory == BAR_KIND and c.route in BAR_LATENCY_ROUTES:
            side, t = "latency", (lambda p: p.median_s)
        elif b.startswith("vulkan") and c.host_memory == BAR_KIND and c.route in BAR_STORE_ROUTES:
            side, t = "store", (lambda p: p.median_s)
        elif b.startswith("cuda") and c.route in CUDA_COPY_ROUTES and c.host_memory in CUDA_COPY_KINDS:
            side, t = "cuda", _wall
        else:
            continue
        for p in c.trusted:
            if not p.device_pci:
                continue
            best = sides.setdefault(p.device_pci, {}).setdefault(side, {})
            if p.bytes not in best or t(p) < t(best[p.bytes][1]):
                best[p.bytes] = (c, p)
    out = []
    for pci, got in sorted(sides.items()):
        lat, store, cuda = got.get("latency"), got.get("store", {}), got.get("cuda")
        if not lat or not cuda:
            continue
        n0 = min(lat)  # the smallest store timed to the reader
        bar = {n: (lat[n][1].median_s, [lat[n][1]]) for n in lat}
        for n, (_, p) in store.items():
            if n not in bar:
                bar[n] = (p.median_s + lat[n0][1].median_s, [p, lat[n0][1]])
        common = sorted(set(bar) & set(cuda))
        if not common:
            continue
        cu = {n: _wall(cuda[n][1]) for n in cuda}
        # The opening comparison: the smallest store timed to the reader, against CUDA's copy of that size
        # (or, where CUDA has no such point, its smallest).
        nc = n0 if n0 in cuda else min(cuda)
        cc, cp = cuda[nc]
        text = (f"a CPU store of {format_size(n0)} into device memory is seen by the device within "
                f"{format_time(lat[n0][1].median_s)} ({lat[n0][0].route}: a round trip, an upper bound) against "
                f"{format_time(cu[nc])} for CUDA's {format_size(nc)} copy ({cc.route}, {cc.host_memory}, wall clock)")
        wins = 0
        while wins < len(common) and bar[common[wins]][0] < cu[common[wins]]:
            wins += 1
        evidence = [lat[n0][1], cp]
        if wins == 0:
            text += (f"; CUDA's copy is faster from {format_size(common[0])} on "
                     f"({format_time(cu[common[0]])} against {format_time(bar[common[0]][0])} through the BAR)")
            evidence += bar[common[0]][1] + [cuda[common[0]][1]]
        else:
            hi = common[wins - 1]
            text += (f"; the BAR store is faster up to {format_size(hi)} ({format_time(bar[hi][0])} against "
                     f"{format_time(cu[hi])})")
            evidence += bar[hi][1] + [cuda[hi][1]]
            if wins < len(common):
                lo = common[wins]
                text += (f", CUDA's copy from {format_size(lo)} ({format_time(cu[lo])} against "
                         f"{format_time(bar[lo][0])})")
                evidence += bar[lo][1] + [cuda[lo][1]]
            else:
                text += ", at every size both measured"
        if any(n > max(lat) for n in common[:wins + 1]):
            text += (f"; above {format_size(max(lat))} the BAR's time is cpu-store's plus the {format_size(n0)} "
                     f"round trip")
        once = list({id(p): p for p in evidence}.values())
        out.append(Finding("guide", f"BAR store against CUDA's copy ({pci} h2d)", text, cite(*once), weight=3))
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


def _range(values):
    lo, hi = min(values), max(values)
    return format_gbps(lo) if f"{lo:.2f}" == f"{hi:.2f}" else f"{format_gbps(lo)}-{format_gbps(hi)}"


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


# The plain copy routes, and the host memory kinds a device's DMA reads directly (each API's pinned memory).
PLAIN_COPY_ROUTES = ("copy-sync", "copy-async", "copy")
DMA_KINDS = ("pinned", "pinned-wc", "registered", "mapped", "alloc-host-ptr", "use-host-ptr", "host-coherent",
             "host-cached")


def _wall_gbps(p):
    return p.bytes_per_rep / _wall(p) / 1e9


def _fastest_by_size(curves, min_bytes=0):
    """{bytes: point} the fastest on the wall clock among the curves' trusted points of min_bytes and more."""
    best = {}
    for c in curves:
        for p in c.trusted:
            if p.bytes < min_bytes:
                continue
            if p.bytes not in best or _wall(p) < _wall(best[p.bytes]):
                best[p.bytes] = p
    return best


def _pays_from(faster, slower, factor, time=_wall):
    """The smallest size from which `faster` ({bytes: point}) is clearly faster than `slower` by `factor` (in
    `time`) at every larger common size, CONFIRMING_SIZES of them at least; None where it does not."""
    common = sorted(set(faster) & set(slower))
    start = None
    for n in reversed(common):
        f, s = faster[n], slower[n]
        if not (clearly_faster(f, s) and time(s) / time(f) >= factor):
            break
        start = n
    if start is None or len([n for n in common if n >= start]) < CONFIRMING_SIZES:
        return None
    return start


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

            pageable = fastest(lambda c: c.route in PLAIN_COPY_ROUTES and c.host_memory == "pageable")
            pinned = fastest(lambda c: c.route in PLAIN_COPY_ROUTES and c.host_memory in DMA_KINDS)
            staged = fastest(lambda c: c.route == "staged" and c.host_memory == "pageable")
            start = _pays_from(pinned, pageable, PIN_PAYS)
            if start is None:
                continue
            seen.add((g.device_index, d))
            n = max(set(pinned) & set(pageable))
            pin, page = pinned[n], pageable[n]
            gain = _wall(page) / _wall(pin)
            kind = next(c.host_memory for c in cs if pin in c.points)
            text = (f"from {format_size(start)} on a pageable buffer costs: at {format_size(n)} it moves "
                    f"{format_gbps(_wall_gbps(page))} GB/s where {kind} memory moves {format_gbps(_wall_gbps(pin))} "
                    f"({gain:.1f}x, {g.backend})")
            evidence = [page, pin]
            s_start = _pays_from(staged, pageable, STAGED_PAYS)
            if s_start is not None and n in staged:
                st = staged[n]
                text += (f"; the staged copier moves it at {format_gbps(_wall_gbps(st))} GB/s "
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


def sweep_findings(report):
    """Every finding from the sweep analysis: anomalies first, then guidance, each by weight. The findings about
    one device's curves read the devices alone; those measured at once (`--together`) have their own."""
    alone = dataclasses.replace(report, groups=[g for g in report.groups if not g.at_once],
                                curves=[c for c in report.curves if not c.group.at_once],
                                part_curves=[c for c in report.part_curves if not c.group.at_once])
    fs = (stand_in_findings(report) + pin_or_stage_findings(alone)
          + link_findings(alone) + above_ceiling_findings(report) + clock_findings(report) + collapse_findings(alone)
          + convergence_findings(report) + misalignment_findings(alone) + pinned_break_even_findings(alone)
          + route_crossover_findings(alone) + api_overhead_findings(alone) + api_pair_findings(alone)
          + bar_store_findings(alone) + at_once_findings(report) + peer_findings(report))
    return order(fs)


KIND_ORDER = {"anomaly": 0, "guide": 1, "context": 2}


# Guidance that comes before the rest whatever its factor: the bandwidth a pageable buffer loses applies to every
# large transfer a program makes (the API overhead's factor is per call, on transfers of microseconds).
FIRST_GUIDES = ("Pin or stage",)


def order(findings):
    """Anomalies first (they change how to read the rest), then what to do, by what it buys (weight: the factor
    gained), then context."""
    return sorted(findings, key=lambda f: (KIND_ORDER.get(f.kind, 1), not f.title.startswith(FIRST_GUIDES),
                                           -f.weight))


# At most this many on the first screen; the rest in the table below.
HEADLINES = 6


TOPICS = ("downtrained", "below the link ceiling", "collapse", "Pin or stage", "Write-combining", "misaligns",
          "API overhead", "Crossover", "break-even", "Unaligned", "vadd", "at the link ceiling", "BAR store")


def headlines(findings):
    """The first finding of each topic, anomalies first, context never: what fits the first screen. "Pin or
    stage" is one topic per direction (both are what a user most needs)."""
    picked, seen = [], set()
    for f in findings:
        if f.kind == "context":
            continue
        topic = next((t for t in TOPICS if t.lower() in f.title.lower()), f.title)
        if topic == "Pin or stage":
            topic = f.title
        if topic in seen:
            continue
        seen.add(topic)
        picked.append(f)
        if len(picked) == HEADLINES:
            break
    return picked


@dataclass
class Agreement:
    first: list  # the headlines' titles of the first run
    second: list
    common: list  # titles both have
    contradicted: list  # (title, first kind, second kind): the same title said as a fault once, as guidance once

    @property
    def agrees(self):
        """All headlines but one repeated, of the longer list (five of six), and none said the other way."""
        need = max(0, max(len(self.first), len(self.second)) - 1)
        return not self.contradicted and len(self.common) >= need


# Titles that say the opposite of each other about the same thing.
OPPOSITES = (("Crossover: ", "No crossover: "), (" at the link ceiling", " below the link ceiling"))


def _opposite(title):
    for x, y in OPPOSITES:
        for a, b in ((x, y), (y, x)):
            if a in title:
                return title.replace(a, b)
    return None


def headline_agreement(first, second):
    """Two runs' headlines (findings lists) compared by title (titles carry no numbers: docs/findings.md). A
    headline of one run is contradicted where the other run says its opposite anywhere, or the same title as
    another kind."""
    a = {f.title: f.kind for f in headlines(first)}
    b = {f.title: f.kind for f in headlines(second)}
    all_a = {f.title: f.kind for f in first}
    all_b = {f.title: f.kind for f in second}
    common = [t for t in a if t in b]
    contradicted = [(t, a[t], b[t]) for t in common if a[t] != b[t]]
    contradicted += [(t, a[t], all_b[_opposite(t)]) for t in a if _opposite(t) in all_b]
    contradicted += [(t, all_a[_opposite(t)], b[t]) for t in b if _opposite(t) in all_a]
    return Agreement(list(a), list(b), common, contradicted)


def render_findings(doc, findings, overview=None, summary=""):
    """The top of the report: a one-line summary, the headline findings, the first figure, then every finding
    with the points it rests on."""
    doc.heading(1, "Findings", "findings")
    if summary:
        doc.para(summary, "small")
    top = headlines(findings)
    if top:
        doc.bullets(f.line() for f in top)
    elif findings:
        doc.para("Nothing to act on: what these files show is context (below), such as a CPU stand-in's figures or "
                 "a comparison that did not hold at two neighbouring sizes.")
    else:
        doc.para("Nothing to report: no crossover, anomaly or overhead could be computed from these files.")
    if overview is not None:
        doc.figure(overview)
    doc.toc()
    if findings:
        doc.heading(2, f"All findings ({len(findings)})")
        doc.table(["", "finding", "numbers", "rests on (file#index in its results)"],
                  [[{"anomaly": "look", "guide": "do"}.get(f.kind, "note"), f.title, f.text,
                    ", ".join(f.evidence[:6]) + (f" and {len(f.evidence) - 6} more" if len(f.evidence) > 6 else "")]
                   for f in findings],
                  row_marks=["warn" if f.kind == "anomaly" else "" for f in findings])
