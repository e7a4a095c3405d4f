"""Events beyond Ir (--cache-sim, --branch-sim): every event's sum over
k-contexts equals cachegrind 3.19's, in total, per source line of the
program and per function of the program, with the same cache geometry and
the same launcher, environment and arguments; the options' errors; the
profile's header."""
import collections
import os
import re
import subprocess

import pytest

import callgrind_format

from conftest import ROOT

GEOMETRY = ['--I1=32768,8,64', '--D1=49152,12,64', '--LL=8388608,16,64']
EVENTS = 'Ir Dr Dw I1mr D1mr D1mw ILmr DLmr DLmw Bc Bcm Bi Bim'.split()
ANNOTATE = ['perl', str(ROOT / 'perl' / 'kgrind_annotate.pl')]

# Own workloads, and their functions that make no PLT calls: a PLT stub's
# costs are in its caller's context (kgrind) or in `???` (cachegrind).
PROGRAMS = [
    ('cache_work.c', ['-O1'], ['walk', 'straddle', 'branchy', 'indirect', 'twice', 'square',
                               'caller_a', 'caller_b']),
    ('loops.c', ['-O2'], ['find', 'bits', 'sum_until_negative']),
    ('simple.c', ['-O1'], ['branchy', 'leaf']),
    # More counters than a function's counter array holds.
    ('big_function.c', ['-O1'], ['dispatch', 'caller_a', 'caller_b']),
]


def cachegrind(tools, exe, opts, out):
    """cachegrind through the same launcher as kgrind, so the
    client's environment, and with it its stack addresses, are the same,
    and with VEX translating as kgrind does (no superblock chasing)."""
    path = tools.dir / out
    proc = tools.valgrind('cachegrind',
                          [f'--cachegrind-out-file={path}', '--vex-guest-chase=no', *opts], exe, [])
    assert proc.returncode == 0, proc.stderr
    return path


def own_source_events(profile, source):
    return {key: costs for key, costs in profile.by_file_line_events().items() if key[0].endswith('/' + source)}


@pytest.mark.parametrize('source,flags,functions', PROGRAMS, ids=[p[0] for p in PROGRAMS])
def test_events_equal_cachegrind(tools, source, flags, functions):
    exe = tools.compile(source, *flags)
    opts = ['--cache-sim=yes', '--branch-sim=yes', *GEOMETRY]
    # Output names of equal length, as everything the client sees is equal;
    # functions as cachegrind sees them (no inlined levels).
    kg = tools.kgrind(exe, opts=[*opts, '--inline-frames=no'], out='kg.out.1')
    assert kg.returncode == 0, kg.stderr
    ref = callgrind_format.parse(cachegrind(tools, exe, opts, 'cg.out.1'))
    mine = kg.profile()
    assert mine.events == EVENTS
    assert mine.summary_events == mine.totals_events == ref.summary_events
    assert set(mine.summary_events) == set(EVENTS)
    # Every line of the program's own source, every event.
    lines, ref_lines = own_source_events(mine, source), own_source_events(ref, source)
    assert lines and lines == ref_lines
    by_fn, ref_fn = mine.by_function_events(), ref.by_function_events()
    for fn in functions:
        assert by_fn[fn] == ref_fn[fn] and by_fn[fn]['Ir'] > 0, fn
    # The events are charged per context: a function called from two
    # callers has both contexts, which sum to the function's.
    contexts = {c: costs for c, costs in by_context_events(mine).items() if c.split("'")[0] == functions[0]}
    assert len(contexts) >= 2 or source != 'cache_work.c'
    # kgrind_annotate reads the profile.
    r = subprocess.run([*ANNOTATE, str(kg.profile_path)], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr


def test_events_are_charged_to_their_context(tools):
    """cache_work.c's walk over its 512 KB array, from two callers: from
    caller_a a stride of one 64-byte line (every read misses the 48 KB D1;
    the first pass, the program's first touch of the array, misses LL
    too), from caller_b a stride of one int (one D1 miss per 16 reads; the
    array is in the 8 MB LL by then). Three calls each; each call's return
    reads the stack, whose line the walk evicted from D1 but not from LL."""
    exe = tools.compile('cache_work.c', '-O1')
    kg = tools.kgrind(exe, opts=['--cache-sim=yes', *GEOMETRY], out='kg.out.1')
    by_caller = {}
    for (_ob, _fl, fn, _line), costs in kg.profile().event_lines.items():
        if fn.split("'")[0] == 'walk':
            by_caller.setdefault(fn.split("'")[1], collections.Counter()).update(costs)
    lines = (1 << 17) * 4 // 64
    a, b = by_caller['caller_a'], by_caller['caller_b']
    assert (a['Dr'], a['D1mr'], a['DLmr']) == (3 * lines + 3, 3 * lines + 3, lines)
    assert (b['Dr'], b['D1mr'], b['DLmr']) == (3 * 16 * lines + 3, 3 * lines + 3, 0)
    assert a['Dw'] == 3 * lines and b['Dw'] == 3 * 16 * lines
    assert a['D1mw'] == b['D1mw'] == 0


def by_context_events(profile):
    out = {}
    for (_ob, _fl, fn, _line), costs in profile.event_lines.items():
        out.setdefault(fn, {}).update(costs)
    return out


def test_events_do_not_change_ir(tools):
    """Ir's total is the same with and without the simulations (with
    events a PLT stub's Ir is at the stub, where cachegrind has it, not at
    the calling line: test_events_equal_cachegrind compares the lines)."""
    exe = tools.compile('cache_work.c', '-O1')
    plain = tools.kgrind(exe, out='kg.out.1').profile()
    sim = tools.kgrind(exe, opts=['--cache-sim=yes', '--branch-sim=yes', *GEOMETRY], out='kg.out.2').profile()
    assert plain.summary == sim.summary > 0
    assert plain.events == ['Ir']


def test_miss_counts_past_two_to_the_32(tools):
    """Miss counters are 32 bits, a count's high part kept aside past a
    wrap. With KGRIND_TEST_MISS_WRAPS=1 every miss counter starts 3 below
    2^32 with its high part as far below zero: its third count wraps, and
    the profile must be the one of a run without (the same environment's
    length, so the same start-up)."""
    exe = tools.compile('cache_work.c', '-O1')
    opts = ['--cache-sim=yes', '--branch-sim=yes', '--dump-instr=yes', *GEOMETRY]
    profiles = []
    for wraps in ('0', '1'):
        path = tools.dir / f'kg.out.{wraps}'
        env = dict(os.environ, KGRIND_TEST_MISS_WRAPS=wraps)
        r = tools.valgrind('kgrind', [f'--kgrind-out-file={path}', *opts], exe, env=env)
        assert r.returncode == 0, r.stderr
        profiles.append(re.sub(r'(?m)^pid: \d+$', '', path.read_text()))
    assert profiles[0] == profiles[1]
    totals = callgrind_format.parse(tools.dir / 'kg.out.0').summary_events
    # Many counters took 3 counts or more (the walk's D1mr: one a line).
    assert totals['D1mr'] > 10000 and totals['DLmr'] > 1000 and totals['Bcm'] > 100


def test_branch_sim_alone(tools):
    exe = tools.compile('cache_work.c', '-O1')
    kg = tools.kgrind(exe, opts=['--branch-sim=yes'], out='kg.out.1')
    ref = callgrind_format.parse(cachegrind(tools, exe, ['--cache-sim=no', '--branch-sim=yes'], 'cg.out.1'))
    mine = kg.profile()
    assert mine.events == ['Ir', 'Bc', 'Bcm', 'Bi', 'Bim']
    assert mine.summary_events == ref.summary_events
    assert 'desc: I1 cache' not in kg.profile_path.read_text()


def test_collect_bus_counts_atomic_instructions(tools):
    """Ge: the program's own 1000 atomic adds and 500 compare-and-swaps in
    the functions that make them; in total (the C library's start-up
    included) callgrind's count."""
    exe = tools.compile('atomics.c', '-O1')
    kg = tools.kgrind(exe, opts=['--collect-bus=yes'], out='kg.out.1')
    assert kg.stdout == tools.native(exe).stdout
    mine = kg.profile()
    assert mine.events == ['Ir', 'Ge']
    by_fn = mine.by_function_events()
    assert (by_fn['bump']['Ge'], by_fn['cas']['Ge'], by_fn['main']['Ge']) == (1000, 500, 0)
    path = tools.dir / 'cl.out.1'
    proc = tools.valgrind('callgrind', [f'--callgrind-out-file={path}', '--collect-bus=yes'], exe)
    assert proc.returncode == 0, proc.stderr
    ref = callgrind_format.parse(path)
    assert ref.events == ['Ir', 'Ge']
    # (callgrind's Ir is 2 less: docs/design/counting.md.)
    assert mine.summary_events['Ge'] == ref.summary_events['Ge']


def test_events_per_instruction(tools):
    """--dump-instr=yes: every event per instruction. Summed per line, the
    per-line profile's (which is cachegrind's); per instruction of the
    program's functions that make no PLT call, callgrind's --dump-instr=yes
    on the events its model computes as cachegrind's (Ir, the instruction
    cache's and the branch predictors'; docs/design/events.md); the k-SF
    records' events sum to the totals, as with lines."""
    exe = tools.compile('cache_work.c', '-O1')
    opts = ['--cache-sim=yes', '--branch-sim=yes', *GEOMETRY]
    per_instr = tools.kgrind(exe, opts=[*opts, '--dump-instr=yes'], out='kg.out.1')
    assert per_instr.returncode == 0, per_instr.stderr
    assert 'warning' not in per_instr.stderr
    per_line = tools.kgrind(exe, opts=opts, out='kg.out.2').profile()
    mine = per_instr.profile()
    assert mine.header['positions'] == 'instr line' and mine.events == EVENTS
    assert mine.summary_events == per_line.summary_events
    assert {k: +c for k, c in mine.event_lines.items()} == {k: +c for k, c in per_line.event_lines.items()}
    path = tools.dir / 'cl.out.1'
    proc = tools.valgrind('callgrind', [f'--callgrind-out-file={path}', '--dump-instr=yes', *opts],
                           exe, [])
    assert proc.returncode == 0, proc.stderr
    ref = callgrind_format.parse(path)
    same_model = ['Ir', 'I1mr', 'ILmr', 'Bc', 'Bcm', 'Bi', 'Bim']

    def by_instr(profile):
        out = collections.defaultdict(collections.Counter)
        for (_ob, fn, addr), costs in profile.instr_events.items():
            if fn.split("'")[0] in PROGRAMS[0][2]:
                out[(fn.split("'")[0], addr)].update({e: n for e, n in costs.items() if e in same_model})
        return out
    got, want = by_instr(mine), by_instr(ref)
    assert len(got) > 50 and got == want
    assert sum(c['Bcm'] for c in got.values()) > 0


def test_header_names_the_geometry(tools):
    exe = tools.compile('prog4.c', '-O0')
    kg = tools.kgrind(exe, opts=['--cache-sim=yes', '--I1=16384,4,64', '--D1=1024,1,64', '--LL=1048576,16,128'])
    text = kg.profile_path.read_text()
    assert 'desc: I1 cache: 16384 B, 64 B, 4-way associative\n' in text
    assert 'desc: D1 cache: 1024 B, 64 B, direct-mapped\n' in text
    assert 'desc: LL cache: 1048576 B, 128 B, 16-way associative\n' in text
    assert '\nevents: Ir Dr Dw I1mr D1mr D1mw ILmr DLmr DLmw\n' in text


def test_default_geometry_is_cachegrinds(tools):
    """Without --I1/--D1/--LL, the host's caches, as cachegrind takes them."""
    exe = tools.compile('prog4.c', '-O0')
    kg = tools.kgrind(exe, opts=['--cache-sim=yes'])
    ref = cachegrind(tools, exe, ['--cache-sim=yes'], 'cg.out')
    desc = re.compile(r'^desc: (I1|D1|LL) cache:\s+(.*)$', re.M)
    mine = desc.findall(kg.profile_path.read_text())
    assert len(mine) == 3
    assert mine == desc.findall(ref.read_text())


@pytest.mark.parametrize('opts,message', [
    (['--cache-sim=yes', '--D1=1000,1,64'], '--D1=1000,1,64: the size is not a multiple of associativity x line size'),
    (['--cache-sim=yes', '--I1=3072,1,64'], '--I1=3072,1,64: the number of sets (size / (associativity x line size)) '
                                             'is not a power of two'),
    (['--cache-sim=yes', '--LL=1024,1,48'], '--LL=1024,1,48: the line size is not a power of two'),
    (['--cache-sim=yes', '--LL=1024,1,8'], '--LL=1024,1,8: the line size is under 16 bytes'),
    (['--cache-sim=yes', '--D1=1024,1,4096'], '--D1=1024,1,4096: the line size is larger than the cache'),
    (['--cache-sim=yes', '--D1=0,1,64'], '--D1=0,1,64: the cache size is 0'),
    (['--cache-sim=yes', '--D1=1024,0,64'], '--D1=1024,0,64: the associativity is 0'),
    (['--cache-sim=yes', '--D1=1024,1,0'], '--D1=1024,1,0: the line size is 0'),
    (['--cache-sim=yes', '--D1=1024,32,64'], '--D1=1024,32,64: the associativity is larger than the number of lines'),
    (['--cache-sim=yes', '--LL=1048576,1,2147483648'], '--LL=1048576,1,2147483648: the line size is larger than the cache'),
    (['--cache-sim=yes', '--D1=4294967296,1,64'], '--D1=4294967296,1,64: the cache size is over 1 GB'),
    (['--cache-sim=yes', '--D1=1024,64'], '--D1 takes <size>,<associativity>,<line size>'),
    (['--cache-sim=yes', '--D1=1k,1,64'], '--D1 takes <size>,<associativity>,<line size>'),
    (['--cache-sim=yes', '--D1=-1024,1,64'], '--D1 takes <size>,<associativity>,<line size>'),
    (['--cache-sim=yes', '--D1=99999999999999999999,1,64'], '--D1 takes <size>,<associativity>,<line size>'),
    (['--cache-sim=maybe'], '--cache-sim'),
    (['--D1=1024,1,64'], '--D1 sets a cache of --cache-sim=yes: add --cache-sim=yes or drop --D1'),
    (['--cache-sim=yes', '--mode=intra'], '--cache-sim=yes needs function mode (--mode=func)'),
    (['--collect-bus=yes', '--mode=inter'], '--collect-bus=yes needs function mode (--mode=func)'),
])
def test_bad_event_options_are_refused(tools, opts, message):
    tools.assert_refused(opts, message)


def test_straddling_miss_looks_up_the_whole_access_at_ll(tools):
    """A straddling load that misses D1 in one of its two lines looks both
    up at LL, as cachegrind does: each round, the line D1 still holds but
    LL lost (an LL-sized stride later) is an LL miss (tests/progs/straddle_ll.c).
    Every event equal to cachegrind's, in total and per line."""
    exe = tools.compile('straddle_ll.c', '-O1')
    opts = ['--cache-sim=yes', '--I1=32768,8,64', '--D1=4096,8,64', '--LL=16384,1,64']
    kg = tools.kgrind(exe, opts=[*opts, '--inline-frames=no'], out='kg.out.1')
    assert kg.returncode == 0, kg.stderr
    ref = callgrind_format.parse(cachegrind(tools, exe, opts, 'cg.out.1'))
    mine = kg.profile()
    assert mine.summary_events == ref.summary_events
    lines = own_source_events(mine, 'straddle_ll.c')
    assert lines == own_source_events(ref, 'straddle_ll.c')
    load = next(c for (fl, line), c in lines.items() if line == source_line('straddle_ll.c', 'sink += v'))
    # the line reads sink (a hit) and the straddling bytes
    assert (load['Dr'], load['D1mr'], load['DLmr']) == (2000, 1000, 1000)


def source_line(source, text):
    """The number of the line of tests/progs/<source> that holds text."""
    lines = (ROOT / 'tests' / 'progs' / source).read_text().splitlines()
    return next(i for i, line in enumerate(lines, 1) if text in line)
