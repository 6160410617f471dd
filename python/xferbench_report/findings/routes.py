"""Routes and APIs against each other: crossovers by size, the API's fixed cost per call, the same device
through two APIs, and the CPU's stores into the BAR against the copy engine."""

import dataclasses

from ..catalogue import API_COPY, API_COPY_BLOCKING, API_COPY_QUEUED, CPU_ROLES, CPU_STORE, CPU_STORE_ROUND_TRIP
from ..catalogue import DRIVER_BATCH, KERNEL_HOST, STAGED_COPIER
from ..spread import clearly_faster
from ..units import format_gbps, format_size, format_time
from .base import CONFIRMING_SIZES, Finding, STAGED_PAYS, _curves_by, _kind, _pays_from, _runs, _wall, cite


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
        # By the catalogue, each of the program's plain memory: libxfer's staged copier, the API's blocking copy,
        # and the driver's own answer to pageable memory (cudaMemcpyBatchAsync with the any-order hint).
        plain_memory = [c for c in cs if c.kind_info.program_default]
        staged = [c for c in plain_memory if c.route_info.role == STAGED_COPIER]
        plain = next((c for c in plain_memory if c.route_info.role == API_COPY_BLOCKING), None)
        batch = next((c for c in plain_memory if c.route_info.role == DRIVER_BATCH), None)
        for s in staged:
            if plain:
                # Detail: "Pin or stage large buffers" says it with a margin (STAGED_PAYS); without one the start
                # moved from 1 MiB to 16 MiB between two runs (docs/decisions/0004-finding-thresholds.md).
                out += [dataclasses.replace(f, kind="context")
                        for f in _crossover_finding(g, d, s, plain, "staged copy beats the plain pageable copy")]
            if batch:
                out += _crossover_finding(g, d, s, batch, "staged copy beats the driver's batched copy")
        if batch and plain:
            out += _crossover_finding(g, d, batch, plain, "the driver's batched copy beats the plain pageable copy")
        # A kernel reading the API's own pinned memory against the API's queued copy of it.
        kernels = [c for c in cs if c.route_info.family == KERNEL_HOST and c.kind_info.api_pinned]
        for k in kernels:
            copy = next((c for c in cs if c.route_info.role == API_COPY_QUEUED and c.host_memory == k.host_memory),
                        None)
            if copy:
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
    (the catalogue's CPU roles) are left out: their time ends before the device has the data, unlike a copy's."""
    by = {}
    for c in report.curves:
        pci = next((p.device_pci for p in c.points if p.device_pci), "")
        api = _api(c.group.backend)
        if (pci and api and c.direction in ("h2d", "d2h") and not c.part and c.route_info.role not in CPU_ROLES
                and not c.is_latency):  # a latency route's time is one access, not a transfer of that size
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




def bar_store_findings(report):
    """Issue 18: where a CPU store into device memory through the BAR (a kind the catalogue says is device memory)
    beats CUDA's copy of the same size (memory its copy engine moves in place, not device-mapped; the wall clock:
    what a program waits for), on the same GPU (the same PCI address). The BAR's time at a
    size is the round trip of cpu-store-latency where that size was measured (the store made visible to a device
    reader plus the reader's answer: an upper bound), else the CPU's time to store it (cpu-store) plus the smallest
    measured store's round trip (the last bytes' way to the reader, bounded above). No latency, no CUDA copy: no
    finding."""
    sides = {}  # pci -> {"round_trip"|"store"|"cuda": {bytes: (curve, point)}}
    for c in report.curves:
        if c.direction != "h2d" or c.part:
            continue
        b, role, kind = c.group.backend, c.route_info.role, c.kind_info
        # The round trip (a store until a device reader answers), the CPU's time to store N bytes (and fence).
        if b.startswith("vulkan") and kind.device_memory and role == CPU_STORE_ROUND_TRIP:
            side, t = "round_trip", (lambda p: p.median_s)
        elif b.startswith("vulkan") and kind.device_memory and role == CPU_STORE:
            side, t = "store", (lambda p: p.median_s)
        elif b.startswith("cuda") and role in API_COPY and kind.dma_direct and not kind.device_accessible:
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
        lat, store, cuda = got.get("round_trip"), got.get("store", {}), got.get("cuda")
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
