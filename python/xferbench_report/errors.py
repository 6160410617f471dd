class BadInput(Exception):
    """Input the tool cannot use: unreadable, not JSON, another schema, nothing to report.

    The CLI prints the message as one line and exits with exit_code.
    """

    exit_code = 2


class Incomparable(BadInput):
    """compare: two readable files that cannot be compared (no ok point in common;
    different machines under --same-machine); headlines: two files from different machines."""

    exit_code = 2


class Unreadable(BadInput):
    """compare: a file that cannot be read or is not a valid result file. Its own
    exit status, so a script can tell a broken input from a failed comparison."""

    exit_code = 3
