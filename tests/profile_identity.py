"""Runs one kgrind command under two builds of the tool and compares what
each run wrote, byte for byte but for process ids: the check that a change
meant to move code (a refactoring) leaves every profile as it was.

Both builds run from library directories whose paths have the same length,
in working directories whose paths have the same length, with the same
launcher, program, arguments and environment: the client sees the same
start-up, so its instruction counts cannot differ for a reason other than
the tool. A difference is checked against a second run of the first build:
if that differs too, the command is not deterministic (thread scheduling,
time) and is reported as such, not as a difference of the builds.
"""
import os
import pathlib
import re
import shutil
import subprocess
import tempfile

PID_IN_STDERR = re.compile(rb'^==(\d+)==', re.M)
PID_LINE = re.compile(rb'^pid: (\d+)$', re.M)


class Builds:
    """Two tool builds (VALGRIND_LIB directories) behind equal-length links."""

    def __init__(self, before_lib, after_lib, root=None, launcher='valgrind'):
        self.launcher = launcher
        for lib in (before_lib, after_lib):
            if not any(pathlib.Path(lib).glob('kgrind-*')):
                raise SystemExit(f'{lib}: no kgrind tool there (a VALGRIND_LIB directory)')
        self.root = pathlib.Path(root or tempfile.mkdtemp(prefix='kgsame-'))
        self.root.mkdir(parents=True, exist_ok=True)
        self.libs = {}
        for name, lib in (('a', before_lib), ('b', after_lib)):
            # a directory of its own, the tool copied in: Valgrind's memory
            # layout depends on the tool file's path (its length), and
            # kgrind's output order on where its tables' entries lie
            copy = self.root / f'lib-{name}'
            shutil.rmtree(copy, ignore_errors=True)
            copy.mkdir()
            for f in pathlib.Path(lib).iterdir():
                if f.name.startswith('kgrind-'):
                    shutil.copy2(f.resolve(), copy / f.name)
                else:
                    (copy / f.name).symlink_to(f.resolve())
            self.libs[name] = copy

    def cleanup(self):
        shutil.rmtree(self.root, ignore_errors=True)


def _pids(stderr, files):
    pids = set(PID_IN_STDERR.findall(stderr))
    for data in files.values():
        pids.update(PID_LINE.findall(data))
    return pids


def _normalize(name, data, pids):
    """A file name and contents with the run's process ids replaced: in
    names, in Valgrind's messages, and in a profile's header lines that name
    the process (pid:, cmd:, desc:)."""
    for pid in sorted(pids, key=len, reverse=True):
        word = rb'(?<![\d])' + pid + rb'(?![\d])'
        name = re.sub(word, b'PID', name)
        if name in (b'stderr', b'stdout'):
            data = re.sub(word, b'PID', data)
        else:
            data = re.sub(rb'^((?:pid|cmd|desc):[^\n]*)$',
                          lambda m: re.sub(word, b'PID', m.group(1)), data, flags=re.M)
    return name, data


def _outcome(builds, run_dir, which, run_name, exe, args, opts, env, stdin, timeout):
    """Runs the command with build `which` in run_dir/which; returns
    {normalized name: normalized bytes} of everything it wrote."""
    cwd = run_dir / run_name
    shutil.rmtree(cwd, ignore_errors=True)
    cwd.mkdir(parents=True)
    env = dict(env, VALGRIND_LIB=str(builds.libs[which]))
    env.pop('PYTEST_CURRENT_TEST', None)
    cmd = [builds.launcher, '--tool=kgrind', *opts, str(exe), *map(str, args)]
    try:
        proc = subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, timeout=timeout,
                              stdin=open(stdin, 'rb') if stdin else subprocess.DEVNULL)
        status, stdout, stderr = str(proc.returncode).encode(), proc.stdout, proc.stderr
    except subprocess.TimeoutExpired:
        status, stdout, stderr = b'timeout', b'', b''
    files = {}
    for path in sorted(cwd.rglob('*')):
        if path.is_file():
            files[str(path.relative_to(cwd)).encode()] = path.read_bytes()
    pids = _pids(stderr, files)
    seen = {b'status': status}
    here = str(cwd).encode()
    for name, data in [(b'stderr', stderr), (b'stdout', stdout)] + list(files.items()):
        key, data = _normalize(name, data.replace(here, b'RUNDIR'), pids)
        while key in seen:      # two files that differ only by pid
            key += b'+'
        seen[key] = data
    return seen


def _first_difference(a, b):
    for key in sorted(set(a) | set(b)):
        if a.get(key) != b.get(key):
            if key not in a or key not in b:
                return f'{key.decode(errors="replace")}: written by one build only'
            la, lb = a[key].split(b'\n'), b[key].split(b'\n')
            for i, (x, y) in enumerate(zip(la, lb)):
                if x != y:
                    return (f'{key.decode(errors="replace")} line {i + 1}: '
                            f'{x[:200].decode(errors="replace")!r} != {y[:200].decode(errors="replace")!r}')
            return f'{key.decode(errors="replace")}: {len(la)} lines != {len(lb)} lines'
    return None


def compare(builds, run_dir, exe, args=(), opts=(), env=None, stdin=None, timeout=600, reruns=2):
    """('same' | 'nondeterministic' | 'differ', detail) for one command.
    opts' --kgrind-out-file values are made relative to the run's directory
    (their base names kept), so each build writes into its own. When the
    first runs differ, each build runs `reruns` more times: the builds are
    the same if any run of one wrote what a run of the other wrote; they
    differ if each build always wrote the same and the two never agreed."""
    opts = [o if not o.startswith('--kgrind-out-file=') else
            '--kgrind-out-file=' + os.path.basename(o.split('=', 1)[1]) for o in opts]
    env = dict(os.environ if env is None else env)
    run_dir = pathlib.Path(run_dir)
    names = iter('abcdefghijklmnopqrstuvwxyz')

    def run(which):
        return _outcome(builds, run_dir, which, next(names), exe, args, opts, env, stdin, timeout)

    runs = {'a': [run('a')], 'b': [run('b')]}
    diff = _first_difference(runs['a'][0], runs['b'][0])
    if diff is None:
        return 'same', None
    for _ in range(reruns):
        for which in ('a', 'b'):
            runs[which].append(run(which))
        if any(x == y for x in runs['a'] for y in runs['b']):
            return 'same', None
    for which in ('a', 'b'):
        unstable = [_first_difference(runs[which][0], r) for r in runs[which][1:]]
        unstable = [d for d in unstable if d]
        if unstable:
            return 'nondeterministic', f'build {which} alone: {unstable[0]}'
    return 'differ', diff
