"""The reader of version-1 result files: what today's build would have written of them. A v1 file has no
catalogue and no per-point verdict, so this module gives it both: the catalogue from the names below (the
routes and kinds as core declares them today: include/xfer/core/backend.hpp, src/backends/*/routes,
src/mem/kind_registry.cpp), and each point's verdict by core's rule (src/core/result.cpp,
point_result::distrust), from the flags the file carries. This is the one place in the report that knows
routes and kinds by name."""

from .catalogue import (
    API_COPY_BLOCKING, API_COPY_QUEUED, COPY, CPU_ACCESS, CPU_LOAD, CPU_STORE, CPU_STORE_ROUND_TRIP, DRIVER_BATCH,
    KERNEL_DEVICE, KERNEL_HOST, LATENCY, NO_HOST_MEMORY, PEER, STAGED_COPIER, Catalogue, KindInfo, RouteInfo
)

V1_SCHEMAS = ("xferbench/result/v1", "xferbench/app/v1", "xferbench/alloc/v1", "xferbench/cpu/v1")

# name: (family, role, block workload)
_ROUTES = {
    "memcpy": (COPY, "", False), "memcpy-mt": (COPY, "", False),
    "copy-sync": (COPY, API_COPY_BLOCKING, False), "copy-async": (COPY, API_COPY_QUEUED, False),
    "copy": (COPY, API_COPY_QUEUED, False), "staged": (COPY, STAGED_COPIER, False),
    "batch-any-order": (COPY, DRIVER_BATCH, False), "map": (COPY, "", False),
    "bo-sync": (COPY, "", False), "user-ptr": (COPY, "", False),
    "kernel-host": (KERNEL_HOST, "", False), "kernel-device": (KERNEL_DEVICE, "", False),
    "kernel-device-read": (KERNEL_DEVICE, "", False), "kernel-device-write": (KERNEL_DEVICE, "", False),
    "latency": (LATENCY, "", False), "peer": (PEER, "", False),
    "cpu-store": (CPU_ACCESS, CPU_STORE, False), "cpu-store-nt": (CPU_ACCESS, CPU_STORE, False),
    "cpu-load": (CPU_ACCESS, CPU_LOAD, False), "cpu-load-nt": (CPU_ACCESS, CPU_LOAD, False),
    "cpu-store-latency": (LATENCY, CPU_STORE_ROUND_TRIP, False),
    "cpu-store-nt-latency": (LATENCY, CPU_STORE_ROUND_TRIP, False),
    "blocks-loop": (COPY, "", True), "blocks-batch": (COPY, "", True), "blocks-kernel": (KERNEL_HOST, "", True),
    "blocks-pack": (COPY, "", True), "blocks-auto": (COPY, "", True), "blocks-contiguous": (COPY, "", True),
    "blocks-list": (COPY, "", True),
}

_DIRECT = dict(dma_direct=True)
# name: (maker, pinned, device accessible, write combined, traits); None: the device decides.
_KINDS = {
    "pageable": ("plain", False, False, False, dict(program_default=True)),
    "pageable-unaligned": ("plain", False, False, False, dict(offset_of="pageable")),
    "aligned": ("plain", False, False, False, {}), "over-aligned": ("plain", False, False, False, {}),
    "mmap": ("plain", False, False, False, {}), "huge": ("plain", False, False, False, {}),
    "numa": ("plain", False, False, False, {}),
    "registered": ("cuda", True, False, False, _DIRECT),
    "pinned": ("cuda", True, False, False, dict(dma_direct=True, api_pinned=True)),
    "pinned-wc": ("cuda", True, False, True, _DIRECT), "mapped": ("cuda", True, True, False, _DIRECT),
    "managed": ("cuda", False, True, False, {}), "pinned-fast": ("cuda", True, False, False, _DIRECT),
    "alloc-host-ptr": ("opencl", None, None, None, dict(dma_direct=True, api_pinned=True)),
    "use-host-ptr": ("opencl", None, None, None, _DIRECT), "svm-coarse": ("opencl", None, None, None, {}),
    "svm-fine": ("opencl", None, None, None, {}),
    "host-coherent": ("vulkan", None, None, None, _DIRECT), "host-cached": ("vulkan", None, None, None, _DIRECT),
    "device-local-host-visible": ("vulkan", None, None, None, dict(device_memory=True)),
    "imported": ("vulkan", None, None, None, {}),
    "bo-normal": ("xrt", None, None, None, {}), "bo-host-only": ("xrt", None, None, None, {}),
    "uncached": ("none", None, None, None, {}),
}


def catalogue():
    """The catalogue today's build would have written for a v1 file."""
    routes = {n: RouteInfo(n, family=f, role=r, block_workload=b) for n, (f, r, b) in _ROUTES.items()}
    kinds = {n: KindInfo(n, maker=m, pinned=p, device_accessible=d, write_combined=w, **t)
             for n, (m, p, d, w, t) in _KINDS.items()}
    return Catalogue(routes, kinds)


# core's clock rule (point_result::clock_misses_work): through host memory, at 1 MiB and more, a wall clock over
# twice the device events' time.
_MISSED_WORK_MIN_BYTES = 1 << 20
_MISSED_WORK_FACTOR = 2.0


def _link_ceiling(p):
    """Core's ceiling for a point whose file did not record one (result.cpp, flag_link_limit with the raw rate):
    its accelerator's link per direction (the one at its PCI address, else the fastest), twice that for
    bidir, the sum over the devices of an aggregate at once; None where the point crosses no link."""
    if p.device_type == "cpu" or p.host_memory == NO_HOST_MEMORY or p.direction == "d2d":
        return None
    links = [a for a in p.run.system.get("accelerators") or [] if isinstance(a, dict)]
    mine = [a for a in links if p.device_pci and a.get("pci_address") == p.device_pci] or links
    rates = [a.get("link_gbps_per_direction") for a in mine]
    rates = [float(r) for r in rates if isinstance(r, (int, float)) and not isinstance(r, bool) and r > 0]
    if not rates:
        return None
    ceiling = max(rates) * (2 if p.direction == "bidir" else 1)
    return ceiling * len(p.at_once_devices) if p.at_once == "aggregate" else ceiling


def verdict(p, raw):
    """(trusted, why_not, above_link_limit, clock_misses_host_work) of an ok v1 point, by core's rule; a point
    whose file recorded no ceiling gets core's (and its flag) from the link's raw rate."""
    above = raw.get("above_link_limit") is True
    p.link_limit_gbps = p.link_ceiling_gbps
    if p.link_ceiling_gbps is None and (ceiling := _link_ceiling(p)):
        # The raw rate bounds the point (its flag, the plots' line); it is no ceiling after protocol overhead,
        # so link_ceiling_gbps, which the findings quote as one, stays unknown.
        p.link_limit_gbps = ceiling
        above = above or p.gbps > ceiling
    missed = (p.timer == "event" and p.host_memory != NO_HOST_MEMORY and p.bytes >= _MISSED_WORK_MIN_BYTES
              and bool(p.wall_median_s) and p.wall_median_s > _MISSED_WORK_FACTOR * p.median_s)
    why = [w for w, holds in (("above-link-limit", above), ("clock-misses-host-work", missed),
                              ("emulated", bool(p.emulation))) if holds]
    return not why, why, above, missed


_SETTLED_SPREAD = 0.10  # core's point_result::settled_spread


def _quantile(values, q):
    v = sorted(values)
    h = (len(v) - 1) * q
    lo = int(h)
    return v[lo] + (h - lo) * (v[lo + 1] - v[lo]) if lo + 1 < len(v) else v[lo]


def _rates(p, samples):
    good = [s for s in samples if isinstance(s, (int, float)) and not isinstance(s, bool) and s > 0]
    if not good:
        return None
    return p.bytes_per_rep / _quantile(good, 0.95) / 1e9, p.bytes_per_rep / _quantile(good, 0.05) / 1e9


def spread(p, raw):
    """(settled, gbps_range, wall_gbps_range) of an ok v1 point, by core's rule (point_result::settled)."""
    settled = (p.converged and bool(p.samples_s)
               and _quantile(p.samples_s, 0.95) - _quantile(p.samples_s, 0.05) <= _SETTLED_SPREAD * p.median_s)
    wall = raw.get("wall_samples_s")
    return settled, _rates(p, p.samples_s), _rates(p, wall) if isinstance(wall, list) else None


def app_row(row):
    """A v1 app study row as v2 writes it: v1's accel_minus_cpu_s held the CPU's time minus the accelerated
    program's (src/studies/app/app_study.cpp, bottom(), unchanged since), whatever its name said; v1 has no
    repeat-by-repeat verdict, so the winner is the median's side."""
    if "accel_minus_cpu_s" not in row:
        return row
    row = dict(row)
    saves = row.pop("accel_minus_cpu_s")
    row["accelerator_saves_s"] = saves
    row["accelerator_saves_algorithm_s"] = row.pop("algorithm_minus_cpu_s", None)
    if isinstance(saves, (int, float)) and not isinstance(saves, bool) and row.get("status") == "ok":
        winner = "accelerator" if saves > 0 else "cpu" if saves < 0 else "unclear"
        text = {"accelerator": f"the accelerated program beats the CPU's loop by {abs(saves) * 1e3:.3f} ms (median)",
                "cpu": f"the CPU's loop beats the accelerated program by {abs(saves) * 1e3:.3f} ms (median)",
                "unclear": "no winner: the medians are equal"}[winner]
        row["verdict"] = {"winner": winner, "text": text}
    return row


# A fleet file from before it carried its tests (fleet.tests) and each point its test (fleet.test): the names and
# the rule src/core/fleet.cpp (test_of) rebuilds them by.
FLEET_TESTS = ("h2d-pinned", "d2h-pinned", "bidir-pinned", "latency-4B", "h2d-pageable")


def fleet_test_of(p):
    if p["bytes"] <= 64:
        return "latency-4B"
    kind = "pageable" if p["host_memory"] == "pageable" else "pinned"
    return f"{p['direction']}-{kind}"
