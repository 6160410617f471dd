"""Reports for xferbench result files (schema xferbench/result/v2, and v1 through legacy.py).

Reads only the JSON result files the `xferbench` tool writes; see
docs/result-schema.md in the repository for the contract.
"""

__version__ = "0.1.0"

SCHEMA = "xferbench/result/v2"
