"""Loading and validating xferbench result files.

The contract (DESIGN.md, docs/result-schema.md): one JSON object with `schema`,
`system`, `config` and `results`. Every point carries backend, device, route,
direction, host_memory, bytes, status and reason; ok points also carry the
timer, the raw samples, the median time, GB/s and latency. Everything else is
read when present and defaulted when not, so older or smaller files still load.
"""

import json
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Optional

from . import SCHEMA
from .errors import BadInput

STATUSES = ("ok", "skipped", "failed")
DIRECTIONS = ("h2d", "d2h", "bidir", "rw", "d2d")

_REQUIRED = {
    "backend": str,
    "device": str,
    "route": str,
    "direction": str,
    "host_memory": str,
    "bytes": int,
    "status": str,
}
_REQUIRED_OK = {
    "timer": str,
    "samples_s": list,
    "median_s": (int, float),
    "gbps": (int, float),
    "latency_us": (int, float),
}


@dataclass
class FirstUse:
    alloc_s: float
    touch_s: float
    first_transfer_s: float


@dataclass
class Point:
    run: "Run"
    index: int  # position in the file's results array
    backend: str
    device: str
    device_index: int
    device_type: str
    route: str
    direction: str
    host_memory: str
    bytes: int
    status: str
    reason: str
    timer: str = ""
    bytes_per_rep: int = 0
    median_s: float = 0.0
    gbps: float = 0.0
    latency_us: float = 0.0
    samples_s: list = field(default_factory=list)
    wall_median_s: Optional[float] = None
    stats: Optional[dict] = None
    ci_rel: Optional[float] = None  # None: unbounded (too few samples)
    converged: bool = True
    verified: bool = True
    first_use: Optional[FirstUse] = None
    parts: dict = field(default_factory=dict)  # name -> {"median_s", "gbps"}

    @property
    def ok(self):
        return self.status == "ok"

    def key(self):
        """What identifies a measurement across runs (the device by index, not name)."""
        return (self.backend, self.device_index, self.route, self.direction, self.host_memory, self.bytes)

    def describe(self):
        from .units import format_size

        return f"{self.backend}/{self.route}/{self.direction}/{self.host_memory} {format_size(self.bytes)}"


@dataclass
class Run:
    path: Path
    label: str
    tool: dict
    started_at: str
    system: dict
    config: dict
    interrupted: bool
    points: list

    @property
    def ok_points(self):
        return [p for p in self.points if p.ok]

    def link_limits(self):
        """Distinct theoretical per-direction link bandwidths (GB/s) of the accelerators, with a description."""
        seen = {}
        for acc in self.system.get("accelerators") or []:
            if not isinstance(acc, dict):
                continue
            gbps = acc.get("link_gbps_per_direction")
            if not isinstance(gbps, (int, float)) or not gbps > 0:
                continue
            link = acc.get("link_max") or {}
            gen, width = link.get("gen"), link.get("width")
            what = f"PCIe Gen{gen} x{width}" if gen and width else "link"
            seen.setdefault(round(float(gbps), 3), (float(gbps), what))
        return sorted(seen.values())


def _where(path, i=None, key=None):
    where = str(path)
    if i is not None:
        where += f": results[{i}]"
    if key is not None:
        where += f".{key}"
    return where


def _check_type(path, i, obj, key, types):
    if key not in obj:
        raise BadInput(f"{_where(path, i)}: missing '{key}'")
    value = obj[key]
    if isinstance(value, bool) or not isinstance(value, types):
        expected = {str: "a string", int: "an integer", list: "an array"}.get(types, "a number")
        raise BadInput(f"{_where(path, i, key)}: expected {expected}, got {json.dumps(value)[:40]}")
    return value


def _number(value, default=None):
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        return default
    return float(value)


def _point(run, path, i, raw):
    if not isinstance(raw, dict):
        raise BadInput(f"{_where(path, i)}: expected an object")
    for key, types in _REQUIRED.items():
        _check_type(path, i, raw, key, types)
    status = raw["status"]
    if status not in STATUSES:
        raise BadInput(f"{_where(path, i, 'status')}: unknown status '{status}' (expected ok, skipped or failed)")
    if raw["bytes"] <= 0:
        raise BadInput(f"{_where(path, i, 'bytes')}: must be positive, got {raw['bytes']}")
    p = Point(
        run=run,
        index=i,
        backend=raw["backend"],
        device=raw["device"],
        device_index=raw.get("device_index", 0) if isinstance(raw.get("device_index"), int) else 0,
        device_type=str(raw.get("device_type", "")),
        route=raw["route"],
        direction=raw["direction"],
        host_memory=raw["host_memory"],
        bytes=raw["bytes"],
        status=status,
        reason=str(raw.get("reason") or ""),
    )
    if status != "ok":
        return p
    for key, types in _REQUIRED_OK.items():
        _check_type(path, i, raw, key, types)
    median = _number(raw["median_s"])
    if median is None or median <= 0:
        raise BadInput(f"{_where(path, i, 'median_s')}: an ok point needs a positive median time, got {raw['median_s']}")
    p.timer = raw["timer"]
    p.median_s = median
    p.bytes_per_rep = raw.get("bytes_per_rep") if isinstance(raw.get("bytes_per_rep"), int) else p.bytes
    p.gbps = _number(raw["gbps"], 0.0)
    p.latency_us = _number(raw["latency_us"], 0.0)
    p.samples_s = [float(s) for s in raw["samples_s"] if _number(s) is not None]
    stats = raw.get("stats")
    p.stats = stats if isinstance(stats, dict) else None
    wall = raw.get("wall_stats")
    if isinstance(wall, dict):
        p.wall_median_s = _number(wall.get("median"))
    p.ci_rel = _number(raw.get("ci_rel"))
    p.converged = raw.get("converged", True) is not False
    p.verified = raw.get("verified", True) is not False
    fu = raw.get("first_use")
    if isinstance(fu, dict):
        values = [_number(fu.get(k), -1.0) for k in ("alloc_s", "touch_s", "first_transfer_s")]
        # Negative means "not measured" in the C++ model.
        if all(v >= 0 for v in values):
            p.first_use = FirstUse(*values)
    parts = raw.get("parts")
    if isinstance(parts, dict):
        for name, part in parts.items():
            if isinstance(part, dict) and _number(part.get("median_s"), 0) > 0:
                p.parts[name] = {"median_s": float(part["median_s"]), "gbps": _number(part.get("gbps"), 0.0)}
    return p


def load_run(path, label=None, require_ok=True):
    """Reads and validates one result file; raises BadInput with a one-line reason."""
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise BadInput(f"{path}: no such file") from None
    except IsADirectoryError:
        raise BadInput(f"{path}: is a directory, expected a result file") from None
    except UnicodeDecodeError:
        raise BadInput(f"{path}: not JSON (not UTF-8 text)") from None
    except OSError as e:
        raise BadInput(f"{path}: cannot read: {e.strerror or e}") from None
    try:
        doc = json.loads(text)
    except json.JSONDecodeError as e:
        raise BadInput(f"{path}: not JSON ({e.msg} at line {e.lineno}, column {e.colno})") from None
    if not isinstance(doc, dict):
        raise BadInput(f"{path}: not an xferbench result file (the top level is not an object)")
    schema = doc.get("schema")
    if schema is None:
        raise BadInput(f"{path}: not an xferbench result file (no 'schema' key)")
    if schema != SCHEMA:
        if isinstance(schema, str) and schema.startswith("xferbench/result/"):
            raise BadInput(f"{path}: unsupported schema version '{schema}' (this tool reads {SCHEMA})")
        raise BadInput(f"{path}: not an xferbench result file (schema '{schema}', expected {SCHEMA})")
    results = doc.get("results")
    if not isinstance(results, list):
        raise BadInput(f"{path}: 'results' is missing or not an array")
    system = doc.get("system") if isinstance(doc.get("system"), dict) else {}
    config = doc.get("config") if isinstance(doc.get("config"), dict) else {}
    tool = doc.get("tool") if isinstance(doc.get("tool"), dict) else {}
    run = Run(
        path=path,
        label=label or path.stem,
        tool=tool,
        started_at=str(doc.get("started_at", "")),
        system=system,
        config=config,
        interrupted=doc.get("interrupted") is True,
        points=[],
    )
    run.points = [_point(run, path, i, raw) for i, raw in enumerate(results)]
    if require_ok and not run.ok_points:
        counts = ", ".join(f"{sum(p.status == s for p in run.points)} {s}" for s in ("skipped", "failed"))
        raise BadInput(f"{path}: no ok points to report ({len(run.points)} points: {counts})")
    return run


def load_runs(paths, require_ok=True):
    """Loads several files; labels are the file names' stems, made unique."""
    runs = []
    used = set()
    for path in paths:
        label = Path(path).stem
        base, k = label, 2
        while label in used:
            label = f"{base}-{k}"
            k += 1
        used.add(label)
        runs.append(load_run(path, label=label, require_ok=require_ok))
    return runs
