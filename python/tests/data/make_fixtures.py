"""Writes the hand-made fixture result files next to this script.

They are FIXTURES, not measurements: points follow the xferbench/result/v1
schema (as src/core/result.cpp writes it) but their times come from the model
t = L + n / B with seeded noise, so tests know the true values. Each file says
so in "fixture" and in tool.version. host_small.json beside them is a real
(small) host-backend run and is not made here. The malformed files (see
malformed()) are what a tester fed the report tool to crash it; it must refuse
each with one line and exit 2.

Run: python3 python/tests/data/make_fixtures.py
"""

import json
import random
from pathlib import Path

HERE = Path(__file__).resolve().parent
NOTE = "hand-made test fixture (python/tests/data/make_fixtures.py); not a measurement"

GEN5_X16 = 32 * 16 * 128 / 130 / 8  # GB/s per direction after 128b/130b encoding

SYSTEM_GPU = {
    "hostname": "fixture-gpu",
    "cpu_model": "Fixture CPU",
    "logical_cpus": 16,
    "os": "Fixture Linux",
    "kernel": "Linux 6.0 x86_64",
    "memory_bytes": 128 << 30,
    "memory_available_bytes": 120 << 30,
    "numa_nodes": 1,
    "transparent_hugepages": "madvise",
    "accelerators": [{
        "pci_address": "0000:01:00.0", "vendor": "0x10de", "vendor_name": "NVIDIA", "device_id": "0x2330",
        "class": "0x030200",
        "link_current": {"gts": 32.0, "gen": 5, "width": 16},
        "link_max": {"gts": 32.0, "gen": 5, "width": 16},
        "link_gbps_per_direction": GEN5_X16,
        "link_gbps_current": GEN5_X16,
    }],
    "backends": {"cuda-rt": {"runtime": "12.4"}, "cuda-drv": {"driver": "550"}, "opencl:nvidia": {"version": "3.0"}},
}

SYSTEM_HOST = dict(SYSTEM_GPU, hostname="fixture-host", accelerators=[], backends={"host": {}})


def summary(samples):
    v = sorted(samples)
    n = len(v)
    mean = sum(v) / n
    med = v[n // 2] if n % 2 else (v[n // 2 - 1] + v[n // 2]) / 2
    h = (n - 1) * 0.95
    lo = int(h)
    p95 = v[lo] + (h - lo) * (v[lo + 1] - v[lo]) if lo + 1 < n else v[lo]
    sd = (sum((x - mean) ** 2 for x in v) / (n - 1)) ** 0.5 if n > 1 else 0.0
    return {"min": v[0], "median": med, "mean": mean, "p95": p95, "max": v[-1], "stddev": sd, "count": n}


def ok_point(backend, route, direction, memory, nbytes, t, rng, *, device="Fixture GPU", device_type="gpu",
             timer="event", nsamples=5, noise=0.01, converged=True, wall_extra=0.0, first=None, parts=None):
    per_rep = 2 * nbytes if direction in ("bidir", "rw") else nbytes
    samples = [float(f"{t * (1 + rng.uniform(-noise, noise)):.6g}") for _ in range(nsamples)]
    wall = [float(f"{s + wall_extra:.6g}") for s in samples]
    st = summary(samples)
    alloc, touch, first_transfer = first or (1e-6 + nbytes / 20e9, nbytes / 10e9, 3 * t + 5e-6)
    p = {
        "backend": backend, "device": device, "device_index": 0, "device_type": device_type, "route": route,
        "direction": direction, "host_memory": memory, "bytes": nbytes, "status": "ok", "reason": "",
        "timer": timer, "bytes_per_rep": per_rep, "reps_per_sample": 10, "samples_s": samples,
        "wall_samples_s": wall, "median_s": st["median"], "gbps": per_rep / st["median"] / 1e9,
        "latency_us": st["median"] * 1e6, "stats": st, "wall_stats": summary(wall),
        "ci_rel": 0.004 if converged else None, "converged": converged, "verified": True,
        "first_use": {"alloc_s": alloc, "touch_s": touch, "first_transfer_s": first_transfer},
    }
    if parts:
        p["part_samples_s"] = {k: [v] * nsamples for k, v in parts.items()}
        p["parts"] = {k: {"median_s": v, "gbps": nbytes / v / 1e9} for k, v in parts.items()}
    return p


def other_point(backend, route, direction, memory, nbytes, status, reason, device="Fixture GPU"):
    p = {"backend": backend, "device": device, "device_index": 0, "device_type": "gpu", "route": route,
         "direction": direction, "host_memory": memory, "bytes": nbytes, "status": status, "reason": reason}
    if status == "failed":  # failed points carry the (empty) measurement fields, as the C++ writes them
        p.update({"timer": "event", "bytes_per_rep": nbytes, "reps_per_sample": 0, "samples_s": [],
                  "wall_samples_s": [], "median_s": 0.0, "gbps": 0.0, "latency_us": 0.0, "ci_rel": None,
                  "converged": False, "verified": False,
                  "first_use": {"alloc_s": -1.0, "touch_s": -1.0, "first_transfer_s": -1.0}})
    return p


def doc(system, results, argv):
    return {"schema": "xferbench/result/v1", "fixture": NOTE, "tool": {"name": "xferbench", "version": "fixture"},
            "started_at": "2026-01-01T00:00:00Z", "system": system,
            "config": {"argv": argv, "fixture": True}, "results": results, "interrupted": False}


# The model behind multi_backend.json: fixed cost L (s) per backend and route,
# bandwidth B (GB/s) per host memory kind and direction.
LATENCY = {("cuda-rt", "copy-async"): 2.0e-6, ("cuda-rt", "copy-sync"): 8.0e-6,
           ("cuda-drv", "copy-async"): 1.6e-6, ("cuda-drv", "copy-sync"): 7.0e-6,
           ("opencl:nvidia", "write"): 6.0e-6, ("opencl:nvidia", "read"): 6.0e-6}
BANDWIDTH = {("pinned", "h2d"): 53.0, ("pinned", "d2h"): 54.0, ("pageable", "h2d"): 25.0, ("pageable", "d2h"): 20.0,
             ("alloc-host-ptr", "h2d"): 52.0, ("alloc-host-ptr", "d2h"): 53.0}
SIZES = [1 << k for k in range(0, 31, 4)] + [1 << 30]  # 1 B, 16 B, ..., 256 MiB, 1 GiB


def model_time(backend, route, memory, direction, n):
    return LATENCY[(backend, route)] + n / (BANDWIDTH[(memory, direction)] * 1e9)


def multi_backend():
    rng = random.Random(5)
    results = []
    for backend in ("cuda-rt", "cuda-drv"):
        for route in ("copy-sync", "copy-async"):
            timer = "wall" if route == "copy-sync" else "event"
            for direction in ("h2d", "d2h"):
                for memory in ("pageable", "pinned"):
                    for n in SIZES:
                        t = model_time(backend, route, memory, direction, n)
                        # The largest pageable copies run out of time budget: not converged.
                        conv = not (memory == "pageable" and n == SIZES[-1])
                        results.append(ok_point(backend, route, direction, memory, n, t, rng, timer=timer,
                                                converged=conv, wall_extra=3e-6 if timer == "event" else 0.0,
                                                first=(2e-6 + n / 20e9 if memory == "pageable" else 300e-6 + n / 4e9,
                                                       n / 10e9 if memory == "pageable" else 0.0,
                                                       3 * t + (20e-6 if memory == "pageable" else 1e-6))))
                for n in SIZES:  # managed memory is not offered by this "device"
                    results.append(other_point(backend, route, direction, "managed", n, "skipped",
                                               "unsupported: no concurrent managed access on this device"))
    # bidir, cuda-rt only: the total and each direction's part
    for n in SIZES:
        th = model_time("cuda-rt", "copy-async", "pinned", "h2d", n)
        td = model_time("cuda-rt", "copy-async", "pinned", "d2h", n)
        results.append(ok_point("cuda-rt", "copy-async", "bidir", "pinned", n, max(th, td) * 1.05, rng,
                                parts={"h2d": th, "d2h": td}))
    # device to device: does not cross the link
    for n in SIZES:
        results.append(ok_point("cuda-rt", "d2d", "d2d", "none", n, 3e-6 + n / 1500e9, rng))
    # OpenCL: its own route and kind names; the largest size fails to allocate
    for route, direction in (("write", "h2d"), ("read", "d2h")):
        for memory in ("pageable", "alloc-host-ptr"):
            for n in SIZES:
                if n == SIZES[-1] and memory == "alloc-host-ptr":
                    results.append(other_point("opencl:nvidia", route, direction, memory, n, "failed",
                                               "clEnqueueWriteBuffer: CL_MEM_OBJECT_ALLOCATION_FAILURE (-4)"))
                    continue
                t = model_time("opencl:nvidia", route, memory, direction, n)
                results.append(ok_point("opencl:nvidia", route, direction, memory, n, t, rng, device="NVIDIA H100",
                                        first=(1e-6, 1e-6, 2 * t)))
    return doc(SYSTEM_GPU, results, ["xferbench", "sweep", "(fixture)"])


def single_point():
    rng = random.Random(1)
    p = ok_point("host", "memcpy", "h2d", "pageable", 4096, 0.5e-6, rng, device="Fixture CPU", device_type="cpu",
                 timer="wall", nsamples=3)
    return doc(SYSTEM_HOST, [p], ["xferbench", "sweep", "-b", "host", "--sizes", "4K", "(fixture)"])


def no_ok_points():
    results = [other_point("cuda-rt", "copy-async", "h2d", "pinned", 1024, "skipped", "no CUDA device"),
               other_point("cuda-rt", "copy-async", "h2d", "pinned", 4096, "failed", "cudaMemcpyAsync: error 700")]
    return doc(SYSTEM_HOST, results, ["xferbench", "sweep", "(fixture)"])


def malformed():
    """Files the report tool must refuse with one line and exit 2 (each once crashed it), as name -> text."""
    files = {}

    def one(name, change, base=single_point):
        d = base()
        change(d, d["results"][0])
        files[name] = json.dumps(rounded(d), separators=(",", ":")) + "\n"

    def negate(d, p):  # a timer that ran backwards: negative samples, the median and GB/s still positive
        p["samples_s"] = [-s for s in p["samples_s"]]
        p["gbps"] = -p["gbps"]

    def gpu_point():
        d = single_point()
        d["system"] = json.loads(json.dumps(SYSTEM_GPU))
        return d

    one("negative_samples.json", negate)
    one("huge_bytes.json", lambda d, p: p.update(bytes=10 ** 400, bytes_per_rep=10 ** 400))  # an integer, not 1e400
    one("stats_min_string.json", lambda d, p: p["stats"].update(min="fast"))
    one("ok_without_samples.json", lambda d, p: p.update(samples_s=[]))
    one("link_max_string.json", lambda d, p: d["system"]["accelerators"][0].update(link_max="Gen5 x16"),
        base=gpu_point)
    one("unknown_direction.json", lambda d, p: p.update(direction="sideways"))
    one("lone_surrogate.json", lambda d, p: p.update(backend="host\ud800"))  # json.dumps writes it as \ud800
    depth = 100_000
    files["deeply_nested.json"] = "[" * depth + "]" * depth + "\n"
    return files


def rounded(obj):
    """Six significant digits keep the files small; the tests allow for it."""
    if isinstance(obj, float):
        return float(f"{obj:.6g}")
    if isinstance(obj, dict):
        return {k: rounded(v) for k, v in obj.items()}
    if isinstance(obj, list):
        return [rounded(v) for v in obj]
    return obj


def main():
    files = {
        "multi_backend.json": multi_backend(),
        "single_point.json": single_point(),
        "no_ok_points.json": no_ok_points(),
    }
    wrong = single_point()
    wrong["schema"] = "somebench/output/v3"
    files["wrong_schema.json"] = wrong
    future = single_point()
    future["schema"] = "xferbench/result/v9"
    files["future_version.json"] = future
    for name, d in files.items():
        (HERE / name).write_text(json.dumps(rounded(d), separators=(",", ":")) + "\n", encoding="utf-8")
    for name, text in malformed().items():
        (HERE / name).write_text(text, encoding="utf-8")
    (HERE / "not_json.json").write_text("xferbench sweep: this is console output, not JSON\n", encoding="utf-8")


if __name__ == "__main__":
    main()
