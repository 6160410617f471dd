"""Whether this machine has an NVIDIA GPU, for the CLI tests that run on one (label gpu) or
change what they expect with one: nvidia-smi lists at least one."""
import subprocess
import sys


def has_gpu():
    try:
        return subprocess.run(["nvidia-smi", "-L"], capture_output=True).returncode == 0
    except FileNotFoundError:
        return False


def exit_77_without_gpu():
    """A gpu-labelled test's start: CTest's "skipped" (SKIP_RETURN_CODE 77) where there is none."""
    if not has_gpu():
        print("skipped: no GPU (nvidia-smi -L found none)")
        sys.exit(77)
