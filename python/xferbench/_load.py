"""load(): an xferbench result file as data for notebooks."""

from __future__ import annotations

import copy as _copy
from pathlib import Path
from typing import Any, Dict, List, Optional, Union

# The report tool's loader is plain Python (it imports no plotting library): one validation for both.
from xferbench_report.load import load_run, read_document


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


def load(path: Union[str, Path], frame: Optional[bool] = None):
    """The points of an xferbench result file (JSON, or gzipped JSON).

    Returns a pandas DataFrame, one row per point (nested objects such as ``stats``
    flattened into ``stats.median`` and the like; ``samples_s`` a list per cell), when
    pandas is importable; else a list of dicts, one per point as the file has it.
    ``frame=True`` requires pandas, ``frame=False`` always gives the list.

    The file is validated as the report tool validates it: a malformed file raises
    BadResultFile (xferbench.BadResultFile) with one line naming the file and the field.
    """
    path = Path(path)
    doc = read_document(path)
    load_run(path, require_ok=False, doc=doc)  # validation only: raises BadResultFile
    records: List[Dict[str, Any]] = _copy.deepcopy(doc["results"])
    if frame is False:
        return records
    try:
        import pandas as pd
    except ImportError:
        if frame:
            raise ImportError("xferbench.load(frame=True) needs pandas (pip install pandas)") from None
        return records
    return pd.DataFrame.from_records([_flatten(p) for p in records])
