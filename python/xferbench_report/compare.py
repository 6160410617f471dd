"""`compare BASE NEW`: per matching point, NEW's median time over BASE's and a verdict.

Points match on (backend, device index, route, direction, host memory, size);
device names may differ (comparing two machines is allowed, with a warning).

The verdict rule (docs/compare.md says why and what it was measured to do):
  1. Per point, a one-sided Mann-Whitney U test on the raw samples, once for
     "NEW slower" and once for "NEW faster".
  2. Benjamini-Hochberg across the points, each direction its own family,
     at a false discovery rate of --fdr (0.05). Points whose sample counts
     cannot give a p-value that small even alone are left out of the family
     and reported as "same (too few samples)".
  3. A minimum effect: the ratio of medians must also leave 1 by more than the
     allowance: |log ratio| > max(log(1 + --min-effect), --noise-floor x sigma),
     sigma = 1.4826 MAD of the log ratios of medians over all common points.
     A point's samples share one state of the machine, which changes between
     runs, so the test alone flags shifts far smaller than run-to-run noise;
     the allowance is what keeps identical reruns quiet, and its noise term
     grows with how far this pair of runs moves point to point.
A point ok in BASE that failed in NEW is a regression too ("failed").
Exit status (cli.py): 1 when any point is slower or newly failed, else 0.

Before any point, the output names the settings (config.settings, settings.py) whose values differ: a run
that replayed another chunk size or block ranking explains a slower point before it is read as one.
Differing settings are reported, never an exit status: the verdicts judge the samples alone.
"""

import math
from dataclasses import dataclass
from typing import Optional

from .errors import BadInput, Incomparable, Unreadable
from .load import load_run
from .ranktest import benjamini_hochberg, mad_sigma, mann_whitney_greater, min_p
from .settings import SettingsComparison, compare_settings, format_settings_comparison
from .units import format_size, format_time

DEFAULT_MIN_EFFECT = 0.05
DEFAULT_NOISE_FLOOR = 25.0
DEFAULT_FDR = 0.05
TOO_FEW = "same (too few samples)"


@dataclass
class Row:
    key: tuple
    base: object
    new: object
    verdict: str  # faster, slower, same, TOO_FEW, failed (ok -> failed), skipped (ok -> skipped), new (now ok)
    ratio: Optional[float] = None  # NEW median / BASE median
    q: Optional[float] = None  # BH-adjusted p-value in the direction of the ratio


@dataclass
class Comparison:
    rows: list
    only_base: int
    only_new: int
    allowance: float = 0.0  # fraction: a change of the median must exceed it (either way, on a log scale)
    min_effect: float = DEFAULT_MIN_EFFECT
    noise_sigma: float = 0.0  # 1.4826 MAD of the log ratios (log units)
    noise_floor: float = DEFAULT_NOISE_FLOOR
    fdr: float = DEFAULT_FDR
    machine_warning: str = ""
    settings: SettingsComparison = None  # the two runs' settings, by value (settings.py)

    def count(self, v):
        return sum(r.verdict == v for r in self.rows)

    @property
    def regressed(self):
        return any(r.verdict in ("slower", "failed") for r in self.rows)


def machine_identity(run):
    """What tells machines apart, from the fields a result file records: the
    host's name, CPU model and count, and its accelerators' PCI addresses and
    vendors. Fields absent from a file (older files) are left out."""
    s = run.system or {}
    ident = {k: s.get(k) for k in ("hostname", "cpu_model", "logical_cpus") if s.get(k) not in (None, "", 0)}
    accs = s.get("accelerators")
    if isinstance(accs, list):
        ident["accelerators"] = sorted((str(a.get("pci_address", "")), str(a.get("vendor", "")))
                                       for a in accs if isinstance(a, dict))
    return ident


def machine_difference(base_run, new_run):
    """'' when the two files come from the same machine as far as both tell, else what differs."""
    a, b = machine_identity(base_run), machine_identity(new_run)
    diffs = []
    for k in a.keys() & b.keys():
        if a[k] != b[k]:
            diffs.append(f"{k} {_show_identity(k, a[k])} vs {_show_identity(k, b[k])}")
    return "; ".join(sorted(diffs))


def require_same_machine(first, second, why=""):
    """Incomparable when the two runs come from different machines (machine_difference, the one rule):
    compare under --same-machine, and headlines always (it compares a run with its rerun). `why` is
    added to the message."""
    differ = machine_difference(first, second)
    if differ:
        raise Incomparable(f"{first.path} and {second.path} come from different machines ({differ})"
                           + (f": {why}" if why else ""))


def _show_identity(key, value):
    if key != "accelerators":
        return str(value)
    return ", ".join(f"{address} {vendor}".strip() for address, vendor in value) or "none"


def _judge(pairs, min_effect, noise_floor, fdr):
    """Verdicts for (base point, new point) pairs of ok points; returns
    (verdicts, ratios, q-values, allowance, noise sigma)."""
    ratios = [n.median_s / b.median_s for b, n in pairs]
    sigma = mad_sigma([math.log(r) for r in ratios])
    # sigma is in log units, so the noise floor is too: K sigma on |log ratio|, the same as K sigma as a
    # fraction while that is small, and symmetric (x4 slower and x4 faster are the same distance from 1).
    limit = max(math.log1p(min_effect), noise_floor * sigma)
    allowance = math.expm1(min(limit, 700.0))  # 700: exp stays a float (a ratio of e^700 is never measured)
    testable = [i for i, (b, n) in enumerate(pairs) if min_p(len(b.samples_s), len(n.samples_s)) <= fdr]
    p_slow = [mann_whitney_greater(pairs[i][0].samples_s, pairs[i][1].samples_s)[1] for i in testable]
    p_fast = [mann_whitney_greater(pairs[i][1].samples_s, pairs[i][0].samples_s)[1] for i in testable]
    q_slow, q_fast = benjamini_hochberg(p_slow), benjamini_hochberg(p_fast)
    verdicts = [TOO_FEW] * len(pairs)
    qs = [None] * len(pairs)
    for k, i in enumerate(testable):
        lr = math.log(ratios[i])
        qs[i] = q_slow[k] if lr >= 0 else q_fast[k]
        if q_slow[k] <= fdr and lr > limit:
            verdicts[i] = "slower"
        elif q_fast[k] <= fdr and lr < -limit:
            verdicts[i] = "faster"
        else:
            verdicts[i] = "same"
    return verdicts, ratios, qs, allowance, sigma


def compare_runs(base_run, new_run, min_effect=DEFAULT_MIN_EFFECT, noise_floor=DEFAULT_NOISE_FLOOR,
                 fdr=DEFAULT_FDR, same_machine=False):
    def index(run):
        out = {}
        for p in run.points:
            out.setdefault(p.key(), p)
        return out

    if same_machine:
        require_same_machine(base_run, new_run)
    differ = machine_difference(base_run, new_run)
    base, new = index(base_run), index(new_run)
    rows = []
    for key, b in base.items():
        n = new.get(key)
        if n is None:
            continue
        if b.ok and n.ok:
            rows.append(Row(key, b, n, ""))
        elif b.ok:
            rows.append(Row(key, b, n, n.status))
        elif n.ok:
            rows.append(Row(key, b, n, "new"))
    judged = [r for r in rows if not r.verdict]
    if not judged:
        raise Incomparable(f"{base_run.path} and {new_run.path} have no ok point in common "
                           "(same backend, device index, route, direction, host memory and size)")
    verdicts, ratios, qs, allowance, sigma = _judge([(r.base, r.new) for r in judged], min_effect, noise_floor, fdr)
    for r, v, ratio, q in zip(judged, verdicts, ratios, qs):
        r.verdict, r.ratio, r.q = v, ratio, q
    return Comparison(rows, sum(k not in new for k in base), sum(k not in base for k in new), allowance=allowance,
                      min_effect=min_effect, noise_sigma=sigma, noise_floor=noise_floor, fdr=fdr,
                      machine_warning=differ,
                      settings=compare_settings(base_run.settings, new_run.settings, base_run.path.name,
                                                new_run.path.name))


def format_change(fraction):
    """A relative change: as a percentage while below 100%, then as a factor (x3.5, x2.2e+05)."""
    return f"{100 * fraction:.1f}%" if fraction < 1 else f"x{1 + fraction:.3g}"


def noise_note(cmp):
    """The advice that leads the output where the noise floor, not the minimum effect, sets the allowance (the
    rule's own choice between the two): then every 'same' means only 'no change beyond the allowance'. '' else."""
    floor = math.expm1(min(cmp.noise_floor * cmp.noise_sigma, 700.0))  # 700: exp stays a float
    if floor <= cmp.min_effect:
        return ""
    return (f"note: the noise floor sets the allowance to {format_change(cmp.allowance)}: these two runs' medians "
            f"differ point to point by {100 * cmp.noise_sigma:.1f}% (robust spread), so this pair cannot resolve a "
            f"change smaller than that, and 'same' below means only 'no change beyond "
            f"{format_change(cmp.allowance)}'; to see smaller changes, measure both runs on a quiet machine (nothing "
            f"else running), or repeat runs")


def format_comparison(cmp, changes_only=False):
    note = noise_note(cmp)
    lines = [note] if note else []  # first: a reader who stops at the verdicts has been told
    # Then the settings, before any point: a different chunk size or ranking explains a slower point below.
    if cmp.settings:
        lines += format_settings_comparison(cmp.settings)
    fmt = "{:<10} {:<14} {:<6} {:<19} {:>8} {:>11} {:>11} {:>8} {:>8}  {}"
    lines.append(fmt.format("backend", "route", "dir", "host memory", "size", "base", "new", "new/base", "q",
                            "verdict"))
    for r in cmp.rows:
        if changes_only and r.verdict in ("same", TOO_FEW):
            continue
        backend, device, route, direction, memory, size = r.key
        if device:
            backend = f"{backend}#{device}"
        b = format_time(r.base.median_s) if r.base.ok else r.base.status
        n = format_time(r.new.median_s) if r.new.ok else r.new.status
        ratio = f"{r.ratio:.3f}" if r.ratio is not None else "-"
        q = f"{r.q:.2g}" if r.q is not None else "-"
        text = r.verdict.upper() if r.verdict in ("slower", "failed") else r.verdict
        if r.verdict == "failed" and r.new.reason:
            text += f": {r.new.reason}"
        lines.append(fmt.format(backend, route, direction, memory, format_size(size), b, n, ratio, q, text))
    compared = sum(r.ratio is not None for r in cmp.rows)
    summary = (f"compared {compared} points: {cmp.count('faster')} faster, {cmp.count('slower')} slower, "
               f"{cmp.count('same')} same, {cmp.count(TOO_FEW)} too few samples to judge")
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
    floor = math.expm1(min(cmp.noise_floor * cmp.noise_sigma, 700.0))  # 700: exp stays a float
    lines.append(f"rule: Mann-Whitney U per point, Benjamini-Hochberg FDR {cmp.fdr:g}, and a change of the median "
                 f"beyond {format_change(cmp.allowance)} = max(min effect {format_change(cmp.min_effect)}, noise floor "
                 f"exp({cmp.noise_floor:g} x {cmp.noise_sigma:.4f}) - 1 = {format_change(floor)})")
    return "\n".join(lines) + "\n"


def _load(path):
    try:
        return load_run(path, require_ok=False)
    except BadInput as e:
        raise Unreadable(str(e)) from None


def run_compare(base_path, new_path, **options):
    return compare_runs(_load(base_path), _load(new_path), **options)
