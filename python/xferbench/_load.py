"""load(): an xferbench result file as data for notebooks."""

from __future__ import annotations

import copy as _copy
from pathlib import Path
from typing import Any, Dict, List, Union

# The report tool's loader is plain Python (it imports no plotting library): one validation for both.
from xferbench_report.errors import BadInput
from xferbench_report.load import load_run, read_document

from ._errors import BadResultFile, DependencyMissing


def _flatten(point: Dict[str, Any]) -> Dict[str, Any]:
    # One level of nested objects (stats, first_use) becomes columns
    # "stats.median", "first_use.alloc_s"; lists (samples_s) stay cells.
    row = {}
    for k, v in point.items():
        if isinstance(v, dict):
            for k2, v2 in v.items():
                row[f"{k}.{k2}"] = v2
        else:
            row[k] = v
    return row


def load(path: Union[str, Path], frame: bool = False):
    """The points of an xferbench result file (JSON, or gzipped JSON).

    Returns a list of dicts, one per point as the file has it, whatever is installed.
    ``frame=True`` returns a pandas DataFrame instead, one row per point (nested objects
    such as ``stats`` flattened into ``stats.median`` and the like; ``samples_s`` a list
    per cell); without pandas it raises DependencyMissing (an ImportError) saying what
    to install.

    The file is validated as the report tool validates it: a file that cannot be read or
    is malformed raises BadResultFile with one line naming the file and the field.
    """
    path = Path(path)
    try:
        doc = read_document(path)
        load_run(path, require_ok=False, doc=doc)  # validation only
    except BadInput as e:
        # The report's own class is no XferError: the library promises its own.
        raise BadResultFile(str(e)) from None
    records: List[Dict[str, Any]] = _copy.deepcopy(doc["results"])
    if not frame:
        return records
    try:
        import pandas as pd
    except ImportError:
        missing = DependencyMissing("xferbench.load(path, frame=True) needs pandas: pip install pandas "
                                    "(or load(path) for a list of dicts)")
        missing.name = "pandas"  # RuntimeError's constructor, first in the bases, takes no name=
        raise missing from None
    return pd.DataFrame.from_records([_flatten(p) for p in records])
