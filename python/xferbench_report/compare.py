"""`compare BASE NEW`: per matching point, NEW's median time over BASE's and a verdict.

Points match on (backend, device index, route, direction, host memory, size);
device names may differ (comparing two machines is allowed).

The verdict rule. Each run's measured spread for a point is the interval from
the 5th to the 95th percentile of its samples (per-transfer times, linear
interpolation; with very few samples that is close to min..max). A point is
  slower  when NEW's whole interval lies above BASE's (NEW p5 > BASE p95),
  faster  when NEW's whole interval lies below BASE's (NEW p95 < BASE p5),
  same    when the intervals overlap,
so a change counts only when it exceeds both runs' spread. With --tolerance T
the median ratio must also differ from 1 by more than T (e.g. 0.05: 5%).
A point ok in BASE that failed in NEW is a regression too ("failed").
Exit status: 1 when any point is slower or failed, else 0; 2 for bad input.
"""

from dataclasses import dataclass
from typing import Optional

from .errors import BadInput
from .load import load_run
from .spread import spread
from .units import format_size, format_time

def verdict(base, new, tolerance=0.0):
    b_lo, b_hi = spread(base)
    n_lo, n_hi = spread(new)
    ratio = new.median_s / base.median_s
    if n_lo > b_hi and ratio > 1 + tolerance:
        return "slower"
    if n_hi < b_lo and ratio < 1 - tolerance:
        return "faster"
    return "same"


@dataclass
class Row:
    key: tuple
    base: object
    new: object
    verdict: str  # faster, slower, same, failed (ok -> failed), skipped (ok -> skipped), new (now ok)
    ratio: Optional[float] = None


@dataclass
class Comparison:
    rows: list
    only_base: int
    only_new: int

    def count(self, v):
        return sum(r.verdict == v for r in self.rows)

    @property
    def regressed(self):
        return any(r.verdict in ("slower", "failed") for r in self.rows)


def compare_runs(base_run, new_run, tolerance=0.0):
    def index(run):
        out = {}
        for p in run.points:
            out.setdefault(p.key(), p)
        return out

    base, new = index(base_run), index(new_run)
    rows = []
    for key, b in base.items():
        n = new.get(key)
        if n is None:
            continue
        if b.ok and n.ok:
            rows.append(Row(key, b, n, verdict(b, n, tolerance), n.median_s / b.median_s))
        elif b.ok:
            rows.append(Row(key, b, n, n.status))
        elif n.ok:
            rows.append(Row(key, b, n, "new"))
    if not any(r.ratio is not None for r in rows):
        raise BadInput(f"{base_run.path} and {new_run.path} have no ok point in common "
                       "(same backend, device index, route, direction, host memory and size)")
    return Comparison(rows, sum(k not in new for k in base), sum(k not in base for k in new))


def format_comparison(cmp, changes_only=False):
    lines = []
    fmt = "{:<10} {:<14} {:<6} {:<19} {:>8} {:>11} {:>11} {:>8}  {}"
    lines.append(fmt.format("backend", "route", "dir", "host memory", "size", "base", "new", "new/base", "verdict"))
    for r in cmp.rows:
        if changes_only and r.verdict == "same":
            continue
        backend, device, route, direction, memory, size = r.key
        if device:
            backend = f"{backend}#{device}"
        b = format_time(r.base.median_s) if r.base.ok else r.base.status
        n = format_time(r.new.median_s) if r.new.ok else r.new.status
        ratio = f"{r.ratio:.3f}" if r.ratio is not None else "-"
        text = r.verdict.upper() if r.verdict in ("slower", "failed") else r.verdict
        if r.verdict == "failed" and r.new.reason:
            text += f": {r.new.reason}"
        lines.append(fmt.format(backend, route, direction, memory, format_size(size), b, n, ratio, text))
    compared = sum(r.ratio is not None for r in cmp.rows)
    summary = (f"compared {compared} points: {cmp.count('faster')} faster, {cmp.count('slower')} slower, "
               f"{cmp.count('same')} same (a change must clear both runs' p5..p95 spread)")
    extra = []
    for v, what in (("failed", "now failed"), ("skipped", "now skipped"), ("new", "now ok")):
        if cmp.count(v):
            extra.append(f"{cmp.count(v)} {what}")
    if cmp.only_base:
        extra.append(f"{cmp.only_base} only in BASE")
    if cmp.only_new:
        extra.append(f"{cmp.only_new} only in NEW")
    if extra:
        summary += "; " + ", ".join(extra)
    lines.append(summary)
    return "\n".join(lines) + "\n"


def run_compare(base_path, new_path, tolerance=0.0):
    base = load_run(base_path, require_ok=True)
    new = load_run(new_path, require_ok=True)
    return compare_runs(base, new, tolerance)
