class BadInput(Exception):
    """Input the tool cannot use: unreadable, not JSON, another schema, nothing to report.

    The CLI prints the message as one line and exits 2.
    """
