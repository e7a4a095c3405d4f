"""Thread churn: a program that creates many short threads, at most 8 alive
at a time (a server's thread per request; Valgrind reuses their thread
ids). Every thread created gets its own record, whose calls are the ones the
program made in it; kgrind_annotate reads the profile; and what a thread
that ended keeps in the tool grows with its forest, not by a fixed cost."""
import collections
import re

import pytest

import ksf_records
from test_annotate import annotate, ok  # noqa: F401  (fixture)

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


def test_an_ended_thread_keeps_memory_for_its_forest_not_a_fixed_cost(churn):
    """The tool's peak heap at 400 threads less at 100, per k-SF node the
    300 more threads added, is at most 1 KB: each node's forest memory,
    transitions, counters and call edges: about 380 bytes. (Before, each
    thread kept its tables' and forests' first allocations: 95 KB a thread
    of 50 nodes, 1.9 KB a node.)"""
    tools, exe = churn
    heap, nodes = {}, {}
    for n in (100, 400):
        kg = tools.kgrind(exe, n, opts=['--k=2', '--profile-heap=yes'], out=f'heap-{n}.out')
        assert kg.returncode == 0, kg.stderr
        heap[n] = tool_peak_heap(kg.stderr)
        nodes[n] = sum(len(f.nodes) for f in ksf_records.parse(kg.profile_path).forests)
    added = nodes[400] - nodes[100]
    assert added >= 300 * 10
    assert heap[400] - heap[100] <= 1024 * added, (heap, nodes)
