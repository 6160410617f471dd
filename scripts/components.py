#!/usr/bin/env python3
"""What a test run tested: the component table that ends scripts/test.sh.

For each component (the CUDA backends compiled, OpenCL on PoCL, Vulkan on lavapipe, XRT under
its no-op shim, fleet mode over MPI, the Python package's native module, headless Chromium for
the report's browser test, the Python tests' extras), whether this build has it and how many of
its tests passed, failed and skipped, and why one is missing or skipped. A skipped test is not
a run test: a component whose every test skipped ran nothing.

Reads only files the test run wrote (stdlib only, any python3):
  RESULTS/ctest-tests.json  `ctest --show-only=json-v1` of BUILD: each test's labels and command
  RESULTS/ctest-*.xml       `ctest --output-junit`: each test's status and output
  RESULTS/pytest.xml        `pytest --junitxml`
  BUILD/generated/xfer/config.hpp   the one file that says which backends were compiled in

  components.py BUILD RESULTS [--require "cuda-compile opencl ..."]

--require (scripts/test.sh passes XFER_REQUIRE_COMPONENTS, which .ci/run sets): exit 1, naming
each, where a required component is not built, ran no test, or skipped a test that this machine
could run (only tests that need a GPU may skip, and the conformance cases whose skip is what they
check: BY_DESIGN below). Without it the table is information only.
"""
import argparse
import json
import os
import re
import shutil
import sys
import xml.etree.ElementTree as ET
from dataclasses import dataclass, field
from pathlib import Path


@dataclass
class Test:
    source: str  # "ctest", "ctest/unittest" (a case inside a CTest test's unittest run) or "pytest"
    name: str
    outcome: str  # passed, failed, skipped
    reason: str = ""
    labels: tuple = ()
    exe: str = ""  # the executable's file name (CTest) or the test module (pytest)


def _gtest_skip_reason(out):
    """A GoogleTest case that called GTEST_SKIP passes as far as CTest knows: its output says it
    skipped (and why: the line after 'Skipped'). None where it ran."""
    if "[  SKIPPED ]" not in out or not re.search(r"\[  PASSED  \] 0 tests?\.", out):
        return None
    m = re.search(r": Skipped\n(.*)", out)
    return (m.group(1).strip() if m else "") or "GTEST_SKIP"


# A Python unittest run with verbosity=2 (tests/cli/*.py) prints a line per case.
_UNITTEST_LINE = re.compile(r"^(\w+) \([\w.]*?(\w+)(?:\.\w+)?\)(?:\n.*?)?\s\.\.\.\s(ok|skipped '(.*)'|FAIL|ERROR|expected failure)$",
                            re.M)


def _unittest_cases(parent, out, labels, exe):
    cases = []
    for m in _UNITTEST_LINE.finditer(out):
        verdict = m.group(3)
        outcome = "passed" if verdict in ("ok", "expected failure") else "skipped" if verdict.startswith("skipped") \
            else "failed"
        cases.append(Test("ctest/unittest", f"{parent}/{m.group(2)}.{m.group(1)}", outcome, m.group(4) or "",
                          labels, exe))
    return cases


def read_ctest(results):
    """Every CTest test the junit files hold, with labels and executable from the listing."""
    listing = {}
    lpath = results / "ctest-tests.json"
    if lpath.exists():
        for t in json.loads(lpath.read_text()).get("tests", []):
            labels = ()
            for prop in t.get("properties", []):
                if prop.get("name") == "LABELS":
                    labels = tuple(prop.get("value", []))
            cmd = t.get("command") or [""]
            # CTest runs cmake -P scripts and python scripts too: the script names the test's code.
            exe = next((os.path.basename(c) for c in cmd if c.endswith((".py", ".cmake"))), os.path.basename(cmd[0]))
            listing[t["name"]] = (labels, exe)
    tests = []
    for xml in sorted(results.glob("ctest-*.xml")):
        for case in ET.parse(xml).getroot().iter("testcase"):
            name = case.get("name")
            labels, exe = listing.get(name, ((), ""))
            out = case.findtext("system-out") or ""
            status = case.get("status")
            if status == "run":
                reason = _gtest_skip_reason(out)
                outcome, why = ("skipped", reason) if reason is not None else ("passed", "")
            elif status in ("notrun", "disabled"):
                skipped = case.find("skipped")
                outcome, why = "skipped", (skipped.get("message", "") if skipped is not None else status)
                if why == "SKIP_REGULAR_EXPRESSION_MATCHED" or why.startswith("SKIP_RETURN_CODE"):
                    # GoogleTest's reason is the line after "Skipped"; else the output's last line
                    # (a program that exits 77 says why there: "skipped: no usable CUDA device")
                    m = re.search(r": Skipped\n(.*)", out)
                    why = m.group(1).strip() if m else out.strip().splitlines()[-1] if out.strip() else why
            else:
                outcome, why = "failed", ""
            tests.append(Test("ctest", name, outcome, why, labels, exe))
            if exe.endswith(".py"):
                tests.extend(_unittest_cases(name, out, labels, exe))
    return tests


def read_pytest(results):
    tests = []
    path = results / "pytest.xml"
    if not path.exists():
        return tests
    for case in ET.parse(path).getroot().iter("testcase"):
        # classname is the module's dotted path (then the class, where there is one); a module
        # skipped whole at collection (an importorskip at its top) has none, and is named by its path
        classname, case_name = case.get("classname") or "", case.get("name") or ""
        dotted = (classname or case_name).split(".")
        mod = next((m for m in reversed(dotted) if m.startswith("test_")), dotted[-1])
        name = f"{mod}::{case_name}" if classname else f"{mod}::(the whole module)"
        skipped = case.find("skipped")
        if case.find("failure") is not None or case.find("error") is not None:
            outcome, why = "failed", ""
        elif skipped is not None:
            outcome, why = "skipped", skipped.get("message", "")
            if why == "collection skipped":  # the reason is in the text: ('path', line, 'Skipped: why')
                m = re.search(r"Skipped: (.*?)['\"]?\)?$", (skipped.text or "").strip())
                why = m.group(1) if m else why
        else:
            outcome, why = "passed", ""
        tests.append(Test("pytest", name, outcome, why, (), mod + ".py"))
    return tests


def config(build):
    """The backends this build compiled in: XFER_HAVE_* from the generated config header."""
    text = (build / "generated" / "xfer" / "config.hpp").read_text() if \
        (build / "generated" / "xfer" / "config.hpp").exists() else ""
    return {m.group(1): m.group(2) == "1" for m in re.finditer(r"#define XFER_HAVE_(\w+) (\d)", text)}


def _which_any(*names):
    return next((shutil.which(n) for n in names if shutil.which(n)), None)


def _is_cuda(t):
    if t.source == "pytest":
        return False
    return "gpu" in t.labels or "cuda" in t.exe or t.name.startswith(("cuda.", "example.cuda"))


@dataclass
class Component:
    key: str
    what: str
    member: object  # Test -> bool
    built: object  # (build, have) -> (bool, why-not)
    needs_gpu: object = staticmethod(lambda t: False)  # tests that may skip where there is no GPU
    tests: list = field(default_factory=list)


def _have(flag, why):
    return lambda build, have: (have.get(flag, False), why)


def _native_built(build, have):
    mods = list((build / "python" / "xferbench").glob("_native*.so"))
    return bool(mods), "not built: cmake/python.cmake found no nanobind or Python headers (configure log)"


def _chromium_present(build, have):
    found = os.environ.get("XFER_CHROMIUM") or _which_any("chromium", "chromium-browser", "google-chrome")
    return bool(found), "no chromium on PATH (Debian's package: chromium)"


def _extras_present(build, have):
    # Run by the python that ran pytest (scripts/test.sh): what imports here imported there.
    import importlib.util
    missing = [m for m in ("pandas", "scipy") if importlib.util.find_spec(m) is None]
    return not missing, f"{' and '.join(missing)} not importable (scripts/setup.sh installs them into .venv)"


def _icds(*globs):
    """The driver files a loader would find here (PoCL's pocl.icd, lavapipe's lvp_icd.*.json)."""
    import glob
    names = sorted({os.path.basename(f) for g in globs for f in glob.glob(g)})
    return ", ".join(names) or "none found"


def _pytest_module(*mods):
    return lambda t: t.source == "pytest" and t.exe in mods


# One place for what each component is and which tests are its own. Tests that belong to none
# are the host's (the core, memory kinds, the host backend, the CLI, the report tool).
def components():
    return [
        Component("cuda-compile", "CUDA backends compiled; their GPU tests skip without a GPU", _is_cuda,
                  _have("CUDA", "no nvcc / CUDA toolkit found at configure"), needs_gpu=_is_cuda),
        Component("opencl", f"OpenCL backend on PoCL (the CPU); ICDs: {_icds('/etc/OpenCL/vendors/*.icd')}",
                  lambda t: t.source != "pytest" and ("opencl" in t.labels or t.name.startswith(("opencl.", "example.opencl"))
                                                      or "opencl" in t.exe),
                  _have("OPENCL", "no OpenCL headers or ICD loader (opencl-headers, ocl-icd-opencl-dev)")),
        Component("vulkan", "Vulkan backend on lavapipe (mesa-vulkan-drivers); lavapipe's ICD: "
                  + _icds("/usr/share/vulkan/icd.d/lvp_icd*.json", "/etc/vulkan/icd.d/lvp_icd*.json"),
                  lambda t: t.source != "pytest" and "vulkan" in t.labels,
                  _have("VULKAN", "no Vulkan headers (libvulkan-dev)")),
        Component("xrt", "XRT backend under XRT's no-op shim (emulation)",
                  lambda t: t.source != "pytest" and "xrt" in t.labels,
                  _have("XRT", "no XRT headers or libxrt_coreutil (libxrt-dev)")),
        Component("mpi", "fleet mode over MPI (mpirun cases of tests/cli/test_fleet.py)",
                  lambda t: t.source == "ctest/unittest" and "/FleetMpi." in t.name,
                  _have("MPI", "no MPI found at configure (libopenmpi-dev, openmpi-bin)")),
        Component("python-native", "the Python package's native module (xferbench._native)",
                  _pytest_module("test_py_pool.py", "test_py_copy.py", "test_py_gpu.py", "test_py_module.py"), _native_built,
                  needs_gpu=lambda t: "CUDA" in t.reason or "torch" in t.reason or t.exe == "test_py_gpu.py"),
        Component("chromium", "headless Chromium: the report's browser test", _pytest_module("test_browser.py"),
                  _chromium_present),
        Component("docs", "the examples of README.md and docs/*.md, run as written (test_doc_examples.py); "
                  "the GPU ones run in the GPU gate", _pytest_module("test_doc_examples.py"),
                  lambda b, h: (True, ""),
                  needs_gpu=lambda t: t.reason.startswith("needs an NVIDIA GPU") or "xferbench list" in t.reason),
        Component("python-extras", "pandas and scipy: the tests that compare against them",
                  lambda t: t.source == "pytest" and re.search(r"with_(pandas|scipy)", t.name) is not None,
                  _extras_present),
    ]


def summarize(build, results):
    tests = read_ctest(results) + read_pytest(results)
    comps = components()
    host = Component("host", "everything else: core, memory kinds, host backend, CLI, report tool",
                     None, lambda b, h: (True, ""))
    for t in tests:
        if t.source == "ctest" and t.exe.endswith(".py") and any(u.name.startswith(t.name + "/") for u in tests):
            # A unittest run counted case by case: the CTest test itself is not counted again.
            continue
        owner = next((c for c in comps if c.member(t)), host)
        owner.tests.append(t)
    return comps + [host]


def _short(reason, width=90):
    r = " ".join((reason or "no reason given").split())
    return r if len(r) <= width else r[:width - 3] + "..."


# A skip that is one of the outcomes a test checks, not a test left undone: the backend
# conformance suites run every route x memory kind x direction and pass a combination the
# backend refuses by design (a kernel cannot reach pageable memory; the BAR routes take only
# device-local-host-visible) when it is refused with a reason. No machine runs those. Nor
# the doc examples the doc test leaves out with its reason (a cluster, a pip install, minutes).
BY_DESIGN = re.compile(r"OrSkipsWithAReason")


def by_design(t):
    return BY_DESIGN.search(t.name) is not None or (t.reason or "").startswith("not run by the doc test:")


def _reasons(tests, limit=2):
    seen = []
    for t in tests:
        r = _short(t.reason)
        if r not in seen:
            seen.append(r)
    more = f" (+{len(seen) - limit} more)" if len(seen) > limit else ""
    return "; ".join(seen[:limit]) + more


def render(comps, build):
    have = config(build)
    rows = [("component", "built", "passed", "failed", "skipped", "what, and why anything is missing")]
    for c in comps:
        built, why_not = c.built(build, have)
        n = {o: [t for t in c.tests if t.outcome == o] for o in ("passed", "failed", "skipped")}
        note = c.what
        if not built:
            note = f"MISSING: {why_not}"
        elif not n["passed"]:
            note = f"RAN NO TEST: {c.what}" + (f"; skipped: {_reasons(n['skipped'])}" if n["skipped"] else "")
        elif n["skipped"]:
            designed = [t for t in n["skipped"] if by_design(t)]
            gpu = [t for t in n["skipped"] if c.needs_gpu(t) and not by_design(t)]
            other = [t for t in n["skipped"] if not by_design(t) and not c.needs_gpu(t)]
            if designed:
                note += f"; {len(designed)} skipped by design (a combination the backend refuses, or a doc example left out, each with its reason)"
            if gpu:
                note += f"; {len(gpu)} need a GPU ({_short(gpu[0].reason, 60)})"
            if other:
                note += f"; skipped: {_reasons(other)}"
        rows.append((c.key, "yes" if built else "no", str(len(n["passed"])), str(len(n["failed"])),
                     str(len(n["skipped"])), note))
    widths = [max(len(r[i]) for r in rows) for i in range(5)]
    return "\n".join("  ".join([r[0].ljust(widths[0]), r[1].ljust(widths[1])]
                               + [r[i].rjust(widths[i]) for i in (2, 3, 4)] + [r[5]]) for r in rows)


def check(comps, build, required):
    """The reasons a required component fails CI, one line each."""
    have = config(build)
    by_key = {c.key: c for c in comps}
    problems = []
    for key in required:
        c = by_key.get(key)
        if c is None:
            problems.append(f"{key}: no such component (known: {' '.join(by_key)})")
            continue
        built, why_not = c.built(build, have)
        passed = [t for t in c.tests if t.outcome == "passed"]
        skipped = [t for t in c.tests if t.outcome == "skipped" and not c.needs_gpu(t) and not by_design(t)]
        if not built:
            problems.append(f"{key}: not built ({why_not})")
        elif not passed:
            problems.append(f"{key}: built, but no test of it ran ({c.what})")
        if skipped:
            problems.append(f"{key}: {len(skipped)} test(s) skipped that this machine can run: "
                            + "; ".join(f"{t.name} ({_short(t.reason)})" for t in skipped[:5]))
    return problems


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("build", type=Path)
    ap.add_argument("results", type=Path)
    ap.add_argument("--require", default="", help="components that must be built and tested (space-separated)")
    args = ap.parse_args(argv)
    comps = summarize(args.build, args.results)
    print(render(comps, args.build))
    problems = check(comps, args.build, args.require.split())
    for p in problems:
        print(f"required component {p}")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
