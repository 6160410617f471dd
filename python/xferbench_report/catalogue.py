"""What a result file's routes and host memory kinds are, as the run that wrote it said (the file's
`catalogue`, docs/result-schema.md), and the vocabulary the report selects by: route families and roles,
kind traits. The report's rules ask these, never a route's or a kind's name, so a route or a kind the
report has never heard of enters every finding and table its family and properties call for.

A file of schema version 1 has no catalogue: legacy.py gives it the one today's build would write."""

from dataclasses import dataclass, field
from typing import Optional

# Route families (core's route_family, include/xfer/core/backend.hpp).
COPY, KERNEL_HOST, KERNEL_DEVICE, LATENCY, CPU_ACCESS, PEER, OTHER = (
    "copy", "kernel-host", "kernel-device", "latency", "cpu-access", "peer", "other")
# Route roles (core's route_role): what a route is for, where a rule needs more than its family.
API_COPY_BLOCKING, API_COPY_QUEUED = "api-copy-blocking", "api-copy-queued"
API_COPY = (API_COPY_BLOCKING, API_COPY_QUEUED)
STAGED_COPIER, DRIVER_BATCH = "staged-copier", "driver-batch"
CPU_STORE, CPU_LOAD, CPU_STORE_ROUND_TRIP = "cpu-store", "cpu-load", "cpu-store-round-trip"
CPU_ROLES = (CPU_STORE, CPU_LOAD, CPU_STORE_ROUND_TRIP)
# host_memory of a point that moves no host memory (device to device).
NO_HOST_MEMORY = "none"


@dataclass(frozen=True)
class RouteInfo:
    name: str
    family: str = OTHER
    role: str = ""
    directions: tuple = ()
    description: str = ""
    block_workload: bool = False


@dataclass(frozen=True)
class KindInfo:
    name: str
    summary: str = ""
    maker: str = ""
    pinned: Optional[bool] = None  # None: the device decides (an OpenCL or Vulkan driver's memory)
    device_accessible: Optional[bool] = None
    write_combined: Optional[bool] = None
    dma_direct: bool = False  # a copy engine moves it in place, no staging copy by the driver
    api_pinned: bool = False  # the API's own page-locked allocation
    program_default: bool = False  # what an ordinary program hands to a copy API: the baseline
    offset_of: str = ""  # the same memory as this kind, off a page boundary
    device_memory: bool = False  # device memory the CPU maps (a BAR)
    roles: dict = field(default_factory=dict, compare=False, hash=False)


@dataclass
class Catalogue:
    routes: dict  # name -> RouteInfo
    kinds: dict  # name -> KindInfo

    def route(self, name):
        """What the file says of a route; a name it does not list is of family "other"."""
        return self.routes.get(name) or RouteInfo(name)

    def kind(self, name):
        """What the file says of a host memory kind; a name it does not list has no traits."""
        return self.kinds.get(name) or KindInfo(name)


def _flag(v):
    return v if isinstance(v, bool) else None


def from_json(raw):
    """A catalogue object as the C++ tool writes it (core/catalogue.cpp); fields it lacks take their
    defaults. load.py has checked its shape."""
    routes, kinds = {}, {}
    for name, r in (raw.get("routes") or {}).items():
        routes[name] = RouteInfo(name, family=r.get("family") or OTHER, role=r.get("role") or "",
                                 directions=tuple(r.get("directions") or ()), description=r.get("description") or "",
                                 block_workload=bool(r.get("block_workload")))
    for name, k in (raw.get("host_memory") or {}).items():
        kinds[name] = KindInfo(name, summary=k.get("summary") or "", maker=k.get("maker") or "",
                               pinned=_flag(k.get("pinned")), device_accessible=_flag(k.get("device_accessible")),
                               write_combined=_flag(k.get("write_combined")), dma_direct=bool(k.get("dma_direct")),
                               api_pinned=bool(k.get("api_pinned")), program_default=bool(k.get("program_default")),
                               offset_of=k.get("offset_of") or "", device_memory=bool(k.get("device_memory")),
                               roles=dict(k.get("roles") or {}))
    return Catalogue(routes, kinds)
