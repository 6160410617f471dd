#!/usr/bin/env python3
"""Is the progress line honest? Runs `XFERBENCH sweep ARGS` on a pseudo-terminal (the line is drawn
only on one), notes when each update arrives, and prints, at each tenth of the run, the run's
length that the line predicted then ("N s in" plus "~M s left") against the length the run had.
Exit 1 where a prediction from the first tenth on is off by more than 25% (issue 50's target).

    scripts/progress_check.py build/bin/xferbench [sweep arguments, e.g. --blocks]
"""
import os
import pty
import re
import select
import subprocess
import sys
import time

UPDATE = re.compile(rb"\[(measuring again )?(\d+)/(\d+), (\d+) s in(?:, ~(\d+) s left)?\]")
WITHIN = 0.25


def run(binary, args):
    """(updates, length): each update as (seconds since the start, predicted length, label)."""
    master, slave = pty.openpty()
    start = time.monotonic()
    proc = subprocess.Popen([binary, "sweep", *args], stdout=subprocess.DEVNULL, stderr=slave)
    os.close(slave)
    updates, pending = [], b""
    while True:
        ready, _, _ = select.select([master], [], [], 0.2)
        if ready:
            try:
                chunk = os.read(master, 65536)
            except OSError:  # the child closed its end
                chunk = b""
            if not chunk and proc.poll() is not None:
                break
            pending += chunk
            now = time.monotonic() - start
            for m in UPDATE.finditer(pending):
                if m.group(5) is not None:
                    label = f"{'again ' if m.group(1) else ''}{int(m.group(2))}/{int(m.group(3))}"
                    updates.append((now, now + float(m.group(5)), label))
            pending = pending[pending.rfind(b"]") + 1:] if UPDATE.search(pending) else pending[-200:]
        elif proc.poll() is not None:
            break
    length = time.monotonic() - start
    os.close(master)
    return updates, length, proc.returncode


def main():
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    updates, length, rc = run(sys.argv[1], sys.argv[2:])
    print(f"xferbench sweep {' '.join(sys.argv[2:])}: {length:.1f} s, exit {rc}, {len(updates)} updates")
    worst = 0.0
    for tenth in range(1, 10):
        at = length * tenth / 10
        before = [u for u in updates if u[0] <= at]
        if not before:
            print(f"{tenth}/10 at {at:.0f} s: no estimate yet")
            worst = float("inf")
            continue
        when, predicted, label = before[-1]
        off = (predicted - length) / length
        worst = max(worst, abs(off))
        print(f"{tenth}/10 at {at:.0f} s: predicted {predicted:.0f} s ({label}), {100 * off:+.0f}%")
    print(f"worst: {100 * worst:.0f}% (target: within {100 * WITHIN:.0f}%)")
    sys.exit(0 if worst <= WITHIN and rc == 0 else 1)


if __name__ == "__main__":
    main()
