"""Bad input to the report tool and to the Python API, tried as a new user would (issue 36): each case
is one stderr line naming what is wrong, its own exit code (or a typed exception naming the argument),
nothing destroyed (every file there before is byte-identical after) and nothing left behind (no new
file). The fleet cases whose judge is the xferbench binary's (rank files, --baseline) need it."""
import copy
import json
import shutil
from pathlib import Path

import pytest

from test_fleet import BIN, real_fleet, split_into_rank_files
from xferbench_report import cli

DATA = Path(__file__).resolve().parent / "data"
PREV = b'{"an earlier output": true}\n'  # what an output file held before the command


def _fleet_file(tmp, name="fleet.json", change=None):
    doc = real_fleet()
    if change:
        change(doc)
    path = tmp / name
    path.write_text(json.dumps(doc))  # NaN and Infinity as Python writes them, which strict JSON lacks
    return path


def _set(path_in_doc, value):
    def change(doc):
        *keys, last = path_in_doc
        node = doc
        for k in keys:
            node = node[k]
        node[last] = value
    return change


def _rank_7_of_2(tmp):
    ranks = tmp / "ranks"
    rank = json.loads((ranks / "rank-00001.json").read_text())
    rank["fleet"]["ranks"][0].update(rank=7, size=2)
    for p in rank["results"]:
        p["fleet"]["rank"] = 7
    (ranks / "rank-00001.json").write_text(json.dumps(rank))
    return ["fleet", str(ranks), "-o", str(tmp / "prev.json")]


def _nan_in_rank_file(tmp):
    rank = json.loads((tmp / "ranks" / "rank-00002.json").read_text())
    next(p for p in rank["results"] if p["status"] == "ok")["gbps"] = float("nan")
    (tmp / "ranks" / "rank-00002.json").write_text(json.dumps(rank))
    return ["fleet", str(tmp / "ranks"), "-o", str(tmp / "prev.json")]


def _write(name, text):
    def make(tmp):
        (tmp / name).write_text(text)
        return tmp / name
    return make


def _with(make, *argv):
    """argv with '{x}' filled from tmp: the setup `make` runs first (it may write input files)."""
    def build(tmp):
        if make:
            make(tmp)
        return [a.format(t=tmp) for a in argv]
    return build


R, F, S = "{t}/ranks", "{t}/fleet.json", "{t}/sweep.json"
OUT = "{t}/prev.json"  # an existing output file: it must come out unchanged

# (id, argv builder, exit code, what the one stderr line must name, needs the binary)
CASES = [
    # fleet: options out of the C++ fleet's ranges, at parsing
    ("fleet-mad-k-negative", _with(None, "fleet", R, "-o", OUT, "--mad-k", "-1"), 2, "--mad-k", False),
    ("fleet-mad-k-zero", _with(None, "fleet", R, "-o", OUT, "--mad-k", "0"), 2, "--mad-k", False),
    ("fleet-mad-k-inf", _with(None, "fleet", R, "-o", OUT, "--mad-k", "inf"), 2, "--mad-k", False),
    ("fleet-mad-k-word", _with(None, "fleet", R, "-o", OUT, "--mad-k", "three"), 2, "--mad-k", False),
    ("fleet-tolerance-nan", _with(None, "fleet", R, "-o", OUT, "--tolerance", "nan"), 2, "--tolerance", False),
    ("fleet-tolerance-one", _with(None, "fleet", R, "-o", OUT, "--tolerance", "1"), 2, "--tolerance", False),
    ("fleet-min-ceiling-7", _with(None, "fleet", R, "-o", OUT, "--min-ceiling", "7"), 2, "--min-ceiling", False),
    ("fleet-o-twice", _with(None, "fleet", R, "-o", OUT, "-o", "{t}/other.json"), 2, "-o given twice", False),
    ("fleet-mad-k-twice", _with(None, "fleet", R, "-o", OUT, "--mad-k", "3", "--mad-k", "4"), 2, "--mad-k", False),
    # fleet: an output over an input
    ("fleet-o-is-a-rank-file", _with(None, "fleet", R, "-o", R + "/rank-00001.json"), 2, "-o", False),
    ("fleet-svg-is-a-rank-file", _with(None, "fleet", R, "-o", OUT, "--svg", R + "/rank-00000.json"), 2, "--svg",
     False),
    ("fleet-default-o-is-the-baseline", _with(lambda t: shutil.copy(t / "fleet.json", t / "ranks" / "fleet.json"),
                                              "fleet", R, "--baseline", R + "/fleet.json"), 2, "-o (default)", False),
    ("fleet-o-is-the-baseline", _with(None, "fleet", R, "--baseline", F, "-o", F), 2, "-o", False),
    ("fleet-o-and-svg-alike", _with(None, "fleet", R, "-o", OUT, "--svg", OUT), 2, "-o and --svg", False),
    ("fleet-o-a-directory", _with(None, "fleet", R, "-o", "{t}/report"), 2, "-o", False),
    ("fleet-svg-a-directory", _with(None, "fleet", R, "-o", OUT, "--svg", "{t}/report"), 2, "--svg", False),
    # fleet: missing or unusable inputs, judged by the binary
    ("fleet-no-such-dir", _with(None, "fleet", "{t}/nosuch", "-o", OUT), 2, "nosuch", False),
    ("fleet-rank-7-of-2", _rank_7_of_2, 2, "rank 7 of 2", True),
    ("fleet-nan-in-a-rank-file", _nan_in_rank_file, 2, "rank-00002.json", True),
    ("fleet-sweep-as-baseline", _with(None, "fleet", R, "-o", OUT, "--baseline", S), 2, "--baseline", True),
    ("fleet-no-such-baseline", _with(None, "fleet", R, "-o", OUT, "--baseline", "{t}/nosuch.json"), 2,
     "--baseline", True),
    ("fleet-dir-as-baseline", _with(None, "fleet", R, "-o", OUT, "--baseline", R), 2, "--baseline", True),
    ("fleet-truncated-rank-file", _with(_write("ranks/rank-00004.json", '{"schema": "xferbench/res'),
                                        "fleet", R, "-o", OUT), 2, "rank-00004.json", True),
    ("fleet-empty-rank-file", _with(_write("ranks/rank-00004.json", ""), "fleet", R, "-o", OUT), 2,
     "rank-00004.json", True),
    ("fleet-no-rank-files", _with(lambda t: (t / "empty").mkdir(), "fleet", "{t}/empty", "-o", OUT), 2,
     "no rank-*.json", True),
    # fleet FILE: a merged file, judged already, validated before its verdict is read
    ("fleet-file-is-a-sweep", _with(None, "fleet", S), 2, "no 'fleet' section", False),
    ("fleet-file-infinity", _with(lambda t: _fleet_file(t, change=_set(("results", 0, "gbps"), float("inf")))
                                  , "fleet", F), 2, "gbps", False),
    ("fleet-file-rank-7-of-2", _with(lambda t: _fleet_file(t, change=_set(("fleet", "ranks", 0, "rank"), 7)),
                                     "fleet", F), 2, "outside the job", False),
    ("fleet-file-unknown-exit-code", _with(lambda t: _fleet_file(t, change=_set(("fleet", "exit_code"), 42)),
                                           "fleet", F), 2, "exit_code", False),
    ("fleet-file-healthy-contradicts", _with(lambda t: _fleet_file(t, change=_set(("fleet", "healthy"), True)),
                                             "fleet", F), 2, "healthy", False),
    ("fleet-file-a-rank-file", _with(None, "fleet", R + "/rank-00002.json"), 2, "a rank file", False),
    ("fleet-o-empty", _with(None, "fleet", R, "-o", ""), 2, "-o", False),
    ("fleet-svg-empty", _with(None, "fleet", R, "-o", OUT, "--svg", ""), 2, "--svg", False),
    ("render-o-empty", _with(None, "render", S, "-o", ""), 2, "-o", False),
    ("fleet-file-with-o", _with(None, "fleet", F, "-o", OUT), 2, "-o applies", False),
    ("fleet-file-with-mad-k", _with(None, "fleet", F, "--mad-k", "2"), 2, "--mad-k applies", False),
    ("fleet-file-with-baseline", _with(None, "fleet", F, "--baseline", F), 2, "--baseline applies", False),
    ("fleet-file-svg-over-it", _with(None, "fleet", F, "--svg", F), 2, "--svg", False),
    ("fleet-file-truncated", _with(_write("cut.json", '{"schema": "xferbench/result/v1", "fleet": {'),
                                   "fleet", "{t}/cut.json"), 2, "not JSON", False),
    # render
    ("render-reference-nosuch", _with(None, "render", S, "-o", "{t}/report", "--reference", "nosuch"), 2,
     "--reference nosuch", False),
    ("render-o-is-the-input", _with(None, "render", S, "-o", S), 2, "-o", False),
    ("render-o-holds-the-input", _with(None, "render", "{t}/report/in.json", "-o", "{t}/report"), 2, "-o", False),
    ("render-o-not-a-report", _with(None, "render", S, "-o", R), 2, "not an xferbench report", False),
    ("render-no-such-file", _with(None, "render", "{t}/nosuch.json", "-o", "{t}/report"), 2, "no such file", False),
    ("render-a-directory", _with(None, "render", R, "-o", "{t}/report"), 2, "is a directory", False),
    ("render-empty-file", _with(_write("empty.json", ""), "render", "{t}/empty.json", "-o", "{t}/report"), 2,
     "not JSON", False),
    ("render-truncated", _with(_write("cut.json", '{"schema": "xferbench/result/v1", "results": ['), "render",
                               "{t}/cut.json", "-o", "{t}/report"), 2, "not JSON", False),
    ("render-a-fleet-file", _with(None, "render", F, "-o", "{t}/report"), 2, "a fleet result file", False),
    ("render-infinity", _with(lambda t: _infinite_sweep(t), "render", "{t}/inf.json", "-o", "{t}/report"), 2,
     "finite", False),
    ("render-title-twice", _with(None, "render", S, "-o", "{t}/report", "--title", "a", "--title", "b"), 2,
     "--title given twice", False),
    ("render-jobs-word", _with(None, "render", S, "-o", "{t}/report", "--jobs", "all"), 2, "--jobs", False),
    ("compare-noise-floor-inf", _with(None, "compare", S, S, "--noise-floor", "inf"), 2, "--noise-floor", False),
    ("render-jobs-zero", _with(None, "render", S, "-o", "{t}/report", "-j", "0"), 2, "--jobs", False),
    # compare and headlines
    ("compare-a-fleet-file", _with(None, "compare", F, S), 3, "a fleet result file", False),
    ("compare-no-such-file", _with(None, "compare", S, "{t}/nosuch.json"), 3, "no such file", False),
    ("compare-fdr-nan", _with(None, "compare", S, S, "--fdr", "nan"), 2, "--fdr", False),
    ("compare-tolerance-and-min-effect", _with(None, "compare", S, S, "--tolerance", "0.1", "--min-effect", "0.2"),
     2, "--tolerance and --min-effect given twice", False),
    ("headlines-three-files", _with(None, "headlines", S, S, S), 2, "one or two", False),
    ("headlines-a-fleet-file", _with(None, "headlines", F), 2, "a fleet result file", False),
    ("headlines-two-machines", _with(lambda t: _other_machine(t), "headlines", S, "{t}/other.json"), 2,
     "come from different machines (hostname vm vs other)", False),
]


def _other_machine(tmp):
    """The sweep as if measured on another host (issue 49: headlines compares a run with its rerun)."""
    doc = json.loads((DATA / "host_small.json").read_text())
    doc["system"]["hostname"] = "other"
    (tmp / "other.json").write_text(json.dumps(doc))


def _infinite_sweep(tmp):
    doc = json.loads((DATA / "host_small.json").read_text())
    next(p for p in doc["results"] if p["status"] == "ok")["samples_s"][0] = float("inf")
    (tmp / "inf.json").write_text(json.dumps(doc))


def _snapshot(root):
    return {str(p.relative_to(root)): (p.read_bytes() if p.is_file() else None) for p in sorted(root.rglob("*"))}


@pytest.fixture
def inputs(tmp_path):
    """A sweep, a fleet file, a directory of rank files, an earlier report and an earlier output file."""
    shutil.copy(DATA / "host_small.json", tmp_path / "sweep.json")
    _fleet_file(tmp_path)
    (tmp_path / "ranks").mkdir()
    split_into_rank_files(real_fleet(), tmp_path / "ranks")
    report = tmp_path / "report"
    report.mkdir()
    for name in ("index.html", "summary.md"):
        (report / name).write_text("earlier report\n")
    shutil.copy(DATA / "host_small.json", report / "in.json")
    (tmp_path / "prev.json").write_bytes(PREV)
    return tmp_path


def _run(argv, capsys):
    code = cli.main(argv)  # usage errors too are a returned code, not a SystemExit
    return code, capsys.readouterr()


@pytest.mark.parametrize("build,code,names,binary", [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_bad_report_input_is_one_line_and_destroys_nothing(inputs, capsys, build, code, names, binary):
    if binary and not BIN:
        pytest.skip("XFERBENCH_BIN is not set (the judge is the xferbench binary's)")
    argv = build(inputs)
    before = _snapshot(inputs)
    got, out = _run(argv, capsys)
    lines = out.err.splitlines()
    assert got == code, out.err
    assert len(lines) == 1 and "error" in lines[0] and names in lines[0], out.err
    assert "Traceback" not in out.err
    assert _snapshot(inputs) == before  # nothing changed, nothing new (no temporary file left either)



# The Python API: (id, call(np, dst), exception, the argument it names). `dst` is a writable array
# holding known bytes: whatever the call, it comes out byte-identical.
def _readonly(np, dst):
    a = np.ones_like(dst)
    a.flags.writeable = False
    return a


def _copier(**tuning):
    import xferbench

    return xferbench.Copier("host", calibrate=False, **tuning)


API_CASES = [
    ("copy-readonly-dst", lambda np, d: __import__("xferbench").copy(_readonly(np, d), d), "BadArgumentType", "dst"),
    ("to-device-readonly-dst", lambda np, d: _copier().to_device(_readonly(np, d), d), "BadArgumentType", "dst"),
    ("to-host-readonly-dst", lambda np, d: _copier().to_host(_readonly(np, d), d), "BadArgumentType", "dst"),
    ("copy-src-not-an-array", lambda np, d: __import__("xferbench").copy(d, "bytes?"), "BadArgumentType", "src"),
    ("copy-dst-not-an-array", lambda np, d: __import__("xferbench").copy(object(), d), "BadArgumentType", "dst"),
    ("copy-dst-not-contiguous", lambda np, d: __import__("xferbench").copy(d[::2], d[:8].copy()), "BadArgument",
     "dst"),
    ("copy-bad-stream", lambda np, d: _copier().to_device(d, d.copy(), stream="s"), "BadArgument", "stream"),
    ("ring-depth-absurd", lambda np, d: _copier(ring_depth=10 ** 9), "BadArgument", "ring_depth"),
    ("ring-depth-beyond-64-bits", lambda np, d: _copier(ring_depth=2 ** 70), "BadArgument", "ring_depth"),
    ("ring-depth-zero", lambda np, d: _copier(ring_depth=0), "BadArgument", "ring_depth"),
    ("ring-depth-float", lambda np, d: _copier(ring_depth=2.5), "BadArgument", "ring_depth"),
    ("chunk-bytes-below-its-bound", lambda np, d: _copier(chunk_bytes=7), "BadArgument", "chunk_bytes"),
    ("threads-absurd", lambda np, d: _copier(threads=10 ** 6), "BadArgument", "threads"),
    ("handoff-bytes-beyond-64-bits", lambda np, d: _copier(handoff_bytes=2 ** 70), "BadArgument", "handoff_bytes"),
    ("copier-device-negative", lambda np, d: __import__("xferbench").Copier(-1), "BadArgument", "device"),
    ("copier-api-unknown", lambda np, d: __import__("xferbench").Copier("host", api="cuda"), "BadArgument", "api"),
    ("pool-kind-unknown", lambda np, d: __import__("xferbench").Pool("nosuch"), "BadArgument", "kind"),
    ("pool-cap-negative", lambda np, d: __import__("xferbench").Pool("pageable", max_cached_bytes=-1), "BadArgument",
     "max_cached_bytes"),
    ("allocate-negative-shape", lambda np, d: __import__("xferbench").Pool("pageable").allocate(-1), "BadArgument",
     "shape"),
    ("allocate-unknown-dtype", lambda np, d: __import__("xferbench").Pool("pageable").allocate(4, "float128x"),
     "BadArgument", "dtype"),
]


@pytest.mark.parametrize("call,kind,argument", [c[1:] for c in API_CASES], ids=[c[0] for c in API_CASES])
def test_bad_api_argument_is_typed_and_named(call, kind, argument):
    from native_support import _native

    if _native is None:
        pytest.skip("xferbench._native is not built")
    np = pytest.importorskip("numpy")
    import xferbench

    dst = np.arange(16, dtype=np.uint8)
    with pytest.raises(getattr(xferbench, kind)) as e:
        call(np, dst)
    assert isinstance(e.value, ValueError) and e.value.argument == argument
    assert isinstance(e.value, TypeError) == (kind == "BadArgumentType")
    message = str(e.value)
    assert "\n" not in message and argument in message and "incompatible function arguments" not in message
    assert dst.tobytes() == bytes(range(16))
