#!/usr/bin/env python3
"""Are two builds of kgrind's tool the same, profile for profile?

For changes meant to move code (refactorings): runs every kgrind command of
the test suite, and the benchmark workloads under many option sets, once
under each build, and compares every file each run wrote, its standard
output and error and its exit status, byte for byte but for process ids
(tests/profile_identity.py says how).

    bench/same_profiles.py --before REV            the suite and the workloads
    bench/same_profiles.py --before REV --workloads-only --quick
    bench/same_profiles.py --before LIBDIR --tests tests/test_stacks.py

--before is a git revision (built in a temporary worktree with
./setup.sh --build) or a VALGRIND_LIB directory (bench/ab.py snapshot makes
one); --after is a VALGRIND_LIB directory, by default this checkout's build
(build/kgrind/.in_place). Exit status 0 when no command's output differs;
commands whose own reruns differ (not deterministic) are listed, not failed.
"""
import argparse
import os
import pathlib
import shutil
import subprocess
import sys
import tempfile

ROOT = pathlib.Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / 'tests'))
sys.path.insert(0, str(ROOT / 'bench'))
import profile_identity  # noqa: E402
import configs  # noqa: E402  (the suite's workloads and launcher)
import inputs  # noqa: E402  (the workloads and their inputs)

# Option sets for the workloads. Quick: one of each family.
CONFIGS = {
    'k0': ['--k=0'], 'k1': ['--k=1'], 'k2': ['--k=2'], 'k3': ['--k=3'], 'kinf': ['--k=inf'],
    'k4-view2': ['--k=4', '--view-k=2'],
    'k2-instr-jumps': ['--k=2', '--dump-instr=yes', '--collect-jumps=yes'],
    'kinf-instr-jumps': ['--k=inf', '--dump-instr=yes', '--collect-jumps=yes'],
    'k2-joined': ['--k=2', '--join-threads=yes'],
    'kinf-unrolled': ['--k=inf', '--unroll-simple-rec=yes'],
    'k2-funcs': ['--k=2', '--funcs=main,*work*,*walk*,*visit*,*sort*'],
    'intra-k2': ['--mode=intra', '--k=2'],
    'intra-roll': ['--mode=intra', '--roll-loops=yes'],
    'inter-k2': ['--mode=inter', '--k=2'],
    'inter-roll': ['--mode=inter', '--roll-loops=yes'],
    'k2-toggle': ['--k=2', '--toggle-collect=*work*', '--toggle-collect=*walk*'],
}
QUICK = ['k2', 'kinf-instr-jumps', 'intra-roll']
BLOCK_CONFIGS = {c for c, opts in CONFIGS.items() if any(o.startswith('--mode=') for o in opts)}
SMALL_SCALE = 0.02
# the interpreters' hashes seeded alike in every run
DETERMINISTIC_ENV = {'PYTHONHASHSEED': '0', 'PERL_HASH_SEED': '0', 'PERL_PERTURB_KEYS': '0'}


def before_libdir(spec, tmp):
    path = pathlib.Path(spec)
    if path.is_dir():
        return path
    tree = tmp / 'before-tree'
    subprocess.run(['git', '-C', str(ROOT), 'worktree', 'add', '--detach', str(tree), spec],
                   check=True, capture_output=True)
    print(f'building {spec} in {tree}', flush=True)
    subprocess.run(['./setup.sh', '--build'], cwd=tree, check=True, stdout=subprocess.DEVNULL)
    return tree / 'build' / 'kgrind' / '.in_place'


def workload_commands(work):
    """(name, argv, stdin) of each workload at a small scale."""
    wl = inputs.Workloads(work)
    for name in configs.WORKLOAD_NAMES:
        argv, stdin = wl.command(name, SMALL_SCALE)
        yield name, argv, stdin
    for name in ('python3', 'perl'):
        argv = wl.large_command(name, 1)
        # -I would ignore PYTHONHASHSEED: string hashes would differ per run
        yield name, [a for a in argv if a != '-I'], None


def run_workloads(builds, tmp, config_names):
    results = []
    for name, argv, stdin in workload_commands(tmp / 'work'):
        for config in config_names:
            if config in BLOCK_CONFIGS and name not in configs.BLOCK_WORKLOADS:
                continue    # block modes trace the main executable's functions: interpreters' are huge
            status, detail = profile_identity.compare(
                builds, tmp / 'runs' / name / config, argv[0], argv[1:],
                ['--kgrind-out-file=kgrind.out.%p', *CONFIGS[config]], stdin=stdin,
                env=dict(os.environ, **DETERMINISTIC_ENV))
            print(f'{status:16} {name} {config}' + (f': {detail}' if detail else ''), flush=True)
            results.append((status, f'{name} {config}', detail))
    return results


def run_suite(before, after, tmp, tests, pytest_args):
    report = tmp / 'suite-report.txt'
    report.unlink(missing_ok=True)
    env = dict(os.environ, KGRIND_SAME_BEFORE=str(before), KGRIND_SAME_REPORT=str(report))
    if after:
        env['KGRIND_SAME_AFTER'] = str(after)
    cmd = ['/usr/bin/python3', '-m', 'pytest', '-q', '-p', 'no:cacheprovider', *tests, *pytest_args]
    rc = subprocess.run(cmd, cwd=ROOT, env=env).returncode
    results = []
    if report.exists():
        for line in report.read_text().splitlines():
            status, what, detail = line.split('\t')
            results.append((status, what, detail or None))
    return rc, results


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument('--before', required=True, help='git revision or VALGRIND_LIB directory')
    ap.add_argument('--after', help='VALGRIND_LIB directory (default: build/kgrind/.in_place)')
    ap.add_argument('--workloads-only', action='store_true')
    ap.add_argument('--suite-only', action='store_true')
    ap.add_argument('--quick', action='store_true', help=f'workloads under {", ".join(QUICK)} only')
    ap.add_argument('--tests', nargs='*', default=['tests'], help='pytest paths (default: tests)')
    ap.add_argument('--keep', help='keep the runs in this directory')
    args, pytest_args = ap.parse_known_args()

    tmp = pathlib.Path(args.keep or tempfile.mkdtemp(prefix='kgsame-'))
    tmp.mkdir(parents=True, exist_ok=True)
    before = before_libdir(args.before, tmp)
    after = pathlib.Path(args.after) if args.after else ROOT / 'build' / 'kgrind' / '.in_place'
    results, suite_rc = [], 0
    if not args.suite_only:
        builds = profile_identity.Builds(before, after, tmp / 'libs', launcher=configs.VALGRIND)
        results += run_workloads(builds, tmp, QUICK if args.quick else list(CONFIGS))
    if not args.workloads_only:
        suite_rc, suite_results = run_suite(before, args.after, tmp, args.tests, pytest_args)
        results += suite_results

    counts = {s: sum(1 for r in results if r[0] == s) for s in ('same', 'nondeterministic', 'differ')}
    print(f'\n{len(results)} commands: {counts["same"]} same, {counts["differ"]} differ, '
          f'{counts["nondeterministic"]} not deterministic (their own reruns differ)')
    for status, what, detail in results:
        if status != 'same':
            print(f'  {status}: {what}: {detail}')
    if not args.workloads_only:
        print(f'pytest exit status {suite_rc}')
    if args.before and not pathlib.Path(args.before).is_dir():
        subprocess.run(['git', '-C', str(ROOT), 'worktree', 'remove', '--force', str(tmp / 'before-tree')],
                       capture_output=True)
    if args.keep or counts['differ']:
        print(f'runs kept in {tmp}')
    else:
        shutil.rmtree(tmp, ignore_errors=True)
    sys.exit(1 if counts['differ'] or suite_rc else 0)


if __name__ == '__main__':
    main()
