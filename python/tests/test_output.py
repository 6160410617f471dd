"""The report tool's outputs (xferbench_report/output.py) on every kind of target, the same table as
the C++ tool's (tests/cli/test_outputs.py): a regular file whole or not at all with its mode, owner
and hard links kept; a link's target written and the link kept; a device, FIFO or stdout written in
place; a full device, a directory that refuses files or a directory named as a file one error; a
directory output never replacing a link nor leaving a hidden directory behind (issue 36). CI runs
these as root, which ignores permission bits: the refusing directory is /proc's, which refuses root."""

import errno
import json
import os
import stat
import threading
from pathlib import Path

import pytest

from xferbench_report import cli
from xferbench_report.output import OutputError, write_dir, write_output

ROOT = os.geteuid() == 0


def device(tmp_path, name, minor):
    """A private copy of /dev/null (minor 3) or /dev/full (7) where this process may make one (root,
    a file system without nodev): a regression then replaces the copy, not the machine's own."""
    node = tmp_path / name
    try:
        os.mknod(node, stat.S_IFCHR | 0o666, os.makedev(1, minor))
        os.close(os.open(node, os.O_WRONLY))
    except OSError:
        return f"/dev/{name}"
    return str(node)


@pytest.fixture
def dev_full(tmp_path):
    return device(tmp_path, "full", 7)


@pytest.fixture
def dev_null(tmp_path):
    return device(tmp_path, "null", 3)


def hidden(directory):
    return sorted(p.name for p in directory.iterdir() if p.name.startswith("."))


def test_a_new_file_is_created_with_the_umask_and_nothing_else(tmp_path):
    write_output(tmp_path / "r.json", "new\n")
    umask = os.umask(0)
    os.umask(umask)
    assert (tmp_path / "r.json").read_text() == "new\n"
    assert stat.S_IMODE((tmp_path / "r.json").stat().st_mode) == 0o666 & ~umask
    assert hidden(tmp_path) == []


def test_an_existing_file_is_replaced_whole_keeping_its_mode(tmp_path):
    f = tmp_path / "r.json"
    f.write_text("old content, longer than the new\n")
    f.chmod(0o640)
    before = f.stat().st_ino
    write_output(f, "new\n")
    assert f.read_text() == "new\n"
    assert stat.S_IMODE(f.stat().st_mode) == 0o640
    assert f.stat().st_ino != before, "replaced by a rename, not rewritten"
    assert hidden(tmp_path) == []


@pytest.mark.skipif(not ROOT, reason="only root can give a file to another user to test that its owner is kept")
def test_an_existing_files_owner_is_kept(tmp_path):
    f = tmp_path / "r.json"
    f.write_text("old\n")
    os.chown(f, 4321, 4322)
    write_output(f, "new\n")
    assert (f.stat().st_uid, f.stat().st_gid) == (4321, 4322)
    assert f.read_text() == "new\n"


def test_a_failed_write_keeps_the_old_file_and_leaves_no_temporary(tmp_path, monkeypatch):
    f = tmp_path / "r.json"
    f.write_text("old\n")

    def no_sync(fd):
        raise OSError(errno.EIO, "Input/output error")

    monkeypatch.setattr(os, "fsync", no_sync)
    with pytest.raises(OutputError, match="Input/output error"):
        write_output(f, "new\n")
    assert f.read_text() == "old\n"
    assert hidden(tmp_path) == []


def test_a_hard_linked_file_is_written_in_place_and_keeps_its_links(tmp_path):
    f, other = tmp_path / "r.json", tmp_path / "same.json"
    f.write_text("old content, longer than the new\n")
    os.link(f, other)
    write_output(f, "new\n")
    assert other.read_text() == "new\n", "the other name sees the new content"
    assert f.stat().st_ino == other.stat().st_ino and f.stat().st_nlink == 2
    assert hidden(tmp_path) == []


def test_a_link_to_a_file_stays_a_link(tmp_path):
    target, link = tmp_path / "real.json", tmp_path / "link.json"
    target.write_text("old\n")
    link.symlink_to("real.json")
    write_output(link, "new\n")
    assert link.is_symlink() and os.readlink(link) == "real.json"
    assert target.read_text() == "new\n"


def test_a_dangling_link_creates_its_target(tmp_path):
    (tmp_path / "sub").mkdir()
    link = tmp_path / "link.json"
    link.symlink_to("sub/made.json")
    write_output(link, "new\n")
    assert link.is_symlink()
    assert (tmp_path / "sub" / "made.json").read_text() == "new\n"


def test_dev_null_is_written_in_place(dev_null):
    write_output(dev_null, "x" * 100_000)
    assert stat.S_ISCHR(os.stat(dev_null).st_mode)


def test_a_full_device_is_an_error_and_stays_a_device(dev_full):
    with pytest.raises(OutputError) as e:
        write_output(dev_full, "x" * 51_000)
    assert e.value.errno == errno.ENOSPC
    assert str(e.value) == f"cannot write {dev_full}: No space left on device"
    assert stat.S_ISCHR(os.stat(dev_full).st_mode)


def test_a_fifo_with_a_reader_is_written_in_place(tmp_path):
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    got = []
    reader = threading.Thread(target=lambda: got.append(open(fifo).read()))
    reader.start()
    write_output(fifo, "through the pipe\n")
    reader.join(10)
    assert got == ["through the pipe\n"]
    assert stat.S_ISFIFO(fifo.stat().st_mode)


def test_dash_is_standard_output(capfd):
    print("before", flush=False)
    write_output("-", "result\n")
    assert capfd.readouterr().out == "before\nresult\n", "in the order written"


@pytest.mark.parametrize("where", ["/proc/xferbench-output-test.json", "/sys/xferbench-output-test.json"])
def test_a_directory_that_refuses_files_is_an_error(where):
    # /proc and /sys refuse new files to root too (a chmod'ed directory would not).
    with pytest.raises(OutputError) as e:
        write_output(where, "x")
    assert str(e.value).startswith(f"cannot write {where}: ") and "\n" not in str(e.value)
    assert not os.path.exists(where)


def test_a_read_only_directory_is_an_error(tmp_path):
    # Root writes into a directory whatever its mode: as root, the directory that refuses us is /sys's.
    d = Path("/sys") if ROOT else tmp_path / "ro"
    if not ROOT:
        d.mkdir()
        d.chmod(0o555)
    target = d / "xferbench-output-test.json"
    try:
        with pytest.raises(OutputError, match="Permission denied|Operation not permitted"):
            write_output(target, "x")
    finally:
        if not ROOT:
            d.chmod(0o755)
    assert not target.exists()


def test_a_directory_or_an_empty_name_is_refused(tmp_path):
    with pytest.raises(OutputError, match="it is a directory"):
        write_output(tmp_path, "x")
    with pytest.raises(OutputError, match="the file name is empty"):
        write_output("", "x")


def _report(directory, text):
    (directory / "index.html").write_text(text)
    (directory / "summary.md").write_text(text)


def test_a_directory_output_replaces_an_earlier_one_whole(tmp_path):
    out = tmp_path / "report"
    write_dir(out, lambda d: _report(d, "first"))
    write_dir(out, lambda d: _report(d, "second"))
    assert (out / "index.html").read_text() == "second"
    assert hidden(tmp_path) == []


def test_a_directory_output_that_is_a_link_stays_a_link(tmp_path):
    old = tmp_path / "reports" / "old"
    old.mkdir(parents=True)
    _report(old, "old")
    link = tmp_path / "latest"
    link.symlink_to("reports/old")
    assert write_dir(link, lambda d: _report(d, "new")) == old
    assert link.is_symlink() and os.readlink(link) == "reports/old"
    assert (link / "index.html").read_text() == "new"
    assert hidden(tmp_path) == [] and hidden(tmp_path / "reports") == []


def test_a_failed_directory_output_leaves_the_old_one_and_nothing_hidden(tmp_path):
    out = tmp_path / "report"
    write_dir(out, lambda d: _report(d, "first"))

    def boom(d):
        _report(d, "half")
        raise RuntimeError("disk on fire")

    with pytest.raises(RuntimeError):
        write_dir(out, boom)
    assert (out / "index.html").read_text() == "first"
    assert hidden(tmp_path) == []


# ---- the commands that write --------------------------------------------------------------------

@pytest.fixture
def rank_dir(tmp_path):
    from test_fleet import real_fleet, split_into_rank_files

    d = tmp_path / "ranks"
    d.mkdir()
    split_into_rank_files(real_fleet(), d)
    return d


FLEET = ["--tolerance", "0.35", "--min-ceiling", "0"]


def test_fleet_to_a_full_device_is_exit_1_with_one_line_and_no_wrote(rank_dir, dev_full, capsys):
    assert cli.main(["fleet", str(rank_dir), "-o", dev_full, *FLEET]) == 1
    err = capsys.readouterr().err
    assert err == f"xferbench-report: error: cannot write the report: {dev_full}: No space left on device\n"
    assert stat.S_ISCHR(os.stat(dev_full).st_mode), "still the device, not a 51 KB file"


def test_fleet_to_a_link_keeps_the_link(rank_dir, tmp_path):
    (tmp_path / "real.json").write_text("{}")
    link = tmp_path / "fleet.json"
    link.symlink_to("real.json")
    assert cli.main(["fleet", str(rank_dir), "-o", str(link), *FLEET]) == 0
    assert link.is_symlink()
    assert json.loads((tmp_path / "real.json").read_text())["fleet"]["healthy"] is True


def test_fleet_svg_goes_through_the_same_rule(rank_dir, dev_full):
    assert cli.main(["fleet", str(rank_dir), "--svg", dev_full, *FLEET]) == 1
    assert stat.S_ISCHR(os.stat(dev_full).st_mode)


def test_render_into_a_link_to_an_old_report(data, tmp_path):
    old = tmp_path / "runs" / "monday"
    old.mkdir(parents=True)
    _report(old, "monday")
    link = tmp_path / "latest"
    link.symlink_to(old)
    assert cli.main(["render", str(data / "single_point.json"), "-o", str(link)]) == 0
    assert link.is_symlink() and os.readlink(link) == str(old)
    assert "monday" not in (old / "index.html").read_text()
    assert hidden(tmp_path) == [] and hidden(tmp_path / "runs") == []


@pytest.mark.parametrize("where", ["/proc/xferbench-report-test", "/sys/xferbench-report-test"])
def test_render_where_no_directory_can_be_made_is_exit_1_with_one_line(data, where, capsys):
    assert cli.main(["render", str(data / "single_point.json"), "-o", where]) == 1
    err = capsys.readouterr().err
    assert err.startswith(f"xferbench-report: error: cannot write the report: {where}: ") and err.count("\n") == 1
    assert not os.path.exists(where)


def test_fleet_to_stdout_puts_the_json_alone_there(rank_dir, capfd):
    assert cli.main(["fleet", str(rank_dir), "-o", "-", *FLEET]) == 0
    out, err = capfd.readouterr()
    assert json.loads(out)["fleet"]["healthy"] is True, "stdout is the JSON and nothing else"
    assert "fleet healthy" in err
