#!/usr/bin/python3
"""Events exactness on programs nobody here wrote: cachegrind
--cache-sim=yes --branch-sim=yes and kgrind with the same events, the same
cache geometry (--I1 --D1 --LL given to both), the same launcher, argv
and environment (the interpreters' hash seeds fixed), and output file
names of equal length (the name's length moves the client's start-up
work); then every event compared in total, per
function and per source line, kgrind's summed over its k-contexts.

    bench/events_exact.py                          every program, report on stdout
    bench/events_exact.py --programs xz,perl       some of them
    bench/suite.py ... --events-exact python3,cc1plus   as a phase of the suite

Programs (Debian's binaries; inputs sized to about a minute or less under
cachegrind on the reference machine): python3 and perl on the suite's
bench/workloads/pywork.py and plwork.pl, cc1plus on the suite's generated,
preprocessed C++ program, xz and gzip compressing the suite's generated
text, bzip2 and sqlite3 as in the suite.

Function names: cachegrind names code without a symbol `???` (a stripped
program's functions, the PLT stubs); kgrind names it by its entry (`0x1139
[prog]`, an unwind table's function or a stub), so those count as `???`.
kgrind's qualifiers of namesakes (`helper [a.c]`, `~C() [deleting]`) are
dropped: cachegrind has the plain name. Nothing else is mapped, and no
difference is tolerated: the exit code is 1 if any event differs in total
or on any line.

Functions differ by design, and each difference is listed: cachegrind
charges an instruction to the symbol its address is in, kgrind (as
callgrind) to the function whose activation runs it. So a PLT stub's
`jmp *GOT` (Ir, Dr, Bi) counts for the calling function in kgrind and for
`???` in cachegrind, and code entered by a jump that is no call (an alias
entry such as `mempcpy` running `memmove`'s body, a stripped program's
function split into parts) for the function that jumped
(docs/design/events.md, "Agreement with cachegrind")."""
import argparse
import collections
import pathlib
import re
import sys
import time

ROOT = pathlib.Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / 'bench'))
sys.path.insert(0, str(ROOT / 'tests'))
import callgrind_format  # noqa: E402

GEOMETRY = ['--I1=32768,8,64', '--D1=49152,12,64', '--LL=8388608,16,64']
SIMULATIONS = ['--cache-sim=yes', '--branch-sim=yes']
EVENTS = 'Ir Dr Dw I1mr D1mr D1mw ILmr DLmr DLmw Bc Bcm Bi Bim'.split()
# name -> (suite workload, scale of the suite's argument units)
PROGRAMS = {
    'python3': ('python3', 0.08),     # pywork.py, 2 rounds
    'cc1plus': ('cc1plus', 1.0),      # one record type
    'perl': ('perl', 0.08),           # plwork.pl, 2 rounds
    'xz': ('xz', 0.25),               # 1.5 MB of text
    'gzip': ('gzip', 1.0),            # 6 MB of text
    'bzip2': ('bzip2', 0.15),
    'sqlite3': ('sqlite3', 0.1),
}
DEFAULT_PROGRAMS = ['python3', 'cc1plus', 'perl', 'xz', 'gzip']
# Fixed hash seeds: both interpreters seed their string hashes at random
# (from getrandom), which moves their work between two runs. python3 then
# runs without -I, which would ignore PYTHONHASHSEED.
SEEDS = {'PYTHONHASHSEED': '0', 'PERL_HASH_SEED': '0', 'PERL_PERTURB_KEYS': '0'}
NO_SYMBOL = '???'
_ENTRY_NAME = re.compile(r'^0x[0-9a-f]+ \[[^\]]*\]$')
_QUALIFIER = re.compile(r'( \[[^\[\]]+\])+$')


def plain_function(context):
    """The function cachegrind names for a kgrind context: its activated
    function, without namesakes' qualifiers; `???` for code without a symbol."""
    fn = callgrind_format.callee(context)
    if _ENTRY_NAME.match(fn):
        return NO_SYMBOL
    return _QUALIFIER.sub('', fn)


def per_function(profile, rename):
    out = collections.defaultdict(collections.Counter)
    for (_ob, _fl, fn, _line), costs in profile.event_lines.items():
        out[rename(fn)].update(costs)
    return out


def differences(mine, ref):
    """{key: {event: (kgrind, cachegrind)}} where any event differs."""
    out = {}
    for key in set(mine) | set(ref):
        a, b = mine.get(key, collections.Counter()), ref.get(key, collections.Counter())
        d = {e: (a[e], b[e]) for e in EVENTS if a[e] != b[e]}
        if d:
            out[key] = d
    return out


def compare(kg_path, cg_path):
    """The comparison of a kgrind and a cachegrind profile of one run."""
    kg, cg = callgrind_format.parse(kg_path), callgrind_format.parse(cg_path)
    fn_kg, fn_cg = per_function(kg, plain_function), per_function(cg, lambda f: f)
    ln_kg, ln_cg = kg.by_file_line_events(), cg.by_file_line_events()
    return {
        'events': kg.events, 'ref_events': cg.events,
        'totals': {e: (kg.summary_events.get(e, 0), cg.summary_events.get(e, 0)) for e in EVENTS},
        'functions': len(fn_cg), 'lines': len(ln_cg),
        'function_diffs': differences(fn_kg, fn_cg),
        'line_diffs': {f'{fl}:{line}': d for (fl, line), d in differences(ln_kg, ln_cg).items()},
    }


def exact(res):
    """Every event equal in total and on every line (functions: above)."""
    return (set(res['events']) == set(res['ref_events']) == set(EVENTS) and not res['line_diffs']
            and all(a == b for a, b in res['totals'].values()))


def run(suite, programs, run_measured, valgrind, size=1.0):
    """Runs each program under cachegrind and kgrind (suite: a bench/suite.py
    Suite, for its workloads, environment and folders), its input scaled by
    size; the results go to suite.data['events_exact']."""
    results = suite.data.setdefault('events_exact', {})
    for name in programs:
        workload, scale = PROGRAMS[name]
        argv, stdin = suite.wl.command(workload, scale * size)
        argv = [a for a in argv if a != '-I']
        env = dict(suite.env, **SEEDS)
        res = {'argv': ' '.join(argv).replace(str(suite.work) + '/', ''), 'stdin': stdin and stdin.name}
        paths = {}
        for tool, opts in (('cachegrind', ['--vex-guest-chase=no']), ('kgrind', ['--k=2', '--inline-frames=no'])):
            out = suite.work / f'exact-{name}-{tool[:2]}.out'    # equal lengths
            cmd = [valgrind, f'--tool={tool}', f'--{tool}-out-file={out}', *SIMULATIONS, *GEOMETRY, *opts, *argv]
            wall, cpu, rss, rc = run_measured(cmd, stdin, suite.logs / f'exact-{name}-{tool}.stderr', env,
                                              suite.work, suite.args.timeout)
            res[tool] = {'wall': wall, 'cpu': cpu, 'rss_kb': rss, 'rc': rc}
            paths[tool] = out
            suite.progress(f'events exact {name} {tool}: {wall:.1f} s, exit {rc}')
        if all(res[t]['rc'] == 0 for t in paths):
            res.update(compare(paths['kgrind'], paths['cachegrind']))
            res['exact'] = exact(res)
        else:
            res['exact'] = False
        for path in paths.values():
            if path.exists():
                path.replace(suite.keep / path.name)
        results[name] = res
        suite.save()
    return results


def fmt_diff(d):
    return ', '.join(f'{e} {a:,} vs {b:,}' for e, (a, b) in d.items())


def section(results, limit=8):
    """The report's lines (none if the phase did not run)."""
    if not results:
        return []
    L = ['## Events: exact against cachegrind on programs nobody here wrote', '',
         f'cachegrind `--cache-sim=yes --branch-sim=yes {" ".join(GEOMETRY)} --vex-guest-chase=no` and kgrind '
         '`--k=2 --inline-frames=no` with the same events and geometry, the same launcher, argv and environment; '
         'every event (' + ' '.join(EVENTS) + ') in total, per function and per source line, kgrind\'s summed '
         'over its contexts (bench/events_exact.py). Per function kgrind charges an instruction to the '
         'activation that runs it, cachegrind to the symbol of its address: a PLT stub\'s jump, an alias entry '
         '(mempcpy into memmove\'s body) move between functions, and are listed.', '',
         '| program | Ir | D1mr | DLmr | Bcm | Bim | functions | lines | cachegrind s | kgrind s | verdict |',
         '|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|---|']
    for name, r in results.items():
        if 'totals' not in r:
            L.append(f'| {name} | – | – | – | – | – | – | – | – | – | run failed |')
            continue
        t = {e: r['totals'][e][1] for e in EVENTS}
        verdict = ('exact in total and per line' if r['exact'] else f'{len(r["line_diffs"])} line(s) differ') + \
            f'; {len(r["function_diffs"])} function(s) differ'
        L.append(f'| {name} | {t["Ir"]:,} | {t["D1mr"]:,} | {t["DLmr"]:,} | {t["Bcm"]:,} | {t["Bim"]:,} | '
                 f'{r["functions"]:,} | {r["lines"]:,} | {r["cachegrind"]["wall"]:.1f} | '
                 f'{r["kgrind"]["wall"]:.1f} | {verdict} |')
    L.append('')
    for name, r in results.items():
        L.append(f'- **{name}**: `{r["argv"]}`' + (f' < {r["stdin"]}' if r.get('stdin') else ''))
        for what in ('function_diffs', 'line_diffs'):
            diffs = r.get(what, {})
            worst = sorted(diffs.items(), key=lambda kv: -sum(abs(a - b) for a, b in kv[1].values()))
            for key, d in worst[:limit]:
                L.append(f'  - {what.split("_")[0]} `{key}`: {fmt_diff(d)} (kgrind vs cachegrind)')
            if len(worst) > limit:
                L.append(f'  - ... {len(worst) - limit} more')
        bad = {e: ab for e, ab in r.get('totals', {}).items() if ab[0] != ab[1]}
        if bad:
            L.append(f'  - totals: {fmt_diff(bad)}')
    L.append('')
    return L


def main(argv=None):
    import suite as suite_mod   # here: bench/suite.py imports this module for its phase
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument('--programs', default=','.join(DEFAULT_PROGRAMS),
                    help=f'comma list of {",".join(PROGRAMS)} [{",".join(DEFAULT_PROGRAMS)}]')
    ap.add_argument('--out', help='results folder [bench/results/exact-<timestamp>]')
    ap.add_argument('--size', type=float, default=1.0, help='input size factor (0.01: a smoke test) [1]')
    ap.add_argument('--timeout', type=float, default=900, help='seconds per run before it is killed [900]')
    a = ap.parse_args(argv)
    programs = [p for p in a.programs.split(',') if p]
    for p in programs:
        if p not in PROGRAMS:
            ap.error(f'unknown program {p} (known: {", ".join(PROGRAMS)})')
    out = pathlib.Path(a.out) if a.out else ROOT / 'bench' / 'results' / time.strftime('exact-%Y%m%d-%H%M%S')
    out.mkdir(parents=True, exist_ok=True)
    args = suite_mod.parse_args(['--timeout', str(a.timeout)])
    s = suite_mod.Suite(args, out)
    s.snapshot_tool()
    results = run(s, programs, suite_mod.run_measured, suite_mod.VALGRIND, a.size)
    report = '\n'.join(section(results))
    (out / 'report.md').write_text(report + '\n')
    print(report)
    return 0 if all(r['exact'] for r in results.values()) else 1


if __name__ == '__main__':
    sys.exit(main())
