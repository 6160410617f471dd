"""xferbench-report: render result files into a report, or compare two runs.

Exit status: 0 fine; 1 compare found a point significantly slower beyond the
allowance (or newly failed), or an output could not be written; 2 bad input or
usage (for compare: no ok point in common, or different machines under
--same-machine; for headlines: two files from different machines, always; for
render: no file could be used); 3 compare could not read a file or it is not a
valid result file, or render wrote the report but left out some files (one
line each on stderr says why: unreadable, truncated, unknown or future schema,
no ok points, another machine); 69 render cannot import matplotlib, which it
draws with (one line says what to install; nothing written; compare, headlines
and fleet need no matplotlib); 128 + signal when interrupted by SIGINT, SIGTERM
or SIGHUP (nothing half written is left behind).
fleet has the fleet command's own codes (docs/fleet.md): 0 healthy, 2 bad input, 3 unhealthy,
4 a rank missing, 5 ranks disagree, 6 more ranks on a node than devices.
"""

import sys

from . import SCHEMA, __version__, signals
from .arguments import Parser, count, given, number, path, refuse_output_on_inputs
from .compare import DEFAULT_FDR, DEFAULT_MIN_EFFECT, DEFAULT_NOISE_FLOOR
from .errors import BadInput, MissingDependency

PROG = "xferbench-report"


def _parser():
    p = Parser(
        prog=PROG,
        description=f"Plots, peak tables, a fitted cost model, an HTML report and run-to-run comparison for "
                    f"xferbench result files ({SCHEMA}).")
    p.add_argument("--version", action="version", version=f"{PROG} {__version__}")
    sub = p.add_subparsers(dest="command", metavar="COMMAND", required=True)

    r = sub.add_parser("render", help="write DIR/index.html, DIR/summary.md and DIR/plots/ from result files",
                       description="Render one or more result files into a self-contained HTML report (figures "
                                   "inline as SVG), a Markdown summary and PNG/SVG figures. The report is built in a "
                                   "temporary directory and moved to DIR only when complete; an existing DIR is "
                                   "replaced only if it holds an earlier report. Exit 0 written; 1 an output could "
                                   "not be written; 2 no file could be used; 3 written, some files left out; 69 "
                                   "matplotlib, which the figures are drawn with, cannot be imported (one line says "
                                   "what to install; nothing written). A trace file (`xferbench trace`, schema "
                                   "xferbench-trace/1) is a page of its own, 'Transfers of this program': the report "
                                   "itself where it is the only file, else DIR/trace-NAME.html and .md, linked from "
                                   "the index.")
    r.add_argument("results", nargs="+", type=path, metavar="RESULTS.json")
    r.add_argument("-o", "--output", required=True, type=path, metavar="DIR", help="report directory")
    r.add_argument("--title", help="report title (default: 'xferbench report')")
    r.add_argument("--reference", metavar="BACKEND",
                   help="backend the API comparison divides by (default: the first one in the files)")
    r.add_argument("-j", "--jobs", type=count, metavar="N",
                   help="draw figures in N processes (default: one per CPU)")
    r.add_argument("--machines", action="store_true",
                   help="allow files from several machines in one report (default: files from another machine "
                        "than the first are left out)")

    c = sub.add_parser("compare", help="NEW/BASE time ratio and verdict per matching point; exit 1 on a real slowdown",
                       description="Compare two runs point by point (docs/compare.md). A point is slower (faster) when "
                                   "a one-sided Mann-Whitney U test on its raw samples is significant after "
                                   "Benjamini-Hochberg across all points (--fdr) and its median ratio exceeds the "
                                   "allowance: max(--min-effect, --noise-floor x the robust spread of all points' log "
                                   "median ratios). Exit 1 when any point is slower or newly failed, 0 otherwise; 2 "
                                   "when the files have no ok point in common (or, with --same-machine, come from "
                                   "different machines); 3 when a file cannot be read or is not a result file. "
                                   "Result files may be gzipped.")
    c.add_argument("base", type=path, metavar="BASE.json")
    c.add_argument("new", type=path, metavar="NEW.json")
    c.add_argument("--min-effect", "--tolerance", dest="min_effect", type=number(0, 1, high_open=True),
                   default=DEFAULT_MIN_EFFECT, metavar="FRACTION",
                   help=f"smallest change of the median that counts (default {DEFAULT_MIN_EFFECT:g}: 5%%); "
                        "--tolerance is its old name")
    c.add_argument("--noise-floor", type=number(0, 1000), default=DEFAULT_NOISE_FLOOR, metavar="K",
                   help=f"the allowance is at least K x 1.4826 MAD of the log median ratios over all common points "
                        f"(default {DEFAULT_NOISE_FLOOR:g}; 0 turns it off)")
    c.add_argument("--fdr", type=number(0, 1, low_open=True, high_open=True), default=DEFAULT_FDR, metavar="Q",
                   help=f"Benjamini-Hochberg false discovery rate across points (default {DEFAULT_FDR:g})")
    c.add_argument("--same-machine", action="store_true",
                   help="refuse (exit 2) files from different machines instead of warning")
    c.add_argument("--changes-only", action="store_true", help="list only points that are not 'same'")
    h = sub.add_parser("headlines", help="a run's headline findings; with two runs, whether the second repeats them",
                       description="Print the headline findings of each result file (what the report's first screen "
                                   "shows). With two files (a run and its rerun on the same machine), also the titles "
                                   "they share, any headline the other run contradicts, and the findings' claims "
                                   "compared (which way wins at each block size, of every finding, headline or not); "
                                   "exit 1 when they disagree (fewer in common than all but one of the shorter list, "
                                   "a contradiction, or a claim said otherwise), the rule of docs/findings.md; "
                                   "exit 2 when the two files come from different machines (as compare "
                                   "--same-machine decides it: host name, CPU model and count, accelerators).")
    h.add_argument("results", nargs="+", type=path, metavar="RESULTS.json", help="one or two result files")
    fl = sub.add_parser("fleet", help="merge the per-rank files of `xferbench fleet --out-dir DIR` and list the outliers",
                        description="Merge DIR/rank-*.json (ranks started without MPI) into one fleet result file "
                                    "and judge it as rank 0 does over MPI (docs/fleet.md): problems and outliers "
                                    "first, then a node x device table. Exit 0 healthy, 2 bad input, 3 unhealthy, "
                                    "4 a rank missing, 5 ranks disagree, 6 more ranks on a node than devices.")
    fl.add_argument("dir", type=path, metavar="DIR",
                    help="the ranks' files; or a fleet result file: print it, exit with its verdict")
    fl.add_argument("-o", "--output", type=path, metavar="FILE", help="the merged file (default DIR/fleet.json)")
    fl.add_argument("--baseline", type=path, metavar="FILE", help="a known-good fleet result file to compare with")
    fl.add_argument("--svg", type=path, metavar="FILE",
                    help="also draw the node x device view (a heat map, outliers outlined)")
    # The C++ fleet's ranges (src/fleet/run.cpp, check_judge), refused here before any work.
    fl.add_argument("--mad-k", type=number(low=0, low_open=True), default=3.0,
                    help="outlier: worse than the median by k x 1.4826 MAD (above 0; default 3)...")
    fl.add_argument("--tolerance", type=number(0, 1, high_open=True), default=0.10,
                    help="... and by this fraction of it (in [0, 1); default 0.10)")
    fl.add_argument("--min-ceiling", type=number(0, 1), default=0.5,
                    help="pinned bandwidth below this fraction of the link's ceiling (in [0, 1]; default 0.5)")
    return p


def main(argv=None):
    try:
        args = _parser().parse_args(argv)
    except SystemExit as e:  # a usage error (one line, exit 2), or --help and --version (exit 0)
        return e.code
    try:
        with signals.raised():
            return _command(args)
    except BadInput as e:
        for line in str(e).split("\n"):  # render: one line per file it could not use
            print(f"{PROG}: error: {line}", file=sys.stderr)
        return e.exit_code
    except MissingDependency as e:
        print(f"{PROG}: error: {e}", file=sys.stderr)
        return e.exit_code
    except OSError as e:
        where = f"{e.filename}: " if getattr(e, "filename", None) else ""
        print(f"{PROG}: error: cannot write the report: {where}{e.strerror or e}", file=sys.stderr)
        return 1
    except signals.Interrupted as e:
        print(f"{PROG}: interrupted by {e.name}", file=sys.stderr)
        return 128 + e.signum
    except KeyboardInterrupt:  # where signals.raised could not take SIGINT over
        print(f"{PROG}: interrupted", file=sys.stderr)
        return 130


def _command(args):
    if args.command == "render":
        from .render import render

        # The report directory is swapped in whole: an input inside it would be removed.
        refuse_output_on_inputs([("-o", args.output)], [("the input", p) for p in args.results])
        refused, traces = [], []
        out, nfig, findings = render(args.results, args.output, title=args.title, reference=args.reference,
                                     jobs=args.jobs, mixed_machines=args.machines, refused=refused, traces=traces)
        for line in refused:
            print(f"{PROG}: error: {line}", file=sys.stderr)
        print(f"wrote {out}/index.html, {out}/summary.md and {nfig} figures in {out}/plots")
        if findings:  # the report's first lines, here too
            from .findings import headlines

            print("findings:")
            for f in headlines(findings):
                print(f"  {f.line()}")
        if traces:  # each trace's ending and its ranked fixes, as its page begins
            from .trace import console_lines

            for t in traces:
                print("\n".join(console_lines(t)))
        return 3 if refused else 0
    if args.command == "compare":
        from .compare import format_comparison, run_compare

        cmp = run_compare(args.base, args.new, min_effect=args.min_effect, noise_floor=args.noise_floor,
                          fdr=args.fdr, same_machine=args.same_machine)
        if cmp.machine_warning:
            print(f"{PROG}: warning: the files come from different machines ({cmp.machine_warning}); "
                  "differences may be the machines'", file=sys.stderr)
        sys.stdout.write(format_comparison(cmp, changes_only=args.changes_only))
        return 1 if cmp.regressed else 0
    if args.command == "headlines":
        if len(args.results) > 2:
            raise BadInput(f"headlines takes one or two result files, got {len(args.results)}")
        from .compare import require_same_machine
        from .findings import headline_agreement, headlines
        from .render import judge

        judged = [judge([path]) for path in args.results]
        if len(judged) == 2:  # refused before a line is printed; the rule is compare's (issue 49)
            first, second = ((got.runs or got.studies)[0] for got, _, _ in judged)
            require_same_machine(first, second, why="headlines compares a run with its rerun on the same machine")
        runs = [findings for _, _, findings in judged]
        for path, fs in zip(args.results, runs):
            print(f"{path}:")
            for f in headlines(fs):
                print(f"  {f.line()}")
        if len(runs) == 1:
            return 0
        agreed = headline_agreement(*runs)
        print(f"in common: {len(agreed.common)} of {len(agreed.first)} and {len(agreed.second)} headlines"
              + (f"; only in the first: {', '.join(t for t in agreed.first if t not in agreed.common)}"
                 if len(agreed.common) < len(agreed.first) else "")
              + (f"; only in the second: {', '.join(t for t in agreed.second if t not in agreed.common)}"
                 if len(agreed.common) < len(agreed.second) else ""))
        for title, k1, k2 in agreed.contradicted:
            print(f"contradicted: {title} ({k1} in the first, {k2} in the second)")
        n_claims = len(agreed.claims_repeated) + len(agreed.claims_contradicted)
        if n_claims or agreed.claims_first_only or agreed.claims_second_only:
            print(f"claims: {len(agreed.claims_repeated)} repeated, {len(agreed.claims_contradicted)} contradicted, "
                  f"{len(agreed.claims_first_only)} only in the first, {len(agreed.claims_second_only)} only in the "
                  "second (the other found no difference beyond the noise there)")
        for subject in agreed.claims_first_only:
            print(f"  only in the first: {subject}")
        for subject in agreed.claims_second_only:
            print(f"  only in the second: {subject}")
        for subject, v1, v2 in agreed.claims_contradicted:
            print(f"contradicted: {subject}: {v1} in the first, {v2} in the second")
        print("the runs agree" if agreed.agrees else "the runs disagree")
        return 0 if agreed.agrees else 1
    if args.command == "fleet":
        return _fleet(args)
    return 2


def _fleet(args):
    import glob
    import os

    from .fleet import merge_dir, write_json

    if os.path.isfile(args.dir):
        # A fleet file already merged (rank 0's over MPI): its verdict as the exit code, for a
        # scheduler whose mpirun exits 0 whatever the ranks returned (Open MPI with recovery on).
        # It is judged already: the options that merge or judge cannot apply to it.
        for dest, opt in (("output", "-o"), ("baseline", "--baseline"), ("mad_k", "--mad-k"),
                          ("tolerance", "--tolerance"), ("min_ceiling", "--min-ceiling")):
            if given(args, dest):
                raise BadInput(f"{opt} applies when merging a directory of rank files; {args.dir} is a fleet "
                               "result file, judged already")
        refuse_output_on_inputs([("--svg", args.svg)], [("the fleet file", args.dir)])
        from .fleet import fleet_text, read_fleet_file

        doc = read_fleet_file(args.dir)
        _write_fleet_svg(doc, args.svg)
        sys.stdout.write(fleet_text(doc))
        return doc["fleet"]["exit_code"]
    if not os.path.isdir(args.dir):
        raise BadInput(f"{args.dir}: not a directory or a fleet result file")
    out = args.output or os.path.join(args.dir, "fleet.json")
    inputs = [("the rank file", p) for p in sorted(glob.glob(os.path.join(glob.escape(args.dir), "rank-*.json")))]
    if args.baseline:
        inputs.append(("the --baseline file", args.baseline))
    outputs = [("-o" if args.output else "-o (default)", out), ("--svg", args.svg)]
    refuse_output_on_inputs(outputs, inputs)
    for opt, path in outputs:
        if path and os.path.isdir(path):  # refused before the merge, not after -o is written
            raise BadInput(f"{opt} {path}: is a directory, expected a file")
    doc, code, text = merge_dir(args.dir, args.mad_k, args.tolerance, args.min_ceiling, args.baseline)
    write_json(doc, out)
    _write_fleet_svg(doc, args.svg)
    from .output import writes_to_stdout

    # -o -: the JSON alone on stdout, the table on stderr (as the C++ tool's --json -).
    (sys.stderr if writes_to_stdout(out) else sys.stdout).write(text)
    print(f"wrote {out}" + (f" and {args.svg}" if args.svg else ""), file=sys.stderr)
    return code


def _write_fleet_svg(doc, path):
    if not path:
        return
    from .fleet import node_device_svg, write_text

    write_text(path, node_device_svg(doc))


if __name__ == "__main__":
    sys.exit(main())
