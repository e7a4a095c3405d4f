#!/usr/bin/env python3
"""A/B comparison of kgrind builds by CPU time (for performance work).

The suite (bench/suite.py) measures wall time medians, which on a shared VM
move by tens of percent between identical runs. To decide whether one change
helps, compare builds by the CPU time of the valgrind process (user + system,
from wait4), interleaved, and take the minimum over runs: noise only ever adds
time.

    bench/ab.py snapshot NAME            copy build/kgrind/.in_place (KGRIND_BUILD's
                                         with tests/with-valgrind) to
                                         /tmp/kgrind-ab/NAME (a frozen build)
    bench/ab.py run --work DIR NAME... [--configs k2,intra-k2] [--workloads ...] [--runs 5] [--scale 1]

--work is a folder with bin/ and data/ from
`bench/suite.py --runs 1 --configs native --keep-work --out DIR --no-growth --no-ksweep --no-large --no-churn --no-charts`
(DIR/work; python3 and perl run bench/workloads/ scripts; the workload cc1plus needs the large phase's data/cc1plus-N.ii,
e.g. from `--no-growth --no-ksweep --large-runs 1 --configs native`). The name `none` stands for `valgrind --tool=none`. Prints, per
workload, the minimum and median CPU seconds of each build and configuration,
the ratio of the minimum to none's minimum, and the largest peak RSS of
its runs.
"""
import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
AB = Path(os.environ.get('KGRIND_AB_DIR', '/tmp/kgrind-ab'))
# Function mode has inlined levels by default (k2 = k2-inline); k2-noinline
# gives physical frames, as callgrind's and kgrind's before the default.
CONFIGS = {
    'k1': ['--k=1'], 'k2': ['--k=2'], 'k4': ['--k=4'], 'k8': ['--k=8'], 'kinf': ['--k=inf'],
    'intra-k2': ['--mode=intra', '--k=2'], 'intra-roll': ['--mode=intra', '--roll-loops=yes'],
    'inter-k2': ['--mode=inter', '--k=2'], 'inter-roll': ['--mode=inter', '--roll-loops=yes'],
    'k2-inline': ['--k=2', '--inline-frames=yes'], 'k2-noinline': ['--k=2', '--inline-frames=no'],
    'k2-frames': ['--k=2', '--inline-levels=frames'], 'k2-records': ['--k=2', '--inline-levels=records'],
    'kinf-frames': ['--k=inf', '--inline-levels=frames'],
    'k2-instr': ['--k=2', '--dump-instr=yes'], 'k2-jumps': ['--k=2', '--dump-instr=yes', '--collect-jumps=yes'],
    'k2-cache': ['--k=2', '--cache-sim=yes'], 'k2-branch': ['--k=2', '--branch-sim=yes'],
    'k2-cache-frames': ['--k=2', '--cache-sim=yes', '--inline-levels=frames'],
    'k2-branch-frames': ['--k=2', '--branch-sim=yes', '--inline-levels=frames'],
    'k2-data': ['--k=2', '--collect-data=yes'],
    # an 8 MB LL for both tools: the host's 512 MB LL made python3's runs
    # move by up to 40 % (101 MB of simulated tags)
    'k2-cache-ll8': ['--k=2', '--cache-sim=yes', '--LL=8388608,16,64'],
}
# cachegrind counting the events of a configuration (the build name `cachegrind`):
# Ir alone (cachegrind --cache-sim=no) for the configurations that count Ir alone.
CACHEGRIND = {'k2': ['--cache-sim=no'], 'kinf': ['--cache-sim=no'], 'k2-cache': ['--cache-sim=yes'],
              'k2-branch': ['--cache-sim=no', '--branch-sim=yes'],
              'k2-cache-ll8': ['--cache-sim=yes', '--LL=8388608,16,64']}
TOOLS = ('none', 'cachegrind')   # build names that are Valgrind's tools
sys.path.insert(0, str(Path(__file__).resolve().parent))
import configs  # noqa: E402  (the suite's workloads and launcher)
import inputs  # noqa: E402  (workload arguments)


def snapshot(name):
    """A lib dir for VALGRIND_LIB: Valgrind's own files plus this build's tool."""
    src = configs.BUILD / 'kgrind' / '.in_place'   # the build whose launcher runs it
    if name in TOOLS or '/' in name:
        raise SystemExit(f'bad build name {name!r} ({" and ".join(TOOLS)} are Valgrind\'s tools)')
    if not (src / 'kgrind-amd64-linux').exists():
        raise SystemExit(f'no built tool in {src}: ./setup.sh --build')
    dst = AB / name
    if dst.exists():
        shutil.rmtree(dst)
    dst.mkdir(parents=True)
    for f in src.iterdir():
        target = f.resolve()
        if f.name.startswith('kgrind-'):
            shutil.copy2(target, dst / f.name)   # frozen: a rebuild changes nothing
        else:
            (dst / f.name).symlink_to(target)
    print(dst)


def workload_cmd(work, name, scale):
    """argv and stdin of a workload as bench/suite.py --scale SCALE --keep-work left it."""
    if name in configs.BUILT:
        return [str(work / 'bin' / name), str(inputs.units(configs.BUILT[name][2], scale))], None
    if name == 'cc1plus':   # the suite's large phase left data/cc1plus-N.ii (N: units at this scale)
        ii = work / 'data' / f'cc1plus-{inputs.units(configs.LARGE_UNITS[name], scale)}.ii'
        if not ii.exists():
            raise SystemExit(f'{ii} is missing: run the suite\'s large phase with --scale {scale:g} --keep-work')
        return [inputs.cc1plus_path(), '-fpreprocessed', '-quiet', '-O1', str(ii), '-o', os.devnull], None
    if name in configs.SCRIPTS:   # python3, perl: the suite's script, as the large phase runs it
        interpreter, flags, script = configs.SCRIPTS[name]
        n = inputs.units(configs.LARGE_UNITS[name], scale)
        return [interpreter] + flags + [str(configs.WORKLOADS_DIR / script), str(n)], None
    data = {'bzip2': (['bzip2', '-c'], f'text-{scale:g}.txt'),
            'sqlite3': (['sqlite3', '-batch', ':memory:'], f'script-{scale:g}.sql')}
    if name not in data:
        raise SystemExit(f'unknown workload {name}')
    argv, path = data[name]
    if not (work / 'data' / path).exists():
        raise SystemExit(f'{work / "data" / path} is missing: run the suite with --scale {scale:g} --keep-work')
    return argv, work / 'data' / path


def run_one(build, config, work, workload, scale, outdir):
    argv, stdin = workload_cmd(work, workload, scale)
    env = dict(os.environ)
    if not (AB / build).is_dir() and build not in TOOLS:
        raise SystemExit(f'no build {build} in {AB}: bench/ab.py snapshot {build}')
    if build == 'none':
        cmd = [configs.VALGRIND, '--tool=none'] + argv
    elif build == 'cachegrind':
        cmd = [configs.VALGRIND, '--tool=cachegrind', f'--cachegrind-out-file={outdir}/out'] + CACHEGRIND[config] + argv
    else:
        env['VALGRIND_LIB'] = str(AB / build)
        cmd = [configs.VALGRIND, '--tool=kgrind', f'--kgrind-out-file={outdir}/out'] + CONFIGS[config] + argv
    with open(stdin or os.devnull, 'rb') as fin:
        p = subprocess.Popen(cmd, stdin=fin, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=env)
        err = p.stderr.read()   # before waiting: a full pipe would block the child
        _, status, ru = os.wait4(p.pid, 0)
    if status != 0:
        raise SystemExit(f'{" ".join(cmd)} failed:\n{err.decode(errors="replace")[-2000:]}')
    return ru.ru_utime + ru.ru_stime, ru.ru_maxrss


def run(a):
    work = Path(a.work)
    builds = a.builds
    configs = a.configs.split(',')
    pairs = [('none', None)] + [(b, c) for b in builds for c in configs if b != 'cachegrind' or c in CACHEGRIND]
    with tempfile.TemporaryDirectory() as outdir:
        for w in a.workloads.split(','):
            times = {p: [] for p in pairs}
            rss = {p: [] for p in pairs}
            for r in range(a.runs):
                order = pairs[r % len(pairs):] + pairs[:r % len(pairs)]
                for p in order:
                    cpu, peak = run_one(p[0], p[1], work, w, a.scale, outdir)
                    times[p].append(cpu)
                    rss[p].append(peak)
            base = min(times[('none', None)])
            for p in pairs:
                t = times[p]
                label = 'none' if p[0] == 'none' else f'{p[0]}:{p[1]}'
                print(f'{w:10} {label:24} min {min(t):7.3f}  median {statistics.median(t):7.3f}  '
                      f'x none {min(t) / base:5.2f}  peak RSS {max(rss[p]) / 1024:7.1f} MB', flush=True)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest='cmd', required=True)
    s = sub.add_parser('snapshot')
    s.add_argument('name')
    r = sub.add_parser('run')
    r.add_argument('--work', required=True)
    r.add_argument('--configs', default='k2')
    r.add_argument('--workloads', default='callheavy,cppvirt,numeric,threads,bzip2,sqlite3')
    r.add_argument('--runs', type=int, default=5)
    r.add_argument('--scale', type=float, default=1.0, help='the --scale the work folder was made with [1]')
    r.add_argument('builds', nargs='+')
    a = ap.parse_args()
    if a.cmd == 'snapshot':
        snapshot(a.name)
    else:
        for c in a.configs.split(','):
            if c not in CONFIGS:
                raise SystemExit(f'unknown config {c}; known: {", ".join(CONFIGS)}')
        run(a)


if __name__ == '__main__':
    main()
