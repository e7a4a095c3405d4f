"""The suite's events phase: the event options side by side with Valgrind's
tools counting the same events, on the suite's workloads, in one run:
kgrind --k=2 with --cache-sim=yes next to cachegrind --cache-sim=yes and
callgrind --cache-sim=yes --separate-callers=2, the same for --branch-sim
(cachegrind --cache-sim=no --branch-sim=yes), kgrind --collect-data=yes
(Dr Dw without the simulation), and none and kgrind --k=2 without events
for scale. Every tool takes the host's cache geometry (the same for all).
Rounds are interleaved, the configurations' order rotated each round; a
ratio is taken per round from that round's runs, then the median shown.

Targets (docs/design/events.md): with each simulation, kgrind's time at
most cachegrind's and at most half callgrind's, its peak RSS at most
callgrind's."""
import statistics

PHASE = 'events'
OUT = '{out}'
CONFIGS = [   # name, Valgrind options, k of a kgrind profile (None: not kgrind)
    ('none', ['--tool=none'], None),
    ('kgrind-k2', ['--tool=kgrind', '--k=2', f'--kgrind-out-file={OUT}'], '2'),
    ('kgrind-data', ['--tool=kgrind', '--k=2', '--collect-data=yes', f'--kgrind-out-file={OUT}'], '2'),
    ('kgrind-cache', ['--tool=kgrind', '--k=2', '--cache-sim=yes', f'--kgrind-out-file={OUT}'], '2'),
    ('cachegrind-cache', ['--tool=cachegrind', '--cache-sim=yes', f'--cachegrind-out-file={OUT}'], None),
    ('callgrind-cache', ['--tool=callgrind', '--cache-sim=yes', '--separate-callers=2',
                         f'--callgrind-out-file={OUT}'], None),
    ('kgrind-branch', ['--tool=kgrind', '--k=2', '--branch-sim=yes', f'--kgrind-out-file={OUT}'], '2'),
    ('cachegrind-branch', ['--tool=cachegrind', '--cache-sim=no', '--branch-sim=yes',
                           f'--cachegrind-out-file={OUT}'], None),
    ('callgrind-branch', ['--tool=callgrind', '--branch-sim=yes', '--separate-callers=2',
                          f'--callgrind-out-file={OUT}'], None),
]
LABELS = {
    'none': 'none', 'kgrind-k2': 'kgrind --k=2', 'kgrind-data': 'kgrind --k=2 --collect-data=yes',
    'kgrind-cache': 'kgrind --k=2 --cache-sim=yes', 'cachegrind-cache': 'cachegrind --cache-sim=yes',
    'callgrind-cache': 'callgrind --cache-sim=yes --separate-callers=2',
    'kgrind-branch': 'kgrind --k=2 --branch-sim=yes', 'cachegrind-branch': 'cachegrind --cache-sim=no --branch-sim=yes',
    'callgrind-branch': 'callgrind --branch-sim=yes --separate-callers=2',
}
SIMULATIONS = ['cache', 'branch']
CALLGRIND_RATIO = 0.5     # kgrind at most this x callgrind's time, with each simulation


def run(suite, workloads, rounds, scales, names=None):
    """Runs the phase under suite (a bench/suite.py Suite), each workload at
    its scale (scales: workload -> scale), in the configurations names (all
    by default); its runs go to suite.data['runs'] with phase 'events'."""
    names = names or [c[0] for c in CONFIGS]
    for r in range(rounds):
        order = names[r % len(names):] + names[:r % len(names)]
        for w in workloads:
            for name in order:
                _n, opts, k = next(c for c in CONFIGS if c[0] == name)
                rec = suite.run_one(PHASE, w, name, scales[w], r, opts_override=opts, kval=k)
                suite.progress(f'events r{r} {w} {name}: {rec["wall"]:.1f} s, '
                               f'{(rec["rss_kb"] or 0) / 1024:.0f} MB, exit {rec["rc"]}')
        suite.save()


def median_ratio(runs, w, a, b, field='wall'):
    """The median over rounds of a's field over b's (same workload, round)."""
    by = {}
    for r in runs:
        if r['phase'] == PHASE and r['workload'] == w and r['rc'] == 0 and r.get(field):
            by.setdefault(r['round'], {})[r['config']] = r[field]
    ratios = [x[a] / x[b] for x in by.values() if a in x and b in x]
    return statistics.median(ratios) if ratios else None


def median(runs, w, c, field):
    vals = [r[field] for r in runs if r['phase'] == PHASE and r['workload'] == w and r['config'] == c
            and r['rc'] == 0 and r.get(field)]
    return statistics.median(vals) if vals else None


def section(runs, fmt_mb, target_row):
    """The report's lines for the phase (none if it did not run)."""
    mine = [r for r in runs if r['phase'] == PHASE]
    if not mine:
        return []
    workloads = sorted({r['workload'] for r in mine}, key=lambda w: [r['workload'] for r in mine].index(w))
    n_rounds = len({r['round'] for r in mine})
    L = ['## Events: kgrind next to cachegrind and callgrind', '',
         f'The suite\'s workloads under each configuration, {n_rounds} interleaved round(s); median wall seconds '
         'and peak RSS (MB), and the median per-round ratios of kgrind\'s wall time to cachegrind\'s and '
         'callgrind\'s with the same simulation. The host\'s cache geometry for every tool.', '',
         '| configuration | ' + ' | '.join(workloads) + ' |', '|---|' + '--:|' * len(workloads)]
    for name, _o, _k in CONFIGS:
        cells = []
        for w in workloads:
            s, m = median(mine, w, name, 'wall'), median(mine, w, name, 'rss_kb')
            cells.append('–' if s is None else f'{s:.2f} s, {fmt_mb(m)} MB')
        L.append(f'| {LABELS[name]} | ' + ' | '.join(cells) + ' |')
    L += ['', '| ratio | ' + ' | '.join(workloads) + ' |', '|---|' + '--:|' * len(workloads)]
    fmt = lambda x: '–' if x is None else f'{x:.2f}'
    rows = [('kgrind --collect-data / kgrind (no events)', 'kgrind-data', 'kgrind-k2', 'wall')]
    for sim in SIMULATIONS:
        rows += [(f'kgrind / cachegrind, {sim}', f'kgrind-{sim}', f'cachegrind-{sim}', 'wall'),
                 (f'kgrind / callgrind, {sim}', f'kgrind-{sim}', f'callgrind-{sim}', 'wall'),
                 (f'kgrind / callgrind peak RSS, {sim}', f'kgrind-{sim}', f'callgrind-{sim}', 'rss_kb')]
    for label, a, b, field in rows:
        L.append(f'| {label} | ' + ' | '.join(fmt(median_ratio(mine, w, a, b, field)) for w in workloads) + ' |')
    L += ['', '| target | measured | verdict |', '|---|---|---|']
    for sim in SIMULATIONS:
        for what, ref, bound, field in ((f'--{sim}-sim: kgrind no slower than cachegrind', 'cachegrind', 1.0, 'wall'),
                                        (f'--{sim}-sim: kgrind at least 2x faster than callgrind', 'callgrind',
                                         CALLGRIND_RATIO, 'wall'),
                                        (f'--{sim}-sim: kgrind peak RSS at most callgrind\'s', 'callgrind', 1.0,
                                         'rss_kb')):
            ratios = {w: median_ratio(mine, w, f'kgrind-{sim}', f'{ref}-{sim}', field) for w in workloads}
            got = [x for x in ratios.values() if x is not None]
            worst = max(got) if got else None
            measured = None if worst is None else f'worst {worst:.2f}x ({max(ratios, key=lambda w: ratios[w] or 0)})'
            L.append(target_row(what, measured, None if worst is None else worst <= bound))
    L.append('')
    return L
