"""The studies' result files (xferbench/app/v2, xferbench/alloc/v2, xferbench/cpu/v2, and their v1 through
legacy.py; xferbench/beside/v1 in beside.py, which this module hands such a file to):
checked on loading (a malformed file is one BadInput line naming the field),
rendered as tables a person reads, and turned into findings.

Only the fields shown are checked; the rest of a file is not read.
"""

import statistics
from dataclasses import dataclass

from . import legacy
from .beside import SCHEMA as BESIDE
from .beside import beside_findings, is_beside, load_beside, render_beside
from .errors import BadInput
from .findings import Finding
from .load import SECONDS, _Fields, read_document, _quote
from .units import format_gbps, format_size, format_time

APP, ALLOC, CPU = "xferbench/app/v2", "xferbench/alloc/v2", "xferbench/cpu/v2"
# v1 of each is read as its v2 (legacy.py): the same fields, but app/v1's bottom line had a name its sign
# contradicted and no verdict.
_V1 = {s[:-2] + "v1": s for s in (APP, ALLOC, CPU)}
SCHEMAS = (APP, ALLOC, CPU) + tuple(_V1) + (BESIDE,)
# The vadd phases in the order a program runs them, with the names the C++ tool's tables use.
PHASES = [("init", "runtime initialisation"), ("allocate", "buffer allocation"), ("populate", "buffer population"),
          ("cpu_vadd", "CPU vadd (baseline)"), ("map", "buffer mapping"), ("write", "write inputs out"),
          ("launch", "set args + launch"), ("kernel", "kernel runtime"), ("read", "read result back"),
          ("verify", "verify")]


@dataclass
class Study:
    path: object
    schema: str
    doc: dict
    system: dict

    @property
    def hostname(self):
        return self.system.get("hostname") or ""


def schema_of(doc):
    return doc.get("schema") if isinstance(doc, dict) else None


def load_study(path, doc=None):
    """Checks a study file; raises BadInput with one line where it is not usable."""
    from pathlib import Path

    path = Path(path)
    doc = read_document(path) if doc is None else doc
    if is_beside(doc):  # any version: its loader names the one it reads
        return load_beside(path, doc)
    schema = schema_of(doc)
    if schema in _V1:
        schema = _V1[schema]
        if schema == APP and isinstance(doc, dict) and isinstance(doc.get("results"), list):
            doc = dict(doc, results=[legacy.app_row(r) if isinstance(r, dict) else r for r in doc["results"]])
    top = _Fields(path, "", doc)
    system = top.object("system")
    if system:
        system.string("hostname")
        system.string("cpu_model")
        system.integer("logical_cpus", nonnegative=True)
    if schema == APP:
        rows = top.array("results", required=True)
        for i, raw in enumerate(rows):
            f = _Fields(path, f"results[{i}]", raw)
            for k in ("backend", "strategy", "status"):
                f.string(k, required=True)
            if raw.get("status") != "ok":
                continue
            f.integer("bytes_per_vector", required=True, positive=True)
            f.number("accelerator_saves_s")
            f.number("accelerator_saves_algorithm_s")
            verdict = f.object("verdict")
            if verdict:
                verdict.string("winner", choices=("accelerator", "cpu", "unclear"))
                verdict.string("text")
            phases = f.object("phases")
            for name in (phases.raw if phases else ()):
                ph = phases.object(name)
                if ph:
                    ph.number("median_s", required=True, **SECONDS)
        ok = [r for r in rows if r.get("status") == "ok"]
    elif schema == ALLOC:
        for key in ("alignment", "cost", "fragmentation"):
            for i, raw in enumerate(top.array(key, required=True)):
                f = _Fields(path, f"{key}[{i}]", raw)
                f.string("strategy", required=True)
                if key == "cost":
                    f.integer("bytes", required=True, positive=True)
                    for k in ("alloc_free_s", "touch_s"):
                        s = f.object(k)
                        if s:
                            s.number("median", **SECONDS)
                elif key == "alignment":
                    f.integer("checked", required=True, nonnegative=True)
                    f.integer("misaligned", required=True, nonnegative=True)
                    f.integer("alignment", required=True, positive=True)
                else:
                    for k in ("rss_start", "rss_end", "committed_start", "committed_end"):
                        f.integer(k, nonnegative=True)
                    f.number("seconds", **SECONDS)
        ok = doc["cost"]
    elif schema == CPU:
        rows = top.array("results", required=True)
        for i, raw in enumerate(rows):
            f = _Fields(path, f"results[{i}]", raw)
            for k in ("op", "method", "host_memory", "status"):
                f.string(k, required=True)
            if raw.get("status") != "ok":
                continue
            f.integer("bytes", required=True, positive=True)
            f.integer("threads", required=True, positive=True)
            f.number("gbps", required=True, nonnegative=True)
            f.number("median_s", required=True, **SECONDS)
            f.number("first_use_s", **SECONDS)
        for i, raw in enumerate(top.array("write_combining") or []):
            f = _Fields(path, f"write_combining[{i}]", raw)
            f.string("text")
            f.flag("in_effect", True)
            f.flag("checked", False)
        ok = [r for r in rows if r.get("status") == "ok"]
    else:
        raise BadInput(f"{path}: not a study file (schema {_quote(schema)})")
    if not ok:
        raise BadInput(f"{path}: no ok measurements to report")
    return Study(path, schema, doc, system.raw if system else {})


# ---- rendering ------------------------------------------------------------------

def _ms(s):
    return "-" if s is None else f"{s * 1e3:.3f} ms"


def render_app(doc, study, fig=None):
    d = study.doc
    base = (d.get("config") or {}).get("baseline") or "pageable"
    rows = [r for r in d["results"] if r.get("status") == "ok"]
    backends = list(dict.fromkeys(r["backend"] for r in rows))
    doc.heading(2, f"Application: vector add ({study.path.name})")
    if fig:
        doc.figure(fig)
    doc.para("Each phase's median over the repeats, per allocation strategy (one column each), at the largest size "
             f"measured; in brackets the difference from the baseline strategy ({base}). The last rows: what the "
             "accelerator saves against the CPU's vadd on the same data (the CPU's time minus the accelerated run's; "
             "positive: the accelerator wins), in total and for the algorithm alone, and who won each column, as "
             "the run judged it repeat by repeat.")
    for b in backends:
        rs = [r for r in rows if r["backend"] == b]
        n = max(r["bytes_per_vector"] for r in rs)
        at = {r["strategy"]: r for r in rs if r["bytes_per_vector"] == n}
        strategies = list(at)
        ref = at.get(base)
        table = []
        for key, title in PHASES:
            if not any(key in (r.get("phases") or {}) for r in at.values()):
                continue
            cells = []
            for s in strategies:
                ph = (at[s].get("phases") or {}).get(key)
                if not ph:
                    cells.append("-")
                    continue
                t = ph["median_s"]
                rp = ((ref or {}).get("phases") or {}).get(key) if ref is not None and s != base else None
                cells.append(_ms(t) + (f" ({(t - rp['median_s']) * 1e3:+.3f})" if rp else ""))
            table.append([title] + cells)
        for key, title in (("accelerator_saves_s", "the accelerator saves (CPU minus accelerated)"),
                           ("accelerator_saves_algorithm_s", "the same, algorithm only")):
            if any(at[s].get(key) is not None for s in strategies):
                table.append([title] + [_ms(at[s].get(key)) for s in strategies])
        if any((at[s].get("verdict") or {}).get("winner") for s in strategies):
            table.append(["winner"] + [(at[s].get("verdict") or {}).get("winner") or "-" for s in strategies])
        doc.heading(3, f"{b}: {format_size(n)} per vector")
        doc.table(["phase"] + strategies, table, align="l" + "r" * len(strategies))


def _median(values):
    values = [v for v in values if v is not None]
    return statistics.median(values) if values else None


def render_alloc(doc, study, fig=None):
    d = study.doc
    doc.heading(2, f"Host allocation ({study.path.name})")
    if fig:
        doc.figure(fig)
    rows = [[a["strategy"], f"{a['checked'] - a['misaligned']} of {a['checked']}", format_size(a["alignment"])]
            for a in d["alignment"]]
    doc.table(["strategy", "buffers aligned", "to"], rows, align="lrr",
              caption="Alignment: how many of the buffers of assorted sizes each strategy hands out start at the "
                      "boundary it promises.")
    sizes = sorted({c["bytes"] for c in d["cost"]})
    strategies = list(dict.fromkeys(c["strategy"] for c in d["cost"]))
    rows = []
    for s in strategies:
        cells = []
        for n in sizes:
            cs = [c for c in d["cost"] if c["strategy"] == s and c["bytes"] == n]
            af = _median([(c.get("alloc_free_s") or {}).get("median") for c in cs])
            tt = _median([(c.get("touch_s") or {}).get("median") for c in cs])
            cells.append("-" if af is None else f"{format_time(af)} + {format_time(tt)}" if tt is not None
                         else format_time(af))
        rows.append([s] + cells)
    doc.table(["strategy"] + [format_size(n) for n in sizes], rows, align="l" + "r" * len(sizes),
              caption="Cost: allocate + free, + first touch of every page (medians over runs and repeats).")
    rows = []
    for s in strategies:
        fs = [f for f in d["fragmentation"] if f["strategy"] == s]
        if not fs:
            continue
        rss = _median([f.get("rss_end", 0) - f.get("rss_start", 0) for f in fs])
        com = _median([f.get("committed_end", 0) - f.get("committed_start", 0) for f in fs])
        req = _median([f.get("requested_bytes_end") for f in fs])
        secs = _median([f.get("seconds") for f in fs])
        rows.append([s, format_size(req) if req else "-", _mib(rss), _mib(com), format_time(secs)])
    if rows:
        doc.table(["strategy", "live bytes requested at the end", "RSS growth", "committed growth", "time"], rows,
                  align="lrrrr", caption="Fragmentation: a random allocate/free workload; what the process holds "
                                         "beyond what is still requested.")


def _mib(n):
    return "-" if n is None else f"{n / 2 ** 20:+.1f} MiB"


def render_cpu(doc, study, fig=None):
    d = study.doc
    doc.heading(2, f"The CPU's side ({study.path.name})")
    if fig:
        doc.figure(fig)
    for wc in d.get("write_combining") or []:
        if wc.get("text"):
            doc.para(f"{wc.get('kind', '?')} ({wc.get('provider', '?')}): {wc['text']}",
                     "note" if wc.get("checked") and not wc.get("in_effect", True) else "")
    rows = [r for r in d["results"] if r.get("status") == "ok"]
    threads = min(r["threads"] for r in rows)
    sizes = sorted({r["bytes"] for r in rows})
    table = []
    for op in dict.fromkeys(r["op"] for r in rows):
        for kind in dict.fromkeys(r["host_memory"] for r in rows):
            for method in dict.fromkeys(r["method"] for r in rows):
                at = {r["bytes"]: r for r in rows if (r["op"], r["host_memory"], r["method"], r["threads"]) ==
                      (op, kind, method, threads)}
                if not at:
                    continue
                cells = []
                for n in sizes:
                    r = at.get(n)
                    if not r:
                        cells.append("-")
                        continue
                    cell = format_gbps(r["gbps"])
                    if r.get("first_use_s"):
                        cell += f" (first {format_time(r['first_use_s'])}{_break_even(r.get('break_even'))})"
                    cells.append(cell)
                table.append([op, kind, method] + cells)
    doc.table(["op", "host memory", "method"] + [format_size(n) for n in sizes], table, align="lll" + "r" * len(sizes),
              caption=f"GB/s at steady state on {threads} thread(s); in brackets a fresh buffer's first use "
                      "(allocate + touch + first operation) and its break-even against the baseline kind: after how "
                      "many uses its costlier setup is paid back ('~': within the noise).")


def _break_even(b):
    if not isinstance(b, dict) or not b.get("verdict"):
        return ""
    noise = "~" if b.get("within_noise") else ""
    v = b["verdict"]
    if v == "after" and isinstance(b.get("reuses"), (int, float)):
        return f"; pays after {noise}{b['reuses']:,.0f} uses"
    return f"; {noise}{'pays at once' if v == 'immediate' else 'never pays' if v == 'never' else v}"


RENDER = {APP: render_app, ALLOC: render_alloc, CPU: render_cpu, BESIDE: render_beside}


def render_studies(doc, studies, figures=None):
    """figures: {study path: FigureFile or None} from study_plots.study_figures."""
    if not studies:
        return
    doc.heading(1, "Studies", "studies")
    for s in studies:
        RENDER[s.schema](doc, s, (figures or {}).get(s.path))


# ---- findings -------------------------------------------------------------------

def study_findings(studies):
    out = []
    for s in studies:
        name = s.path.name
        if s.schema == CPU:
            for wc in s.doc.get("write_combining") or []:
                if wc.get("checked") and not wc.get("in_effect", True):
                    out.append(Finding(
                        "anomaly", f"Write-combining not in effect ({wc.get('kind')})",
                        f"reads from {wc.get('kind')} ran at {format_gbps(wc.get('wc_read_gbps'))} GB/s against "
                        f"regular memory's {format_gbps(wc.get('regular_read_gbps'))} GB/s; write-combined memory "
                        "reads several times slower, so the attribute was not honoured", [f"{name}#write_combining"],
                        weight=60))
        elif s.schema == ALLOC:
            for i, a in enumerate(s.doc["alignment"]):
                if a["misaligned"] and not _remeasured_aligned(studies, s, a["strategy"]):
                    out.append(Finding(
                        "anomaly", f"{a['strategy']} misaligns buffers",
                        f"{a['misaligned']} of {a['checked']} buffers not on a {format_size(a['alignment'])} "
                        "boundary", [f"{name}#alignment[{i}]"], weight=40))
        elif s.schema == APP:
            out += _app_findings(s)
        elif s.schema == BESIDE:
            out += beside_findings(s)
    return out


def _remeasured_aligned(studies, s, strategy):
    """A later alloc file (by started_at) measured the strategy again and found every buffer aligned: the
    earlier misalignment is history (a fix came between), not a finding."""
    for o in studies:
        if o is s or o.schema != ALLOC or str(o.doc.get("started_at", "")) <= str(s.doc.get("started_at", "")):
            continue
        if any(a["strategy"] == strategy and not a["misaligned"] for a in o.doc["alignment"]):
            return True
    return False


def _app_findings(s):
    out = []
    """Per backend, at the largest size: the strategy whose whole run saved the most against the CPU's loop,
    with the verdict the run wrote for it (who won, by how much) as it stands."""
    rows = [r for r in s.doc["results"] if r.get("status") == "ok" and r.get("accelerator_saves_s") is not None
            and (r.get("verdict") or {}).get("winner")]
    for b in dict.fromkeys(r["backend"] for r in rows):
        rs = [r for r in rows if r["backend"] == b]
        n = max(r["bytes_per_vector"] for r in rs)
        at = [r for r in rs if r["bytes_per_vector"] == n]
        best = max(at, key=lambda r: r["accelerator_saves_s"])
        worst = min(at, key=lambda r: r["accelerator_saves_s"])
        i = s.doc["results"].index(best)
        j = s.doc["results"].index(worst)
        text = f"at {format_size(n)} per vector with {best['strategy']}, {best['verdict']['text']}"
        if worst is not best:
            text += (f"; the worst strategy ({worst['strategy']}) takes "
                     f"{(best['accelerator_saves_s'] - worst['accelerator_saves_s']) * 1e3:.2f} ms longer")
        out.append(Finding("guide", f"vadd on {b}: best strategy {best['strategy']}", text,
                           [f"{s.path.name}#{i}", f"{s.path.name}#{j}"], weight=5))
    return out

