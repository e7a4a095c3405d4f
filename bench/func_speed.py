#!/usr/bin/env python3
"""First speed benchmark for function mode: kgrind --k=2 against
`valgrind --tool=none` and `callgrind --separate-callers=2`, medians of
interleaved runs, on a call-heavy C program and on bzip2.

    bench/func_speed.py [--runs N] [--scale S]

Needs a built tree (./setup.sh --build). Prints a Markdown table."""
import argparse
import os
import pathlib
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = pathlib.Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / 'tests'))
import valgrind_launch  # noqa: E402

VALGRIND = valgrind_launch.Valgrind(ROOT / 'build').launcher
LIB = ROOT / 'build' / 'kgrind' / '.in_place'

CONFIGS = [
    ('native', None),
    ('none', ['--tool=none']),
    ('callgrind --separate-callers=2', ['--tool=callgrind', '--separate-callers=2',
                                        '--callgrind-out-file={out}']),
    ('kgrind --k=2', ['--tool=kgrind', '--k=2', '--kgrind-out-file={out}']),
]


def timed(cmd, stdin_path):
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    with open(stdin_path or os.devnull, 'rb') as inp:
        subprocess.run(cmd, stdin=inp, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True,
                       env=dict(os.environ, VALGRIND_LIB=str(LIB)))
    elapsed = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return elapsed, after.ru_maxrss


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument('--runs', type=int, default=5)
    ap.add_argument('--scale', type=float, default=1.0, help='workload size factor')
    args = ap.parse_args()
    work = pathlib.Path(tempfile.mkdtemp(prefix='kgbench.'))
    callheavy = work / 'callheavy'
    subprocess.run(['gcc', '-O2', '-g', str(ROOT / 'bench/workloads/callheavy.c'), '-o', str(callheavy)], check=True)
    data = work / 'input.txt'
    with open(data, 'wb') as f:
        rng = __import__('random').Random(7)
        words = [bytes(rng.choice(b'abcdefghijklmnopqrstuvwxyz') for _ in range(rng.randint(2, 9))) for _ in range(5000)]
        size = int(4_000_000 * args.scale)
        out = bytearray()
        while len(out) < size:
            out += rng.choice(words) + b' '
        f.write(out)
    workloads = [
        ('callheavy', [str(callheavy), str(int(100 * args.scale))], None),
        ('bzip2', ['bzip2', '-c'], str(data)),
    ]
    results = {}
    for run in range(args.runs):
        for wname, cmd, stdin in workloads:
            for cname, opts in CONFIGS:
                full = cmd if opts is None else [VALGRIND] + [o.format(out=work / 'prof.out') for o in opts] + cmd
                t, rss = timed(full, stdin)
                results.setdefault((wname, cname), []).append(t)
    print(f'| workload | config | median s | × none | × callgrind sc=2 |')
    print('|---|---|---|---|---|')
    for wname, _, _ in workloads:
        none = statistics.median(results[(wname, 'none')])
        cl = statistics.median(results[(wname, 'callgrind --separate-callers=2')])
        for cname, _ in CONFIGS:
            med = statistics.median(results[(wname, cname)])
            print(f'| {wname} | {cname} | {med:.2f} | {med / none:.2f} | {med / cl:.2f} |')
    shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == '__main__':
    sys.exit(main())
