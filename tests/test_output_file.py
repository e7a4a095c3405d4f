"""The output file in a shared directory: a symbolic link (or a FIFO, or
another user's file) planted at its name is never followed or written, the
program runs as without kgrind; files are created 0600 (less the umask), as
perf.data and core dumps; a full disk is reported with the file and the
reason; kgrind_annotate calls a cut profile "truncated" and keeps "not a
kgrind profile" for files that are not one."""
import os
import stat
import subprocess

import pytest

from test_annotate import annotate, bad  # noqa: F401
from test_regions import compile_prog, dump_files

SYMLINK_REFUSED = 'a symbolic link, not followed (refused)'


def refusals(stderr, path, reason):
    return stderr.count(f"kgrind: cannot create output file '{path}': {reason}")


def marker_runs(tools):
    """marker.c under kgrind with a plain output file: prints "marker: ran",
    exits 5 (what a run with a refused file must do too)."""
    exe = tools.compile('marker.c')
    plain = tools.kgrind(exe, out='plain.out')
    assert plain.returncode == 5 and plain.stdout == 'marker: ran\n', plain.stderr
    return exe, plain


def test_planted_symlink_is_not_followed(tools):
    exe, plain = marker_runs(tools)
    target = tools.dir / 'bashrc'
    target.write_text('precious\n')
    os.chmod(target, 0o644)
    link = tools.dir / 'kgrind.out'
    link.symlink_to(target)
    kg = tools.kgrind(exe)
    assert (kg.returncode, kg.stdout) == (plain.returncode, plain.stdout)
    assert target.read_text() == 'precious\n'
    assert stat.S_IMODE(target.stat().st_mode) == 0o644
    assert link.is_symlink() and os.readlink(link) == str(target)
    # refused at start-up (the placeholder) and at exit (the profile)
    assert refusals(kg.stderr, link, SYMLINK_REFUSED) == 2, kg.stderr
    assert 'Output written to' not in kg.stderr


def test_dangling_symlink_creates_nothing(tools):
    exe, plain = marker_runs(tools)
    target = tools.dir / 'elsewhere'
    link = tools.dir / 'kgrind.out'
    link.symlink_to(target)
    kg = tools.kgrind(exe)
    assert (kg.returncode, kg.stdout) == (plain.returncode, plain.stdout)
    assert not target.exists() and link.is_symlink()
    assert refusals(kg.stderr, link, SYMLINK_REFUSED) == 2, kg.stderr


def test_symlink_at_a_dump_name_is_not_followed(tools):
    """roi_dumps makes four dumps, kgrind.out.1 .. .4, and the final
    profile kgrind.out.5: a link at .2 refuses that dump only."""
    exe = compile_prog(tools, 'roi_dumps')
    target = tools.dir / 'target'
    target.write_text('precious\n')
    (tools.dir / 'kgrind.out.2').symlink_to(target)
    kg = tools.kgrind(exe, 'dumps')
    assert kg.returncode == 0 and kg.stdout == 'done\n', kg.stderr
    assert target.read_text() == 'precious\n'
    assert refusals(kg.stderr, tools.dir / 'kgrind.out.2', SYMLINK_REFUSED) == 1, kg.stderr
    files = dump_files(tools)
    assert [f.name for f in files] == [f'kgrind.out.{i}' for i in range(1, 6)]
    for f in files:
        if f.name != 'kgrind.out.2':
            assert not f.is_symlink() and f.read_text().startswith('# callgrind format\n')


def test_fifo_is_refused_without_blocking(tools):
    exe, plain = marker_runs(tools)
    fifo = tools.dir / 'kgrind.out'
    os.mkfifo(fifo)
    kg = tools.kgrind(exe)   # an open that waited for a reader would time out
    assert (kg.returncode, kg.stdout) == (plain.returncode, plain.stdout)
    assert refusals(kg.stderr, fifo, 'not a regular file (refused)') == 2, kg.stderr
    assert stat.S_ISFIFO(fifo.lstat().st_mode)


def test_another_users_file_is_refused(tools):
    """(Root writes any file: the check is kgrind's own, by owner.)"""
    if os.geteuid() != 0:
        pytest.skip('giving a file to another user needs root')
    exe, plain = marker_runs(tools)
    theirs = tools.dir / 'kgrind.out'
    theirs.write_text('their file\n')
    os.chown(theirs, 65534, 65534)
    kg = tools.kgrind(exe)
    assert (kg.returncode, kg.stdout) == (plain.returncode, plain.stdout)
    assert theirs.read_text() == 'their file\n' and theirs.stat().st_uid == 65534
    assert refusals(kg.stderr, theirs, 'owned by another user (refused)') == 2, kg.stderr


def expected_mode():
    umask = os.umask(0)
    os.umask(umask)
    return 0o600 & ~umask


def test_files_are_created_0600(tools):
    exe = compile_prog(tools, 'roi_dumps')
    kg = tools.kgrind(exe, 'dumps')
    assert kg.returncode == 0, kg.stderr
    files = dump_files(tools)
    assert len(files) == 5
    for f in files:
        assert stat.S_IMODE(f.stat().st_mode) == expected_mode(), f
    exe, plain = marker_runs(tools)
    assert stat.S_IMODE(plain.profile_path.stat().st_mode) == expected_mode()


def test_a_users_old_profile_is_replaced_not_written_into(tools):
    """A rerun with the same --kgrind-out-file replaces the file: a new
    file (0600 whatever the old one's mode), the old one's other names (a
    hard link) keep the old contents."""
    exe, plain = marker_runs(tools)
    out = tools.dir / 'kgrind.out'
    out.write_text('old profile\n')
    os.chmod(out, 0o644)
    other = tools.dir / 'other-name'
    os.link(out, other)
    kg = tools.kgrind(exe)
    assert (kg.returncode, kg.stdout) == (plain.returncode, plain.stdout)
    assert 'cannot create' not in kg.stderr, kg.stderr
    assert out.read_text().startswith('# callgrind format\n')
    assert stat.S_IMODE(out.stat().st_mode) == expected_mode()
    assert other.read_text() == 'old profile\n'


@pytest.fixture
def small_disk(tmp_path):
    """A 64 KB tmpfs (needs root, as the test machine's user is)."""
    d = tmp_path / 'small'
    d.mkdir()
    r = subprocess.run(['mount', '-t', 'tmpfs', '-o', 'size=64k', 'tmpfs', str(d)],
                       capture_output=True, text=True)
    if r.returncode != 0:
        pytest.skip(f'cannot mount a small tmpfs to fill (needs root): {r.stderr.strip()}')
    yield d
    subprocess.run(['umount', str(d)], check=True)


def test_full_disk_names_the_file_and_the_reason(tools, small_disk, annotate):
    """ls -R /usr/lib's profile is far over 64 KB."""
    path = small_disk / 'kgrind.out'
    native = subprocess.run(['ls', '-R', '/usr/lib'], capture_output=True, text=True)
    kg = tools.kgrind('/bin/ls', '-R', '/usr/lib', opts=[f'--kgrind-out-file={path}'], out=None)
    assert kg.returncode == native.returncode == 0
    assert kg.stdout == native.stdout
    assert f"kgrind: error writing output file '{path}': No space left on device" in kg.stderr
    assert path.stat().st_size > 0
    bad(annotate(path), str(path), 'truncated')


@pytest.fixture(scope='module')
def whole_profile(tmp_path_factory):
    from conftest import Toolbox
    tools = Toolbox(tmp_path_factory.mktemp('whole'))
    exe = tools.compile('prog1.c')
    run = tools.kgrind(exe, opts=['--k=2'])
    assert run.returncode == 0, run.stderr
    return run.profile_path.read_bytes()


def cut_points(data):
    """Where a profile can end early: named points in its header, body,
    records and last line, at a line's start and inside it."""
    def at(s, inside=0):
        i = data.index(s)
        assert i > 0
        return i + inside
    return {
        'first line': 7,
        'after the first line': at(b'\nversion:') + 1,
        'inside cmd:': at(b'\ncmd:', 8),
        'after the header': at(b'\nfl='),
        'inside the body': at(b'\nfn=', 5),
        'body, line start': at(b'\ncalls=') + 1,
        'at the records': at(b'\n# ksf-') + 1,
        'inside a record': at(b'\n# ksf-thread', 9),
        'inside the nodes': at(b'\n# ksf-nodes', 16),
        'before ksf-end': at(b'\n# ksf-end\n') + 1,
        'before totals:': at(b'\ntotals:') + 1,
        'inside totals:': len(data) - 3,
    }


@pytest.mark.writes_bad_profiles
@pytest.mark.parametrize('auto', [False, True], ids=['records', 'with-sources'])
def test_truncated_profile_is_called_truncated(annotate, tmp_path, whole_profile, auto):
    data = whole_profile
    assert data.endswith(b'\n')
    p = tmp_path / 'cut.out'
    for where, n in cut_points(data).items():
        p.write_bytes(data[:n])
        r = annotate(*(['--auto=yes'] if auto else []), p)
        msg = bad(r, str(p), 'truncated')
        assert 'not a kgrind profile' not in msg, (where, msg)


def test_not_a_profile_is_still_not_a_profile(annotate, tmp_path):
    p = tmp_path / 'x.out'
    for data in (b'hello world', b'hello\nworld', b'# callgrind formax\n', b'#!/bin/sh\necho hi',
                 bytes(range(256)) * 4):
        p.write_bytes(data)
        bad(annotate(p), str(p), 'not a kgrind profile')
