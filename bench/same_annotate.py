#!/usr/bin/env python3
"""Checks that two kgrind_annotate scripts behave alike: the same stdout,
stderr and exit status, byte for byte, on many profiles and option sets.

  same_annotate.py profiles DIR [--valgrind-lib LIB]
      compiles test programs and workloads, profiles them with kgrind
      (k = 0, 1, 2, inf, block modes, --dump-instr, --collect-jumps,
      threads, numbered dumps, context ids) into DIR, and adds the
      profiles of tests/data and some bad inputs
  same_annotate.py compare DIR --old OLD.pl [--new NEW.pl]
      runs both scripts (perl OLD.pl / perl NEW.pl) with every option set
      on the profiles of DIR and reports the runs whose results differ

Exit status: 0 when every run agrees, 1 otherwise."""
import argparse
import concurrent.futures
import hashlib
import itertools
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / 'tests'))
import valgrind_launch  # noqa: E402

VALGRIND = valgrind_launch.Valgrind(ROOT / 'build')
PROGS = ROOT / 'tests' / 'progs'
WORKLOADS = ROOT / 'bench' / 'workloads'

# program source -> its arguments
PROGRAMS = {
    PROGS / 'prog1.c': [], PROGS / 'prog2.c': [], PROGS / 'prog3.c': [], PROGS / 'prog4.c': [],
    PROGS / 'prog5.c': [], PROGS / 'prog6.c': [], PROGS / 'prog7.c': [], PROGS / 'prog8.c': [],
    PROGS / 'threads.c': [], PROGS / 'deeprec.c': [], PROGS / 'names.c': [], PROGS / 'loops.c': [],
    PROGS / 'templates.cpp': [], PROGS / 'structors.cpp': [], PROGS / 'exceptions.cpp': [],
    PROGS / 'jumps.c': [], PROGS / 'tailcall.c': [],
    WORKLOADS / 'callheavy.c': [], WORKLOADS / 'cppvirt.cpp': [], WORKLOADS / 'threads.c': [],
}
# profile name -> kgrind options
RUNS = {
    'k0': ['--k=0'], 'k1': ['--k=1'], 'k2': ['--k=2'], 'kinf': ['--k=inf'],
    'k3unroll': ['--k=3', '--unroll-simple-rec=yes'],
    'instr': ['--k=2', '--dump-instr=yes', '--collect-jumps=yes'],
    'joined': ['--k=1', '--join-threads=yes'],
}
BLOCK_RUNS = {'intra': ['--mode=intra', '--k=1'], 'inter': ['--mode=inter', '--k=2'],
              'interinf': ['--mode=inter', '--k=inf'], 'roll': ['--mode=intra', '--roll-loops=yes']}
BLOCK_PROGRAMS = ('prog4.c', 'loops.c', 'prog1.c', 'threads.c')


def compile_prog(src, out):
    compiler = 'g++' if src.suffix == '.cpp' else 'gcc'
    subprocess.run([compiler, '-g', '-O1', f'-I{ROOT / "include"}', f'-I{VALGRIND.includedir}', str(src), '-o', str(out), '-pthread'],
                   check=True, capture_output=True)


def kgrind(lib, exe, opts, outfile, cwd, args=()):
    env = dict(os.environ, VALGRIND_LIB=lib)
    subprocess.run(['nice', VALGRIND.launcher, '--tool=kgrind', f'--kgrind-out-file={outfile}', *opts, str(exe), *args],
                   cwd=cwd, env=env, capture_output=True, timeout=600)


def make_profiles(d, lib):
    d.mkdir(parents=True, exist_ok=True)
    bins = d / 'bin'
    bins.mkdir(exist_ok=True)
    for src, args in PROGRAMS.items():
        exe = bins / f'{src.parent.name}_{src.stem}'
        compile_prog(src, exe)
        runs = dict(RUNS)
        if src.name in BLOCK_PROGRAMS and src.parent == PROGS:
            runs.update(BLOCK_RUNS)
        for name, opts in runs.items():
            if not (d / f'{exe.name}.{name}.out').exists():
                kgrind(lib, exe, opts, d / f'{exe.name}.{name}.out', d, args)
    # numbered dumps (regions) and context ids
    for prog, opts in (('roi_dumps', ['--k=2']), ('roi_context', ['--k=2']), ('roi_phases', ['--k=1'])):
        exe = bins / prog
        compile_prog(PROGS / f'{prog}.c', exe)
        kgrind(lib, exe, opts, d / f'{prog}.%p.out', d)
    for f in (ROOT / 'tests' / 'data' / 'annotate').glob('*.kgrind.out'):
        shutil.copy(f, d / f.name)
    shutil.copy(ROOT / 'tests' / 'data' / 'annotate' / 'prog1.c', d / 'prog1.c')
    # bad inputs
    (d / 'bad-empty.out').write_bytes(b'')
    (d / 'bad-garbage.out').write_bytes(b'hello\nworld\n')
    good = (d / 'progs_prog4.k2.out').read_bytes()
    (d / 'bad-truncated.out').write_bytes(good[:len(good) * 2 // 3])
    (d / 'bad-latin1.out').write_bytes(good.replace(b'main', b'ma\xefn'))
    # a file name that is not UTF-8 (DOT and JSON labels name the files)
    (d / os.fsdecode(b'lat\xe9n.k2.out')).write_bytes(good)
    print(f'{len(list(d.glob("*.out*")))} profiles in {d}')


def option_sets():
    """Options given to every profile."""
    sets = [[], ['--kccf'], ['--ksf'], ['--kccf', '--ksf', '--tree-order=natural'], ['--kccf', '--costs=no'],
            ['--k=0'], ['--k=1'], ['--k=inf'], ['--top=3'], ['--threshold=50'], ['--top=0', '--threshold=100'],
            ['--top=2', '--kccf', '--ksf'], ['--sort=calls'], ['--sort=inclusive', '--kccf'],
            ['--names=full'], ['--auto=yes'], ['--auto=yes', '--context=2'], ['--join-threads'], ['--thread=1'],
            ['--show-blocks'], ['--blocks-disasm']]
    for fmt in ('json', 'dot', 'folded', 'pprof', 'speedscope'):
        sets += [[f'--format={fmt}'], [f'--format={fmt}', '--top=3'], [f'--format={fmt}', '--k=1'],
                 [f'--format={fmt}', '--names=short'], [f'--format={fmt}', '--sort=inclusive', '--threshold=80']]
    sets += [['--format=folded', '--callers'], ['--format=folded', '--callers', '--top=4'],
             ['--format=json', '--tree-order=natural'], ['--format=dot', '--k=0']]
    return sets


# options alone (no profile needed, or bad usage)
ALONE = [['--help'], ['-h'], ['--version'], [], ['--bogus'], ['--sort=x', 'p'], ['--top=-1', 'p'],
         ['--threshold=101', 'p'], ['--k=x', 'p'], ['--format=svg', 'p'], ['--names=long', 'p'],
         ['--vs', 'a'], ['--diff', 'a'], ['--fail-above=3', 'a'], ['--callers', 'a'], ['--costs=maybe', 'a'],
         ['--context-id=0', 'a'], ['--thread=x', 'a'], ['--tree-order=x', 'a'], ['--context=x', 'a'],
         ['--auto=x', 'a'], ['--diff', 'a', 'b', '--format=dot'], ['--diff', 'a.c', 'b'], ['prog1.c'],
         ['no-such-file']]


# the profiles given every option set; the others get CORE_SETS
FULL = ('thesis-listing45.', 'thesis-listing45-v1', 'roi_dumps.32373.out.1', 'progs_prog4.k0', 'progs_prog4.k1',
        'progs_prog4.k2', 'progs_prog4.kinf', 'progs_prog4.instr', 'progs_prog4.intra', 'progs_prog4.inter',
        'progs_prog4.interinf', 'progs_prog4.roll', 'progs_threads.k2', 'progs_threads.kinf',
        'progs_templates.k2', 'workloads_cppvirt.k2', 'workloads_threads.k1', 'lat',
        'bad-latin1', 'bad-truncated')
CORE_SETS = [[], ['--format=json'], ['--format=dot'], ['--auto=yes', '--kccf', '--ksf', '--top=5']]


def runs_for(d):
    """Every run: the options alone and the runs of several profiles first,
    then each profile with every option set (FULL) or the core ones."""
    profiles = sorted(p.name for p in [*d.glob('*.out'), *d.glob('*.out.[0-9]*')])
    yield from ALONE
    yield from combined_runs(d, profiles)
    for full in (True, False):
        for p in profiles:
            if p.startswith(FULL) == full:
                for opts in option_sets() if full else CORE_SETS:
                    yield opts + [p]


def combined_runs(d, profiles):
    """Merging, diffs, source files given, threads, context ids."""
    good = [p for p in profiles if not p.startswith('bad-') and 'listing45' not in p]
    by_prog = {}
    for p in good:
        by_prog.setdefault(p.split('.')[0], []).append(p)
    for prog, ps in sorted(by_prog.items()):
        k2 = [p for p in ps if p.endswith('.k2.out')]
        k1 = [p for p in ps if p.endswith('.k1.out')]
        kinf = [p for p in ps if p.endswith('.kinf.out')]
        instr = [p for p in ps if p.endswith('.instr.out')]
        if k2 and instr:
            yield [k2[0], instr[0]]
            yield ['--format=json', k2[0], instr[0]]
            yield [k2[0], k2[0]]
        if k2 and k1:
            yield [k1[0], k2[0]]
            for opts in ([], ['--format=json'], ['--format=folded'], ['--normalize'], ['--fail-above=0'],
                         ['--fail-above=50'], ['--sort=calls'], ['--top=2'], ['--names=short'], ['--k=1']):
                yield ['--diff', *opts, k1[0], k2[0]]
                yield ['--diff', *opts, k2[0], '--vs', k1[0], instr[0] if instr else k2[0]]
        if k2 and kinf:
            yield ['--diff', kinf[0], k2[0]]
            yield ['--diff', '--format=json', k2[0], kinf[0]]
    progs = sorted(by_prog)
    for a, b in itertools.islice(itertools.combinations(progs, 2), 12):
        yield [f'{a}.k2.out', f'{b}.k2.out']
        yield ['--force', f'{a}.k2.out', f'{b}.k2.out']
        yield ['--diff', f'{a}.k2.out', f'{b}.k2.out']
        yield ['--diff', '--force', f'{a}.k2.out', f'{b}.k2.out']
    dumps = sorted(p for p in good if p.startswith('roi_dumps.'))
    if dumps:
        yield dumps
        yield ['--format=json', *dumps]
        yield ['--diff', dumps[0], dumps[-1]]
    ctx = sorted(p for p in good if p.startswith('roi_context.'))
    for i in range(1, 12):
        yield [f'--context-id={i}', *ctx]
    for p in [p for p in good if p.endswith('.k2.out')][:4]:
        yield ['--auto=yes', '-I', '.', p, 'prog1.c']
        yield [p, 'prog1.c']
        yield [p, 'nosuch.c', 'other.h']
        yield ['--thread=2', p]
        yield ['--thread=all', '--k=2', p]
        yield ['--k=3', p]
    for p in d.glob('thesis*.out'):
        yield [p.name, 'prog1.c']
        yield ['--auto=yes', p.name]


def digest(f):
    """A file's size and SHA-256, read in pieces (outputs can be large)."""
    f.seek(0)
    h = hashlib.sha256()
    while chunk := f.read(1 << 20):
        h.update(chunk)
    return f.tell(), h.hexdigest()


def run(script, args, cwd):
    """What a run gave: its stdout's and stderr's size and hash, and its exit
    status; nothing of the outputs is kept."""
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        try:
            rc = subprocess.run(['nice', 'perl', str(script), *args], cwd=cwd, stdout=out, stderr=err,
                                timeout=600).returncode
        except subprocess.TimeoutExpired:
            rc = 'timeout'
        return digest(out), digest(err), rc


def compare(d, old, new, jobs):
    n = same = 0
    bad, timed_out = [], []
    with concurrent.futures.ThreadPoolExecutor(jobs) as pool:
        for args, a, b in pool.map(lambda args: (args, run(old, args, d), run(new, args, d)), list(runs_for(d))):
            n += 1
            if a == b and a[2] != 'timeout':
                same += 1
            elif 'timeout' in (a[2], b[2]):    # partial outputs: not compared
                timed_out.append(args)
                print('TIMED OUT (not compared):', ' '.join(args), flush=True)
            else:
                what = [name for name, x, y in zip(('stdout', 'stderr', 'status'), a, b) if x != y]
                bad.append((args, what))
                print('DIFFERS:', ' '.join(args), what, flush=True)
            if n % 100 == 0:
                print(f'{n} runs...', flush=True)
    print(f'{n} runs, {same} identical (stdout, stderr, exit status), {len(bad)} differ, '
          f'{len(timed_out)} timed out')
    return 0 if not bad and not timed_out else 1


def main():
    sys.stdout.reconfigure(errors='backslashreplace')    # file names that are not UTF-8
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest='cmd', required=True)
    p = sub.add_parser('profiles')
    p.add_argument('dir', type=Path)
    p.add_argument('--valgrind-lib', default=str(ROOT / 'build' / 'kgrind' / '.in_place'))
    c = sub.add_parser('compare')
    c.add_argument('dir', type=Path)
    c.add_argument('--old', type=Path, required=True)
    c.add_argument('--new', type=Path, default=ROOT / 'perl' / 'kgrind_annotate.pl')
    c.add_argument('--jobs', type=int, default=2)
    a = ap.parse_args()
    if a.cmd == 'profiles':
        make_profiles(a.dir.resolve(), a.valgrind_lib)
        return 0
    return compare(a.dir.resolve(), a.old.resolve(), a.new.resolve(), a.jobs)


if __name__ == '__main__':
    sys.exit(main())
