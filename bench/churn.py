"""The suite's thread-churn phase: a program that creates many short threads,
at most 8 alive at a time (a server's thread per request), under kgrind at
two thread counts; the tool's peak RSS at both, side by side, and
kgrind_annotate's default report on the larger count's profile.

The program is tests/progs/thread_churn.c (the tests check its profile
against its own counts). Targets: what a thread that ended keeps is its
profile's data, not a fixed cost (peak RSS at the larger count at most
RSS_RATIO times the smaller's), and kgrind_annotate is linear in the file
(ANNOTATE_SECONDS on the larger count's profile)."""
import pathlib
import subprocess

ROOT = pathlib.Path(__file__).resolve().parent.parent
SOURCE = ROOT / 'tests' / 'progs' / 'thread_churn.c'
COUNTS = [1000, 10000]        # threads created (--churn)
RSS_RATIO = 1.2               # peak RSS at COUNTS[-1] <= this x at COUNTS[0]
ANNOTATE_SECONDS = 5.0        # kgrind_annotate's default report on COUNTS[-1]'s profile


def run(suite, counts, run_measured):
    """Runs the phase under suite (a bench/suite.py Suite): suite.data['churn']."""
    exe = suite.wl.bin / 'thread_churn'
    subprocess.run(['gcc', '-O2', '-g', '-pthread', str(SOURCE), '-o', str(exe)], check=True)
    res = {'counts': counts, 'runs': {}, 'annotate': None}
    for n in counts:
        out = suite.keep / f'churn-{n}.out'
        cmd = [suite.valgrind, '--tool=kgrind', f'--kgrind-out-file={out}', str(exe), str(n)]
        wall, cpu, rss, rc = run_measured(cmd, None, suite.logs / f'churn-{n}.stderr', suite.env, suite.work,
                                          suite.args.timeout)
        res['runs'][str(n)] = {'wall': wall, 'cpu': cpu, 'rss_kb': rss, 'rc': rc,
                               'profile_bytes': out.stat().st_size if out.exists() else None}
        suite.progress(f'churn {n} threads: {wall:.1f} s, {rss / 1024:.0f} MB, exit {rc}')
    last = suite.keep / f'churn-{counts[-1]}.out'
    if last.exists():
        wall, cpu, rss, rc = run_measured(['perl', str(suite.annotate), str(last)], None,
                                          suite.logs / f'annotate-churn-{counts[-1]}.stderr', suite.env,
                                          suite.work, suite.args.annotate_timeout)
        res['annotate'] = {'seconds': wall, 'cpu': cpu, 'rss_kb': rss, 'rc': rc}
        suite.progress(f'annotate churn {counts[-1]}: {wall:.1f} s, exit {rc}')
    suite.data['churn'] = res
    suite.save()


def section(data, fmt_mb, target_row):
    """The report's lines for the phase (none if it did not run)."""
    res = data.get('churn')
    if not res or not res['runs']:
        return []
    counts = res['counts']
    runs = [res['runs'].get(str(n), {}) for n in counts]
    L = ['## Thread churn', '',
         f'`tests/progs/thread_churn.c N` under `kgrind` (k=2): N threads created, at most 8 alive; '
         f'peak RSS (`/usr/bin/time -f %M`) side by side, then `kgrind_annotate` on the {counts[-1]:,}-thread '
         f'profile (default report, output discarded).', '',
         '| threads | s | CPU s | peak RSS MB | profile MB | exit |', '|--:|--:|--:|--:|--:|--:|']
    for n, r in zip(counts, runs):
        if not r:
            continue
        size = f'{r["profile_bytes"] / 2 ** 20:.2f}' if r.get('profile_bytes') else '–'
        L.append(f'| {n:,} | {r["wall"]:.1f} | {r["cpu"]:.1f} | {fmt_mb(r["rss_kb"])} | {size} | {r["rc"]} |')
    ann = res.get('annotate')
    if ann:
        L.append('')
        L.append(f'kgrind_annotate: {ann["seconds"]:.1f} s, CPU {ann["cpu"]:.1f} s, peak RSS '
                 f'{fmt_mb(ann["rss_kb"])} MB, exit {ann["rc"]}.')
    L += ['', '| target | measured | verdict |', '|---|---|---|']
    a, b = runs[0].get('rss_kb'), runs[-1].get('rss_kb')
    ok = a and b and all(r.get('rc') == 0 for r in runs)
    L.append(target_row(f'peak RSS at {counts[-1]:,} threads ≤ {RSS_RATIO:g}× at {counts[0]:,}',
                        a and b and f'{fmt_mb(b)} MB / {fmt_mb(a)} MB = {b / a:.2f}×',
                        (b <= RSS_RATIO * a) if ok else None))
    L.append(target_row(f'kgrind_annotate on the {counts[-1]:,}-thread profile < {ANNOTATE_SECONDS:g} s',
                        ann and f'{ann["seconds"]:.1f} s' + ('' if ann['rc'] == 0 else f' (exit {ann["rc"]})'),
                        (ann['rc'] == 0 and ann['seconds'] < ANNOTATE_SECONDS) if ann else None))
    L.append('')
    return L
