"""xferbench-report: render result files into a report, or compare two runs.

Exit status: 0 fine; 3 render wrote the report but left out some files (one
line each on stderr says why: unreadable, truncated, unknown or future schema,
no ok points, another machine); 1 compare found a point slower (or newly failed) beyond
both runs' spread, or an output could not be written; 2 bad input or usage
(for render: no file could be used);
128 + signal when interrupted by SIGINT, SIGTERM or SIGHUP (nothing half written
is left behind).
"""

import argparse
import sys

from . import SCHEMA, __version__, signals
from .errors import BadInput

PROG = "xferbench-report"


def _parser():
    p = argparse.ArgumentParser(
        prog=PROG,
        description=f"Plots, peak tables, a fitted cost model, an HTML report and run-to-run comparison for "
                    f"xferbench result files ({SCHEMA}).")
    p.add_argument("--version", action="version", version=f"{PROG} {__version__}")
    sub = p.add_subparsers(dest="command", metavar="COMMAND", required=True)

    r = sub.add_parser("render", help="write DIR/index.html, DIR/summary.md and DIR/plots/ from result files",
                       description="Render one or more result files into a self-contained HTML report (figures "
                                   "inline as SVG), a Markdown summary and PNG/SVG figures. The report is built in a "
                                   "temporary directory and moved to DIR only when complete; an existing DIR is "
                                   "replaced only if it holds an earlier report.")
    r.add_argument("results", nargs="+", metavar="RESULTS.json")
    r.add_argument("-o", "--output", required=True, metavar="DIR", help="report directory")
    r.add_argument("--title", help="report title (default: 'xferbench report')")
    r.add_argument("--reference", metavar="BACKEND",
                   help="backend the API comparison divides by (default: the first one in the files)")
    r.add_argument("-j", "--jobs", type=int, metavar="N",
                   help="draw figures in N processes (default: one per CPU)")
    r.add_argument("--machines", action="store_true",
                   help="allow files from several machines in one report (default: files from another machine "
                        "than the first are left out)")

    c = sub.add_parser("compare", help="NEW/BASE time ratio and verdict per matching point; exit 1 if any is slower",
                       description="Compare two runs point by point. A point is slower (or faster) only when NEW's "
                                   "p5..p95 interval of sample times lies entirely above (below) BASE's, i.e. the "
                                   "change exceeds both runs' measured spread. Exit 1 when any point is slower or "
                                   "newly failed, 0 otherwise, 2 for bad input.")
    c.add_argument("base", metavar="BASE.json")
    c.add_argument("new", metavar="NEW.json")
    c.add_argument("--tolerance", type=float, default=0.0, metavar="FRACTION",
                   help="also require the median ratio to differ from 1 by more than this (default 0)")
    c.add_argument("--changes-only", action="store_true", help="list only points that are not 'same'")
    return p


def main(argv=None):
    args = _parser().parse_args(argv)
    try:
        with signals.raised():
            return _command(args)
    except BadInput as e:
        for line in str(e).split("\n"):  # render: one line per file it could not use
            print(f"{PROG}: error: {line}", file=sys.stderr)
        return 2
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

        if args.jobs is not None and args.jobs < 1:
            raise BadInput(f"--jobs must be at least 1, got {args.jobs}")
        refused = []
        out, nfig, findings = render(args.results, args.output, title=args.title, reference=args.reference,
                                     jobs=args.jobs, mixed_machines=args.machines, refused=refused)
        for line in refused:
            print(f"{PROG}: error: {line}", file=sys.stderr)
        print(f"wrote {out}/index.html, {out}/summary.md and {nfig} figures in {out}/plots")
        if findings:  # the report's first lines, here too
            from .findings import headlines

            print("findings:")
            for f in headlines(findings):
                print(f"  {f.line()}")
        return 3 if refused else 0
    if args.command == "compare":
        if not 0 <= args.tolerance < 1:
            raise BadInput(f"--tolerance must be in [0, 1), got {args.tolerance}")
        from .compare import format_comparison, run_compare

        cmp = run_compare(args.base, args.new, tolerance=args.tolerance)
        sys.stdout.write(format_comparison(cmp, changes_only=args.changes_only))
        return 1 if cmp.regressed else 0
    return 2


if __name__ == "__main__":
    sys.exit(main())
