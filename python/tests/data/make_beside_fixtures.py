"""Writes the beside fixtures derived from beside_host.json (a real `xferbench beside` run on this project's 2-core
VM: build/apps/xferbench/xferbench beside --seconds 0.05 --rounds 3 --copy-size 4M --work-size 16M --threads 1 -q
--json FILE). Each derived file says so in "fixture".

beside_finding.json: cpu-memory's two records edited into a machine where plain (a memcpy on the host step), the fastest way alone, loses most
  of its rate beside the memory workload (12 GB/s of 45.9) while the staged copier keeps almost all of its 15.2, so
  staged finishes the joint job first with the joint times' ranges apart; the finding is the one
  src/studies/beside/measure.cpp's beside_finding writes for those numbers, word for word (its format string).
  cpu-compute's records are the real ones (plain there ran 0.1% faster beside the copy: a negative slowdown).
beside_malformed.json: beside_host.json with one spread's median a string.

Run: python3 python/tests/data/make_beside_fixtures.py
"""

import copy
import json
from pathlib import Path

HERE = Path(__file__).resolve().parent
NOTE = "derived from beside_host.json by make_beside_fixtures.py: {}; not a measurement"


def spread(median, low, high):
    return {"median": median, "low": low, "high": high}


def with_finding(real):
    doc = copy.deepcopy(real)
    doc["fixture"] = NOTE.format("cpu-memory's records edited so that staged finishes first, and its finding")
    doc["config"]["argv"][-1] = "beside_finding.json"
    mem = {r["way"]: r for r in doc["results"] if r["workload"] == "cpu-memory"}
    work_alone = mem["plain"]["work_alone"]["median"]
    # plain: fastest alone (45.9 GB/s, as measured), 12 GB/s beside; the workload 25% slower; joint 0.19 s.
    mem["plain"].update(copy_beside=spread(12.0e9, 11.2e9, 12.9e9), copy_share=spread(0.2614, 0.2403, 0.2911),
                         slowdown=spread(0.25, 0.22, 0.29), work_beside=spread(work_alone / 1.25, work_alone / 1.29,
                                                                              work_alone / 1.22),
                         joint_s=spread(0.19, 0.185, 0.196))
    # staged: 15.2 GB/s alone (as measured), 14.6 beside; the workload 1.5% slower; joint 0.158 s.
    work_alone = mem["staged"]["work_alone"]["median"]
    mem["staged"].update(copy_beside=spread(14.6e9, 14.3e9, 14.9e9), copy_share=spread(0.9617, 0.9420, 0.9815),
                         slowdown=spread(0.015, 0.009, 0.02), work_beside=spread(work_alone / 1.015,
                                                                                work_alone / 1.02,
                                                                                work_alone / 1.009),
                         joint_s=spread(0.158, 0.155, 0.161))
    fastest, first = mem["plain"]["joint_s"]["median"], mem["staged"]["joint_s"]["median"]
    sooner = 1 - first / fastest
    # measure.cpp: "beside {}, {} finishes both {:.0f}% sooner than {}, the fastest alone ({:.3g} s against {:.3g} s
    # for the same copy and work, medians; the ranges do not meet)"
    text = (f"beside cpu-memory, staged finishes both {100 * sooner:.0f}% sooner than plain, the fastest alone "
            f"({first:.3g} s against {fastest:.3g} s for the same copy and work, medians; the ranges do not meet)")
    doc["findings"] = [{"workload": "cpu-memory", "fastest_alone": "plain", "first_beside": "staged",
                        "sooner": sooner, "text": text}]
    return doc


def malformed(real):
    doc = copy.deepcopy(real)
    doc["fixture"] = NOTE.format("results[1].slowdown.median made a string")
    doc["results"][1]["slowdown"]["median"] = "3.2%"
    return doc


def main():
    real = json.loads((HERE / "beside_host.json").read_text())
    for name, doc in (("beside_finding.json", with_finding(real)), ("beside_malformed.json", malformed(real))):
        (HERE / name).write_text(json.dumps(doc, indent=1, sort_keys=True) + "\n")


if __name__ == "__main__":
    main()
