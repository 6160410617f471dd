"""Where the report tool's outputs leave the process: every file and directory the package writes
goes through here, under the C++ tool's rules (include/xfer/core/output_file.hpp), so the two
tools treat a target alike.

A file output (write_output):

- a regular file, or one not there yet, is written whole or not at all: a temporary file in the
  same directory, synced, renamed over it, the directory synced. An existing file's mode and
  owner are kept.
- a regular file with more than one hard link is written in place (its space reserved first, then
  truncated and written, then synced): a rename would cut it from its other names. So is one
  whose owner a rename could not keep (another user's file, writable by us through its group).
  Writing in place is not atomic; keeping the file the user linked or shared weighs more.
- a symbolic link is followed, a dangling one (or a chain) by hand, and its final target written
  as above: the link stays a link.
- "-", or the very file standard output already is (/dev/stdout, a redirection), is standard
  output, written in place.
- any other thing that exists (a character device such as /dev/null, a FIFO, a socket) is opened
  for writing as it is (no truncation, no creation) and written in place, never replaced.
- a directory or a block device is refused.

A directory output (write_dir) is built in a temporary directory beside its target and swapped in
whole. A link given as the directory is followed: the report lands in the link's target and the
link stays. The earlier report swapped out is removed, so no hidden directory is left behind.

Every failure is an OutputError (an OSError: the CLI prints one line naming the path and the
system's reason and exits 1) and leaves no temporary file; "wrote" is never said for it.
"""

import errno
import os
import shutil
import stat
import sys
import tempfile
from pathlib import Path

from . import signals


class OutputError(OSError):
    """An output that could not be written: a full device, a read-only or missing directory, a
    directory or block device named as a file, a reader that went away. str() is one line."""

    def __init__(self, path, reason):
        code = reason.errno if isinstance(reason, OSError) else None
        why = (reason.strerror or str(reason)) if isinstance(reason, OSError) else str(reason)
        super().__init__(code, why, str(path))

    def __str__(self):
        return f"cannot write {self.filename}: {self.strerror}"


def _is_stdout(st):
    try:
        out = os.fstat(1)  # the descriptor, not sys.stdout: what a redirection names
    except OSError:  # no standard output at all
        return False
    return (st.st_dev, st.st_ino) == (out.st_dev, out.st_ino)


def _follow_links(path):
    """The path a dangling link (or a chain of them) points to in the end; the links stay links."""
    p = Path(path)
    for _ in range(40):  # the kernel's own limit
        if not p.is_symlink():
            return p
        target = Path(os.readlink(p))
        p = target if target.is_absolute() else p.parent / target
    raise OSError(errno.ELOOP, os.strerror(errno.ELOOP))


def _write_all(fd, data):
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view):]  # os.write retries EINTR itself (PEP 475)


def _sync_dir(directory):
    try:
        fd = os.open(directory, os.O_RDONLY | os.O_DIRECTORY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError as e:
        if e.errno != errno.EINVAL:  # some file systems cannot sync a directory; the file is in place
            raise
    finally:
        os.close(fd)


def _replace(target, data, st):
    """Whole or not at all: a temporary file beside `target`, renamed over it. False, with nothing
    changed, when the owner of the existing file `st` could not be kept (the caller then writes in
    place)."""
    fd, tmp = tempfile.mkstemp(dir=target.parent, prefix=f".{target.name}.", suffix=".tmp")
    owner_kept = True
    try:
        try:
            if st is None:
                umask = os.umask(0)
                os.umask(umask)
                os.fchmod(fd, 0o666 & ~umask)  # what open(..., "w") would have made; mkstemp makes 0600
            else:
                if (st.st_uid, st.st_gid) != (os.geteuid(), os.getegid()):
                    try:
                        os.fchown(fd, st.st_uid, st.st_gid)
                    except PermissionError:
                        owner_kept = False
                if owner_kept:
                    os.fchmod(fd, stat.S_IMODE(st.st_mode))  # after the chown, which clears set-id bits
            if owner_kept:
                _write_all(fd, data)
                os.fsync(fd)  # before the rename: a crash just after it must not leave an empty file
        finally:
            os.close(fd)
        if owner_kept:
            os.rename(tmp, target)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise
    if not owner_kept:
        os.unlink(tmp)
        return False
    _sync_dir(target.parent)
    return True


def _write_in_place(target, data):
    fd = os.open(target, os.O_WRONLY | os.O_CLOEXEC | os.O_NOCTTY)
    try:
        try:
            os.posix_fallocate(fd, 0, max(len(data), 1))  # a full disk fails here, the old content intact
        except OSError as e:
            if e.errno not in (errno.EOPNOTSUPP, errno.EINVAL, errno.ENODEV):
                raise
        _write_all(fd, data)
        os.ftruncate(fd, len(data))
        os.fsync(fd)
    finally:
        os.close(fd)


def _write_stream(path, data):
    """A device, FIFO or socket: written as it is, never truncated or replaced."""
    fd = os.open(path, os.O_WRONLY | os.O_CLOEXEC | os.O_NOCTTY)
    try:
        _write_all(fd, data)
    finally:
        os.close(fd)


def _write_stdout(data):
    sys.stdout.flush()  # what print() still holds goes first, so the order is the order written
    _write_all(1, data)


def writes_to_stdout(path):
    """True when `path` is "-" or the very file standard output already is (/dev/stdout, the file
    stdout was redirected to): a command then sends its console text to stderr, so stdout carries
    the result alone, as the C++ tool does."""
    path = os.fspath(path)
    if path == "-":
        return True
    try:
        return _is_stdout(os.stat(path))
    except OSError:
        return False


def write_output(path, content):
    """Writes `content` (str, as UTF-8, or bytes) as the whole of `path` by the rules at the top.
    Raises OutputError."""
    data = content.encode("utf-8") if isinstance(content, str) else bytes(content)
    path = os.fspath(path)
    try:
        if path == "":
            raise OSError(errno.ENOENT, "the file name is empty (give a path, or - for standard output)")
        if path == "-":
            return _write_stdout(data)
        try:
            st = os.stat(path)
        except FileNotFoundError:
            st = None
        if st is not None and _is_stdout(st):
            return _write_stdout(data)
        if st is not None and stat.S_ISDIR(st.st_mode):
            raise OSError(errno.EISDIR, "it is a directory")
        if st is not None and stat.S_ISBLK(st.st_mode):
            raise OSError(errno.EINVAL, "it is a block device (a result is never written over a disk)")
        if st is not None and not stat.S_ISREG(st.st_mode):
            return _write_stream(path, data)
        if st is None:
            target = _follow_links(path)
        else:
            # A rename would replace even a write-protected file; honour the protection as `>` would.
            if not os.access(path, os.W_OK):
                raise OSError(errno.EACCES, os.strerror(errno.EACCES))
            target = Path(os.path.realpath(path))
        if st is not None and st.st_nlink > 1:
            return _write_in_place(target, data)
        with signals.held():  # a signal between mkstemp and the rename would leave the temporary file
            if not _replace(target, data, st):
                _write_in_place(target, data)
    except OutputError:
        raise
    except OSError as e:
        raise OutputError(path if path else "''", e) from None


def write_dir(out, fill):
    """Builds a directory output: fill(tmp) writes the files into a new private directory beside the
    target, which then takes the target's place whole (an earlier one is removed). A link given as
    `out` is followed and stays a link. Raises OutputError; the temporary directory is removed on
    any failure, an interruption included. Returns the directory written (the link's target when
    `out` is a link)."""
    out = Path(out)
    target = Path(os.path.realpath(out)) if out.exists() else _follow_links(out.absolute())
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        with signals.held():  # a signal as mkdtemp returns would leave a directory that tmp does not name yet
            tmp = Path(tempfile.mkdtemp(prefix=f".{target.name}.tmp-", dir=target.parent))
    except OSError as e:
        raise OutputError(out, e) from None
    try:
        fill(tmp)
        old = target.stat() if target.is_dir() else None
        os.chmod(tmp, stat.S_IMODE(old.st_mode) if old else 0o755)  # mkdtemp makes it private
        with signals.held():  # a signal between the renames would leave no report at the target
            _swap_in(tmp, target)
    except OSError as e:
        shutil.rmtree(tmp, ignore_errors=True)
        raise OutputError(out, e) from None
    except BaseException:  # Interrupted by a signal too
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return target


def _swap_in(new, target):
    """Renames `new` to `target` (a real directory or nothing, never a link); an earlier directory
    there is moved aside under a hidden name and removed, and put back if the rename fails."""
    if not target.exists():
        os.rename(new, target)
        return
    old = target.parent / f".{target.name}.old-{os.getpid()}-{new.name.rsplit('-', 1)[-1]}"
    os.rename(target, old)
    try:
        os.rename(new, target)
    except OSError:
        os.rename(old, target)
        raise
    shutil.rmtree(old, ignore_errors=True)
