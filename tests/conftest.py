"""Shared fixtures: building test programs and running them natively, under
the uninstalled kgrind, and under Valgrind's own tools for reference."""
import hashlib
import os
import pathlib
import shutil
import subprocess
import sys

import pytest

sys.path.insert(0, str(pathlib.Path(__file__).parent))
import annotate_runner as annotate_runner_module  # noqa: E402
import callgrind_format  # noqa: E402
import profile_check  # noqa: E402
import profile_identity  # noqa: E402
import valgrind_launch  # noqa: E402

ROOT = pathlib.Path(__file__).resolve().parent.parent
BUILD = pathlib.Path(os.environ.get('KGRIND_BUILD', ROOT / 'build'))
IN_PLACE_LIB = BUILD / 'kgrind' / '.in_place'
PROGS = ROOT / 'tests' / 'progs'
# the Valgrind this build is made for: every tool runs through its launcher
VALGRIND = valgrind_launch.Valgrind(BUILD)
# bench/same_profiles.py: every kgrind run of the suite is also run under
# the build in KGRIND_SAME_BEFORE and this one (or KGRIND_SAME_AFTER), and
# what the two wrote must be the same (tests/profile_identity.py).
SAME_BEFORE = os.environ.get('KGRIND_SAME_BEFORE')
_same_builds = []


PROFILES = profile_check.ProfileCheck()


def pytest_configure(config):
    config.addinivalue_line('markers', f'{profile_check.MARK}: the test writes bad profiles on purpose '
                            '(tests/profile_check.py does not read its directory back)')


def pytest_sessionstart(session):
    missing = VALGRIND.missing()
    if missing:
        pytest.exit(missing, returncode=2)


def pytest_sessionfinish(session):
    # the tool builds' copies the KGRIND_SAME_BEFORE runs made under /tmp
    for builds in _same_builds:
        builds.cleanup()


@pytest.fixture(scope='session')
def annotate_runner(tmp_path_factory):
    """kgrind_annotate's runs without Perl's start-up in each (the
    `annotate` fixture of tests/test_annotate.py)."""
    from test_annotate import annotate_cmd
    runner = annotate_runner_module.Runner(annotate_cmd(), tmp_path_factory.mktemp('annotate-runs'))
    yield runner
    runner.close()


@pytest.fixture(autouse=True)
def _profiles_read_back(request):
    """Reads back the profiles a test leaves in its tmp_path."""
    directory = request.getfixturevalue('tmp_path') if 'tmp_path' in request.fixturenames else None
    yield
    if directory is None:
        return
    if request.node.get_closest_marker(profile_check.MARK):
        PROFILES.exempt(directory)
        return
    refused = PROFILES.refusals(directory)
    if refused:
        pytest.fail('kgrind_annotate refuses a profile the test left:\n' + '\n'.join(refused), pytrace=False)


@pytest.fixture(scope='session', autouse=True)
def _fixture_profiles_read_back(tmp_path_factory):
    """The same for the directories of module-scoped fixtures, at the end."""
    yield
    refused = PROFILES.rest_refusals(tmp_path_factory.getbasetemp())
    PROFILES.close()
    if refused:
        pytest.fail('kgrind_annotate refuses a profile a fixture left:\n' + '\n'.join(refused), pytrace=False)


class Run:
    def __init__(self, proc, profile_path=None):
        self.proc = proc
        self.returncode = proc.returncode
        self.stdout = proc.stdout
        self.stderr = proc.stderr
        self.profile_path = profile_path

    def profile(self):
        return callgrind_format.parse(self.profile_path)


# Test programs compiled once per pytest process (tests/progs and the
# compiler's arguments do not change during a run): Toolbox.compile copies
# them from here. The program is the same file whatever directory or name
# it is written to (the debug info names the source by its path and the
# compiler's working directory, which are the same for every test), so a
# copy is what the compiler would have written.
_compiled = {'dir': None}


@pytest.fixture(scope='session', autouse=True)
def _compiled_programs(tmp_path_factory):
    _compiled['dir'] = tmp_path_factory.mktemp('compiled')
    yield
    _compiled['dir'] = None


def _unchanging(arg):
    """arg names no file a test makes (a library in its directory, say)."""
    return '/' not in arg or any(root in arg for root in (str(ROOT), '/usr/'))


def run_compiler(cmd, src, exe):
    """Runs the compiler command cmd, which builds exe from src, or copies
    what the same command (but for exe) built before in this process."""
    cmd = [str(a) for a in cmd]
    cached = None
    if _compiled['dir'] and all(_unchanging(a) for a in cmd if a not in (str(src), str(exe))):
        key = repr(([a if a != str(exe) else '<exe>' for a in cmd], pathlib.Path(src).read_bytes()))
        cached = _compiled['dir'] / hashlib.sha256(key.encode()).hexdigest()[:32]
        if cached.exists():
            shutil.copy2(cached, exe)
            return
    subprocess.run(cmd, check=True, capture_output=True, text=True)
    if cached:
        shutil.copy2(exe, cached.with_suffix('.part'))
        os.replace(cached.with_suffix('.part'), cached)


class Toolbox:
    """Compiles test programs and runs them under the tools, in tmp_path."""

    def __init__(self, tmp_path):
        self.dir = tmp_path

    def compile(self, source, *flags, out=None, libs=(), compiler=None):
        src = PROGS / source
        exe = self.dir / (out or src.stem)
        compiler = compiler or ('g++' if src.suffix in ('.cpp', '.cc') else 'gcc')
        cmd = [compiler, '-g', *flags, str(src), '-o', str(exe), *libs]
        if '-pthread' not in flags:
            cmd.append('-pthread')
        run_compiler(cmd, src, exe)
        return exe

    def native(self, exe, *args, input=None):
        return subprocess.run([str(exe), *map(str, args)], capture_output=True,
                              text=True, cwd=self.dir, input=input, timeout=120)

    def valgrind(self, tool, opts, exe, args=(), env=None):
        """Runs `tool` (kgrind or a reference) through the build's launcher."""
        cmd = VALGRIND.argv(tool, *opts, exe, *args)
        # pytest's PYTEST_CURRENT_TEST ends in "(setup)" in a fixture and in
        # "(call)" in the test: one byte moves the client's argv strings, and
        # libc's start-up (strrchr of argv[0] in __init_misc) takes another
        # path at some lengths of the test's directory.
        env = {k: v for k, v in VALGRIND.env(env).items() if k != 'PYTEST_CURRENT_TEST'}
        return subprocess.run(cmd, capture_output=True, text=True, cwd=self.dir,
                              timeout=300, env=env)

    def assert_refused(self, opts, message):
        """kgrind stops with `message` on stderr and status 1 before the
        program (prog4.c, which prints a number) runs."""
        exe = self.compile('prog4.c', '-O0')
        r = self.kgrind(exe, opts=opts, out=None)
        assert r.returncode == 1, r.stderr
        assert message in r.stderr
        assert '\n0\n' not in '\n' + r.stdout

    def kgrind(self, exe, *args, opts=(), out='kgrind.out'):
        opts = list(opts)
        path = None
        if out is not None:
            path = self.dir / out
            opts.insert(0, f'--kgrind-out-file={path}')
        proc = self.valgrind('kgrind', opts, exe, args)
        if SAME_BEFORE:
            self._same_as_before(exe, args, opts)
        return Run(proc, path)

    def _same_as_before(self, exe, args, opts):
        if not _same_builds:
            after = os.environ.get('KGRIND_SAME_AFTER', str(IN_PLACE_LIB))
            _same_builds.append(profile_identity.Builds(SAME_BEFORE, after, launcher=VALGRIND.launcher))
        status, detail = profile_identity.compare(_same_builds[0], self.dir / 'same', exe, args, opts)
        test = os.environ.get('PYTEST_CURRENT_TEST', '?').split(' ')[0]
        with open(os.environ.get('KGRIND_SAME_REPORT', BUILD / 'same_profiles.txt'), 'a') as report:
            report.write(f'{status}\t{test} {" ".join(opts)} {pathlib.Path(exe).name}\t{detail or ""}\n')
        assert status != 'differ', f'the profile differs from the one of {SAME_BEFORE}: {detail}'

    def reference(self, tool, exe, *args, opts=(), chase=False):
        """Runs one of Valgrind's tools the way kgrind runs (same launcher,
        library directory and environment). chase=False makes
        VEX translate as kgrind does (the guest's own ld.so start-up runs a
        few hundred instructions differently with superblock chasing on)."""
        path = self.dir / f'{tool}.out'
        opts = [f'--{tool}-out-file={path}', *opts]
        if tool == 'cachegrind':
            opts.append('--cache-sim=no')
        if not chase:
            opts.append('--vex-guest-chase=no')
        proc = self.valgrind(tool, opts, exe, args)
        return Run(proc, path)


@pytest.fixture
def tools(tmp_path):
    return Toolbox(tmp_path)


def assert_plt_moves(mine, cg, cl, own_lines):
    """kgrind's per-line Ir is cachegrind's, but for the PLT stubs'
    instructions: it charges them to the calling line instead of `???`
    line 0. own_lines: the expected Ir of the program's own lines. Other
    lines (the C library's calls through its own PLT) equal cachegrind's,
    or callgrind's (which passes .plt stubs through as kgrind does), or
    exceed cachegrind's at a line callgrind shows a call from (a .plt.got
    or .plt.sec stub, which callgrind shows as a function); what moved sums
    to what `???` line 0 lost."""
    lines, ref, ref_cl = mine.by_file_line(), cg.by_file_line(), cl.by_file_line()
    own_files = {f for f, _l in own_lines}
    call_lines = {(f, l) for _a, _c, f, l in cl.call_sites}
    moved = 0
    for key in set(lines) | set(ref):
        if key == ('???', 0):
            continue
        if key[0] in own_files:
            assert lines[key] == own_lines.get(key, 0), key
        else:
            assert lines[key] in (ref[key], ref_cl[key]) or (
                lines[key] > ref[key] and key in call_lines), key
        moved += lines[key] - ref[key]
    assert ref[('???', 0)] - lines[('???', 0)] == moved
