"""scripts/components.py: the component table that ends scripts/test.sh, and the check .ci/run
relies on (XFER_REQUIRE_COMPONENTS). Fed a made-up build: the config header, a CTest listing,
CTest's and pytest's JUnit files, as the test run writes them."""
import json
import os
import subprocess
import sys
from pathlib import Path
from xml.sax.saxutils import escape

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "scripts" / "components.py"

GTEST_OK = "[==========] Running 1 test\n[       OK ] S.T (0 ms)\n[  PASSED  ] 1 test.\n"
GTEST_SKIP = ("[ RUN      ] S.T\nxrt_test.cpp:12: Skipped\nno XRT shim here\n[  SKIPPED ] S.T (0 ms)\n"
              "[  PASSED  ] 0 tests.\n[  SKIPPED ] 1 test, listed below:\n")
FLEET_OUT = ("test_four_ranks (__main__.FleetMpi.test_four_ranks) ... {mpi}\n"
             "test_three_ranks (__main__.FleetMpi.test_three_ranks) ... {mpi}\n"
             "test_one_rank (__main__.FleetSingle.test_one_rank) ... ok\n"
             "test_two_devices (__main__.Together.test_two_devices)\nSeveral devices at once ... ok\n"
             "\n----------------------------------------------------------------------\nRan 4 tests\n\nOK\n")


def ctest_case(name, status="run", out=GTEST_OK, skipped=None):
    inner = f'<skipped message="{skipped}"/>' if skipped else ""
    return f'<testcase name="{name}" classname="{name}" time="0" status="{status}">{inner}' \
           f"<system-out>{escape(out)}</system-out></testcase>"


def write_build(tmp_path, have=None, xrt_out=GTEST_OK, mpi="ok", pytest_cases=None):
    build, results = tmp_path / "build", tmp_path / "results"
    (build / "generated" / "xfer").mkdir(parents=True)
    (build / "python" / "xferbench").mkdir(parents=True)
    (build / "python" / "xferbench" / "_native.cpython-311-x86_64-linux-gnu.so").write_bytes(b"")
    flags = {"CUDA": 1, "OPENCL": 1, "VULKAN": 1, "XRT": 1, "MPI": 1, **(have or {})}
    (build / "generated" / "xfer" / "config.hpp").write_text(
        "".join(f"#define XFER_HAVE_{k} {v}\n" for k, v in flags.items()))
    results.mkdir()
    listing = [
        ("Unit.Works", [], ["/b/tests/unit/xfer_unit_tests"]),
        ("Probe.ListsWithReason", [], ["/b/tests/cuda/xfer_cuda_probe_tests"]),
        ("Cuda.NeedsDevice", ["gpu"], ["/b/tests/cuda/xfer_cuda_tests"]),
        ("Ocl.Copies", ["opencl"], ["/b/tests/opencl/xfer_opencl_tests"]),
        ("Vk.Copies", ["vulkan"], ["/b/tests/vulkan/xfer_vulkan_tests"]),
        ("Xrt.Copies", ["xrt"], ["/b/tests/xrt/xfer_xrt_tests"]),
        ("cli.fleet", ["fleet"], ["/usr/bin/python3", "/src/tests/cli/test_fleet.py", "/b/xferbench"]),
    ]
    (results / "ctest-tests.json").write_text(json.dumps({"tests": [
        {"name": n, "command": c, "properties": [{"name": "LABELS", "value": l}] if l else []}
        for n, l, c in listing]}))
    host = [ctest_case("Unit.Works"), ctest_case("Probe.ListsWithReason"), ctest_case("Ocl.Copies"),
            ctest_case("Vk.Copies"), ctest_case("Xrt.Copies", out=xrt_out),
            ctest_case("cli.fleet", out=FLEET_OUT.format(mpi=mpi))]
    gpu = [ctest_case("Cuda.NeedsDevice", out=GTEST_SKIP.replace("no XRT shim here", "no CUDA device"))]
    for name, cases in (("host", host), ("gpu", gpu)):
        (results / f"ctest-{name}.xml").write_text(f'<testsuite tests="{len(cases)}">{"".join(cases)}</testsuite>')
    cases = pytest_cases if pytest_cases is not None else [
        ("python.tests.test_browser", "test_report_renders", None),
        ("python.tests.test_py_pool", "test_pool_reuses", None),
        ("python.tests.test_py_pool", "test_on_the_gpu", "no CUDA device here"),
        ("python.tests.test_py_load", "test_with_pandas_gives_a_dataframe", None),
        ("python.tests.test_render", "test_plots", None),
    ]
    (results / "pytest.xml").write_text('<testsuites><testsuite name="pytest">' + "".join(
        f'<testcase classname="{c}" name="{n}">' + (f'<skipped type="pytest.skip" message="{escape(r)}"/>' if r else "")
        + "</testcase>" for c, n, r in cases) + "</testsuite></testsuites>")
    return build, results


def run(build, results, require="", chromium=True):
    env = {k: v for k, v in os.environ.items() if k != "XFER_CHROMIUM"}
    if chromium:
        env["XFER_CHROMIUM"] = "/usr/bin/true"
    else:
        env["PATH"] = "/nonexistent"
    p = subprocess.run([sys.executable, str(SCRIPT), str(build), str(results), "--require", require],
                       capture_output=True, text=True, env=env, timeout=60)
    rows = {line.split()[0]: line.split() for line in p.stdout.splitlines()[1:] if not line.startswith("required")}
    return p, rows


ALL_BUT_EXTRAS = "cuda-compile opencl vulkan xrt mpi python-native chromium"


def test_every_component_built_and_tested_passes_and_counts_each(tmp_path):
    p, rows = run(*write_build(tmp_path), require=ALL_BUT_EXTRAS)
    assert p.returncode == 0, p.stdout + p.stderr
    # component, built, passed, failed, skipped
    assert rows["cuda-compile"][:5] == ["cuda-compile", "yes", "1", "0", "1"]  # the probe ran; the GPU test skipped
    assert rows["xrt"][:5] == ["xrt", "yes", "1", "0", "0"]
    assert rows["mpi"][:5] == ["mpi", "yes", "2", "0", "0"]  # the FleetMpi cases of the one CTest test
    assert rows["python-native"][:5] == ["python-native", "yes", "1", "0", "1"]
    assert rows["chromium"][:5] == ["chromium", "yes", "1", "0", "0"]
    assert rows["python-extras"][2] == "1"
    # the rest of cli.fleet's cases, and the rest of everything, are the host's
    assert rows["host"][:5] == ["host", "yes", "4", "0", "0"]


def test_a_component_not_built_is_named(tmp_path):
    p, rows = run(*write_build(tmp_path, have={"XRT": 0}), require=ALL_BUT_EXTRAS)
    assert p.returncode == 1
    assert rows["xrt"][1] == "no" and "MISSING" in p.stdout and "libxrt-dev" in p.stdout
    assert [line for line in p.stdout.splitlines() if line.startswith("required")] == [
        "required component xrt: not built (no XRT headers or libxrt_coreutil (libxrt-dev))"]


def test_built_but_every_test_skipped_ran_nothing(tmp_path):
    """A GoogleTest skip passes as far as CTest knows: read from its output, it is no run test."""
    p, rows = run(*write_build(tmp_path, xrt_out=GTEST_SKIP), require="xrt")
    assert p.returncode == 1
    assert rows["xrt"][:5] == ["xrt", "yes", "0", "0", "1"]
    assert "required component xrt: built, but no test of it ran" in p.stdout
    assert "no XRT shim here" in p.stdout


def test_mpirun_cases_skipped_inside_a_passing_ctest_test_fail_the_requirement(tmp_path):
    p, rows = run(*write_build(tmp_path, mpi="skipped 'no mpirun (Debian: openmpi-bin)'"), require="mpi")
    assert p.returncode == 1
    assert rows["mpi"][:5] == ["mpi", "yes", "0", "0", "2"]
    assert "required component mpi: built, but no test of it ran" in p.stdout
    assert "no mpirun (Debian: openmpi-bin)" in p.stdout


def test_a_skip_that_needs_no_gpu_fails_a_required_component(tmp_path):
    cases = [("python.tests.test_py_pool", "test_pool_reuses", None),
             ("python.tests.test_py_pool", "test_pool_trims", "numpy is too old"),
             ("python.tests.test_browser", "test_report_renders", None)]
    p, _ = run(*write_build(tmp_path, pytest_cases=cases), require="python-native")
    assert p.returncode == 1
    assert "python-native: 1 test(s) skipped that this machine can run: test_py_pool::test_pool_trims " \
           "(numpy is too old)" in p.stdout


def test_no_chromium_is_missing(tmp_path):
    p, rows = run(*write_build(tmp_path), require="chromium", chromium=False)
    assert p.returncode == 1 and rows["chromium"][1] == "no"
    assert "required component chromium: not built (no chromium on PATH" in p.stdout


def test_without_a_requirement_the_table_is_information_only(tmp_path):
    p, rows = run(*write_build(tmp_path, have={"MPI": 0, "XRT": 0}, xrt_out=GTEST_SKIP), chromium=False)
    assert p.returncode == 0, p.stdout
    assert rows["mpi"][1] == "no" and rows["xrt"][1] == "no"


def test_an_unknown_component_is_refused_by_name(tmp_path):
    p, _ = run(*write_build(tmp_path), require="cuda-compile fpga")
    assert p.returncode == 1 and "required component fpga: no such component" in p.stdout


def test_a_conformance_case_refused_by_design_is_counted_skipped_and_does_not_fail(tmp_path):
    """A route x kind combination the backend refuses with a reason is what that case checks;
    an ordinary OpenCL test skipped still fails the requirement."""
    build, results = write_build(tmp_path)
    refused = GTEST_SKIP.replace("no XRT shim here", "a kernel cannot reach pageable memory")
    listing = json.loads((results / "ctest-tests.json").read_text())
    for name in ("Pocl/BackendConformance.VerifiesTimesAndChecksEverySampleOrSkipsWithAReason/kernel_host_pageable",
                 "Ocl.NeedsTwoDevices"):
        listing["tests"].append({"name": name, "command": ["/b/tests/opencl/xfer_opencl_tests"],
                                 "properties": [{"name": "LABELS", "value": ["opencl"]}]})
    (results / "ctest-tests.json").write_text(json.dumps(listing))
    host = (results / "ctest-host.xml").read_text().replace(
        "</testsuite>", ctest_case(listing["tests"][-2]["name"], out=refused) + "</testsuite>")
    (results / "ctest-host.xml").write_text(host)
    p, rows = run(build, results, require="opencl")
    assert p.returncode == 0, p.stdout
    assert rows["opencl"][:5] == ["opencl", "yes", "1", "0", "1"] and "1 skipped by design" in p.stdout
    (results / "ctest-host.xml").write_text(host.replace(
        "</testsuite>", ctest_case("Ocl.NeedsTwoDevices", out=GTEST_SKIP) + "</testsuite>"))
    p, rows = run(build, results, require="opencl")
    assert p.returncode == 1 and rows["opencl"][4] == "2"
    assert "opencl: 1 test(s) skipped that this machine can run: Ocl.NeedsTwoDevices" in p.stdout


def test_a_program_skipped_by_its_exit_code_gives_its_own_reason(tmp_path):
    """A CTest test skipped by SKIP_RETURN_CODE (an example exiting 77): the reason is what the program
    said last, not CTest's "SKIP_RETURN_CODE=77"."""
    build, results = write_build(tmp_path)
    skipped = ctest_case("Cuda.NeedsDevice", status="notrun", skipped="SKIP_RETURN_CODE=77",
                         out="skipped: no usable CUDA device (no driver here)\n")
    (results / "ctest-gpu.xml").write_text(f'<testsuite tests="1">{skipped}</testsuite>')
    p, rows = run(build, results, require=ALL_BUT_EXTRAS)
    assert p.returncode == 0, p.stdout + p.stderr
    line = next(x for x in p.stdout.splitlines() if x.startswith("cuda-compile"))
    assert "1 need a GPU (skipped: no usable CUDA device (no driver here))" in line
    assert "SKIP_RETURN_CODE" not in line
