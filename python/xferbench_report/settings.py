"""A run's resolved settings (`config.settings`, issue 51): what shaped the measurement and where each came from.

One reader for every command: load_run checks the list once (read_settings) and keeps it on the Run; the report
shows it (settings_section) and compare names what differs (compare_settings, format_settings_comparison).

Each entry: component (free text: "staged", "blocks", ...), scope ("" for the whole process, else the device or key
it applies to), name, value (a string), source ("default", "environment", "argument", "cache", "calibration",
"replay"; read as free text, so a new source does not make a file unreadable) and origin (an environment
variable, a flag, a file; may be ""). A file without `config.settings` (older files) records none: an empty list.
"""

import json
from dataclasses import dataclass, field

from .errors import BadInput


@dataclass(frozen=True)
class Setting:
    component: str
    scope: str
    name: str
    value: str
    source: str = ""
    origin: str = ""

    @property
    def key(self):
        """What identifies a setting across runs; the value and where it came from are what may differ."""
        return (self.component, self.scope, self.name)

    def label(self):
        """component name [scope], as compare names it."""
        return f"{self.component} {self.name}" + (f" [{self.scope}]" if self.scope else "")


def read_settings(path, config):
    """The settings of a file's `config` object (a dict, or None when the file has none), checked: a list of
    Setting in the file's order; [] when the file records none. BadInput naming the field when malformed."""
    from .load import _Fields  # here, not at the top: load imports this module

    if not config or config.get("settings") is None:
        return []
    top = _Fields(path, "config", config)
    raw = top.array("settings")
    out, seen = [], {}
    for i, entry in enumerate(raw):
        f = _Fields(path, f"config.settings[{i}]", entry)
        s = Setting(component=f.string("component", required=True), scope=f.string("scope", default=""),
                    name=f.string("name", required=True), value=f.string("value", required=True),
                    source=f.string("source", default=""), origin=f.string("origin", default=""))
        if s.key in seen:  # compare matches on the key: two values under one key could not be told apart
            f.fail(f"the same setting as config.settings[{seen[s.key]}] ({s.label()})")
        seen[s.key] = i
        out.append(s)
    return out


def read_point_settings(fields):
    """A result point's `settings` reference, {component, scope}: (component, scope), or None where absent."""
    ref = fields.object("settings")
    if ref is None:
        return None
    return ref.string("component", required=True), ref.string("scope", default="")


def settings_of_point(point):
    """The run's settings a point used (its `settings` reference); [] where it names none."""
    if point.settings_ref is None:
        return []
    return [s for s in point.run.settings if (s.component, s.scope) == point.settings_ref]


def grouped_settings(settings):
    """The settings grouped by component, then scope, each group where it first appears in the file (the order
    the tool resolved them in), and within a group in the file's order."""
    components, scopes = {}, {}
    for s in settings:
        components.setdefault(s.component, len(components))
        scopes.setdefault((s.component, s.scope), len(scopes))
    return sorted(settings, key=lambda s: (components[s.component], scopes[(s.component, s.scope)]))


# ---- the report ----------------------------------------------------------------

SETTINGS_HEADERS = ["component", "scope", "name", "value", "source", "origin"]


def settings_rows(settings):
    return [[s.component, s.scope or "(whole process)", s.name, s.value, s.source or "-", s.origin or "-"]
            for s in grouped_settings(settings)]


def settings_section(doc, runs):
    """Under the runs: each run's settings as a table, or one line where its file records none."""
    doc.heading(2, "Settings")
    doc.para("What each run resolved and measured with, and where each value came from (a default, the "
             "environment, an argument, a cache, a calibration, or a replayed file).", "small")
    for run in runs:
        if not run.settings:
            doc.para(f"{run.path.name} records no settings.")
            continue
        doc.table(SETTINGS_HEADERS, settings_rows(run.settings), align="llllll",
                  caption=f"{run.path.name}: {len(run.settings)} settings")


# ---- compare -------------------------------------------------------------------

@dataclass
class SettingsComparison:
    """Settings matched on (component, scope, name); only values are compared (the same value from another
    source, a replay of a calibration say, is the same setting)."""
    base_records: bool
    new_records: bool
    base_file: str = ""  # the files' names, for the line that says which records none
    new_file: str = ""
    common: int = 0  # settings both files record
    changed: list = field(default_factory=list)  # (base Setting, new Setting), values differ
    only_base: list = field(default_factory=list)
    only_new: list = field(default_factory=list)

    @property
    def differ(self):
        return bool(self.changed or self.only_base or self.only_new)

    def as_dicts(self):
        """The differing settings for a machine reader: {component, scope, name, base, new}, a side's value
        None where that file does not record the setting."""
        rows = [(b, n) for b, n in self.changed] + [(b, None) for b in self.only_base] + \
               [(None, n) for n in self.only_new]
        return [{"component": (b or n).component, "scope": (b or n).scope, "name": (b or n).name,
                 "base": b.value if b else None, "new": n.value if n else None} for b, n in rows]


def compare_settings(base, new, base_file="", new_file=""):
    """BASE's and NEW's settings (lists of Setting) matched and compared by value."""
    cmp = SettingsComparison(base_records=bool(base), new_records=bool(new), base_file=base_file,
                             new_file=new_file)
    if not base or not new:
        return cmp
    in_new = {s.key: s for s in new}
    in_base = {s.key for s in base}
    for b in base:
        n = in_new.get(b.key)
        if n is None:
            cmp.only_base.append(b)
        else:
            cmp.common += 1
            if n.value != b.value:
                cmp.changed.append((b, n))
    cmp.only_new = [n for n in new if n.key not in in_base]
    return cmp


def _value(text):
    """A value on one line: bare when it is one plain word, else quoted and escaped (spaces, empty, newlines)."""
    plain = text and not any(c.isspace() or c in "\"'" or not c.isprintable() for c in text)
    return text if plain else json.dumps(text)


def _from(s):
    return f"{_value(s.value)} ({s.source or 'no source'})"


def format_settings_comparison(cmp):
    """The lines compare prints first: the settings that differ, or that none do, or which file records none."""
    if not cmp.base_records and not cmp.new_records:
        return ["settings: not compared: neither file records settings"]
    if not cmp.base_records or not cmp.new_records:
        which, name = ("BASE", cmp.base_file) if not cmp.base_records else ("NEW", cmp.new_file)
        return [f"settings: not compared: {which}" + (f" ({name})" if name else "") + " records no settings"]
    if not cmp.differ:
        return [f"settings: the same ({cmp.common} recorded)"]
    lines = [f"settings that differ ({len(cmp.changed) + len(cmp.only_base) + len(cmp.only_new)}):"]
    lines += [f"  {b.label()}: {_from(b)} -> {_from(n)}" for b, n in cmp.changed]
    lines += [f"  {b.label()}: only in BASE: {_from(b)}" for b in cmp.only_base]
    lines += [f"  {n.label()}: only in NEW: {_from(n)}" for n in cmp.only_new]
    return lines
