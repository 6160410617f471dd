"""Trace files (`xferbench trace -- CMD`, schema xferbench-trace/1): checked on loading (a malformed file is one
BadInput line naming the field, as a result file's is), and each drawn as a page of its own, "Transfers of this
program": the outcome, the bill (the transfers grouped), the ranked fixes, each group's what-ifs and the groups
against the machine's curves.

C++ decided everything in a trace file: the groups, their cost and GB/s, the what-ifs and their prices, which fix
is each group's best and the ranking of the fixes. This page shows them and decides nothing again: no saving,
share, rank or classification is computed here (the curves' GB/s is their bytes over their seconds, a unit).
Only the fields shown are checked; the rest of a file (the transfers themselves) is not read.
"""

import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Optional

from .analysis import direction_title
from .document import Document, Link
from .errors import BadInput
from .load import _Fields, _check_system, _fail, _quote, _show, _string
from .units import format_gbps, format_size, format_time

FAMILY = "xferbench-trace/"
SCHEMA = FAMILY + "1"
PAGE_TITLE = "Transfers of this program"
STATES = ("complete", "interrupted", "no_cuda", "not_traced")
DIRECTIONS = ("h2d", "d2h", "d2d", "h2h", "p2p", "set", "unknown")
_TITLES = {"h2h": "host to host (h2h)", "p2p": "device to device across devices (p2p)", "set": "memset (set)"}


def is_trace(doc):
    """Whether a document read from a file says it is a trace (its schema, any version)."""
    schema = doc.get("schema") if isinstance(doc, dict) else None
    return isinstance(schema, str) and schema.startswith(FAMILY)


@dataclass
class WhatIf:
    fix: str
    advice: str
    call_to_use: str
    predicted_s: Optional[float]  # None: not priced, and not_priced says why
    saving_s: Optional[float]
    not_priced: str = ""


@dataclass
class Group:
    id: int
    direction: str
    host_memory: str
    size_class_text: str
    call: str
    is_async: bool
    stream: int
    count: int
    bytes: int
    mean_bytes: float
    cost_s: float
    gbps: float
    share_of_wall: float
    overlap_share: float
    what_if: list = field(default_factory=list)


@dataclass
class Fix:
    rank: int
    group: int
    advice: str
    call_to_use: str
    cost_s: float
    predicted_s: float
    saving_s: float
    share_of_wall: float


@dataclass
class Curve:
    route: str  # route and host_memory: what figure_style.Styler draws a curve by
    host_memory: str
    direction: str
    label: str
    points: list  # [(bytes, seconds per transfer)]


@dataclass
class Process:
    pid: int
    complete: bool
    dropped_records: int
    transfers: int


@dataclass
class Trace:
    path: Path
    label: str
    tool: dict
    system: dict
    started_at: str
    command: list
    state: str
    outcome_text: str
    wall_s: float
    processes: list
    machine_text: str
    curves: list
    groups: list
    fixes: list  # in the file's rank order
    summary_text: str

    @property
    def page(self):
        """The page's file name in the report directory, without its extension."""
        return "trace-" + "".join(ch if ch.isalnum() or ch in "._-" else "_" for ch in self.label)


# Times and shares are checked for type and sign only: a long program may run longer than any sweep point.
TIME = dict(nonnegative=True)


def _what_if(f):
    w = WhatIf(fix=f.string("fix", required=True), advice=f.string("advice", required=True),
               call_to_use=f.string("call_to_use", required=True), predicted_s=f.number("predicted_s", **TIME),
               saving_s=None)
    if w.predicted_s is None:  # the one way a what-if may go without a price: saying why
        w.not_priced = f.string("not_priced", required=True)
    else:
        w.saving_s = f.number("saving_s", required=True)  # negative: the fix would cost more
    return w


def _group(f):
    g = Group(
        id=f.integer("id", required=True, nonnegative=True),
        direction=f.string("direction", required=True, choices=DIRECTIONS),
        host_memory=f.string("host_memory", required=True),
        size_class_text=f.string("size_class_text", required=True),
        call=f.string("call", required=True),
        is_async=f.flag("async", None),
        stream=f.integer("stream", required=True),
        count=f.integer("count", required=True, positive=True),
        bytes=f.integer("bytes", required=True, nonnegative=True),
        mean_bytes=f.number("mean_bytes", required=True, nonnegative=True),
        cost_s=f.number("cost_s", required=True, **TIME),
        gbps=f.number("gbps", required=True, nonnegative=True),
        share_of_wall=f.number("share_of_wall", required=True, nonnegative=True),
        overlap_share=f.number("overlap_share", required=True, nonnegative=True),
    )
    if g.is_async is None:
        f.fail("missing 'async'")
    whats = f.array("what_if", required=True)
    g.what_if = [_what_if(_Fields(f.path, f"{f.at('what_if')}[{k}]", raw)) for k, raw in enumerate(whats)]
    return g


def _fix(f, ids):
    x = Fix(rank=f.integer("rank", required=True, positive=True), group=f.integer("group", required=True),
            advice=f.string("advice", required=True), call_to_use=f.string("call_to_use", required=True),
            cost_s=f.number("cost_s", required=True, **TIME),
            predicted_s=f.number("predicted_s", required=True, **TIME),
            saving_s=f.number("saving_s", required=True),
            share_of_wall=f.number("share_of_wall", required=True, nonnegative=True))
    if x.group not in ids:
        f.fail(f"no group {x.group} in 'groups'", "group")
    return x


def _curve(f):
    c = Curve(route=f.string("route", required=True), host_memory=f.string("host_memory", required=True),
              direction=f.string("direction", required=True, choices=DIRECTIONS),
              label=f.string("label", required=True), points=[])
    for k, pair in enumerate(f.array("points", required=True)):
        where = f"{f.at('points')}[{k}]"
        if not isinstance(pair, list) or len(pair) != 2:
            _fail(f.path, where, f"expected [bytes, seconds per transfer], got {_show(pair)}")
        point = _Fields(f.path, where, {"bytes": pair[0], "seconds": pair[1]})
        c.points.append((point.integer("bytes", required=True, positive=True),
                         point.number("seconds", required=True, positive=True)))
    return c


def load_trace(path, doc, label=None):
    """Checks a trace file's document; BadInput with one line (the file, the field, what is wrong) where a field
    it shows is missing or wrong."""
    path = Path(path)
    schema = doc.get("schema")
    if schema != SCHEMA:
        raise BadInput(f"{path}: unsupported trace schema version {_quote(schema)} (this tool reads {SCHEMA})")
    top = _Fields(path, "", doc)
    system, tool = top.object("system"), top.object("tool")
    if system:
        _check_system(system)
    if tool:
        tool.string("name")
        tool.string("version")
    command = top.array("command", required=True)
    for k, arg in enumerate(command):
        _string(path, f"command[{k}]", arg)
    head = {}
    for key in ("outcome", "machine", "summary"):
        head[key] = top.object(key)
        if head[key] is None:
            top.fail(f"missing '{key}'")
    outcome, machine = head["outcome"], head["machine"]
    state = outcome.string("state", required=True, choices=STATES)
    outcome_text = outcome.string("text", required=True)
    wall_s = top.number("wall_s", required=True, **TIME)
    machine_text = machine.string("text", required=True)
    curves = [_curve(_Fields(path, f"machine.curves[{k}]", raw))
              for k, raw in enumerate(machine.array("curves", required=True))]
    summary_text = head["summary"].string("text", required=True)
    processes = []
    for k, raw in enumerate(top.array("processes", required=True)):
        f = _Fields(path, f"processes[{k}]", raw)
        p = Process(pid=f.integer("pid", required=True), complete=f.flag("complete", None),
                    dropped_records=f.integer("dropped_records", required=True, nonnegative=True),
                    transfers=f.integer("transfers", required=True, nonnegative=True))
        if p.complete is None:
            f.fail("missing 'complete'")
        processes.append(p)
    groups = [_group(_Fields(path, f"groups[{k}]", raw)) for k, raw in enumerate(top.array("groups", required=True))]
    ids = {}
    for k, g in enumerate(groups):
        if g.id in ids:  # a fix names its group by id
            _fail(path, f"groups[{k}].id", f"id {g.id} is groups[{ids[g.id]}]'s too")
        ids[g.id] = k
    fixes, ranks = [], {}
    for k, raw in enumerate(top.array("fixes", required=True)):
        x = _fix(_Fields(path, f"fixes[{k}]", raw), ids)
        if x.rank in ranks:
            _fail(path, f"fixes[{k}].rank", f"rank {x.rank} is fixes[{ranks[x.rank]}]'s too")
        ranks[x.rank] = k
        fixes.append(x)
    return Trace(path=path, label=label or path.stem, tool=tool.raw if tool else {},
                 system=system.raw if system else {}, started_at=top.string("started_at", default=""),
                 command=command, state=state, outcome_text=outcome_text, wall_s=wall_s, processes=processes,
                 machine_text=machine_text, curves=curves, groups=groups,
                 # As C++ ranked them: the file's rank (which its order should be already), never the savings.
                 fixes=sorted(fixes, key=lambda x: x.rank), summary_text=summary_text)

# ---- the page ----------------------------------------------------------------------

def _share(x):
    return f"{100 * x:.3g}%"


def _title(d):
    return _TITLES.get(d, direction_title(d))


def _command(trace):
    return " ".join(str(a) for a in trace.command)


def page_document(trace, figure=None):
    """The trace's page: what ran and how it ended, the bill, the fixes, the what-ifs and the figure."""
    doc = Document(PAGE_TITLE)
    made = " ".join(str(trace.tool.get(k) or "") for k in ("name", "version")).strip()
    host = trace.system.get("hostname")
    doc.para(f"{trace.path.name}: traced" + (f" by {made}" if made else "") + (f" on {host}" if host else "")
             + (f" at {trace.started_at}" if trace.started_at else "") + ". Sizes are binary (1 KiB = 1024 B); "
             "GB/s are 1e9 bytes per second. Everything below is as the trace file says: the groups, their "
             "costs, the prices of the what-ifs and the ranking of the fixes were decided when it was written.",
             "small")
    doc.code(_command(trace))
    # A program whose transfers are not all here says so before anything else.
    doc.para(trace.outcome_text, "" if trace.state == "complete" else "note")
    for p in trace.processes:
        if not p.complete or p.dropped_records:
            doc.para(f"Process {p.pid}: " + ("its records are not complete" if not p.complete else "")
                     + ("; " if not p.complete and p.dropped_records else "")
                     + (f"{p.dropped_records:,} records were dropped" if p.dropped_records else "")
                     + f" ({p.transfers:,} transfers recorded).", "note")
    doc.para(trace.summary_text)
    doc.bullets([f"wall time: {format_time(trace.wall_s)}",
                 f"processes: {len(trace.processes)}, {sum(p.transfers for p in trace.processes):,} transfers "
                 "recorded",
                 f"machine curves: {trace.machine_text}"])

    doc.heading(1, "The bill", "bill")
    if trace.groups:
        doc.para("The program's transfers grouped (by operation, direction, host memory, size class, call and "
                 "stream), costliest first. Cost: what the program paid, the time a synchronous call held the CPU "
                 "or an asynchronous copy's device time; overlap: the share of its device time a kernel ran "
                 "beside it.")
        doc.table(["group", "direction", "host memory", "size class", "call", "async", "stream", "count", "bytes",
                   "cost", "share of wall", "overlap share", "GB/s"],
                  [[g.id, g.direction, g.host_memory, g.size_class_text, g.call, "yes" if g.is_async else "no",
                    g.stream, f"{g.count:,}", format_size(g.bytes), format_time(g.cost_s), _share(g.share_of_wall),
                    _share(g.overlap_share), format_gbps(g.gbps)] for g in trace.groups],
                  align="lllllllrrrrrr")
    else:
        doc.para("No transfer was recorded.")

    doc.heading(1, "Fixes, ranked by saving", "fixes")
    if trace.fixes:
        doc.para("Each group's best priced fix with a saving, the largest saving first.")
        doc.table(["rank", "group", "advice", "call to use", "cost -> predicted", "saving", "saving, share of wall"],
                  [[x.rank, x.group, x.advice, x.call_to_use,
                    f"{format_time(x.cost_s)} -> {format_time(x.predicted_s)}", format_time(x.saving_s),
                    _share(x.share_of_wall)] for x in trace.fixes],
                  align="rrllrrr")
    else:
        doc.para("No fix: no group has a priced fix that saves time.")

    doc.heading(1, "Against this machine's curves", "curves")
    if figure is not None:
        doc.figure(figure)
    else:
        doc.para("Nothing to draw: no machine curve, and no group that moved bytes.")

    doc.heading(1, "What-ifs per group", "what-if")
    rows = [[g.id, w.fix, w.advice, w.call_to_use,
             format_time(w.predicted_s) if w.predicted_s is not None else "-",
             format_time(w.saving_s) if w.saving_s is not None else "-",
             f"not priced: {w.not_priced}" if w.predicted_s is None else ""]
            for g in trace.groups for w in g.what_if]
    if rows:
        doc.para("Every way the trace priced (or could not price) for each group, against the machine's curves.")
        doc.table(["group", "fix", "advice", "call to use", "predicted", "saving", "note"], rows,
                  align="rlllrrl", row_marks=["warn" if r[-1] else "" for r in rows])
    else:
        doc.para("No what-if: no group was priced against the machine.")
    return doc


def index_section(doc, traces):
    """Where a report holds other pages too: one row per trace, linking to its page."""
    doc.heading(1, "Program traces", "traces")
    doc.table(["page", "command", "outcome", "summary"],
              [[Link(t.path.name, f"{t.page}.html", f"{t.page}.md"), _command(t), t.outcome_text, t.summary_text]
               for t in traces])


def console_lines(trace):
    """What `render` prints of a trace: how the program ended, the summary and the ranked fixes."""
    lines = [f"{trace.path}: {trace.outcome_text}", f"  {trace.summary_text}"]
    for x in trace.fixes:
        lines.append(f"  {x.rank}. group {x.group}: {x.advice} ({x.call_to_use}): {format_time(x.cost_s)} -> "
                     f"{format_time(x.predicted_s)}, saves {format_time(x.saving_s)} ({_share(x.share_of_wall)} "
                     "of wall)")
    return lines


# ---- the figure (matplotlib is imported only here, as render asks for it first) ----

def trace_figure(trace, outdir):
    """The machine's curves (GB/s against size, log2 x) and each group as one marker at (mean bytes, its GB/s),
    a panel per direction; None where there is nothing to draw."""
    from .figure_style import Styler, _legend, _panels, _safe, _save, _suptitle, size_axis

    groups = [g for g in trace.groups if g.mean_bytes > 0]  # a log size axis has no place for 0 bytes
    dirs = [d for d in DIRECTIONS if any(c.direction == d and c.points for c in trace.curves)
            or any(g.direction == d for g in groups)]
    if not dirs:
        return None
    # One panel a row: the legends (a line per curve and per group) sit on the right, outside the axes.
    fig, grid = _panels(len(dirs), ax_w=6.0, ax_h=2.8, hgap=0.9, top=0.6)
    kinds = list(dict.fromkeys([c.host_memory for c in trace.curves] + [g.host_memory for g in groups]))
    styler = Styler(kinds, list(dict.fromkeys(c.route for c in trace.curves)))
    for (ax,), d in zip(grid, dirs):
        sizes, rates = [], []
        for c in trace.curves:
            if c.direction == d and c.points:
                xs, ys = [n for n, _ in c.points], [n / s / 1e9 for n, s in c.points]
                styler.plot(ax, c, xs, ys, label=c.label)
                sizes += xs
                rates += ys
        for g in groups:
            if g.direction == d:
                ax.plot([g.mean_bytes], [g.gbps], linestyle="none", marker="*", markersize=13,
                        color=styler.color(g.host_memory), markeredgecolor="black", markeredgewidth=0.7, zorder=3,
                        label=f"group {g.id}: {g.call}, {g.host_memory}, {g.size_class_text}")
                ax.annotate(str(g.id), (g.mean_bytes, g.gbps), textcoords="offset points", xytext=(6, 4),
                            fontsize=8)
                sizes.append(g.mean_bytes)
                rates.append(g.gbps)
        size_axis(ax, sizes)
        top = max(rates)
        ax.set_ylim(0, (top if top > 0 else 1.0) * 1.12)  # from 0, as the sweep's bandwidth figures
        ax.set_ylabel("GB/s")
        ax.set_title(_title(d), loc="left")
        _legend(ax)
    title = f"{PAGE_TITLE} against the machine's curves"
    _suptitle(fig, title)
    caption = (f"Lines: the machine's curves ({trace.machine_text}), GB/s = bytes / seconds per transfer, against "
               "the transfer size (log2). Stars: the trace's groups, each at its mean transfer size and the GB/s "
               "the program got (bytes / cost), numbered as in the bill.")
    left = len(trace.groups) - len(groups)
    if left:
        caption += f" {left} groups of 0-byte transfers are not drawn."
    return _save(fig, outdir, _safe(trace.page), title, caption)
