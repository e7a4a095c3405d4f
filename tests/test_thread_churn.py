"""Thread churn: a program that creates many short threads, at most 8 alive
at a time (a server's thread per request; Valgrind reuses their thread
ids). Every thread created gets its own record, whose calls are the ones the
program made in it; kgrind_annotate reads the profile; and what a thread
that ended keeps in the tool grows with its forest, not by a fixed cost."""
import collections
import re

import pytest

import callgrind_format
import ksf_records
from test_annotate import annotate, ok  # noqa: F401  (fixture)
from test_regions import context_calls, dump_files

THREADS = 300
FUNCTIONS = ('request', 'parse', 'reply', 'format')
LEVELS = 8      # thread_churn's levels of a<j>/b<j> on a thread's path
STEPS = tuple(f'{ab}{j}' for j in range(LEVELS) for ab in 'ab')


def program_counts(stdout):
    """thread_churn's own totals: {'threads': N, 'request': R, ...}."""
    words = stdout.split()
    return {words[i]: int(words[i + 1]) for i in range(0, len(words), 2)}


def calls_by_thread(prof):
    """[(tid, {function: calls})] of every thread record, vertex calls (k'=0)."""
    out = []
    for forest in prof.forests:
        calls = collections.Counter()
        for ctx, n in ksf_records.kccf(forest, ksf_records.k_of(prof), 0).items():
            if ctx[-1] in FUNCTIONS + STEPS:
                calls[ctx[-1]] += n
        out.append((forest.tid, calls))
    return out


def records_by_context(prof):
    """What the body's contexts hold according to the k-SF records of every
    thread: ({context name: exclusive Ir}, {context name: calls}), each
    record's canonical nodes (not the top regions of its trees after the
    first) by their k-context, summed over the threads."""
    k = ksf_records.k_of(prof)
    excl, calls = collections.Counter(), collections.Counter()
    for forest in prof.forests:
        for tree, root in enumerate(forest.roots):
            stack = [(root, (forest.name(root),), 0)]
            while stack:
                nid, path, depth = stack.pop()
                if tree == 0 or depth >= k:
                    name = "'".join(reversed(path[-(k + 1):]))
                    excl[name] += forest.nodes[nid][3]
                    calls[name] += forest.nodes[nid][2]
                stack += [(kid, (path + (forest.name(kid),))[-(k + 1):], depth + 1) for kid in forest.children[nid]]
    return excl, calls


def assert_body_is_the_records_summed(path):
    """The body (one fn= per context, summed over threads) says what the
    threads' records say: each context's exclusive Ir and calls into it."""
    body = callgrind_format.parse(path)
    excl, calls = records_by_context(ksf_records.parse(path))
    assert {c: n for c, n in body.by_context().items() if n} == {c: n for c, n in excl.items() if n}
    into = context_calls(body)
    assert {c: n for c, n in into.items() if n} == {c: n for c, n in calls.items() if n and c != '__root__'}


@pytest.fixture(scope='module')
def churn(tmp_path_factory):
    from conftest import Toolbox
    tools = Toolbox(tmp_path_factory.mktemp('churn'))
    exe = tools.compile('thread_churn.c', '-O1')
    return tools, exe


def expected_work(i, paths):
    """What thread i (1-based) calls: (parse calls, the a<j>/b<j> of its path)."""
    path = i % paths
    steps = tuple('ab'[path >> j & 1] + str(j) for j in range(LEVELS)) if paths > 1 else ()
    return i % 3 + 1, steps


def thread_work(calls):
    """The same, from a thread's record's calls (each step called once)."""
    steps = tuple(sorted((f for f in STEPS if calls[f]), key=lambda f: int(f[1:])))
    assert all(calls[f] == 1 for f in steps), calls
    return calls['parse'], steps


# 1 path: every thread but for its parse count alike; 256: threads do
# different work (about 3 x 256 distinct forests).
@pytest.mark.parametrize('paths', [1, 256])
def test_every_thread_created_has_its_record_with_its_own_calls(churn, annotate, paths):  # noqa: F811
    tools, exe = churn
    kg = tools.kgrind(exe, THREADS, paths, opts=['--k=2'])
    native = tools.native(exe, THREADS, paths)
    assert kg.returncode == native.returncode == 0, kg.stderr
    assert kg.stdout == native.stdout
    counts = program_counts(native.stdout)
    assert counts['threads'] == THREADS
    prof = ksf_records.parse(kg.profile_path)
    # The main thread and one record per thread created, though Valgrind
    # had at most 9 thread ids in use at once.
    assert len(prof.forests) == THREADS + 1
    assert len({f.tid for f in prof.forests}) == THREADS + 1
    per_thread = calls_by_thread(prof)
    workers = [calls for _tid, calls in per_thread if calls['request']]
    assert len(workers) == THREADS
    # Thread i (1-based) calls request once, parse i % 3 + 1 times, reply and
    # format twice: the multiset over the threads (their records' order is
    # the order they first ran in).
    assert all(c['request'] == 1 and c['reply'] == 2 and c['format'] == 2 for c in workers)
    assert sorted(thread_work(c) for c in workers) == sorted(expected_work(i, paths) for i in range(1, THREADS + 1))
    if paths > 1:   # hundreds of kinds of work
        assert len({thread_work(c) for c in workers}) == len({expected_work(i, paths) for i in range(1, THREADS + 1)}) > 200
    totals = collections.Counter()
    for _tid, calls in per_thread:
        totals.update(calls)
    names = FUNCTIONS + (STEPS if paths > 1 else ())
    assert {f: totals[f] for f in names} == {f: counts[f] for f in names}
    body = kg.profile()
    assert sum(f.ir for f in prof.forests) == body.summary == body.total()
    assert_body_is_the_records_summed(kg.profile_path)

    # kgrind_annotate reads it: the default report, and JSON whose threads'
    # Ir sum to the profile's total and whose per-thread calls are the records'.
    ok(annotate(kg.profile_path))
    doc = annotate('--format=json', kg.profile_path).json()
    assert len(doc['threads']) == THREADS + 1
    assert sum(t['Ir'] for t in doc['threads']) == body.summary == doc['total']['Ir']
    assert [t['ksf_nodes'] for t in doc['threads']] == [len(f.nodes) for f in prof.forests]


ARENA_RE = re.compile(r'^-------- Arena "core": .* ([\d,]+)/[\d,]+ max/curr on_loan', re.M)


def tool_peak_heap(stderr):
    """The peak bytes the tool's heap (Valgrind's "core" arena) held, from
    --profile-heap=yes's last report."""
    peaks = ARENA_RE.findall(stderr)
    assert peaks, stderr[-2000:]
    return int(peaks[-1].replace(',', ''))


@pytest.mark.parametrize('paths', [1, 256])
def test_an_ended_thread_keeps_its_record_not_its_forest(churn, paths):
    """The tool's peak heap at 400 threads less at 100, per k-SF node the
    300 more threads added, is at most 24 bytes: a thread that ended keeps
    its record's numbers (about 7 bytes a node), its counters and call
    edges added into the ended threads' shared ones
    (docs/design/processes.md). Before it kept its forest, transitions,
    counters and call edges: 380 bytes a node, and 1.9 KB before that. With
    256 paths the threads' forests are hundreds of different ones."""
    tools, exe = churn
    heap, nodes = {}, {}
    for n in (100, 400):
        kg = tools.kgrind(exe, n, paths, opts=['--k=2', '--profile-heap=yes'], out=f'heap-{n}-{paths}.out')
        assert kg.returncode == 0, kg.stderr
        heap[n] = tool_peak_heap(kg.stderr)
        nodes[n] = sum(len(f.nodes) for f in ksf_records.parse(kg.profile_path).forests)
    added = nodes[400] - nodes[100]
    assert added >= 300 * 40
    assert heap[400] - heap[100] <= 24 * added, (heap, nodes)


def test_dumps_during_churn_count_every_call_once(churn):
    """Dumps while threads end (each dump zeroes the counters, those of the
    threads already ended and kept compact too): every call the program
    made is in exactly one dump's records, and each dump's body says what
    its records say."""
    tools, exe = churn
    kg = tools.kgrind(exe, THREADS, 256, opts=['--k=2', '--dump-every-bb=10000'], out='dumps.out')
    native = tools.native(exe, THREADS, 256)
    assert kg.returncode == native.returncode == 0, kg.stderr
    files = dump_files(tools, 'dumps.out')
    assert len(files) >= 6
    totals = collections.Counter()
    for f in files:
        assert_body_is_the_records_summed(f)
        for _tid, calls in calls_by_thread(ksf_records.parse(f)):
            totals.update(calls)
    counts = program_counts(native.stdout)
    names = FUNCTIONS + STEPS
    assert {f: totals[f] for f in names} == {f: counts[f] for f in names}


THREAD_LINE_RE = re.compile(r'^Thread (\d+):\s+Ir ([\d,]+),', re.M)
TABLE_RE = re.compile(r'^Hottest 2-contexts, thread (\d+):', re.M)


def number(text):
    return int(text.replace(',', ''))


def test_many_threads_report_the_hottest_and_say_what_they_leave_out(churn, annotate):  # noqa: F811
    """With more threads than --max-threads (16 by default) the text report
    shows the tables of the threads with the most Ir (by the records' own
    per-thread Ir; equal Ir: the lower thread id), in thread order, and its
    header says how many threads it left out and their Ir; JSON keeps every
    thread. 40 threads doing different work (256 paths)."""
    tools, exe = churn
    kg = tools.kgrind(exe, 40, 256, opts=['--k=2'], out='many.out')
    assert kg.returncode == 0, kg.stderr
    ir = {int(f.tid): f.ir for f in ksf_records.parse(kg.profile_path).forests}
    assert len(ir) == 41 and len(set(ir.values())) > 5
    total = sum(ir.values())

    def expect(n):
        return sorted(sorted(ir, key=lambda t: (-ir[t], t))[:n])

    for args, n in (((), 16), (('--max-threads=5',), 5), (('--max-threads=all',), 41), (('--max-threads=41',), 41)):
        out = ok(annotate(*args, kg.profile_path)).out
        lines = [(int(t), number(i)) for t, i in THREAD_LINE_RE.findall(out)]
        assert lines == [(t, ir[t]) for t in expect(n)], args
        assert [int(t) for t in TABLE_RE.findall(out)] == expect(n), args
        left = re.search(r'^Other threads:\s+(\d+) not shown, Ir ([\d,]+) \(', out, re.M)
        if n == 41:
            assert left is None and re.search(r'^Threads:\s+41, 41 shown$', out, re.M)
        else:
            assert re.search(rf'^Threads:\s+41, {n} shown \(those with the most Ir;', out, re.M)
            assert (int(left[1]), number(left[2])) == (41 - n, total - sum(ir[t] for t in expect(n)))
    doc = annotate('--format=json', kg.profile_path).json()
    assert sorted(int(t['tid']) for t in doc['threads']) == sorted(ir)
    for bad in ('0', '-3', 'many', ''):
        r = annotate(f'--max-threads={bad}', kg.profile_path)
        assert r.rc != 0 and r.out == '' and r.err.count('\n') == 1 and 'max-threads' in r.err, (bad, r.err)


def test_ended_threads_keep_their_events(churn):
    """With cache and branch simulation, every thread that ended keeps its
    events, misses included: each event's total in the body (the counters,
    the miss counters among them) equals the sum of every thread's clock
    (its record's first root's inclusive events, counted apart from the
    counters), and the events that do not depend on how threads interleave
    (Ir, Dr, Dw, Bc, Bi) equal cachegrind's in the requests' functions that
    make no PLT calls."""
    from test_events import GEOMETRY
    tools, exe = churn
    opts = ['--cache-sim=yes', '--branch-sim=yes', *GEOMETRY]
    kg = tools.kgrind(exe, str(THREADS), '4', opts=[*opts, '--inline-frames=no'], out='ev.out')
    assert kg.returncode == 0, kg.stderr
    assert 'inconsistent' not in kg.stderr, kg.stderr
    body = kg.profile()
    records = ksf_records.parse(kg.profile_path)
    assert len(records.forests) == THREADS + 1
    names = records.options['events'].split(',')
    clocks = collections.Counter()
    for forest in records.forests:
        for e in names:
            clocks[e] += forest.events_incl[forest.roots[0]][e]
    assert clocks['D1mr'] > 0 and clocks['Bcm'] > 0
    assert {e: body.summary_events[e] for e in names} == dict(clocks)
    cg = tools.valgrind('cachegrind', [f'--cachegrind-out-file={tools.dir / "cg.out"}', '--vex-guest-chase=no', *opts],
                        exe, [str(THREADS), '4'])
    assert cg.returncode == 0, cg.stderr
    ref = callgrind_format.parse(tools.dir / 'cg.out')
    mine, theirs = body.by_function_events(), ref.by_function_events()
    # (request's PLT calls are charged to it by kgrind, to ??? by cachegrind.)
    for fn in ('parse', 'reply', 'format', 'step', 'a0', 'b0', 'b1', 'a7'):   # 4 paths: a2..a7 only
        assert {e: mine[fn][e] for e in ('Ir', 'Dr', 'Dw', 'Bc', 'Bi')} == \
            {e: theirs[fn][e] for e in ('Ir', 'Dr', 'Dw', 'Bc', 'Bi')} and mine[fn]['Ir'] > 0, fn
