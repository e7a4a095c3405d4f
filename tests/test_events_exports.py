"""Events beyond Ir in kgrind_annotate's derived figures and exports: the
cycle estimate and miss rates (KCachegrind's and cachegrind's formulas,
computed here from each context's own events), speedscope and dot with one
chosen event, and --diff per event with --fail-above on it."""
import collections
import json
import re
import subprocess

import callgrind_format

from conftest import ROOT
from test_events import GEOMETRY, cachegrind

ANNOTATE = ['perl', str(ROOT / 'perl' / 'kgrind_annotate.pl')]
OPTS = ['--k=1', '--cache-sim=yes', '--branch-sim=yes', '--collect-bus=yes']


def annotate(*args, status=0):
    r = subprocess.run([*ANNOTATE, *map(str, args)], capture_output=True, text=True)
    assert r.returncode == status, r.stderr
    return r


def as_json(*args):
    return json.loads(annotate('--format=json', '--top=0', '--threshold=100', *args).stdout)


def cest(c):
    """KCachegrind's cycle estimate: Ir + 10 Bm + 10 L1m + 20 Ge + 100 LLm."""
    g = lambda e: c.get(e, 0)
    return (g('Ir') + 10 * (g('Bcm') + g('Bim')) + 10 * (g('I1mr') + g('D1mr') + g('D1mw')) + 20 * g('Ge')
            + 100 * (g('ILmr') + g('DLmr') + g('DLmw')))


def profile(tools, out, geometry=GEOMETRY, opts=OPTS):
    exe = tools.compile('cache_work.c', '-O1')
    kg = tools.kgrind(exe, opts=[*opts, *geometry], out=out)
    assert kg.returncode == 0, kg.stderr
    return exe, kg.profile_path


def test_cycle_estimate_and_miss_rates(tools):
    """Per context, CEst, L1m, LLm and Bm are the formulas of its own
    events; in total, of the summary's; the miss rates are cachegrind's
    (its summary's counts, the same geometry); --sort=CEst orders by it."""
    exe, path = profile(tools, 'kg.out.1')
    doc = as_json('--sort=CEst', path)
    contexts = doc['threads'][0]['contexts']
    for c in contexts:
        ev = dict(c['events'], Ir=c['Ir'])
        assert c['derived'] == {'L1m': ev['I1mr'] + ev['D1mr'] + ev['D1mw'], 'LLm': ev['ILmr'] + ev['DLmr'] + ev['DLmw'],
                                'Bm': ev['Bcm'] + ev['Bim'], 'CEst': cest(ev)}
    assert [c['derived']['CEst'] for c in contexts] == sorted((c['derived']['CEst'] for c in contexts), reverse=True)
    assert doc['derived']['CEst'] == cest(doc['total']) == sum(c['derived']['CEst'] for c in contexts)
    ref = callgrind_format.parse(cachegrind(tools, exe, ['--cache-sim=yes', '--branch-sim=yes', *GEOMETRY],
                                            'cg.out.1')).summary_events
    want = {'I1': ref['I1mr'] / ref['Ir'], 'LLi': ref['ILmr'] / ref['Ir'],
            'D1': (ref['D1mr'] + ref['D1mw']) / (ref['Dr'] + ref['Dw']),
            'LLd': (ref['DLmr'] + ref['DLmw']) / (ref['Dr'] + ref['Dw']),
            'LL': (ref['ILmr'] + ref['DLmr'] + ref['DLmw']) / (ref['Ir'] + ref['Dr'] + ref['Dw']),
            'Bc': ref['Bcm'] / ref['Bc'], 'Bi': ref['Bim'] / ref['Bi']}
    assert doc['rates'].keys() == want.keys()
    for name, rate in want.items():
        assert abs(doc['rates'][name] - rate) <= 1e-5 * rate, name
    text = annotate('--show=Ir,CEst,L1m', '--sort=CEst', '--top=1', path).stdout
    assert f"Derived:              L1m {doc['derived']['L1m']:,}, LLm {doc['derived']['LLm']:,}, " \
           f"Bm {doc['derived']['Bm']:,}, CEst {doc['derived']['CEst']:,}" in text
    assert re.search(r'^Miss rates: +I1 [\d.]+%, LLi [\d.]+%, D1 [\d.]+%, LLd [\d.]+%, LL [\d.]+%, Bc [\d.]+%, '
                     r'Bi [\d.]+%$', text, re.M)
    row = text.splitlines()[-1].split()
    assert row[:3] == [f"{contexts[0]['Ir']:,}", f"{contexts[0]['derived']['CEst']:,}",
                       f"{contexts[0]['derived']['L1m']:,}"]


def test_derived_events_need_their_events(tools):
    """With --branch-sim alone, Bm and CEst (Ir + 10 Bm) but no L1m, LLm
    or cache miss rates; --sort=L1m is one clear error."""
    _exe, path = profile(tools, 'kg.out.1', geometry=[], opts=['--k=1', '--branch-sim=yes'])
    doc = as_json(path)
    assert list(doc['derived']) == ['Bm', 'CEst'] and list(doc['rates']) == ['Bc', 'Bi']
    assert doc['derived']['CEst'] == doc['total']['Ir'] + 10 * doc['derived']['Bm']
    r = annotate('--sort=L1m', path, status=2)
    assert "--sort: unknown event 'L1m'" in r.stderr


def test_speedscope_and_dot_with_an_event(tools):
    """--format=speedscope --event=D1mr: each sample weighs its context's
    D1mr (the JSON's), summing to the total; --format=dot --event=CEst: each
    box shows its context's CEst."""
    _exe, path = profile(tools, 'kg.out.1')
    doc = as_json('--names=short', path)
    by_path = {tuple(c['path']): c for c in doc['threads'][0]['contexts']}
    sp = json.loads(annotate('--format=speedscope', '--names=short', '--event=D1mr', path).stdout)
    prof = sp['profiles'][0]
    assert prof['name'].endswith('D1mr)') and prof['endValue'] == doc['total']['D1mr']
    frames = [f['name'] for f in sp['shared']['frames']]
    got = {}
    for stack, w in zip(prof['samples'], prof['weights']):
        got[tuple(frames[i] for i in stack if not frames[i].startswith('[truncated'))] = w
    assert got == {p: c['events']['D1mr'] for p, c in by_path.items() if c['events']['D1mr']}
    dot = annotate('--format=dot', '--names=short', '--event=CEst', '--top=3', path).stdout
    boxes = re.findall(r'label="([^"\\]+)\\nIr [^"]*\\nCEst ([\d,]+) \([\d.]+%\)'
                       r'\\nincl CEst ([\d,]+) \([\d.]+%\)", tooltip="([^"]+)"', dot)
    assert len(boxes) >= 3
    for name, value, incl, tooltip in boxes:
        c = by_path[tuple(f for f in tooltip.split(' > ') if not f.startswith('[truncated'))]
        assert c['path'][-1] == name and int(value.replace(',', '')) == c['derived']['CEst']
        assert int(incl.replace(',', '')) == c['events_inclusive']['CEst']
    walks = [int(v.replace(',', '')) for n, v, _i, _t in boxes if n == 'walk']
    assert len(walks) == 2   # the hottest by CEst


def test_diff_per_event_fails_above_on_it(tools):
    """The same program with a 4 KB direct-mapped D1 instead of 48 KB: Ir
    unchanged, D1mr up. --diff --event=D1mr gives each context's change
    (the two sides' JSON counts) and --fail-above fails on D1mr's growth;
    without --event Ir did not grow and it passes."""
    _exe, base = profile(tools, 'kg.out.1')
    _exe, new = profile(tools, 'kg.out.2', geometry=['--I1=32768,8,64', '--D1=4096,1,64', '--LL=8388608,16,64'])
    b, n = as_json(base), as_json(new)
    assert b['total']['Ir'] == n['total']['Ir'] and n['total']['D1mr'] > b['total']['D1mr']
    growth = 100 * (n['total']['D1mr'] - b['total']['D1mr']) / b['total']['D1mr']
    d = json.loads(annotate('--diff', '--event=D1mr', '--format=json', base, new).stdout)
    assert d['event'] == 'D1mr' and d['sort'] == 'D1mr'
    assert d['delta']['D1mr'] == n['total']['D1mr'] - b['total']['D1mr'] and d['delta']['Ir'] == 0
    side = lambda doc: {tuple(c['path']): c['events']['D1mr'] for c in doc['threads'][0]['contexts']}
    bs, ns = side(b), side(n)
    for c in d['contexts']:
        p = tuple(c['path'])
        assert (c['base']['D1mr'], c['new']['D1mr']) == (bs.get(p, 0), ns.get(p, 0))
    assert abs(d['contexts'][0]['delta']['D1mr']) == max(abs(ns.get(p, 0) - bs.get(p, 0)) for p in {*bs, *ns})
    r = annotate('--diff', '--event=D1mr', f'--fail-above={growth * 0.9:.3f}', base, new, status=1)
    assert 'total D1mr' in r.stderr and r.stdout.startswith('---')
    assert 'delta D1mr' in r.stdout
    annotate('--diff', '--event=D1mr', f'--fail-above={growth * 1.1:.3f}', base, new)
    annotate('--diff', '--fail-above=0.001', base, new)


def test_bad_event_requests_are_refused(tools):
    """An event option kgrind_annotate cannot honour: one line, status 2."""
    _exe, path = profile(tools, 'kg.out.1')
    for args, needle in [
        (['--event=D1mr', path], '--event: only with --format=folded, speedscope or dot, --tree, or --diff'),
        (['--event=D1mr', '--format=pprof', path], '--event: only with --format=folded, speedscope or dot, --tree, or --diff'),
        (['--event=sysCount', '--format=folded', path], "--event: unknown event 'sysCount'"),
        (['--diff', '--sort=D1mr', path, path], '--show and --sort with events beyond Ir'),
    ]:
        r = annotate(*args, status=2)
        assert r.stdout == '' and needle in r.stderr and r.stderr.count('\n') == 1, r.stderr


TABLE_ROW = re.compile(r'^\s*([\d,]+)\s+[\d.]+%\s+[\d,]+\s+[\d,]+\s+(\S.*)$')


def test_go_tool_pprof_top_equals_the_table(tools):
    """`go tool pprof -sample_index=D1mr -top` on --format=pprof equals
    kgrind_annotate --sort=D1mr's table: each function's flat D1mr is the
    sum of the table's rows (contexts) it is the innermost function of, its
    cum that of the rows holding it (caller_a's and caller_b's: their walk
    context's alone), the total the table's sum. Skipped where go cannot be
    installed (go tool pprof reads the file)."""
    from test_annotate_export import go_pprof, parse_top
    _exe, path = profile(tools, 'kg.out.1')
    text = annotate('--sort=D1mr', '--show=D1mr', '--names=full', '--width=0', '--top=0', '--threshold=100',
                    path).stdout
    rows = [(int(m[1].replace(',', '')), m[2].split(' > ')) for m in map(TABLE_ROW.match, text.splitlines()) if m]
    assert len(rows) > 100 and [d for d, _c in rows] == sorted((d for d, _c in rows), reverse=True)
    pb = tools.dir / 'profile.pb.gz'
    pb.write_bytes(subprocess.run([*ANNOTATE, '--format=pprof', str(path)], capture_output=True, check=True).stdout)
    top, total = parse_top(go_pprof(pb, '-sample_index=D1mr', '-top', '-nodecount=100000'))
    assert total == sum(d for d, _c in rows) > 0
    flat, cum = collections.Counter(), collections.Counter()
    for d, context in rows:
        flat[context[-1]] += d
        for fn in set(context):
            cum[fn] += d
    got = {fn: fc for fn, fc in top.items() if not fn.startswith('[truncated')}
    assert got == {fn: (flat[fn], cum[fn]) for fn in got}
    assert {fn for fn in flat if flat[fn]} <= set(got)
    walk = [d for d, c in rows if c[-1] == 'walk']
    assert got['walk'][0] == sum(walk) and len(walk) == 2
    assert got['caller_a'] == (0, next(d for d, c in rows if c == ['caller_a', 'walk']))
