import copy
import json
import random
from pathlib import Path

import pytest

DATA = Path(__file__).resolve().parent / "data"


@pytest.fixture
def data():
    return DATA


def point(backend="host", route="memcpy", direction="h2d", memory="pageable", nbytes=4096, samples=None,
          status="ok", reason="", converged=True, **extra):
    """A result point as the C++ tool writes it (only what the report reads, plus the contract's fields)."""
    p = {"backend": backend, "device": "dev", "device_index": 0, "device_type": "cpu", "route": route,
         "direction": direction, "host_memory": memory, "bytes": nbytes, "status": status, "reason": reason}
    if status == "skipped":
        return p
    samples = samples if samples is not None else [1e-6]
    s = sorted(samples) or [0.0]  # a failed point has no samples
    n = len(s)
    med = s[n // 2] if n % 2 else (s[n // 2 - 1] + s[n // 2]) / 2
    p.update({"timer": "wall", "bytes_per_rep": nbytes, "samples_s": list(samples), "median_s": med,
              "gbps": nbytes / med / 1e9 if status == "ok" else 0.0, "latency_us": med * 1e6,
              "stats": {"min": s[0], "median": med, "mean": sum(s) / n, "p95": s[-1], "max": s[-1], "stddev": 0.0,
                        "count": n},
              "ci_rel": 0.01, "converged": converged, "verified": True,
              "first_use": {"alloc_s": 1e-6, "touch_s": 1e-6, "first_transfer_s": 2 * med}})
    p.update(extra)
    return p


def result_doc(points, system=None):
    return {"schema": "xferbench/result/v1", "tool": {"name": "xferbench", "version": "test"},
            "started_at": "2026-01-01T00:00:00Z",
            "system": system or {"hostname": "t", "cpu_model": "cpu", "logical_cpus": 1, "os": "os", "kernel": "k",
                                 "accelerators": [], "backends": {}},
            "config": {"argv": ["xferbench", "sweep"]}, "results": points, "interrupted": False}


@pytest.fixture
def write_result(tmp_path):
    """write_result(name, points) -> path of a result file holding those points."""

    def write(name, points, system=None, **top):
        path = tmp_path / name
        doc = result_doc(copy.deepcopy(points), system)
        doc.update(top)
        path.write_text(json.dumps(doc))
        return path

    return write


def noisy(center, spread, n=20, seed=0):
    rng = random.Random(seed)
    return [center * (1 + rng.uniform(-spread, spread)) for _ in range(n)]


def gpu_system(link_gbps=31.5):
    return {"hostname": "g", "cpu_model": "cpu", "logical_cpus": 8, "os": "os", "kernel": "k", "backends": {},
            "accelerators": [{"pci_address": "0000:01:00.0", "vendor": "0x10de", "vendor_name": "NVIDIA",
                              "link_current": {"gts": 16.0, "gen": 4, "width": 16},
                              "link_max": {"gts": 16.0, "gen": 4, "width": 16},
                              "link_gbps_per_direction": link_gbps, "link_gbps_current": link_gbps}]}


def v2_point(route, memory, nbytes, gbps, direction="h2d", backend="gpu-api", ceiling=58.0, samples=5):
    """An ok point of a v2 file on a GPU, moving at `gbps` (every sample alike), trusted by core's verdict."""
    med = nbytes / gbps / 1e9
    p = point(backend=backend, route=route, direction=direction, memory=memory, nbytes=nbytes, samples=[med] * samples)
    p.update({"device_type": "gpu", "link_ceiling_gbps": ceiling,
              "verdict": {"trusted": True, "why_not": [], "above_link_limit": False, "clock_misses_host_work": False}})
    return p


def v2_doc(points, routes, kinds):
    """A v2 result file: the points, with the catalogue of their routes and kinds."""
    doc = result_doc(points, gpu_system(63.0))
    doc["schema"] = "xferbench/result/v2"
    doc["catalogue"] = {"routes": routes, "host_memory": kinds}
    return doc


def write_doc(path, doc):
    path.write_text(json.dumps(doc))
    return path
