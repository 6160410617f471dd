"""`xferbench beside` result files (schema xferbench/beside/v1): each way of copying beside each workload,
checked on loading (a malformed file is one BadInput line naming the field, as the other loaders' are) and
drawn as the section "A copy beside compute": a table per workload, the file's findings as it words them.

C++ decided everything in such a file: the medians and ranges, the slowdown's sign, whether the copies' data
arrived, and which workloads have a finding (a way other than the fastest alone finishing one job of both first,
the ranges apart). This section shows them and decides nothing again: no finding is made, dropped or reworded
here, and no number is recomputed (a percentage is the file's fraction times 100, a GB/s its bytes/s over 1e9).
Only the fields shown are checked; the rest of a file is not read.
"""

from dataclasses import dataclass, field
from pathlib import Path
from typing import Optional

from .errors import BadInput
from .findings import Finding
from .load import _Fields, _check_system, _quote, _show, _string
from .units import format_gbps, format_size, format_time

FAMILY = "xferbench/beside/"
SCHEMA = FAMILY + "v1"
TITLE = "A copy beside compute"
STATUSES = ("ok", "skipped", "failed")
# Each a {median, low, high} over the rounds: the copy's bytes/s alone and beside the workload, its share kept
# (beside / alone, per round), the workload's units/s alone and beside, its slowdown (a fraction; negative:
# faster) and the joint time (seconds).
RATES = ("copy_alone", "copy_beside", "work_alone", "work_beside")
SPREADS = RATES + ("copy_share", "slowdown", "joint_s")
NO_FINDING = ("The file has no finding: for each workload the way fastest alone also finished the joint job "
              "first, or the joint times' ranges of the two met (the run calls no difference its rounds do not "
              "separate), or fewer than two ways ran ok.")


def is_beside(doc):
    """Whether a document says it is a beside file (its schema, any version)."""
    schema = doc.get("schema") if isinstance(doc, dict) else None
    return isinstance(schema, str) and schema.startswith(FAMILY)


@dataclass
class Spread:
    median: float
    low: float
    high: float


@dataclass
class Record:
    index: int  # position in the file's results array
    workload: str
    way: str
    status: str
    reason: str
    note: str
    verified: Optional[bool]  # None: the file does not say (a way none of whose rounds ran)
    rounds: int
    copy_bytes: Optional[int]  # the step and the job: None where the way was skipped (its step cannot run)
    job_copy_steps: Optional[int]
    job_work_steps: Optional[int]
    spreads: dict = field(default_factory=dict)
    chose: str = ""  # the way a block copier (auto, auto-beside) chose; empty for a way  # name (SPREADS) -> Spread; empty where no round ran

    @property
    def ok(self):
        return self.status == "ok"


@dataclass
class BesideFinding:
    index: int  # position in the file's findings array
    workload: str
    fastest_alone: str
    first_beside: str
    sooner: float
    text: str


@dataclass
class BesideChoice:
    """A block copier's choice beside a workload against the best of the ways, as the file states it."""

    index: int  # position in the file's choices array
    workload: str
    copier: str
    chose: str
    joint_s: float
    best_way: str
    best_joint_s: float
    vs_best: float


@dataclass
class Beside:
    """What studies.py handles of a study (path, schema, doc, system), with the records checked."""

    path: Path
    schema: str
    doc: dict
    system: dict
    config: dict
    conventions: str
    interrupted: bool
    records: list
    findings: list
    choices: list = field(default_factory=list)  # files before the copiers' ways have none

    @property
    def hostname(self):
        return self.system.get("hostname") or ""

    @property
    def workloads(self):
        """The config's order, then any other the results name."""
        return list(dict.fromkeys(list(self.config["workloads"]) + [r.workload for r in self.records]))


# ---- loading ------------------------------------------------------------------------

def _spread(f, key, required, **bounds):
    s = f.object(key)
    if s is None:
        if required:
            f.fail(f"missing '{key}'")
        return None
    sp = Spread(*(s.number(k, required=True, **bounds) for k in ("median", "low", "high")))
    if not sp.low <= sp.median <= sp.high:
        s.fail(f"expected low <= median <= high, got {_show([sp.low, sp.median, sp.high])}")
    return sp


def _record(f, i):
    status = f.string("status", required=True, choices=STATUSES)
    ran = status != "skipped"  # a skipped way is what identifies it and why
    r = Record(index=i, workload=f.string("workload", required=True), way=f.string("way", required=True),
               status=status, reason=f.string("reason", required=status != "ok", default=""),
               note=f.string("note", default=""), verified=f.flag("verified", None),
               rounds=f.integer("rounds", required=status == "ok", default=0, nonnegative=True),
               copy_bytes=f.integer("copy_bytes", required=ran, positive=True),
               job_copy_steps=f.integer("job_copy_steps", required=ran, nonnegative=True),
               job_work_steps=f.integer("job_work_steps", required=ran, nonnegative=True),
               chose=f.string("chose", default=""))
    if r.ok and r.verified is None:
        f.fail("missing 'verified'")
    # An ok record has every spread; a failed one has them where its rounds ran (its data check failed after).
    for key in SPREADS:
        bounds = {} if key == "slowdown" else dict(nonnegative=True)
        sp = _spread(f, key, r.ok, **bounds)
        if sp is not None:
            r.spreads[key] = sp
    return r


def _finding(f, i, records):
    x = BesideFinding(index=i, workload=f.string("workload", required=True),
                      fastest_alone=f.string("fastest_alone", required=True),
                      first_beside=f.string("first_beside", required=True),
                      sooner=f.number("sooner", required=True), text=f.string("text", required=True))
    ways = {r.way for r in records if r.workload == x.workload}
    if not ways:
        f.fail(f"no results for workload {_quote(x.workload)}", "workload")
    for key in ("fastest_alone", "first_beside"):
        if getattr(x, key) not in ways:
            f.fail(f"no results for way {_quote(getattr(x, key))} beside {_quote(x.workload)}", key)
    return x


def _choice(f, i, records):
    c = BesideChoice(index=i, workload=f.string("workload", required=True), copier=f.string("copier", required=True),
                     chose=f.string("chose", required=True), joint_s=f.number("joint_s", required=True, positive=True),
                     best_way=f.string("best_way", required=True),
                     best_joint_s=f.number("best_joint_s", required=True, positive=True),
                     vs_best=f.number("vs_best", required=True))
    ways = {r.way for r in records if r.workload == c.workload}
    for key in ("copier", "best_way"):
        if getattr(c, key) not in ways:
            f.fail(f"no results for way {_quote(getattr(c, key))} beside {_quote(c.workload)}", key)
    return c


def load_beside(path, doc):
    """Checks a beside file's document; BadInput with one line (the file, the field, what is wrong) where a field
    it shows is missing or wrong, or where no record is ok."""
    path = Path(path)
    schema = doc.get("schema")
    if schema != SCHEMA:
        raise BadInput(f"{path}: unsupported schema version {_quote(schema)} (this tool reads {SCHEMA})")
    top = _Fields(path, "", doc)
    system = top.object("system")
    if system:
        _check_system(system)
    config = top.object("config")
    if config is None:
        top.fail("missing 'config'")
    config.string("backend", required=True)
    for key in ("workloads", "ways"):
        for k, name in enumerate(config.array(key, required=True)):
            _string(path, f"{config.at(key)}[{k}]", name)
    for key in ("copy_bytes", "work_bytes", "threads", "rounds"):
        config.integer(key, required=True, positive=True)
    config.number("seconds", required=True, positive=True)
    config.string("direction")  # where the copy goes, and its blocks: in files that name them
    config.integer("blocks", positive=True)
    config.integer("block_bytes", positive=True)
    conventions = top.string("conventions", required=True)
    records = [_record(_Fields(path, f"results[{i}]", raw), i)
               for i, raw in enumerate(top.array("results", required=True))]
    findings = [_finding(_Fields(path, f"findings[{i}]", raw), i, records)
                for i, raw in enumerate(top.array("findings", required=True))]
    choices = [_choice(_Fields(path, f"choices[{i}]", raw), i, records)
               for i, raw in enumerate(top.array("choices") or [])]
    if not any(r.ok for r in records):
        first = next(iter(records), None)
        counts = ", ".join(f"{n} {s}" for s in STATUSES[1:] if (n := sum(r.status == s for r in records)))
        raise BadInput(f"{path}: no ok measurements to report ({len(records)} records"
                       + (f": {counts}; the first, {first.way} beside {first.workload}: {_quote(first.reason)})"
                          if first else ")"))
    return Beside(path=path, schema=schema, doc=doc, system=system.raw if system else {}, config=config.raw,
                  conventions=conventions, interrupted=top.flag("interrupted", False), records=records,
                  findings=findings, choices=choices)


# ---- the section --------------------------------------------------------------------

def slowdown_text(x):
    """The workload's slowdown (a fraction) in words: 0.12 -> '+12.0% slower', -0.03 -> '3.0% faster'."""
    if x > 0:
        return f"+{100 * x:.1f}% slower"
    if x < 0:
        return f"{-100 * x:.1f}% faster"
    return "as fast (0.0%)"


def _gbps(v):
    return format_gbps(v / 1e9)


def _percent(v):
    return f"{100 * v:.1f}%"


def _signed_percent(v):
    return f"{100 * v:+.1f}%"


def _cell(r, key, show, median=None):
    """A spread as 'median (low to high)', each shown by `show` (the median by `median` where given)."""
    s = r.spreads.get(key)
    if s is None:
        return "-"
    return f"{(median or show)(s.median)} ({show(s.low)} to {show(s.high)})"


def _verified(r):
    return "-" if r.verified is None else "yes" if r.verified else "no"


def _note(r):
    parts = (([f"chose {r.chose}"] if r.chose else []) + ([f"{r.status}: {r.reason}"] if not r.ok else [])
             + ([r.note] if r.note else []))
    return "; ".join(parts)


def workload_rows(b, workload):
    """The table's rows of one workload, in the file's order, and their marks (a failed record: warn; a skipped
    one, a way whose step cannot run here, is no fault)."""
    rs = [r for r in b.records if r.workload == workload]
    rows = [[r.way, _cell(r, "copy_alone", _gbps), _cell(r, "copy_beside", _gbps),
             _cell(r, "copy_share", _percent), _cell(r, "slowdown", _signed_percent, slowdown_text),
             _cell(r, "joint_s", format_time), _verified(r), _note(r)] for r in rs]
    return rows, ["warn" if r.status == "failed" else "" for r in rs]


def _setup(c):
    """What the run measured, from its config."""
    step = format_size(c["copy_bytes"])
    if c.get("blocks") and c.get("block_bytes"):
        step += f" ({c['blocks']:,} blocks of {format_size(c['block_bytes'])})"
    if c.get("direction"):
        step += f", {c['direction']}"
    return (f"Each way of copying ({', '.join(c['ways'])}) beside each workload ({', '.join(c['workloads'])}) on "
            f"the {c['backend']} backend, in {c['rounds']} interleaved rounds of {c['seconds']:g} s phases: the copy "
            "alone, the workload alone, both beside each other, and one job of both at once until both are done "
            f"(the joint time). Copy steps of {step}; work size {format_size(c['work_bytes'])}; a CPU workload on "
            f"{c['threads']} thread(s).")


def render_beside(doc, b, fig=None):
    doc.heading(2, f"{TITLE} ({b.path.name})")
    doc.para(_setup(b.config))
    doc.para("Per workload, each way's medians over the rounds, in brackets their range (lowest to highest). Share "
             "kept: the copy's rate beside the workload over its rate alone, per round. The workload: how much "
             "longer (slower, +) or shorter (faster, -) it took beside the copy than alone. Joint time: one job of "
             "both at once. Verified: whether the copies' data arrived.")
    doc.para("As the file states its units: " + b.conventions + ("" if b.conventions.endswith(".") else "."), "small")
    if b.interrupted:
        doc.para(f"{b.path.name}: the run was interrupted; it holds only the records completed before.", "note")
    if fig:
        doc.figure(fig)
    for w in b.workloads:
        rs = [r for r in b.records if r.workload == w]
        if not rs:
            continue
        doc.heading(3, f"Beside {w}")
        jobs = {(r.job_copy_steps, r.job_work_steps, r.copy_bytes) for r in rs if r.status != "skipped"}
        if len(jobs) == 1:
            copy_steps, work_steps, step = jobs.pop()
            doc.para(f"One job, the same for every way: {copy_steps:,} copy steps of {format_size(step)} and "
                     f"{work_steps:,} steps of {w}.", "small")
        rows, marks = workload_rows(b, w)
        doc.table(["way", "copy GB/s alone", "copy GB/s beside", "copy's share kept", f"{w} beside the copy",
                   "joint time", "verified", "note"], rows, align="lrrrrrll", row_marks=marks)
    if b.choices:
        doc.heading(3, "The block copier's choices")
        doc.para("auto ranks the ways by their times alone, auto-beside by its beside_compute policy (the kernel "
                 "way last); each against the block way (loop, batch, kernel or pack: the ways it chooses among) "
                 "that finished the same job of copy and work first.", "small")
        doc.table(["workload", "copier", "chose", "joint time", "best way", "its joint time", "against the best"],
                  [[c.workload, c.copier, c.chose, format_time(c.joint_s), c.best_way, format_time(c.best_joint_s),
                    _signed_percent(c.vs_best)] for c in b.choices], align="lllrlrr")
    doc.heading(3, "Findings of the run")
    if b.findings:
        doc.bullets(x.text for x in b.findings)
    else:
        doc.para(NO_FINDING)


def beside_findings(b):
    """The file's findings as the report lists them: the text verbatim, the title from the file's fields (no
    number: two runs' titles compare), resting on the finding and the two records it names."""
    out = []
    at = {(r.workload, r.way): r.index for r in b.records}
    name = b.path.name
    for x in b.findings:
        rests = [f"{name}#findings[{x.index}]"] + [f"{name}#{at[(x.workload, w)]}"
                                                    for w in dict.fromkeys((x.first_beside, x.fastest_alone))]
        out.append(Finding("guide", f"A copy beside {x.workload}: {x.first_beside} finishes first", x.text, rests,
                           weight=5, claims={f"a copy beside {x.workload}, first to finish": x.first_beside}))
    return out
