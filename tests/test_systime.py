"""--collect-systime: each system call's count (sysCount) and time (sysTime,
and sysCpuTime with nsec) charged to the k-context that made it, in every
thread: against the test program's own counts of its system calls per
(thread, call chain), and per function against callgrind's
--collect-systime=yes."""
import collections
import re
import subprocess

import pytest

import callgrind_format
import ksf_records

from conftest import ROOT

ANNOTATE = ['perl', str(ROOT / 'perl' / 'kgrind_annotate.pl')]
NAP_MS = 2   # syscalls.c's nanosleep


def own_counts(stdout):
    """syscalls.c's own counts: (call, chain, thread) -> number of calls."""
    out = {}
    for line in stdout.splitlines():
        thread, chain, call, n = line.split()
        out[(call, chain, thread)] = int(n)
    return out


def context_events(profile, functions):
    """The body's events per context of the given activated functions."""
    out = collections.defaultdict(collections.Counter)
    for (_ob, _fl, fn, _line), costs in profile.event_lines.items():
        if fn.split("'")[0] in functions:
            out[tuple(fn.split("'"))].update(costs)
    return out


@pytest.mark.parametrize('unit,per_ms,events', [
    ('yes', 1, ['Ir', 'sysCount', 'sysTime']),
    ('usec', 1000, ['Ir', 'sysCount', 'sysTime']),
    ('nsec', 1000 * 1000, ['Ir', 'sysCount', 'sysTime', 'sysCpuTime']),
])
def test_system_calls_are_charged_to_their_contexts(tools, unit, per_ms, events):
    """Four threads running at once, each making getppid, getuid and
    nanosleep from two call chains: each context's sysCount is the
    program's own count; a 2 ms nanosleep's sysTime is at least 2 ms per
    call; no time is negative, and every event sums to the summary."""
    exe = tools.compile('syscalls.c', '-O1')
    kg = tools.kgrind(exe, '1', opts=['--k=2', f'--collect-systime={unit}'], out='kg.out.1')
    assert kg.returncode == 0, kg.stderr
    counts = own_counts(kg.stdout)
    assert len(counts) == 16 and {t for _c, _ch, t in counts} == {'main', 'thread_one', 'thread_two', 'thread_three'}
    mine = kg.profile()
    assert mine.events == events
    got = context_events(mine, {'ask_ppid', 'ask_uid', 'nap'})
    assert {ctx: c['sysCount'] for ctx, c in got.items()} == counts
    for (call, _chain, _thread), c in got.items():
        assert c['sysTime'] >= 0 and c.get('sysCpuTime', 0) >= 0
        if call == 'nap':
            assert c['sysTime'] >= NAP_MS * per_ms * c['sysCount']
    assert all(n >= 0 for costs in mine.event_lines.values() for n in costs.values())
    sums = collections.Counter()
    for costs in mine.event_lines.values():
        sums.update(costs)
    assert {e: sums[e] for e in events} == mine.summary_events == mine.totals_events


def test_system_calls_per_thread_in_the_records(tools):
    """The k-SF records, per thread: each thread's nodes of the program's
    system call functions hold that thread's own counts."""
    exe = tools.compile('syscalls.c', '-O1')
    kg = tools.kgrind(exe, '1', opts=['--k=2', '--collect-systime=yes'], out='kg.out.1')
    counts = own_counts(kg.stdout)
    prof = ksf_records.parse(kg.profile_path)
    assert prof.options['events'] == 'sysCount,sysTime'
    got = collections.Counter()
    for forest in prof.forests:
        threads = set()
        for nid, (parent, label, _calls, _excl, _incl) in forest.nodes.items():
            call = forest.names[label]
            if call in ('ask_ppid', 'ask_uid', 'nap') and forest.events[nid].get('sysCount'):
                chain = forest.name(parent)
                thread = forest.name(forest.nodes[parent][0])
                got[(call, chain, thread)] += forest.events[nid]['sysCount']
                threads.add(thread)
        assert len(threads) <= 1, threads   # a thread's own calls only
    assert got == counts
    r = subprocess.run([*ANNOTATE, '--sort=sysCount', '--show=sysCount,sysTime', str(kg.profile_path)],
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    assert 'sorted by sysCount' in r.stdout


def plain_name(fn):
    """A kgrind function name without its object (namesakes: `brk [libc.so.6]`)."""
    return re.sub(r' \[[^]]*\]$', '', fn)


def test_sys_count_per_function_equals_callgrind(tools):
    """One thread (no scheduling-dependent futex calls): per function, the
    system calls of the whole run, the dynamic loader's and the C
    library's included, are callgrind's --collect-systime=yes, but for the
    last, exit_group in _Exit: callgrind adds a call's cost to its context
    at the next block, and no block runs after it, so its body lacks the
    call that its summary has; kgrind charges it to _Exit and its summary
    is callgrind's."""
    exe = tools.compile('syscalls.c', '-O1')
    # callgrind has no inlined levels: functions as callgrind sees them
    kg = tools.kgrind(exe, opts=['--collect-systime=yes', '--inline-frames=no'], out='kg.out.1')
    path = tools.dir / 'cl.out.1'
    proc = tools.valgrind('callgrind', [f'--callgrind-out-file={path}', '--collect-systime=yes'],
                           exe, [])
    assert proc.returncode == 0, proc.stderr
    ref = callgrind_format.parse(path)
    mine = kg.profile()
    assert ref.events == mine.events == ['Ir', 'sysCount', 'sysTime']
    by_fn, ref_fn = collections.Counter(), collections.Counter()
    for fn, c in mine.by_function_events().items():
        by_fn[plain_name(fn)] += c['sysCount']
    for fn, c in ref.by_function_events().items():
        ref_fn[fn] += c['sysCount']
    assert by_fn['_Exit'] == 1 and ref_fn['_Exit'] == 0
    by_fn['_Exit'] -= 1
    assert +by_fn == +ref_fn
    assert by_fn['ask_ppid'] == 14 and by_fn['nap'] == 3 and by_fn['mmap'] > 0
    assert mine.summary_events['sysCount'] == ref.summary_events['sysCount'] == sum(ref_fn.values()) + 1


def test_systime_off_writes_the_profile_as_before(tools):
    exe = tools.compile('syscalls.c', '-O1')
    plain = tools.kgrind(exe, out='kg.out.1').profile()
    off = tools.kgrind(exe, opts=['--collect-systime=no'], out='kg.out.2').profile()
    assert plain.events == off.events == ['Ir']
    assert plain.lines == off.lines


@pytest.mark.parametrize('opts,message', [
    (['--collect-systime=maybe'], '--collect-systime takes no, yes, msec, usec or nsec'),
    (['--collect-systime=yes', '--mode=intra'], '--collect-systime needs function mode (--mode=func)'),
])
def test_bad_systime_options_are_refused(tools, opts, message):
    tools.assert_refused(opts, message)
