"""The report tool's argument parsing: every usage error is one line, an option given twice is refused,
numbers are checked for range (and finiteness) where they are parsed, and no output may land on an
input. Issue 36: a mistyped command must say what is wrong, never run with other values than given.
"""

import argparse
import math
import os
import sys


class Parser(argparse.ArgumentParser):
    """argparse with one-line usage errors (argparse prints the usage block first: several lines
    that bury the reason) and every valued option refused when given twice (argparse keeps the
    last one silently, so `--title a --title b` would drop one without a word)."""

    def error(self, message):
        print(f"{self.prog}: error: {message} (see {self.prog} --help)", file=sys.stderr)
        sys.exit(2)

    def add_argument(self, *names, **kw):
        if names and names[0].startswith("-") and "action" not in kw:
            kw["action"] = _Once
        return super().add_argument(*names, **kw)


class _Once(argparse.Action):
    """Stores the value; a second occurrence (under any of the option's names) is a usage error."""

    def __call__(self, parser, namespace, values, option_string=None):
        given = namespace.__dict__.setdefault("_given", {})
        if self.dest in given:
            first = given[self.dest]
            both = first if first == option_string else f"{first} and {option_string}"
            parser.error(f"{both} given twice: give it once")
        given[self.dest] = option_string
        setattr(namespace, self.dest, values)


def given(args, dest):
    """Whether the option stored in `dest` was on the command line (not its default)."""
    return dest in getattr(args, "_given", {})


def number(low=-math.inf, high=math.inf, low_open=False, high_open=False):
    """An argparse type: a finite float in the range (open ends excluded); the error names the range."""

    def parse(text):
        try:
            v = float(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"not a number: {text!r}") from None
        if not math.isfinite(v):
            raise argparse.ArgumentTypeError(f"must be a finite number, not {text}")
        below = v <= low if low_open else v < low
        above = v >= high if high_open else v > high
        if below or above:
            raise argparse.ArgumentTypeError(f"must be {_range(low, high, low_open, high_open)}, not {text}")
        return v

    parse.__name__ = "number"  # argparse's "invalid <name> value" for what float() refuses
    return parse


def _range(low, high, low_open, high_open):
    """'in [0, 1)', 'above 0', 'at most 5': a range as the messages say it."""
    if low == -math.inf:
        return f"{'below' if high_open else 'at most'} {high:g}"
    if high == math.inf:
        return f"{'above' if low_open else 'at least'} {low:g}"
    return f"in {'(' if low_open else '['}{low:g}, {high:g}{')' if high_open else ']'}"


def count(text):
    """An argparse type: an int of at least 1."""
    try:
        n = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not an integer: {text!r}") from None
    if n < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, not {text}")
    return n


def path(text):
    """An argparse type: a path, never empty (an empty -o would fall back to a default, or name ".")."""
    if not text:
        raise argparse.ArgumentTypeError("empty: give a path")
    return text


def _same(a, b):
    try:
        return os.path.samefile(a, b)
    except OSError:  # one of them is not there (yet): the same only if the names resolve alike
        return os.path.realpath(a) == os.path.realpath(b)


def refuse_output_on_inputs(outputs, inputs):
    """BadInput when an output (option, path) would be written over an input file or inside an input
    directory's tree (a report directory swapped in whole removes what was there), or two outputs name
    the same file. Links and hard links count as the file they reach."""
    from .errors import BadInput

    outs = [(opt, p) for opt, p in outputs if p and p != "-"]
    for opt, out in outs:
        for what, path in inputs:
            if _same(out, path):
                raise BadInput(f"{opt} {out} is {what} {path}: give an output that is not an input")
            inside = os.path.realpath(path)
            if os.path.isdir(out) and os.path.commonpath([os.path.realpath(out), inside]) == os.path.realpath(out):
                raise BadInput(f"{opt} {out} holds {what} {path}, which writing it would remove: "
                               "give an output outside the inputs")
    for i, (opt, out) in enumerate(outs):
        for opt2, out2 in outs[i + 1:]:
            if _same(out, out2):
                raise BadInput(f"{opt} and {opt2} name the same file {out}: give each its own")
