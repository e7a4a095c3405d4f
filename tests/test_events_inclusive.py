"""Inclusive events beyond Ir (docs/design/events.md): every calls= line
carries each event's inclusive cost and every k-SF node its inclusive
events, measured by the threads' event clocks at each frame's entry and
exit as inclusive Ir is. Checked against callgrind's calls= lines on the
events its model computes as cachegrind's (and kgrind's), on a program of
ours and on Debian's bzip2; against brute-force subtree sums of the
exclusive events in k=inf profiles, with signals, longjmp, threads,
coroutines and inlined levels; and kgrind_annotate's inclusive events
against the records."""
import base64
import collections
import json
import random
import re
import subprocess

import pytest

import callgrind_format
import ksf_records

from conftest import ROOT, VALGRIND

GEOMETRY = ['--I1=32768,8,64', '--D1=49152,12,64', '--LL=8388608,16,64']
SIM = ['--cache-sim=yes', '--branch-sim=yes', *GEOMETRY]
# The events callgrind's model counts as cachegrind's (callgrind counts
# some read-modify-writes of the C library as writes: events.md).
SAME_MODEL = ['Ir', 'I1mr', 'ILmr', 'Bc', 'Bcm', 'Bi', 'Bim']
ANNOTATE = ['perl', str(ROOT / 'perl' / 'kgrind_annotate.pl')]


def edge_events(profile, events=SAME_MODEL, keep=lambda key: True):
    """(caller function, callee function) -> Counter of the calls= lines'
    inclusive events, over every context and call site; functions without
    a symbol (named by address, differently by each tool) left out, and
    the edges keep() refuses."""
    out = collections.defaultdict(collections.Counter)
    for caller, callee, costs in profile.call_events:
        key = tuple(callgrind_format.callee(f).split(' [')[0] for f in (caller, callee))
        if not any(f.startswith('0x') for f in key) and keep(key):
            out[key].update({e: costs[e] for e in events})
    return out


def callgrind(tools, exe, args, out):
    path = tools.dir / out
    proc = tools.valgrind('callgrind', [f'--callgrind-out-file={path}', *SIM], exe, args)
    assert proc.returncode == 0, proc.stderr
    return callgrind_format.parse(path)


def assert_edges_are_callgrinds(mine, ref, must_have, **which):
    got, want = edge_events(mine, **which), edge_events(ref, **which)
    common = set(got) & set(want)
    assert must_have <= common
    assert {k: got[k] for k in common} == {k: want[k] for k in common}
    return got


@pytest.mark.parametrize('k', ['0', '1'])
def test_call_edges_equal_callgrinds(tools, k):
    """cache_work.c: every call edge between functions, at k=0 and summed
    over the contexts at k=1, has callgrind's inclusive events; main's is
    the run but its start-up, as callgrind's."""
    exe = tools.compile('cache_work.c', '-O1')
    run = tools.kgrind(exe, opts=[*SIM, f'--k={k}', '--inline-frames=no'], out='kg.out.1')
    assert run.returncode == 0, run.stderr
    mine = run.profile()
    got = assert_edges_are_callgrinds(mine, callgrind(tools, exe, [], 'cl.out.1'),
                                      {('(below main)', 'main'), ('caller_a', 'walk'), ('indirect', 'twice')})
    main = got[('(below main)', 'main')]
    assert main['Bcm'] > 1000 and main['I1mr'] > 0
    # every event's inclusive cost is within the run's
    for costs in got.values():
        assert all(costs[e] <= mine.summary_events[e] for e in SAME_MODEL)


def test_call_edges_equal_callgrinds_on_bzip2(tools):
    """Debian's bzip2 at k=1: the same, on a program nobody here wrote, for
    the calls into its library's functions (bzip2 itself is stripped).
    Ir and the branches' counts: the tools' start-ups differ (callgrind's
    client has no preloaded tool library, so ld.so's string functions run
    other counts), and the caches' and the global branch history's state
    after them, so a miss or two may move (one Bcm of 3,211 in
    BZ2_hbMakeCodeLengths); the program's own edges are equal in every
    event where its run has the same history (above)."""
    rng = random.Random(7)
    words = ['kgrind', 'context', 'cache', 'miss', 'branch', 'frame', 'clock', 'event']
    (tools.dir / 'in.txt').write_text(' '.join(rng.choice(words) for _ in range(15000)))
    args = ['-k', '-f', 'in.txt']   # to in.txt.bz2, overwritten by the second run
    run = tools.kgrind('/usr/bin/bzip2', *args, opts=[*SIM, '--k=1'], out='kg.out.1')
    assert run.returncode == 0, run.stderr
    got = assert_edges_are_callgrinds(run.profile(), callgrind(tools, '/usr/bin/bzip2', args, 'cl.out.1'),
                                      {('BZ2_bzWrite', 'BZ2_bzCompress'), ('BZ2_bzWriteClose64', 'BZ2_bzCompress')},
                                      events=['Ir', 'Bc', 'Bi'], keep=lambda key: key[1].startswith('BZ2_'))
    assert len(got) >= 8   # BZ2_bzWrite's and BZ2_compressBlock's callees


def subtree_sums(forest, values):
    """Each node's sum of values (a list by node id) over its subtree."""
    total = list(values)
    for nid in sorted(forest.nodes, reverse=True):   # pre-order ids: children after parents
        parent = forest.nodes[nid][0]
        if parent is not None:
            total[parent] += total[nid]
    return total


# (source, compiler flags, arguments, options): every kind of frame.
PROGRAMS = [
    ('cache_work.c', ['-O1'], [], ['--collect-bus=yes']),
    ('self_signals.c', ['-O1'], [], []),                       # signal handlers
    ('longjmp_deep.c', ['-O1'], ['300'], []),                  # longjmp over many frames
    ('siglongjmp.c', ['-O1'], [], []),                         # out of a handler
    ('threads.c', ['-O1'], [], ['--collect-systime=yes']),     # threads, system calls
    ('coroutines.c', ['-O1'], [], ['--collect-data=yes']),     # stack switches; inline counts
    ('inline_levels.c', ['-O2'], [], ['--inline-frames=yes']),  # inlined levels
    ('inline_crossings.c', ['-O2'], [], []),                   # many levels between runs
]


@pytest.mark.parametrize('source,flags,args,opts', PROGRAMS, ids=[p[0] for p in PROGRAMS])
def test_inclusive_events_are_subtree_sums_at_k_inf(tools, source, flags, args, opts):
    """At k=inf the forest is the calling context tree: each node's
    inclusive events are its subtree's exclusive ones, as its inclusive Ir
    is; __root__'s are the thread's totals."""
    exe = tools.compile(source, *flags)
    sim = SIM if '--collect-data=yes' not in opts else []
    run = tools.kgrind(exe, *args, opts=[*sim, *opts, '--k=inf'], out='kg.out.1')
    assert run.returncode == 0, run.stderr
    assert 'warning' not in run.stderr.lower()
    prof = ksf_records.parse(run.profile_path)
    assert prof.options['events-incl'] == 'yes'
    names = prof.options['events'].split(',')
    checked = collections.Counter()
    for forest in prof.forests:
        assert len(forest.events_incl) == len(forest.nodes)
        ids = sorted(forest.nodes)
        ir = subtree_sums(forest, [forest.nodes[n][3] for n in ids])
        assert ir == [forest.nodes[n][4] for n in ids]       # the same invariant for Ir
        for e in names:
            sums = subtree_sums(forest, [forest.events[n][e] for n in ids])
            assert sums == [forest.events_incl[n][e] for n in ids], e
            checked[e] += sum(1 for n in ids if forest.children[n] and sums[n] > forest.events[n][e])
    # every event is carried up the tree somewhere (sysTime may round to 0)
    assert all(checked[e] for e in names if e != 'sysTime'), checked
    main = callgrind_format.parse(run.profile_path)
    totals = collections.Counter()
    for forest in prof.forests:
        totals.update(forest.events_incl[forest.roots[0]])
    assert {e: totals[e] for e in names} == {e: main.summary_events[e] for e in names}


def assert_subtree_sums(path):
    """Every forest of a profile: each node's inclusive Ir and events are
    its subtree's exclusive ones (a k=inf profile); returns the records."""
    prof = ksf_records.parse(path)
    names = prof.options['events'].split(',')
    for forest in prof.forests:
        ids = sorted(forest.nodes)
        assert subtree_sums(forest, [forest.nodes[n][3] for n in ids]) == [forest.nodes[n][4] for n in ids]
        for e in names:
            assert subtree_sums(forest, [forest.events[n][e] for n in ids]) == \
                [forest.events_incl[n][e] for n in ids], (path, e)
    return prof


def test_dumps_and_regions_split_inclusive_events(tools):
    """Dumps during the run (roi_dumps.c: four, then the exit's) and a
    region (--toggle-collect): every file's nodes are their subtrees'
    sums; the dumps' call edges' inclusive Dr and Dw (--collect-data: no
    cache state across files) add up to the whole run's, and a region's
    edges carry what ran inside it only, in every open frame, as Ir."""
    exe = tools.compile('roi_dumps.c', '-O1', '-I', str(ROOT / 'include'), '-I', VALGRIND.includedir)
    opts = ['--collect-data=yes', '--k=inf']
    run = tools.kgrind(exe, 'dumps', opts=opts, out='kg.out')
    whole = tools.kgrind(exe, 'whole', opts=opts, out='whole.out')
    assert run.returncode == whole.returncode == 0
    files = sorted((p for p in tools.dir.iterdir() if p.name.startswith('kg.out.')),
                   key=lambda p: int(p.name.rsplit('.', 1)[1]))
    assert len(files) == 5
    parts = collections.Counter()
    for f in files:
        assert_subtree_sums(f)
        for key, costs in edge_events(callgrind_format.parse(f), events=['Dr', 'Dw']).items():
            parts.update({(key, e): n for e, n in costs.items() if n})
    assert_subtree_sums(whole.profile_path)
    want = collections.Counter()
    for key, costs in edge_events(whole.profile(), events=['Dr', 'Dw']).items():
        want.update({(key, e): n for e, n in costs.items() if n})
    assert parts == want and parts[(('main', 'work'), 'Dw')] > 0
    region = tools.kgrind(exe, 'whole', opts=[*opts, '--toggle-collect=branch'], out='region.out')
    assert region.returncode == 0, region.stderr
    assert_subtree_sums(region.profile_path)
    edges = edge_events(region.profile(), events=['Ir', 'Dr', 'Dw'])
    assert edges[('branch', 'leaf')] == edge_events(whole.profile(), events=['Ir', 'Dr', 'Dw'])[('branch', 'leaf')]
    # work's own accesses are outside the region: what its frames ran inside is branch's
    assert edges[('main', 'work')] == edges[('work', 'branch')] and edges[('main', 'work')]['Dw'] > 0


def test_inclusive_events_exact_over_many_transitions(tools):
    """many_transitions.c at k=inf: 8,191 hot transitions, walked 100
    times, each made with its arrays at its first pop (--stats=yes) and
    then added to by inline pops: every node's inclusive events are still
    its subtree's exclusive ones, and the roots' the run's totals."""
    exe = tools.compile('many_transitions.c', '-O1')
    run = tools.kgrind(exe, '100', opts=[*SIM, '--k=inf', '--stats=yes'], out='kg.out.1')
    assert run.returncode == 0, run.stderr
    stats = re.search(r'kgrind events: (\d+) transitions with inclusive events', run.stderr)
    assert stats and int(stats[1]) > 8191, run.stderr
    prof = assert_subtree_sums(run.profile_path)
    names = prof.options['events'].split(',')
    assert max(len(forest.nodes) for forest in prof.forests) > 8191
    totals = collections.Counter()
    for forest in prof.forests:
        totals.update(forest.events_incl[forest.roots[0]])
    summary = callgrind_format.parse(run.profile_path).summary_events
    assert {e: totals[e] for e in names} == {e: summary[e] for e in names}

def without_inclusive_events(text, n):
    """A profile as kgrind wrote it before nodes had inclusive events: each
    node's ksf-events its mask's low n bits and exclusive counts."""
    out = []
    for line in text.splitlines(keepends=True):
        if line.startswith('# ksf-events '):
            numbers = list(ksf_records.ber_numbers(base64.b64decode(line[len('# ksf-events '):].strip())))
            kept, i = [], 0
            while i < len(numbers):
                mask = numbers[i]
                excl = bin(mask & ((1 << n) - 1)).count('1')
                kept += [mask & ((1 << n) - 1), *numbers[i + 1:i + 1 + excl]]
                i += 1 + excl + bin(mask >> n).count('1')
            line = '# ksf-events ' + base64.b64encode(ksf_records.ber(kept)).decode() + '\n'
        out.append(line)
    return ''.join(out).replace(' events-incl=yes', '')


def test_annotate_inclusive_events(tools):
    """kgrind_annotate's incl:<event> at k'=0 and k'=1 of a k=2 profile:
    its JSON's inclusive events of main are main's node's; sorted by
    incl:CEst, __root__ first at 100 %; an unknown or older profile's
    inclusive event is one clear message."""
    exe = tools.compile('cache_work.c', '-O1')
    run = tools.kgrind(exe, opts=[*SIM, '--k=2'], out='kg.out.1')
    assert run.returncode == 0, run.stderr
    prof = ksf_records.parse(run.profile_path)
    forest = prof.forests[0]
    main_nodes = [n for n in forest.nodes if forest.root_path(n)[-1] == 'main']
    want = collections.Counter()
    for n in main_nodes:
        want.update(forest.events_incl[n])
    for kk in ('0', '1'):
        out = subprocess.run([*ANNOTATE, '--format=json', f'--k={kk}', '--top=0', '--threshold=100',
                              '--sort=incl:D1mr', str(run.profile_path)], capture_output=True, text=True, check=True)
        contexts = json.loads(out.stdout)['threads'][0]['contexts']
        main = [c for c in contexts if c['path'][-1] == 'main']
        assert len(main) == 1
        assert {e: main[0]['events_inclusive'][e] for e in want} == dict(want)
        d1mr = [c['events_inclusive']['D1mr'] for c in contexts]
        assert d1mr == sorted(d1mr, reverse=True)
    text = subprocess.run([*ANNOTATE, '--show=Ir,incl:CEst', '--sort=incl:CEst', str(run.profile_path)],
                          capture_output=True, text=True, check=True).stdout
    rows = text.split('incl:CEst %incl:CEst')[1].splitlines()[1:]
    assert rows[0].split()[2] == '100.00%' and rows[0].endswith('__root__')
    r = subprocess.run([*ANNOTATE, '--sort=incl:Xyz', str(run.profile_path)], capture_output=True, text=True)
    assert r.returncode == 2 and "unknown event 'Xyz'" in r.stderr
    old = tools.dir / 'old.out'
    old.write_text(without_inclusive_events(run.profile_path.read_text(), len(prof.options['events'].split(','))))
    r = subprocess.run([*ANNOTATE, '--sort=incl:D1mr', str(old)], capture_output=True, text=True)
    assert r.returncode == 2 and 'no inclusive events' in r.stderr, r.stderr


def test_separate_threads_split_the_events(tools):
    """--separate-threads=yes with events: each thread's file has its own
    events (its cost lines' sums, its summary), which add up to a whole
    run's, and its __root__'s inclusive events are its totals.
    --collect-data: the counts do not depend on how threads interleave."""
    exe = tools.compile('threads.c', '-O1')
    opts = ['--collect-data=yes', '--branch-sim=yes']
    split = tools.kgrind(exe, opts=[*opts, '--separate-threads=yes'], out='kg.out')
    whole = tools.kgrind(exe, opts=opts, out='whole.out')
    assert split.returncode == whole.returncode == 0, split.stderr
    assert 'warning' not in split.stderr.lower()
    files = sorted(tools.dir.glob('kg.out-*'))
    assert len(files) == 5   # the main thread and four workers
    summed = collections.Counter()
    for f in files:
        part = callgrind_format.parse(f)
        assert part.summary_events == part.totals_events
        lines = collections.Counter()
        for costs in part.event_lines.values():
            lines.update(costs)
        assert +lines == +collections.Counter(part.summary_events)
        forest, = ksf_records.parse(f).forests
        root = forest.events_incl[forest.roots[0]]
        assert {e: n for e, n in root.items() if n} == {e: n for e, n in part.summary_events.items() if n and e != 'Ir'}
        summed.update({e: n for e, n in part.summary_events.items() if e in ('Dr', 'Dw', 'Bc', 'Bi')})
    want = whole.profile().summary_events
    assert summed == collections.Counter({e: want[e] for e in ('Dr', 'Dw', 'Bc', 'Bi')})
