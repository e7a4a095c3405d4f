#!/usr/bin/python3
"""kgrind benchmark suite: kgrind's function mode side by side with
Valgrind's own tools on workloads built at benchmark time and on Debian
programs.

    bench/suite.py                      the full suite (about 45 min), report in
                                        bench/results/<timestamp>/
    bench/suite.py --runs 1 --scale 0.1 --workloads callheavy \\
                   --configs none,kgrind-k2 --no-growth --no-ksweep --no-large --no-churn --no-events   (smoke)
    bench/suite.py --workloads= --no-growth --no-ksweep --large perl --large-runs 1 \\
                   --large-scale 0.01 --no-churn --no-events   the large-program phase only (smoke)
    bench/suite.py --workloads= --no-growth --no-ksweep --no-large --no-churn --out B   the events
                                        phase only (then --report-only A --merge B: into A's report)
    bench/suite.py --workloads= --no-growth --no-ksweep --no-large --no-events --out B   the thread-churn
                                        phase only (then --report-only A --merge B: into A's report)
    bench/suite.py --report-only bench/results/<timestamp>   redo report/charts

Steps:
 1. snapshots the built tool (build/kgrind/.in_place, build/perl/kgrind_annotate)
    into the results folder, so a rebuild during the run changes nothing;
 2. builds bench/workloads/*.{c,cpp} with -O2 -g and generates the inputs
    (bzip2's text, sqlite3's SQL script) deterministically for the scale;
 3. timing rounds: every workload under every configuration, once per round,
    the configuration order rotated each round (interleaved, so drift hits
    every configuration alike); wall time, peak RSS (wait4 rusage of the run),
    output size; for kgrind the k-SF node count (`# ksf-thread` records) and
    the k-CCF node count (`kgrind_annotate --format=json`, from round 1);
 4. growth: run time against input length (1x, 2x, 4x) on --growth workloads;
 5. k sweep: forest size, memory and time against k (1..8, inf);
 6. large programs (--large, --no-large): Debian cc1plus on a
    generated, preprocessed STL program, python3 and perl on
    bench/workloads/pywork.py and plwork.pl, under every large configuration
    (--large-configs: none, cachegrind, callgrind [--separate-callers=2],
    kgrind k=1, 2, 4, 8, inf, and k=2 in physical frames, --inline-frames=no,
    as callgrind's), --large-runs interleaved rounds; then the wall time and peak RSS of kgrind_annotate's default report on their k=2
    and k=inf profiles (these get no --format=json: their inf-CCF is huge);
 7. thread churn (--churn, --no-churn): tests/progs/thread_churn.c creating
    1,000 and 10,000 threads, at most 8 alive, under kgrind: peak RSS side by
    side, and kgrind_annotate's default report on the larger profile; the
    same with threads doing different work (bench/churn.py);
 8. events (--events, --no-events): kgrind --cache-sim=yes and --branch-sim=yes
    at k=2 next to cachegrind and callgrind --separate-callers=2 with the same
    simulation, and --collect-data=yes, on the suite's workloads (and the
    large programs named there, at --large-scale), with peak RSS
    (bench/events_phase.py); --events-exact: every event against
    cachegrind's in total, per function and per line on Debian programs
    (bench/events_exact.py);
 9. report.md (Markdown tables, targets), results.json, charts/*.png.

Ratios (x none, x callgrind --separate-callers=2) are computed per round from
the same round's runs, then the median over rounds is shown.

Modules: bench/configs.py (configurations, workloads, targets),
bench/inputs.py (programs and inputs), bench/measure.py (one measured run),
bench/report.py (report and charts), and the phases churn.py, events_phase.py,
events_exact.py.

Needs a built tree (./setup.sh --build), valgrind, bzip2, sqlite3 and, for
charts, python3-matplotlib (Debian) under /usr/bin/python3."""
import argparse
import datetime
import hashlib
import json
import os
import pathlib
import shutil
import subprocess
import sys
import time

ROOT = pathlib.Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / 'bench'))
import churn  # noqa: E402  (the thread-churn phase)
import events_exact  # noqa: E402  (events against cachegrind's, per function and line)
import events_phase  # noqa: E402  (the events phase)
from configs import (BLOCK_CONFIGS, BLOCK_CONFIG_NAMES, BLOCK_WORKLOADS, BUILD, CONFIGS,
    EXTRA_CONFIGS, GROWTH_CONFIGS, GROWTH_FACTORS, KSWEEP_KS, LARGE_ANNOTATED, LARGE_CONFIGS,
    LARGE_DESC, LARGE_KNOWN, LARGE_NAMES, TIER_CONFIGS, VALGRIND, WORKLOAD_DESC, WORKLOAD_NAMES)  # noqa: E402
from inputs import Workloads, output_of  # noqa: E402
from measure import TIME, ksf_nodes, run_measured, tier_stats  # noqa: E402
from report import Report  # noqa: E402


class Suite:
    def __init__(self, args, outdir):
        self.args = args
        self.out = outdir
        self.tool = outdir / 'tool'
        self.work = outdir / 'work'
        self.logs = outdir / 'logs'
        self.keep = outdir / 'profiles'
        for d in (self.work, self.logs, self.keep):
            d.mkdir(parents=True, exist_ok=True)
        self.wl = Workloads(self.work)
        self.data = {'runs': [], 'annotate': {}, 'annotate_default': {}, 'meta': {}}
        self.configs = {name: (opts, k) for name, opts, k in CONFIGS + BLOCK_CONFIGS + EXTRA_CONFIGS + TIER_CONFIGS}
        self.t0 = time.time()

    # -- tool snapshot ------------------------------------------------------
    def snapshot_tool(self):
        src = BUILD / 'kgrind' / '.in_place'
        if not (src / 'kgrind-amd64-linux').exists():
            raise SystemExit(f'{src}/kgrind-amd64-linux is missing: build first (./setup.sh --build)')
        lib = self.tool / 'lib'
        shutil.copytree(src, lib, symlinks=True)
        # kgrind_annotate finds its modules in lib/ next to it.
        annotate = self.tool / 'annotate'
        annotate.mkdir()
        shutil.copy2(BUILD / 'perl' / 'kgrind_annotate', annotate / 'kgrind_annotate')
        shutil.copytree(ROOT / 'perl' / 'lib', annotate / 'lib')
        digest = hashlib.sha256((lib / 'kgrind-amd64-linux').read_bytes()).hexdigest()[:16]
        self.lib = lib
        self.annotate = annotate / 'kgrind_annotate'
        self.env = dict(os.environ, VALGRIND_LIB=str(lib))
        self.valgrind = VALGRIND
        return digest

    def machine(self, digest):
        def sh(*cmd):
            try:
                return subprocess.run(cmd, capture_output=True, text=True, cwd=ROOT).stdout.strip()
            except OSError:
                return ''
        cpu = ''
        try:
            for line in open('/proc/cpuinfo'):
                if line.startswith('model name'):
                    cpu = line.split(':', 1)[1].strip()
                    break
        except OSError:
            pass
        mem = ''
        try:
            for line in open('/proc/meminfo'):
                if line.startswith('MemTotal'):
                    mem = f"{int(line.split()[1]) / 1024 / 1024:.1f} GiB"
        except OSError:
            pass
        dirty = sh('git', 'status', '--porcelain', '--', 'kgrind')
        return {
            'date': datetime.datetime.now().isoformat(timespec='seconds'),
            'nproc': os.cpu_count(), 'cpu': cpu, 'mem': mem,
            'valgrind': sh(VALGRIND, '--version'),
            'kernel': os.uname().release,
            'git': sh('git', 'rev-parse', '--short', 'HEAD') + (' (kgrind/ modified)' if dirty else ''),
            'tool_sha256': digest,
            'bzip2': sh('sh', '-c', 'bzip2 --version 2>&1 </dev/null | head -n1'),
            'sqlite3': sh('sqlite3', '--version').split(' ')[0],
            'gcc': sh('sh', '-c', 'gcc --version | head -n1'),
            'loadavg_start': open('/proc/loadavg').read().split()[:3],
            'command': ' '.join(['bench/suite.py'] + sys.argv[1:]),
            'runs': self.args.runs, 'scale': self.args.scale,
            'rss_source': '/usr/bin/time -f %M' if os.access(TIME, os.X_OK) else 'wait4 (upper bound)',
        }

    # -- one run --------------------------------------------------------------
    def run_one(self, phase, workload, config, scale, round_no, opts_override=None, kval=None):
        argv, stdin = self.wl.command(workload, scale)
        opts, k = self.configs[config] if opts_override is None else (opts_override, kval)
        tag = f'{phase}-{workload}-{scale:g}-{config}-r{round_no}'
        outfile = self.work / f'{tag}.out'
        if opts is None:
            cmd = argv
        else:
            cmd = [VALGRIND] + [o.format(out=outfile) for o in opts] + argv
        elapsed, cpu, rss, rc = run_measured(cmd, stdin, self.logs / f'{tag}.stderr', self.env, self.work,
                                             self.args.timeout)
        rec = {'phase': phase, 'workload': workload, 'config': config, 'scale': scale,
               'round': round_no, 'k': k, 'wall': elapsed, 'cpu': cpu, 'rss_kb': rss, 'rc': rc,
               'out_bytes': None, 'ksf_nodes': None, 'threads': None}
        tiers = tier_stats(self.logs / f'{tag}.stderr')
        if tiers:
            rec['tiers'] = tiers
        if outfile.exists():
            rec['out_bytes'] = outfile.stat().st_size
            if k is not None:
                rec['ksf_nodes'], rec['threads'] = ksf_nodes(outfile)
            if k is not None and round_no == 0 and rc == 0 and phase != 'growth':
                kept = self.keep / f'{phase}-{workload}-{scale:g}-{config}.out'
                outfile.replace(kept)
            else:
                outfile.unlink()
        if rc != 0:
            print(f'  !! {workload} {config}: exit {rc}, see {self.logs / (tag + ".stderr")}', flush=True)
        self.data['runs'].append(rec)
        return rec

    def progress(self, msg):
        print(f'[{(time.time() - self.t0) / 60:5.1f} min] {msg}', flush=True)

    def save(self):
        (self.out / 'results.json').write_text(json.dumps(self.data, indent=1))

    # -- phases -----------------------------------------------------------------
    def timing(self, workloads, configs, phase='main', runs=None, scale=None):
        runs = self.args.runs if runs is None else runs
        scale = self.args.scale if scale is None else scale
        for r in range(runs):
            for w in workloads:
                order = configs[r % len(configs):] + configs[:r % len(configs)]
                for c in order:
                    if c in BLOCK_CONFIG_NAMES and w not in BLOCK_WORKLOADS:
                        continue
                    rec = self.run_one(phase, w, c, scale, r)
                    self.progress(f'{phase} round {r + 1}/{runs} {w:10s} {c:14s} {rec["wall"]:7.2f} s '
                                  f'{rec["rss_kb"] / 1024:7.1f} MB')
            self.save()

    def growth(self, workloads):
        configs = [c for c in GROWTH_CONFIGS if c in self.configs]
        runs = self.args.growth_runs
        for r in range(runs):
            for w in workloads:
                for f in GROWTH_FACTORS:
                    order = configs[r % len(configs):] + configs[:r % len(configs)]
                    for c in order:
                        rec = self.run_one('growth', w, c, self.args.scale * f, r)
                        self.progress(f'growth {r + 1}/{runs} {w} x{f} {c} {rec["wall"]:.2f} s')
            self.save()

    def ksweep(self, workloads):
        for w in workloads:
            for kv in KSWEEP_KS:
                name = f'k={kv}'
                opts = ['--tool=kgrind', f'--k={kv}', '--kgrind-out-file={out}']
                rec = self.run_one('ksweep', w, name, self.args.scale, 0, opts, kv)
                self.progress(f'k sweep {w} {name} {rec["wall"]:.2f} s {rec["ksf_nodes"]} k-SF nodes')
            self.save()

    def annotate_all(self):
        """k-CCF node counts: kgrind_annotate --format=json on every kept profile."""
        for path in sorted(self.keep.glob('*.out')):
            if path.name.startswith('large-'):
                continue   # their inf-CCF takes minutes and GBs; annotate_large times the default report
            start = time.perf_counter()
            try:
                proc = subprocess.run(['perl', str(self.annotate), '--format=json', str(path)],
                                      capture_output=True, timeout=self.args.annotate_timeout)
                doc = json.loads(proc.stdout) if proc.returncode == 0 else None
                res = {'kccf_nodes': sum(t.get('kccf_nodes', 0) for t in doc['threads']),
                       'ksf_nodes': sum(t.get('ksf_nodes', 0) for t in doc['threads'])} if doc else \
                      {'error': f'exit {proc.returncode}: {proc.stderr.decode(errors="replace")[-300:]}'}
            except subprocess.TimeoutExpired:
                res = {'error': f'timeout after {self.args.annotate_timeout} s'}
            res['seconds'] = time.perf_counter() - start
            self.data['annotate'][path.stem] = res
            self.progress(f'annotate {path.stem}: {res}')
        self.save()

    def annotate_large(self):
        """Wall time and peak RSS of kgrind_annotate's default report on the
        large programs' LARGE_ANNOTATED profiles (what a user runs first)."""
        for path in sorted(self.keep.glob('large-*.out')):
            if not any(path.stem.endswith('-' + c) for c in LARGE_ANNOTATED):
                continue
            wall, cpu, rss, rc = run_measured(['perl', str(self.annotate), str(path)], None,
                                              self.logs / f'annotate-{path.stem}.stderr', self.env, self.work,
                                              self.args.annotate_timeout)
            res = {'seconds': wall, 'cpu': cpu, 'rss_kb': rss, 'rc': rc, 'profile_bytes': path.stat().st_size}
            self.data['annotate_default'][path.stem] = res
            self.progress(f'annotate (default report) {path.stem}: {wall:.1f} s, {rss / 1024:.0f} MB, exit {rc}')
        self.save()

    def large_meta(self):
        a = self.args
        cmds = {w: self.wl.command(w, a.large_scale)[0] for w in a.large}
        ii = [x for x in cmds.get('cc1plus', []) if x.endswith('.ii')]
        return {'large': a.large, 'large_configs': a.large_configs, 'large_runs': a.large_runs,
                'large_scale': a.large_scale,
                'large_argv': {w: ' '.join(c).replace(str(self.work) + '/', '') for w, c in cmds.items()},
                'large_desc': dict(LARGE_DESC),
                'large_versions': {'python3': output_of('/usr/bin/python3', '--version'),
                                   'perl': output_of('/usr/bin/perl', '-e', 'print $^V'),
                                   'cc1plus': output_of('g++', '-dumpfullversion')},
                'cc1plus_input_lines': sum(1 for _ in open(ii[0])) if ii else None}

    def main(self):
        a = self.args
        digest = self.snapshot_tool()
        self.data['meta'] = self.machine(digest)
        self.data['meta']['workloads'] = a.workloads
        self.data['meta']['workload_desc'] = dict(WORKLOAD_DESC)
        self.data['meta']['configs'] = a.configs
        self.data['meta']['pending_configs'] = [n for n, _, _ in BLOCK_CONFIGS if n not in a.configs]
        for w in a.workloads + a.growth + a.ksweep:
            self.wl.command(w, a.scale)
        self.data['meta']['argv'] = {w: ' '.join(self.wl.command(w, a.scale)[0]).replace(str(self.work) + '/', '')
                                     for w in a.workloads}
        if a.large:
            self.data['meta'].update(self.large_meta())
        self.save()
        self.timing(a.workloads, a.configs)
        if a.growth:
            self.growth(a.growth)
        if a.ksweep:
            self.ksweep(a.ksweep)
        if a.large:
            self.timing(a.large, a.large_configs, 'large', a.large_runs, a.large_scale)
        self.annotate_all()
        self.annotate_large()
        if a.churn:
            churn.run(self, a.churn, run_measured)
        if a.events:
            events_phase.run(self, a.events, a.events_runs,
                             {w: a.large_scale if w in LARGE_NAMES else a.scale for w in a.events}, a.events_configs)
        if a.events_exact:
            events_exact.run(self, a.events_exact, run_measured, VALGRIND, a.scale)
        self.data['meta']['loadavg_end'] = open('/proc/loadavg').read().split()[:3]
        self.data['meta']['minutes'] = (time.time() - self.t0) / 60
        self.save()
        if not a.keep_work:
            shutil.rmtree(self.work, ignore_errors=True)



def parse_args(argv):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument('--runs', type=int, default=3, help='interleaved timing rounds [3]')
    ap.add_argument('--scale', type=float, default=1.0, help='workload size factor [1]')
    ap.add_argument('--workloads', default=','.join(WORKLOAD_NAMES),
                    help=f'comma list [{",".join(WORKLOAD_NAMES)}]')
    ap.add_argument('--configs', default=','.join(n for n, _, _ in CONFIGS + BLOCK_CONFIGS),
                    help=f'comma list [{",".join(n for n, _, _ in CONFIGS + BLOCK_CONFIGS)}]; the block '
                         f'modes run on {",".join(BLOCK_WORKLOADS)} only')
    ap.add_argument('--growth', default='callheavy,bzip2',
                    help='workloads for the growth runs (1x, 2x, 4x input) [callheavy,bzip2]')
    ap.add_argument('--growth-runs', type=int, default=1, help='rounds of the growth runs [1]')
    ap.add_argument('--ksweep', default='cppvirt,sqlite3',
                    help='workloads for the k sweep (k=1..8, inf) [cppvirt,sqlite3]')
    ap.add_argument('--no-growth', action='store_true')
    ap.add_argument('--no-ksweep', action='store_true')
    ap.add_argument('--no-charts', action='store_true')
    ap.add_argument('--large', default=','.join(LARGE_NAMES),
                    help=f'large programs timed after the k sweep [{",".join(LARGE_NAMES)}]')
    ap.add_argument('--no-large', action='store_true')
    ap.add_argument('--large-runs', type=int, default=2, help='interleaved rounds of the large programs [2]')
    ap.add_argument('--large-scale', type=float, default=1.0, help='input size factor of the large programs [1]')
    ap.add_argument('--large-configs', default=','.join(LARGE_CONFIGS), help=f'comma list [{",".join(LARGE_CONFIGS)}]')
    ap.add_argument('--churn', default=','.join(map(str, churn.COUNTS)),
                    help='thread counts of the thread-churn phase, smaller first '
                         f'[{",".join(map(str, churn.COUNTS))}]')
    ap.add_argument('--no-churn', action='store_true')
    ap.add_argument('--events', default=','.join(WORKLOAD_NAMES),
                    help='workloads of the events phase (cache and branch simulation next to cachegrind and '
                         f'callgrind) [{",".join(WORKLOAD_NAMES)}]')
    ap.add_argument('--events-runs', type=int, default=2, help='interleaved rounds of the events phase [2]')
    ap.add_argument('--events-configs', default='',
                    help='configurations of the events phase [all: '
                         f'{",".join(n for n, _o, _k in events_phase.CONFIGS)}]')
    ap.add_argument('--events-exact', default='', metavar='PROGRAMS',
                    help='programs whose events are compared with cachegrind\'s, per function and line '
                         f'(bench/events_exact.py: {",".join(events_exact.PROGRAMS)}; their inputs times '
                         '--scale) [none]')
    ap.add_argument('--no-events', action='store_true')
    ap.add_argument('--timeout', type=float, default=900, help='seconds per run before it is killed [900]')
    ap.add_argument('--annotate-timeout', type=float, default=600, help='seconds per kgrind_annotate [600]')
    ap.add_argument('--out', help='results folder [bench/results/<timestamp>]')
    ap.add_argument('--keep-work', action='store_true', help='keep the built workloads and inputs')
    ap.add_argument('--report-only', metavar='DIR', help='rewrite report.md and charts from DIR/results.json')
    ap.add_argument('--merge', action='append', default=[], metavar='DIR',
                    help='with --report-only: take the growth, k-sweep, large-program and churn runs from DIR')
    ap.add_argument('--update-docs', action='store_true',
                    help='also put the report into docs/results.md (between its suite markers)')
    a = ap.parse_args(argv)

    def split(s):
        return [x for x in s.split(',') if x]
    a.workloads = split(a.workloads)
    a.configs = split(a.configs)
    a.growth = [] if a.no_growth else split(a.growth)
    a.ksweep = [] if a.no_ksweep else split(a.ksweep)
    a.large = [] if a.no_large else split(a.large)
    a.large_configs = split(a.large_configs)
    a.events = [] if a.no_events else split(a.events)
    for w in a.events:
        if w not in WORKLOAD_NAMES + LARGE_NAMES:
            ap.error(f'unknown events-phase workload {w} (known: {", ".join(WORKLOAD_NAMES + LARGE_NAMES)})')
    a.events_configs = split(a.events_configs)
    for c in a.events_configs:
        if c not in [n for n, _o, _k in events_phase.CONFIGS]:
            ap.error(f'unknown events-phase configuration {c} '
                     f'(known: {", ".join(n for n, _o, _k in events_phase.CONFIGS)})')
    a.events_exact = split(a.events_exact)
    for p in a.events_exact:
        if p not in events_exact.PROGRAMS:
            ap.error(f'unknown events-exact program {p} (known: {", ".join(events_exact.PROGRAMS)})')
    try:
        a.churn = [] if a.no_churn else [int(n) for n in split(a.churn)]
    except ValueError:
        ap.error(f'--churn: thread counts, comma-separated (got {a.churn!r})')
    if a.churn and (len(a.churn) < 2 or any(n < 1 for n in a.churn) or a.churn != sorted(a.churn)):
        ap.error(f'--churn: two or more thread counts, smaller first (got {",".join(map(str, a.churn))})')
    known = {n for n, _, _ in CONFIGS + BLOCK_CONFIGS + TIER_CONFIGS}
    for c in a.large_configs:
        if c not in LARGE_KNOWN:
            ap.error(f'unknown large-program configuration {c} (known: {", ".join(LARGE_KNOWN)})')
    for w in a.large:
        if w not in LARGE_NAMES:
            ap.error(f'unknown large program {w} (known: {", ".join(LARGE_NAMES)})')
    for c in a.configs:
        if c not in known:
            ap.error(f'unknown configuration {c} (known: {", ".join(sorted(known))})')
    for w in a.workloads + a.growth + a.ksweep:
        if w not in WORKLOAD_NAMES:
            ap.error(f'unknown workload {w} (known: {", ".join(WORKLOAD_NAMES)})')
    return a


def main(argv=None):
    a = parse_args(sys.argv[1:] if argv is None else argv)
    if a.report_only:
        out = pathlib.Path(a.report_only)
        rep = Report(out, a.merge)
        print(rep.write(charts=not a.no_charts))
        if a.update_docs:
            print(rep.update_docs(ROOT / 'docs' / 'results.md'))
        return 0
    stamp = datetime.datetime.now().strftime('%Y%m%d-%H%M%S')
    out = pathlib.Path(a.out) if a.out else ROOT / 'bench' / 'results' / stamp
    out.mkdir(parents=True, exist_ok=True)
    suite = Suite(a, out)
    suite.main()
    rep = Report(out)
    report = rep.write(charts=not a.no_charts)
    print(f'report: {report}')
    if a.update_docs:
        print(f'updated: {rep.update_docs(ROOT / "docs" / "results.md")}')
    failed = [r for r in suite.data['runs'] if r['rc'] != 0]
    return 1 if failed else 0


if __name__ == '__main__':
    sys.exit(main())
