"""Loading and validating xferbench result files.

Over 400 lines on purpose: every schema (sweep, alloc, app, cpu) is validated
here field by field, so that a malformed file is one clear line wherever it
is loaded.

The contract (DESIGN.md, docs/result-schema.md): one JSON object with `schema`,
`system`, `config` and `results`. Every point carries backend, device, route,
direction, host_memory, bytes, status and reason; ok points also carry the
timer, the raw samples, the median time, GB/s and latency. Everything else is
read when present and defaulted when not, so older or smaller files still load;
but every field the report uses is checked here, when present, for its type,
finiteness and range, so the analysis and the figures can trust what they get.
"""

import gzip
import io
import json
import math
import zlib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Optional

from . import SCHEMA, catalogue as cat, legacy
from .errors import BadInput
from .settings import read_point_settings, read_settings

STATUSES = ("ok", "skipped", "failed")
DIRECTIONS = ("h2d", "d2h", "bidir", "rw", "d2d")  # as src/core/backend.cpp parses them
TIMERS = ("event", "wall")
MAX_INT = 1 << 64
# Bounds far outside anything measured (a transfer under a femtosecond or over eleven days, an exabyte a
# second) that keep the fit's squares, the break-even counts and the figures' axes finite.
MIN_SECONDS, MAX_SECONDS = 1e-15, 1e6
MAX_GBPS = 1e9
SECONDS = dict(nonnegative=True, at_most=MAX_SECONDS)
GBPS = dict(nonnegative=True, at_most=MAX_GBPS)


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
    link_ceiling_gbps: Optional[float] = None  # what the point's link carries in its direction (TLP overhead included)
    # The ceiling core held the point to: link_ceiling_gbps, or for a v1 file that recorded none the link's raw rate.
    link_limit_gbps: Optional[float] = None
    # The emulation the device ran under (XRT's "noop"); "" on hardware. Such a
    # point moved no data across a link: the report lists it apart, never in a
    # curve, a peak, a plot or a model.
    emulation: str = ""
    note: str = ""
    device_pci: str = ""  # the device's PCI address where the backend knew it
    # `sweep --together`: "device" (one device's share while all ran at once), "aggregate" (all their bytes over
    # the shared windows; device_index -1), "" (the device alone); and the devices that ran at once.
    at_once: str = ""
    at_once_devices: tuple = ()
    # What core decided of an ok point (the file's verdict; legacy.py for v1 files): only a trusted point enters a
    # peak, a headline or a fitted model.
    trusted: bool = True
    why_not: tuple = ()
    above_link_limit: bool = False
    clock_misses_host_work: bool = False
    # Whether a finding may quote the point as one figure (converged, its samples agreeing), else the rates its
    # samples support, 5th to 95th percentile, by the primary clock and by the wall clock (GB/s; None: unknown).
    settled: bool = True
    gbps_range: Optional[tuple] = None
    wall_gbps_range: Optional[tuple] = None
    # `xferbench peer`: the device the copy went to (device_index is where it came from), and how it travelled.
    peer_device_index: Optional[int] = None
    peer_path: str = ""
    # `sweep --blocks` (docs/blocks.md): the block size (0: not a block point) and the blocks one repetition moves.
    block_bytes: int = 0
    blocks: int = 0
    # The run's settings the point used, as its `settings` names them: (component, scope); None where it names
    # none. settings.settings_of_point gives the entries.
    settings_ref: Optional[tuple] = None

    @property
    def ok(self):
        return self.status == "ok"

    @property
    def route_info(self):
        """What the run's catalogue says of the point's route (family, role)."""
        return self.run.catalogue.route(self.route)

    @property
    def kind_info(self):
        """What the run's catalogue says of the point's host memory kind (traits, properties)."""
        return self.run.catalogue.kind(self.host_memory)

    @property
    def curve_route(self):
        """The route as a curve names it: a peer copy's destination makes a curve of its own."""
        return self.route if self.peer_device_index is None else f"{self.route} to dev{self.peer_device_index}"

    def key(self):
        """What identifies a measurement across runs (the device by index, not name; at once apart from alone)."""
        backend = self.backend + {"": "", "device": " at once", "aggregate": " all at once"}[self.at_once]
        return (backend, self.device_index, self.curve_route, self.direction, self.host_memory, self.bytes)

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
    catalogue: cat.Catalogue = None  # the file's, or for a v1 file the one today's build would write
    v1: bool = False  # schema version 1: no catalogue or verdicts of its own (legacy.py)
    # Points of the many-blocks workload (blocks.py reads them): kept out of `points`, so no curve, peak or
    # finding of the plain sweep ever meets a block point.
    block_points: list = field(default_factory=list)
    # config.settings, checked (settings.py): what the run resolved and where each value came from; [] where the
    # file records none (older files).
    settings: list = field(default_factory=list)

    @property
    def ok_points(self):
        return [p for p in self.points if p.ok]


def _cut(text, limit=40):
    return text if len(text) <= limit else text[:limit - 3] + "..."


def _show(value):
    """A value for a one-line error message: as JSON (newlines and odd characters escaped), cut short."""
    return _cut(json.dumps(value))


def _quote(value):
    """A name between single quotes, escaped and cut short the same way."""
    return f"'{_cut(json.dumps(value)[1:-1])}'" if isinstance(value, str) else _show(value)


def _fail(path, where, problem):
    raise BadInput(f"{path}: {where}: {problem}" if where else f"{path}: {problem}")


def _number(path, where, value, positive=False, nonnegative=False, at_most=None):
    """A finite number as float. Huge integers count as out of range: the figures
    and the fit work in floats, and a value beyond them crashed a plot worker."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        _fail(path, where, f"expected a number, got {_show(value)}")
    try:
        x = float(value)
    except OverflowError:
        x = math.inf
    if not math.isfinite(x):
        _fail(path, where, f"expected a finite number, got {_show(value)}")
    if positive and not x > 0:
        _fail(path, where, f"must be positive, got {_show(value)}")
    if nonnegative and x < 0:
        _fail(path, where, f"cannot be negative, got {_show(value)}")
    if at_most is not None and x > at_most:
        _fail(path, where, f"must be at most {at_most:g}, got {_show(value)}")
    return x


def _string(path, where, value):
    if not isinstance(value, str):
        _fail(path, where, f"expected a string, got {_show(value)}")
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        # A lone surrogate escape (\ud800 in the JSON) is no character: writing the report or stdout fails on it.
        _fail(path, where, f"not valid Unicode text: {_quote(value)}")
    return value


_ABSENT = object()


class _Fields:
    """Checked reads from one object of a result file. Absent (or null) optional
    fields give the default; a field of the wrong type or out of range is a
    BadInput naming the file and the field, so nothing later has to guess."""

    def __init__(self, path, where, raw):
        if not isinstance(raw, dict):
            _fail(path, where, f"expected an object, got {_show(raw)}")
        self.path, self.where, self.raw = path, where, raw

    def at(self, key):
        return f"{self.where}.{key}" if self.where else key

    def fail(self, problem, key=None):
        _fail(self.path, self.where if key is None else self.at(key), problem)

    def _get(self, key, required):
        """The value; _ABSENT where an optional field is absent or null (a required null is a wrong type)."""
        if key not in self.raw:
            if required:
                self.fail(f"missing '{key}'")
            return _ABSENT
        value = self.raw[key]
        return _ABSENT if value is None and not required else value

    def _wrong(self, key, expected):
        self.fail(f"expected {expected}, got {_show(self.raw[key])}", key)

    def string(self, key, required=False, default=None, choices=None):
        value = self._get(key, required)
        if value is _ABSENT:
            return default
        _string(self.path, self.at(key), value)
        if choices and value not in choices:
            self.fail(f"unknown {key} {_quote(value)} (expected {', '.join(choices[:-1])} or {choices[-1]})", key)
        return value

    def integer(self, key, required=False, default=None, positive=False, nonnegative=False):
        value = self._get(key, required)
        if value is _ABSENT:
            return default
        if isinstance(value, bool) or not isinstance(value, int):
            self._wrong(key, "an integer")
        if positive and value <= 0:
            self.fail(f"must be positive, got {_show(value)}", key)
        if nonnegative and value < 0:
            self.fail(f"cannot be negative, got {_show(value)}", key)
        # The C++ tool counts in 64 bits; beyond that a file is corrupt, and floats overflow.
        if abs(value) >= MAX_INT:
            self.fail(f"out of range (at most 2^64 - 1), got a {len(str(abs(value)))}-digit number", key)
        return value

    def number(self, key, required=False, default=None, **bounds):
        value = self._get(key, required)
        if value is _ABSENT:
            return default
        return _number(self.path, self.at(key), value, **bounds)

    def flag(self, key, default):
        value = self._get(key, False)
        if value is _ABSENT:
            return default
        if not isinstance(value, bool):
            self._wrong(key, "true or false")
        return value

    def array(self, key, required=False):
        value = self._get(key, required)
        if value is _ABSENT:
            return None
        if not isinstance(value, list):
            self._wrong(key, "an array")
        return value

    def object(self, key):
        value = self._get(key, False)
        return None if value is _ABSENT else _Fields(self.path, self.at(key), value)


def _summary(fields):
    """stats / wall_stats: {min, median, mean, p95, max, stddev, count} of the samples."""
    for key in ("min", "median", "mean", "p95", "max", "stddev"):
        fields.number(key, **SECONDS)
    fields.integer("count", nonnegative=True)
    return fields.raw


def _point(run, path, i, raw):
    f = _Fields(path, f"results[{i}]", raw)
    p = Point(
        run=run,
        index=i,
        backend=f.string("backend", required=True),
        device=f.string("device", required=True),
        device_index=f.integer("device_index", default=0),
        device_type=f.string("device_type", default=""),
        route=f.string("route", required=True),
        direction=f.string("direction", required=True, choices=DIRECTIONS),
        host_memory=f.string("host_memory", required=True),
        bytes=f.integer("bytes", required=True, positive=True),
        status=f.string("status", required=True, choices=STATUSES),
        reason=f.string("reason", default=""),
        emulation=f.string("emulation", default=""),
        note=f.string("note", default=""),
        device_pci=f.string("device_pci", default=""),
        peer_device_index=f.integer("peer_device_index", nonnegative=True),
        peer_path=f.string("peer_path", default=""),
        block_bytes=f.integer("block_bytes", default=0, nonnegative=True),
        blocks=f.integer("blocks", default=0, nonnegative=True),
        settings_ref=read_point_settings(f),
    )
    together = f.object("concurrent")
    if together:
        p.at_once = together.string("role", required=True, choices=("device", "aggregate"))
        devices = together.array("devices", required=True)
        if not devices or not all(isinstance(d, int) and not isinstance(d, bool) and d >= 0 for d in devices):
            together.fail("must be a non-empty array of device indices", "devices")
        p.at_once_devices = tuple(devices)
    if not p.ok:
        return p  # only what identifies it and why it did not run is shown
    p.timer = f.string("timer", required=True, choices=TIMERS)
    # Samples first: where a timer went wrong they are the cause, the median and GB/s only follow.
    samples = f.array("samples_s", required=True)
    if not samples:
        f.fail("an ok point needs at least one sample", "samples_s")
    p.samples_s = [_number(path, f"{f.at('samples_s')}[{k}]", s, **SECONDS) for k, s in enumerate(samples)]
    p.median_s = f.number("median_s", required=True, at_most=MAX_SECONDS)
    if p.median_s < MIN_SECONDS:
        f.fail(f"an ok point needs a positive median time (at least {MIN_SECONDS:g} s), got {_show(raw['median_s'])}",
               "median_s")
    p.gbps = f.number("gbps", required=True, **GBPS)
    p.latency_us = f.number("latency_us", required=True, nonnegative=True)
    p.bytes_per_rep = f.integer("bytes_per_rep", default=p.bytes, positive=True)
    stats = f.object("stats")
    p.stats = _summary(stats) if stats else None
    wall = f.object("wall_stats")
    if wall:
        _summary(wall)
        p.wall_median_s = wall.number("median")
    p.ci_rel = f.number("ci_rel", nonnegative=True)  # null: unbounded
    p.converged = f.flag("converged", True)
    p.verified = f.flag("verified", True)
    p.link_ceiling_gbps = p.link_limit_gbps = f.number("link_ceiling_gbps", **GBPS) or None  # absent or 0: unknown
    verdict = f.object("verdict")
    if run.v1:
        p.trusted, why, p.above_link_limit, p.clock_misses_host_work = legacy.verdict(p, raw)
        p.why_not = tuple(why)
        p.settled, p.gbps_range, p.wall_gbps_range = legacy.spread(p, raw)
    elif not verdict:
        f.fail("an ok point needs core's verdict (trusted or why not)", "verdict")
    else:
        p.trusted = verdict.flag("trusted", None)
        if p.trusted is None:
            verdict.fail("missing 'trusted'")
        why = verdict.array("why_not") or []
        p.why_not = tuple(_string(path, f"{verdict.at('why_not')}[{k}]", w) for k, w in enumerate(why))
        p.above_link_limit = verdict.flag("above_link_limit", False)
        p.clock_misses_host_work = verdict.flag("clock_misses_host_work", False)
        p.settled = verdict.flag("settled", True)
        p.gbps_range, p.wall_gbps_range = (_range(verdict, k) for k in ("gbps_range", "wall_gbps_range"))
    fu = f.object("first_use")
    if fu:
        # Negative means "not measured" in the C++ model.
        values = [fu.number(k, default=-1.0, at_most=MAX_SECONDS) for k in ("alloc_s", "touch_s", "first_transfer_s")]
        if all(v >= 0 for v in values):
            p.first_use = FirstUse(*values)
    parts = f.object("parts")
    for name in parts.raw if parts else ():
        # Names are the concurrent directions (bidir) or phases (OpenCL's queued_to_end); they label curves.
        _string(path, parts.where, name)
        part = parts.object(name)
        if not part:
            continue
        median = part.number("median_s", required=True, **SECONDS)
        gbps = part.number("gbps", default=0.0, **GBPS)
        if 0 < median < MIN_SECONDS:
            part.fail(f"must be 0 (not measured) or at least {MIN_SECONDS:g} s, got {_show(median)}", "median_s")
        if median > 0:  # 0: the C++ tool had no samples for this direction
            p.parts[name] = {"median_s": median, "gbps": gbps}
    return p


def _range(fields, key):
    """A [low, high] pair of GB/s, or None where absent."""
    pair = fields.array(key)
    if pair is None:
        return None
    if len(pair) != 2:
        fields.fail(f"expected [low, high], got {_show(pair)}", key)
    low, high = (_number(fields.path, f"{fields.at(key)}[{k}]", v, **GBPS) for k, v in enumerate(pair))
    if low > high:
        fields.fail(f"low above high: {_show(pair)}", key)
    return low, high


def _check_system(system):
    """The host and accelerator fields the report shows (the rest is not read)."""
    for key in ("hostname", "cpu_model", "os", "kernel"):
        system.string(key)
    for key in ("logical_cpus", "memory_bytes"):
        system.integer(key, nonnegative=True)  # 0: unknown
    for k, raw in enumerate(system.array("accelerators") or []):
        acc = _Fields(system.path, f"{system.at('accelerators')}[{k}]", raw)
        for key in ("pci_address", "vendor", "vendor_name"):
            acc.string(key)
        acc.number("link_gbps_per_direction", **GBPS)  # 0: unknown
        acc.string("degraded")
        ceilings = acc.object("ceiling_gbps")
        if ceilings:
            for key in ("h2d", "d2h", "h2d_rcb_completions"):
                ceilings.number(key, **GBPS)
        for key in ("link_current", "link_max"):
            link = acc.object(key)
            if link:
                link.number("gts", nonnegative=True)
                link.integer("gen", nonnegative=True)
                link.integer("width", nonnegative=True)


# The most a result file may hold, read or decompressed (a full sweep of a GPU machine is
# tens of MB): a gzip bomb or a stray huge file is refused, not swapped in.
MAX_FILE_BYTES = 512 << 20
GZIP_MAGIC = b"\x1f\x8b"


def _read_bounded(path):
    """The file's bytes, gunzipped when it starts with gzip's magic, at most MAX_FILE_BYTES."""
    with open(path, "rb") as f:
        raw = f.read(MAX_FILE_BYTES + 1)
    too_big = f"{path}: larger than {MAX_FILE_BYTES >> 20} MiB (uncompressed); not a result file this tool reads"
    if len(raw) > MAX_FILE_BYTES:
        raise BadInput(too_big)
    if raw[:2] == GZIP_MAGIC:
        try:
            with gzip.GzipFile(fileobj=io.BytesIO(raw)) as g:
                raw = g.read(MAX_FILE_BYTES + 1)
        except (OSError, EOFError, zlib.error) as e:  # BadGzipFile is an OSError; a cut file ends in EOFError
            raise BadInput(f"{path}: not a readable gzip file ({e or 'truncated'})") from None
    if len(raw) > MAX_FILE_BYTES:
        raise BadInput(too_big)
    return raw


def read_document(path):
    """A result file's JSON (gzipped or not, at most MAX_FILE_BYTES); BadInput with one line where it is not."""
    try:
        text = _read_bounded(path).decode("utf-8")
    except FileNotFoundError:
        raise BadInput(f"{path}: no such file") from None
    except IsADirectoryError:
        raise BadInput(f"{path}: is a directory, expected a result file") from None
    except UnicodeDecodeError:
        raise BadInput(f"{path}: not JSON (not UTF-8 text)") from None
    except OSError as e:
        raise BadInput(f"{path}: cannot read: {e.strerror or e}") from None
    try:
        return json.loads(text)
    except json.JSONDecodeError as e:
        raise BadInput(f"{path}: not JSON ({e.msg} at line {e.lineno}, column {e.colno})") from None
    except RecursionError:  # Python's parser recurses per level of nesting
        raise BadInput(f"{path}: not JSON this tool can read (nested too deeply)") from None
    except ValueError:  # an integer longer than Python converts (sys.get_int_max_str_digits)
        raise BadInput(f"{path}: not JSON this tool can read (a number with too many digits)") from None


def _check_catalogue(top):
    """The catalogue's shape (catalogue.from_json reads it): objects of named objects, strings and flags."""
    raw = top.object("catalogue")
    if raw is None:
        top.fail("missing 'catalogue' (what the run's routes and host memory kinds are)")
    for section, strings in (("routes", ("family", "role", "description")),
                             ("host_memory", ("summary", "maker", "offset_of"))):
        entries = raw.object(section)
        for name in entries.raw if entries else ():
            entry = entries.object(name)
            if entry is None:
                entries.fail("expected an object", name)
            for key in strings:
                entry.string(key)
    return cat.from_json(raw.raw)


def check_schema(path, doc, current):
    """Whether `doc` is of schema `current` (True) or of its version 1 (False, read through legacy.py);
    BadInput otherwise."""
    schema = doc.get("schema")
    if schema is None:
        raise BadInput(f"{path}: not an xferbench result file (no 'schema' key)")
    if schema == current:
        return True
    family = current.rsplit("/", 1)[0] + "/"
    if schema == family + "v1":
        return False
    if isinstance(schema, str) and schema.startswith(family):
        raise BadInput(f"{path}: unsupported schema version {_quote(schema)} (this tool reads {current} and v1)")
    raise BadInput(f"{path}: not an xferbench result file (schema {_quote(schema)}, expected {current})")


def load_run(path, label=None, require_ok=True, doc=None, fleet=False):
    """Reads and validates one result file (a fleet's when `fleet`, else any other: the two share the
    schema but are read by different commands); raises BadInput with a one-line reason.

    Everything the report later uses is checked here, once, so that a malformed
    file is refused with the file and field named instead of failing somewhere
    in the analysis or in a plot worker."""
    path = Path(path)
    doc = read_document(path) if doc is None else doc  # a caller that sorted files by schema has read it already
    if not isinstance(doc, dict):
        raise BadInput(f"{path}: not an xferbench result file (the top level is not an object)")
    v1 = not check_schema(path, doc, SCHEMA)
    if ("fleet" in doc) != fleet:
        raise BadInput(f"{path}: a fleet result file, not a sweep's (read it with xferbench-report fleet {path})"
                       if not fleet else f"{path}: not a fleet result file (it has no 'fleet' section)")
    results = doc.get("results")
    if not isinstance(results, list):
        raise BadInput(f"{path}: 'results' is missing or not an array")
    top = _Fields(path, "", doc)
    system, config, tool = top.object("system"), top.object("config"), top.object("tool")
    if system:
        _check_system(system)
    if config:
        for k, arg in enumerate(config.array("argv") or []):
            _string(path, f"{config.at('argv')}[{k}]", arg)
    if tool:
        tool.string("name")
        tool.string("version")
    run = Run(
        path=path,
        label=label or path.stem,
        tool=tool.raw if tool else {},
        started_at=top.string("started_at", default=""),
        system=system.raw if system else {},
        config=config.raw if config else {},
        interrupted=top.flag("interrupted", False),
        points=[],
        catalogue=legacy.catalogue() if v1 else _check_catalogue(top),
        v1=v1,
        settings=read_settings(path, config.raw if config else None),
    )
    read = [_point(run, path, i, raw) for i, raw in enumerate(results)]
    run.points = [p for p in read if not p.block_bytes]
    run.block_points = [p for p in read if p.block_bytes]
    if require_ok and not run.ok_points and not any(p.ok for p in run.block_points):
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
