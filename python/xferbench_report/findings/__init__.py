"""Findings: what the data says a reader should know, computed from the analysed
sweep (and the studies, see ../studies.py), each with its numbers and the points it
rests on. Nothing here is written by hand: every sentence is filled in from a
measurement, and a finding whose measurements are absent is simply not made.

A finding names its evidence as "file#index" (the point's position in the
result file's results array), so a reader can check the number in the JSON.

What may headline (docs/findings.md): a finding that rests on a comparison holds
beyond the raw samples' spread at two neighbouring sizes at least, so an
immediate rerun repeats it; expected physics (a CPU falling out of its caches),
a CPU stand-in device and a measurement caveat are "context": listed, never a
headline. Titles carry no numbers, so two runs' headlines compare by title.

One module per subject: base (the record, the thresholds, the helpers), link, memory,
routes, devices, blocks (the many-blocks workload), and headlines (order, the first screen, two runs compared). A new
finding goes in its subject's module and into sweep_findings below.
"""

import dataclasses

from .link import above_ceiling_findings, clock_findings, collapse_findings, convergence_findings, link_findings
from .memory import misalignment_findings, pin_or_stage_findings, pinned_break_even_findings
from .routes import api_overhead_findings, api_pair_findings, bar_store_findings, route_crossover_findings
from .blocks import block_findings
from .devices import at_once_findings, peer_findings, peer_matrix, stand_in_findings
from .headlines import Agreement, headline_agreement, headlines, order, render_findings
from .base import Finding

# What the report and its tests use; the thresholds and rules are in base.py and docs/findings.md.
__all__ = ["Agreement", "Finding", "headline_agreement", "headlines", "order", "peer_matrix", "render_findings",
           "sweep_findings"]


def sweep_findings(report):
    """Every finding from the sweep analysis: anomalies first, then guidance, each by weight. The findings about
    one device's curves read the devices alone; those measured at once (`--together`) have their own."""
    alone = dataclasses.replace(report, groups=[g for g in report.groups if not g.at_once],
                                curves=[c for c in report.curves if not c.group.at_once],
                                part_curves=[c for c in report.part_curves if not c.group.at_once])
    fs = (stand_in_findings(report) + pin_or_stage_findings(alone)
          + link_findings(alone) + above_ceiling_findings(report) + clock_findings(report) + collapse_findings(alone)
          + convergence_findings(report) + misalignment_findings(alone) + pinned_break_even_findings(alone)
          + route_crossover_findings(alone) + api_overhead_findings(alone) + api_pair_findings(alone)
          + bar_store_findings(alone) + at_once_findings(report) + peer_findings(report) + block_findings(report))
    return order(fs)
