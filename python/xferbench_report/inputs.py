"""Sorting the files given to `render`: sweeps, studies, traces, and the ones refused.

Each file is read once and sent by its schema to the sweep loader (load.py), the
study loader (studies.py, which hands a beside file on to beside.py) or the trace
loader (trace.py). A file that cannot be used is one message, and the rest are
still rendered; files from another machine than the first are refused too (one
machine per report) unless the caller allows a mix. A trace is a page of its own,
so its machine is not held to the others'.
"""

from dataclasses import dataclass, field
from pathlib import Path

from . import SCHEMA
from .beside import SCHEMA as BESIDE_SCHEMA
from .beside import is_beside
from .errors import BadInput
from .load import read_document, _quote, load_run
from .studies import SCHEMAS as STUDY_SCHEMAS
from .studies import load_study
from .trace import is_trace, load_trace


@dataclass
class Inputs:
    runs: list = field(default_factory=list)
    studies: list = field(default_factory=list)
    traces: list = field(default_factory=list)  # trace.Trace, each drawn as a page of its own
    refused: list = field(default_factory=list)  # one line per file not rendered


def _unique_label(path, used):
    label = Path(path).stem.removesuffix(".json")
    base, k = label, 2
    while label in used:
        label = f"{base}-{k}"
        k += 1
    used.add(label)
    return label


def machine_of(system):
    """What tells machines apart: virtual machines are all called 'vm', so the CPU and its count too."""
    s = system or {}
    parts = [s.get("hostname"), s.get("cpu_model"), s.get("logical_cpus")]
    if not any(parts):
        return ""
    return f"{s.get('hostname') or '?'} ({s.get('cpu_model') or '?'}, {s.get('logical_cpus') or '?'} CPUs)"


def sort_inputs(paths, mixed_machines=False, traces=False):
    """traces: whether the caller shows trace files (render); elsewhere each is refused with one line."""
    got = Inputs()
    used = set()
    machine = None
    for path in paths:
        path = Path(path)
        try:
            doc = read_document(path)
            schema = doc.get("schema") if isinstance(doc, dict) else None
            if is_trace(doc):
                if not traces:
                    raise BadInput(f"{path}: a trace file ({_quote(schema)}), not a result file: render draws it")
                got.traces.append(load_trace(path, doc, label=_unique_label(path, used)))
                continue
            if schema in STUDY_SCHEMAS or is_beside(doc):  # a beside file of another version: its loader says so
                item = load_study(path, doc)
                host = machine_of(item.system)
            elif schema == SCHEMA or (isinstance(schema, str) and schema.startswith("xferbench/result/")):
                item = load_run(path, label=_unique_label(path, used), require_ok=True, doc=doc)
                host = machine_of(item.system)
            elif isinstance(schema, str) and schema.startswith("xferbench/"):
                raise BadInput(f"{path}: unsupported schema {_quote(schema)} (this tool reads {SCHEMA}, "
                               f"{', '.join(s for s in STUDY_SCHEMAS if not s.endswith('/v1'))}, and their v1; "
                               f"{BESIDE_SCHEMA})")
            else:
                raise BadInput(f"{path}: not an xferbench result file"
                               + (f" (schema {_quote(schema)})" if schema is not None else " (no 'schema' key)"))
            if machine is None:
                machine = host
            elif host and machine and host != machine and not mixed_machines:
                raise BadInput(f"{path}: measured on {host}, not on {machine} like the first file (one machine "
                               "per report; --machines allows several)")
        except BadInput as e:
            got.refused.append(str(e))
            continue
        (got.studies if schema in STUDY_SCHEMAS else got.runs).append(item)
    return got
