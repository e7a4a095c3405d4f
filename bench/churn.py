"""The suite's thread-churn phase: a program that creates many short threads,
at most 8 alive at a time (a server's thread per request), under kgrind at
two thread counts; the tool's peak RSS at both, side by side, and
kgrind_annotate's default report on the larger count's profile.

The program is tests/progs/thread_churn.c (the tests check its profile
against its own counts), run twice at each count: every thread doing the
same work, and (the distinct variant) thread i also walking path i % PATHS,
so that the threads' forests are hundreds of different ones. Targets: what
a thread that ended keeps is its profile's data, not a fixed cost (peak RSS
at the larger count at most RSS_RATIO times the smaller's), and
kgrind_annotate is linear in the file (ANNOTATE_SECONDS on the larger
count's profile)."""
import pathlib
import subprocess

ROOT = pathlib.Path(__file__).resolve().parent.parent
SOURCE = ROOT / 'tests' / 'progs' / 'thread_churn.c'
COUNTS = [1000, 10000]        # threads created (--churn)
RSS_RATIO = 1.2               # peak RSS at COUNTS[-1] <= this x at COUNTS[0]
ANNOTATE_SECONDS = 5.0        # kgrind_annotate's default report on COUNTS[-1]'s profile
PATHS = 256                   # the distinct variant's paths (thread_churn's second argument)


def run_variant(suite, exe, counts, run_measured, name, extra):
    """One variant at every count, then kgrind_annotate on the largest's
    profile: {'runs': {count: ...}, 'annotate': ...}."""
    res = {'runs': {}, 'annotate': None}
    for n in counts:
        out = suite.keep / f'{name}-{n}.out'
        cmd = [suite.valgrind, '--tool=kgrind', f'--kgrind-out-file={out}', str(exe), str(n), *extra]
        wall, cpu, rss, rc = run_measured(cmd, None, suite.logs / f'{name}-{n}.stderr', suite.env, suite.work,
                                          suite.args.timeout)
        res['runs'][str(n)] = {'wall': wall, 'cpu': cpu, 'rss_kb': rss, 'rc': rc,
                               'profile_bytes': out.stat().st_size if out.exists() else None}
        suite.progress(f'{name} {n} threads: {wall:.1f} s, {rss / 1024:.0f} MB, exit {rc}')
    last = suite.keep / f'{name}-{counts[-1]}.out'
    if last.exists():
        wall, cpu, rss, rc = run_measured(['perl', str(suite.annotate), str(last)], None,
                                          suite.logs / f'annotate-{name}-{counts[-1]}.stderr', suite.env,
                                          suite.work, suite.args.annotate_timeout)
        res['annotate'] = {'seconds': wall, 'cpu': cpu, 'rss_kb': rss, 'rc': rc}
        suite.progress(f'annotate {name} {counts[-1]}: {wall:.1f} s, exit {rc}')
    return res


def run(suite, counts, run_measured):
    """Runs the phase under suite (a bench/suite.py Suite): suite.data['churn'],
    the distinct variant in its 'distinct'."""
    exe = suite.wl.bin / 'thread_churn'
    subprocess.run(['gcc', '-O2', '-g', '-pthread', str(SOURCE), '-o', str(exe)], check=True)
    res = {'counts': counts, **run_variant(suite, exe, counts, run_measured, 'churn', [])}
    res['distinct'] = {'paths': PATHS, **run_variant(suite, exe, counts, run_measured, 'churn-distinct', [str(PATHS)])}
    suite.data['churn'] = res
    suite.save()


def section(data, fmt_mb, target_row):
    """The report's lines for the phase (none if it did not run)."""
    res = data.get('churn')
    if not res or not res['runs']:
        return []
    counts = res['counts']
    variants = [('', res)]
    if res.get('distinct'):
        variants.append((f'distinct ({res["distinct"]["paths"]} paths)', res['distinct']))
    L = ['## Thread churn', '',
         f'`tests/progs/thread_churn.c N` under `kgrind` (k=2): N threads created, at most 8 alive; '
         f'peak RSS (`/usr/bin/time -f %M`) side by side, then `kgrind_annotate` on the {counts[-1]:,}-thread '
         f'profile (default report, output discarded). The distinct variant (`thread_churn N {PATHS}`) has '
         f'thread i also walk path i % {PATHS}: hundreds of different forests.', '',
         '| variant | threads | s | CPU s | peak RSS MB | profile MB | exit |', '|---|--:|--:|--:|--:|--:|--:|']
    for label, v in variants:
        for n in counts:
            r = v['runs'].get(str(n))
            if not r:
                continue
            size = f'{r["profile_bytes"] / 2 ** 20:.2f}' if r.get('profile_bytes') else '–'
            L.append(f'| {label or "same work"} | {n:,} | {r["wall"]:.1f} | {r["cpu"]:.1f} | {fmt_mb(r["rss_kb"])} '
                     f'| {size} | {r["rc"]} |')
    L.append('')
    for label, v in variants:
        ann = v.get('annotate')
        if ann:
            L.append(f'kgrind_annotate{", " + label if label else ""}: {ann["seconds"]:.1f} s, CPU {ann["cpu"]:.1f} s, '
                     f'peak RSS {fmt_mb(ann["rss_kb"])} MB, exit {ann["rc"]}.')
            L.append('')
    L += ['| target | measured | verdict |', '|---|---|---|']
    for label, v in variants:
        runs = [v['runs'].get(str(n), {}) for n in counts]
        ann = v.get('annotate')
        of = f', {label}' if label else ''
        a, b = runs[0].get('rss_kb'), runs[-1].get('rss_kb')
        ok = a and b and all(r.get('rc') == 0 for r in runs)
        L.append(target_row(f'peak RSS at {counts[-1]:,} threads ≤ {RSS_RATIO:g}× at {counts[0]:,}{of}',
                            a and b and f'{fmt_mb(b)} MB / {fmt_mb(a)} MB = {b / a:.2f}×',
                            (b <= RSS_RATIO * a) if ok else None))
        L.append(target_row(f'kgrind_annotate on the {counts[-1]:,}-thread profile < {ANNOTATE_SECONDS:g} s{of}',
                            ann and f'{ann["seconds"]:.1f} s' + ('' if ann['rc'] == 0 else f' (exit {ann["rc"]})'),
                            (ann['rc'] == 0 and ann['seconds'] < ANNOTATE_SECONDS) if ann else None))
    L.append('')
    return L
