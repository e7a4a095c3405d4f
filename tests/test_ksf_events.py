"""Events beyond Ir in the k-SF records (docs/output-format.md, section 3):
each listed node's exclusive events, read back by the tests' own reader
(ksf_records.py) and compared with the callgrind body's per-function
events (which test_events.py compares with cachegrind) and with
hand-computed counts of cache_work.c's per-context misses; kgrind_annotate's
contexts, JSON and pprof with those events."""
import base64
import collections
import json
import shutil
import subprocess

import jsonschema
import pytest

import callgrind_format
import ksf_records
import pprof_wire

from conftest import ROOT
from test_events import cachegrind

GEOMETRY = ['--I1=32768,8,64', '--D1=49152,12,64', '--LL=8388608,16,64']
ALL_EVENTS = ['--cache-sim=yes', '--branch-sim=yes', '--collect-bus=yes', *GEOMETRY]
ANNOTATE = ['perl', str(ROOT / 'perl' / 'kgrind_annotate.pl')]


def record_events_by_function(prof):
    """Each function's exclusive events summed over its k-SF nodes, every
    thread."""
    out = collections.defaultdict(collections.Counter)
    for forest in prof.forests:
        for nid, (_parent, label, _calls, _excl, _incl) in forest.nodes.items():
            out[forest.names[label]].update(forest.events[nid])
    return out


def without_zeros(by_fn):
    return {fn: {e: n for e, n in c.items() if n} for fn, c in by_fn.items() if any(c.values())}


@pytest.mark.parametrize('source,k', [('cache_work.c', '1'), ('cache_work.c', '2'), ('threads.c', '3'),
                                      ('atomics.c', '1')])
def test_record_events_sum_to_the_body(tools, source, k):
    """Per function, the nodes' events sum to the body's; per event, over
    all nodes, to the summary; the nodes' exclusive Ir is still the Ir."""
    exe = tools.compile(source, '-O1')
    kg = tools.kgrind(exe, opts=[f'--k={k}', *ALL_EVENTS], out='kg.out.1')
    assert kg.returncode == 0, kg.stderr
    assert 'warning' not in kg.stderr
    body = kg.profile()
    prof = ksf_records.parse(kg.profile_path)
    names = prof.options['events'].split(',')
    assert ['Ir', *names] == body.events
    by_fn = record_events_by_function(prof)
    body_fn = {fn: {e: n for e, n in c.items() if e != 'Ir'} for fn, c in body.by_function_events().items()}
    assert without_zeros(by_fn) == without_zeros(body_fn) != {}
    totals = collections.Counter()
    for counts in by_fn.values():
        totals.update(counts)
    assert [totals[e] for e in names] == [body.summary_events[e] for e in names]
    r = subprocess.run([*ANNOTATE, str(kg.profile_path)], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr


def test_record_events_per_context(tools):
    """At --k=1, walk's node under each caller holds that caller's misses:
    test_events.py's hand-computed counts (caller_a: a stride of one
    64-byte line, every read a D1 miss, the first pass LL misses too;
    caller_b: a stride of one int, one D1 miss per 16 reads), now from the
    records alone."""
    exe = tools.compile('cache_work.c', '-O1')
    kg = tools.kgrind(exe, opts=['--k=1', '--cache-sim=yes', *GEOMETRY], out='kg.out.1')
    prof = ksf_records.parse(kg.profile_path)
    by_caller = collections.defaultdict(collections.Counter)
    for forest in prof.forests:
        for nid, (parent, label, _calls, _excl, _incl) in forest.nodes.items():
            if forest.names[label] == 'walk' and parent is not None:
                by_caller[forest.name(parent)].update(forest.events[nid])
    lines = (1 << 17) * 4 // 64
    a, b = by_caller['caller_a'], by_caller['caller_b']
    assert (a['Dr'], a['D1mr'], a['DLmr'], a['Dw'], a['D1mw']) == (3 * lines + 3, 3 * lines + 3, lines, 3 * lines, 0)
    assert (b['Dr'], b['D1mr'], b['DLmr'], b['Dw'], b['D1mw']) == (3 * 16 * lines + 3, 3 * lines + 3, 0,
                                                                    3 * 16 * lines, 0)


def test_no_record_events_without_events_or_with_a_separate_view(tools):
    """Without events the records are as before (no events=, no
    ksf-events). With a separate view asked for (--k=inf --view-k=2) the
    counters are the view's contexts', not the k-SF nodes': the records
    carry no events (the body still does)."""
    exe = tools.compile('cache_work.c', '-O1')
    for opts in ([], ['--k=inf', '--view-k=2', '--cache-sim=yes', *GEOMETRY]):
        kg = tools.kgrind(exe, opts=opts, out='kg.out.1')
        assert kg.returncode == 0, kg.stderr
        text = kg.profile_path.read_text()
        assert '# ksf-events ' not in text and ' events=' not in text
        assert kg.profile().events[0] == 'Ir'


@pytest.mark.parametrize('k,view', [('4', ['1', '2', '4']), ('inf', ['inf', '2', '0'])])
def test_events_at_every_k_by_default(tools, k, view):
    """With events, --view-k defaults to --k (at k=4 and k=inf, where it is
    2 without events), so the records carry every node's events and
    kgrind_annotate has them at any k' <= k: per function, summed over the
    k'-contexts, the body's and, for the program's functions that make no
    PLT call, cachegrind's; --sort=D1mr ranks walk's two callers' contexts
    first at every k'."""
    exe = tools.compile('cache_work.c', '-O1')
    opts = ['--cache-sim=yes', '--branch-sim=yes', *GEOMETRY]
    kg = tools.kgrind(exe, opts=[f'--k={k}', *opts], out='kg.out.1')
    assert kg.returncode == 0, kg.stderr
    assert 'warning' not in kg.stderr
    prof = ksf_records.parse(kg.profile_path)
    assert prof.options['view-k'] == k and prof.options['events'].startswith('Dr,Dw,')
    body = kg.profile()
    body_fn = {fn: {e: n for e, n in c.items() if e != 'Ir'} for fn, c in body.by_function_events().items()}
    ref = callgrind_format.parse(cachegrind(tools, exe, opts, 'cg.out.1')).by_function_events()
    lines_walked = (1 << 17) * 4 // 64
    for kk in view:
        doc = annotate_json(f'--k={kk}', kg.profile_path)
        by_fn = context_events_by_function(doc)
        assert without_zeros(by_fn) == without_zeros(body_fn), kk
        for fn in ('walk', 'straddle', 'branchy', 'indirect'):
            assert +by_fn[fn] == {e: n for e, n in ref[fn].items() if e != 'Ir' and n}, (kk, fn)
        if kk == '0':
            continue
        r = subprocess.run([*ANNOTATE, f'--k={kk}', '--sort=D1mr', '--show=D1mr', '--top=2', str(kg.profile_path)],
                           capture_output=True, text=True)
        assert r.returncode == 0, r.stderr
        rows = [l.split() for l in r.stdout.splitlines() if l.rstrip().endswith(' walk')]
        assert sorted((row[0], row[-3]) for row in rows) == [(f'{3 * lines_walked + 3:,}', 'caller_a'),
                                                             (f'{3 * lines_walked + 3:,}', 'caller_b')], kk


def annotate_json(*args):
    r = subprocess.run([*ANNOTATE, '--format=json', '--top=0', '--threshold=100', *map(str, args)],
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    doc = json.loads(r.stdout)
    jsonschema.validate(doc, json.loads((ROOT / 'docs' / 'kgrind-annotate.schema.json').read_text()))
    return doc


def context_events_by_function(doc):
    """Each activated function's events summed over its contexts."""
    out = collections.defaultdict(collections.Counter)
    for t in doc['threads']:
        for c in t['contexts']:
            out[c['path'][-1]].update(c['events'])
    return out


@pytest.mark.parametrize('k,view', [('2', ['0', '1', '2']), ('inf', ['inf', '1'])])
def test_annotate_sums_each_event_per_context(tools, k, view):
    """kgrind_annotate's contexts at every k' <= k: per function, the
    events summed over its contexts are the callgrind body's, as Ir's are;
    the totals are the summary's."""
    exe = tools.compile('cache_work.c', '-O1')
    kg = tools.kgrind(exe, opts=[f'--k={k}', f'--view-k={k}', *ALL_EVENTS], out='kg.out.1')
    assert kg.returncode == 0, kg.stderr
    body = kg.profile()
    body_fn = {fn: {e: n for e, n in c.items() if e != 'Ir'} for fn, c in body.by_function_events().items()}
    for kk in view:
        doc = annotate_json(f'--k={kk}', kg.profile_path)
        assert doc['events'] == body.events
        assert {e: doc['total'][e] for e in body.events} == dict(body.summary_events)
        by_fn = context_events_by_function(doc)
        assert without_zeros(by_fn) == without_zeros(body_fn), kk


def test_annotate_shows_and_sorts_by_an_event(tools):
    """--sort=D1mr puts walk's two contexts first (each 3 * 8192 + 3 D1
    misses, test_record_events_per_context), --show gives the columns in
    the order asked; an event the records lack is one clear error."""
    exe = tools.compile('cache_work.c', '-O1')
    kg = tools.kgrind(exe, opts=['--k=1', '--cache-sim=yes', *GEOMETRY], out='kg.out.1')
    r = subprocess.run([*ANNOTATE, '--sort=D1mr', '--show=D1mr,Ir,DLmr', '--top=2', str(kg.profile_path)],
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    lines = r.stdout.splitlines()
    head = next(i for i, l in enumerate(lines) if l.split()[:3] == ['D1mr', 'Ir', 'DLmr'])
    assert lines[head].split()[3] == '%D1mr'
    rows = [l.split() for l in lines[head + 1:head + 3]]
    lines_walked = (1 << 17) * 4 // 64
    assert sorted((row[-1], row[0], row[2]) for row in rows) == [
        ('walk', f'{3 * lines_walked + 3:,}', '0'), ('walk', f'{3 * lines_walked + 3:,}', f'{lines_walked:,}')]
    assert sorted(row[-3] for row in rows) == ['caller_a', 'caller_b']
    for opt, what in (('--sort=Bcm', '--sort'), ('--show=Ir,Ge', '--show')):
        r = subprocess.run([*ANNOTATE, opt, str(kg.profile_path)], capture_output=True, text=True)
        assert r.returncode == 2 and r.stdout == ''
        assert r.stderr.startswith(f"kgrind_annotate: {what}: unknown event '{opt.split(',')[-1].split('=')[-1]}'")
    plain = tools.kgrind(exe, out='kg.out.2')
    r = subprocess.run([*ANNOTATE, '--sort=D1mr', str(plain.profile_path)], capture_output=True, text=True)
    assert r.returncode == 2 and 'the k-SF records have Ir only' in r.stderr


@pytest.mark.parametrize('k', ['1', 'inf'])
def test_pprof_has_a_sample_type_per_event(tools, k):
    """--format=pprof: calls, Ir, then one sample type per event of the
    records; each sample's values are its context's (the JSON's), so each
    event sums to its total; `go tool pprof -sample_index=D1mr` reads it
    where go is installed."""
    exe = tools.compile('cache_work.c', '-O1')
    kg = tools.kgrind(exe, opts=[f'--k={k}', f'--view-k={k}', '--cache-sim=yes', *GEOMETRY], out='kg.out.1')
    doc = annotate_json(kg.profile_path)
    path = tools.dir / 'profile.pb.gz'
    r = subprocess.run([*ANNOTATE, '--format=pprof', str(kg.profile_path)], capture_output=True)
    assert r.returncode == 0, r.stderr
    path.write_bytes(r.stdout)
    p = pprof_wire.decode(path)
    assert p['sample_types'] == [('calls', 'count')] + [(e, 'count') for e in doc['events']]
    by_stack = collections.Counter()
    for s in p['samples']:
        by_stack[tuple(reversed(s['stack']))] += 1
        assert len(s['values']) == 2 + len(doc['events']) - 1
    want = {}
    for c in doc['threads'][0]['contexts']:
        want[tuple(c['path'])] = [c['calls'], c['Ir']] + [c['events'][e] for e in doc['events'][1:]]
    got = {}
    for s in p['samples']:
        stack = tuple(f for f in reversed(s['stack']) if not f.startswith('[truncated'))
        got[stack] = s['values']
    assert got == want
    for i, e in enumerate(doc['events']):
        assert sum(s['values'][1 + i] for s in p['samples']) == doc['total'][e]
    if shutil.which('go'):
        r = subprocess.run(['go', 'tool', 'pprof', '-sample_index=D1mr', '-top', str(path)],
                           capture_output=True, text=True, timeout=300)
        assert r.returncode == 0, r.stderr
        assert f"of {doc['total']['D1mr']} total" in r.stdout
        top = [l.split() for l in r.stdout.splitlines() if l.strip().endswith(' walk')]
        assert top and int(top[0][0]) == 2 * (3 * (1 << 17) * 4 // 64 + 3)


def test_folded_weighs_stacks_by_an_event(tools):
    """--format=folded --event=D1mr: each stack weighs its context's D1mr
    (the JSON's), at k=1 and at k=inf (the CCT's own walk)."""
    exe = tools.compile('cache_work.c', '-O1')
    for k in ('1', 'inf'):
        kg = tools.kgrind(exe, opts=[f'--k={k}', f'--view-k={k}', '--cache-sim=yes', *GEOMETRY], out=f'kg.{k}')
        doc = annotate_json('--names=short', kg.profile_path)
        want = collections.Counter()
        for c in doc['threads'][0]['contexts']:
            if c['events']['D1mr']:
                cut = k != 'inf' and c['path'][0] != '__root__'    # a cut stack: marked
                want[';'.join([f'[truncated k={k}]'] * cut + c['path'])] += c['events']['D1mr']
        r = subprocess.run([*ANNOTATE, '--format=folded', '--names=short', '--event=D1mr', str(kg.profile_path)],
                           capture_output=True, text=True)
        assert r.returncode == 0, r.stderr
        got = collections.Counter()
        for line in r.stdout.splitlines():
            stack, n = line.rsplit(' ', 1)
            got[stack] += int(n)
        assert got == want and sum(got.values()) == doc['total']['D1mr'], k


def test_sort_by_an_event_at_k_inf(tools):
    """At k = inf (the calling context tree's own contexts) --sort=D1mr
    ranks walk's two full contexts first, each with its 3 * 8192 + 3 D1
    misses."""
    exe = tools.compile('cache_work.c', '-O1')
    kg = tools.kgrind(exe, opts=['--k=inf', '--view-k=inf', '--cache-sim=yes', *GEOMETRY], out='kg.out.1')
    r = subprocess.run([*ANNOTATE, '--sort=D1mr', '--show=D1mr', '--top=2', str(kg.profile_path)],
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    rows = [l.split() for l in r.stdout.splitlines() if l.rstrip().endswith(' walk')]
    lines_walked = (1 << 17) * 4 // 64
    assert sorted((row[0], row[-3]) for row in rows) == [(f'{3 * lines_walked + 3:,}', 'caller_a'),
                                                         (f'{3 * lines_walked + 3:,}', 'caller_b')]


@pytest.mark.writes_bad_profiles
def test_bad_event_records_are_refused(tools):
    """A profile whose event records are damaged: one clear message, exit
    status 2."""
    exe = tools.compile('cache_work.c', '-O1')
    kg = tools.kgrind(exe, opts=['--k=1', '--cache-sim=yes', *GEOMETRY], out='kg.out.1')
    text = kg.profile_path.read_text()
    first_events = next(l for l in text.splitlines() if l.startswith('# ksf-events '))
    cases = [
        (text.replace(first_events + '\n', '', 1), 'ksf-events lists'),
        (text.replace(' events=Dr,Dw,', ' events=Dw,Dr,', 1), "is not the body's events after Ir"),
        (text.replace(' events=Dr,Dw,', ' events=Dr,Dr,', 1), 'events= names Dr twice'),
        # mask 1 << 17 (BER 88 80 00): beyond --cache-sim's 8 events' exclusive and inclusive bits
        (text.replace(first_events, '# ksf-events ' + base64.b64encode(bytes([0x88, 0x80, 0])).decode(), 1),
         'names events beyond'),
        # mask 1 | 1 << 8 (BER 82 01): Dr 2 exclusive, 1 inclusive
        (text.replace(first_events, '# ksf-events ' + base64.b64encode(bytes([0x82, 0x01, 2, 1])).decode(), 1),
         'inclusive Dr 1 below its exclusive 2'),
        (text.replace(' events-incl=yes', ' events-incl=no', 1), 'bad events-incl value'),
        (text.replace(first_events, '# ksf-events ' + '!!!!', 1), 'ksf-events: malformed base64'),
    ]
    for i, (bad, needle) in enumerate(cases):
        path = tools.dir / f'bad.{i}'
        path.write_text(bad)
        r = subprocess.run([*ANNOTATE, str(path)], capture_output=True, text=True)
        assert r.returncode == 2 and r.stdout == '', (needle, r.stderr)
        assert needle in r.stderr and r.stderr.count('\n') == 1, (needle, r.stderr)
