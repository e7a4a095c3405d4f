"""--inline-levels=records (docs/design/performance.md, "Inlined levels
without frames"): runs of inlined code count per physical context and the
levels' numbers are derived when a profile is written, with level frames
only under calls made from inlined code. The profile is the one the level
frames give (--inline-levels=frames, itself checked against an oracle
independent of kgrind in tests/test_inline_frames.py), byte for byte but for
the command line, wherever levels are entered and left abruptly (recursion
and signals from inside a level, longjmp, coroutines, exceptions, threads,
fork, regions and dumps), and every context equals that oracle too."""
import collections
import re

import pytest

import callgrind_format
import ksf_records
import test_inline_frames
from conftest import ROOT, VALGRIND
from inline_oracle import Oracle, kgrind_contexts
from testdeps import debian_tool

INLINE_FLAGS = test_inline_frames.FLAGS
REQUESTS = ['-O2', '-I', str(ROOT / 'include'), '-I', VALGRIND.includedir]   # client requests
RECORDS = '--inline-levels=records'
FRAMES = '--inline-levels=frames'

# name: (source, compiler flags, program arguments, kgrind options)
PROGRAMS = {
    'hostile': ('inline_hostile.c', INLINE_FLAGS, ['300'], []),
    'crossings': ('inline_crossings.c', INLINE_FLAGS, ['100', '4'], []),
    'loopback': ('inline_loopback.c', INLINE_FLAGS, ['50', '20'], []),
    'nesting': ('inline_nesting.c', INLINE_FLAGS, ['50'], []),
    'two-nodes': ('inline_two_nodes.c', INLINE_FLAGS, ['2000'], []),
    'stl': ('inline_maps.cpp', ['-O2'], [], []),
    'templates': ('templates.cpp', ['-O2'], [], []),
    'exceptions': ('exceptions.cpp', ['-O2'], [], []),
    'throw-deep': ('throw_deep.cpp', ['-O2'], [], []),
    'signals': ('self_signals.c', ['-O2'], ['more'], []),
    'siglongjmp': ('siglongjmp.c', ['-O2'], [], []),
    'altstack': ('altstack.c', ['-O2'], [], []),
    'coroutines': ('coroutines.c', ['-O2'], [], []),
    'longjmp': ('longjmp_deep.c', ['-O2'], ['300'], []),
    'tail-calls': ('tailcall_indirect.c', ['-O2'], [], []),
    'threads': ('threads.c', ['-O2'], [], []),
    'fork': ('fork_forest.c', REQUESTS, [], []),
    'regions': ('roi_rec.c', ['-O2'], [], ['--toggle-collect=rec']),
    'region-dumps': ('roi_dumps.c', REQUESTS, [], []),
}
# k = 4 and inf: the body's contexts are a separate view (--view-k=2), whose
# nodes several k-SF activations share: records are kept per physical
# transition. At k = inf no frames are counted: a node's inclusive cost is
# its transitions' that are not rolled.
KS = ['1', '2', '4', 'inf']
# Every program at k = 2, the ones with inlined code of their own at every k.
OWN_LEVELS = {'hostile', 'crossings', 'loopback', 'nesting', 'two-nodes', 'stl'}
CASES = [(name, k) for name in PROGRAMS for k in KS if k == '2' or name in OWN_LEVELS]

# What differs in the text without the counts differing: the command line
# and process, the order of a function's call lines (the call edges' order
# of creation), and the k-SF nodes left out for counting nothing (levels
# make none while counting is off: their runs count nowhere then).
CMD_OR_PID = re.compile(r'^(cmd|pid): .*$', re.M)
LEFT_OUT = re.compile(r'^desc: thread \d+ left out: .*$', re.M)
FOUND = re.compile(r'kgrind helpers: kg_frameless_find (\d+) \((\d+) variants\)')


def what_it_says(path):
    """A profile as its readers see it: its header and summary lines, every
    line's, instruction's and call's costs and events
    (tests/callgrind_format.py), and each thread's k-SF nodes by their root
    paths with their calls, costs and events."""
    text = LEFT_OUT.sub('', CMD_OR_PID.sub('', path.read_text()))
    header = sorted(line for line in text.splitlines() if re.match(r'(desc|summary|totals|events|positions):', line))
    body = callgrind_format.parse(path)
    nodes = {}
    for forest in ksf_records.parse(path).forests:
        paths = collections.Counter()
        for i, (nid, (_parent, _label, calls, excl, incl)) in enumerate(forest.nodes.items()):
            names = tuple(forest.root_path(nid))
            # Events beyond Ir, exclusive and inclusive, in the nodes' order.
            events = [sorted(e[i].items()) if e else None for e in (forest.events, forest.events_incl)]
            # (Not by their trees' order: with --join-threads=yes the
            # threads' scheduling orders the joined forest's trees.)
            paths[(names, calls, excl, incl, repr(events))] += 1
        nodes[forest.tid] = paths
    events = dict(body.event_lines), sorted((a, b, sorted(c.items())) for a, b, c in body.call_events)
    per_instruction = body.instrs, dict(body.instr_events), body.call_instrs
    return header, body.lines, sorted(body.calls), body.call_site_costs, events, per_instruction, nodes


def profile_text(run):
    return what_it_says(run.profile_path)


def profiles_of(tools, which):
    """The profiles a run wrote as `which`.<pid>[.<dump>] (a fork's child
    writes its own, dumps theirs), keyed by the rank of their pid and the
    dump's number."""
    paths = list(tools.dir.glob(which + '.*'))
    pids = sorted({int(p.name.split('.')[1]) for p in paths})
    return {(pids.index(int(p.name.split('.')[1])), *p.name.split('.')[2:]): what_it_says(p) for p in paths}


@pytest.mark.parametrize('name, k', CASES)
def test_records_write_the_profile_of_level_frames(tools, name, k):
    source, flags, args, opts = PROGRAMS[name]
    exe = tools.compile(source, *flags)
    native = tools.native(exe, *args)
    assert_records_write_frames_profile(tools, exe, args, [*opts, f'--k={k}'], native)


def assert_records_write_frames_profile(tools, exe, args, opts, native):
    # Equal-length names: the name's length moves start-up work.
    frames = tools.kgrind(exe, *args, opts=[*opts, FRAMES, '--stats=yes'], out='levels-f.%p')
    records = tools.kgrind(exe, *args, opts=[*opts, RECORDS, '--stats=yes'], out='levels-r.%p')
    for run in (frames, records):
        assert run.returncode == native.returncode, run.stderr
        assert run.stdout == native.stdout
    found = FOUND.search(records.stderr)
    assert found and int(found.group(1)) > 0, records.stderr   # runs counted in records
    assert not FOUND.search(frames.stderr), frames.stderr
    assert profiles_of(tools, 'levels-r') == profiles_of(tools, 'levels-f')


# Events beyond Ir: the records' miss counters and inclusive events, and the
# level frames' clocks under calls from inlined code. Not `threads`: its
# threads share the simulated caches in an order the scheduler chooses, so
# two runs' misses differ whatever counts them.
EVENTS = ['--cache-sim=yes', '--branch-sim=yes', '--collect-bus=yes']
EVENT_PROGRAMS = ['hostile', 'nesting', 'stl', 'signals', 'exceptions', 'fork', 'regions', 'region-dumps']


@pytest.mark.parametrize('name, k', [(name, '2') for name in EVENT_PROGRAMS] +
                         [('hostile', 'inf'), ('stl', 'inf'), ('signals', 'inf')])
def test_records_with_events_write_the_profile_of_level_frames(tools, name, k):
    source, flags, args, opts = PROGRAMS[name]
    exe = tools.compile(source, *flags)
    native = tools.native(exe, *args)
    assert_records_write_frames_profile(tools, exe, args, [*opts, f'--k={k}', *EVENTS], native)


# --join-threads=yes: every thread counts in one forest with transitions of
# its own, so records are kept per physical transition.
@pytest.mark.parametrize('name, k', [('threads', '2'), ('fork', '2'), ('hostile', '2'), ('stl', '2'),
                                     ('signals', '2'), ('threads', 'inf'), ('stl', 'inf')])
def test_records_in_joined_threads_write_the_profile_of_level_frames(tools, name, k):
    source, flags, args, opts = PROGRAMS[name]
    exe = tools.compile(source, *flags)
    native = tools.native(exe, *args)
    assert_records_write_frames_profile(tools, exe, args, [*opts, f'--k={k}', '--join-threads=yes'], native)


# --dump-instr=yes: a run's Ir from its instructions' flush points, every
# instruction's cost (and events) in the level's context.
@pytest.mark.parametrize('name, events', [('hostile', []), ('stl', []), ('fork', []), ('regions', []),
                                          ('stl', EVENTS), ('nesting', EVENTS)])
def test_records_per_instruction_write_the_profile_of_level_frames(tools, name, events):
    source, flags, args, opts = PROGRAMS[name]
    exe = tools.compile(source, *flags)
    native = tools.native(exe, *args)
    assert_records_write_frames_profile(tools, exe, args, [*opts, '--k=2', '--dump-instr=yes', *events], native)




@pytest.mark.parametrize('k', KS)
def test_levels_entered_below_their_own_context(tools, k):
    """tests/progs/inline_nesting.c enters level contexts both below an
    open activation of the same context and not, in one physical context:
    at k = 1 walk's recursion from its inlined visit and its calls from
    other's, at k = 1 and 2 inner's calls from outer's and shim's chains,
    which share the level contexts of inner's own. Such a run counts in a
    variant of its record (--stats=yes counts the look-ups that found one;
    with the plain record the level's context inclusive cost would hold the
    inner activation's cost twice), and the profile is the level frames'."""
    exe = tools.compile('inline_nesting.c', *INLINE_FLAGS)
    frames = tools.kgrind(exe, '50', opts=[f'--k={k}', FRAMES], out='levels-f.out')
    records = tools.kgrind(exe, '50', opts=[f'--k={k}', RECORDS, '--stats=yes'], out='levels-r.out')
    assert records.stdout == frames.stdout == '300 50 150\n'
    found = FOUND.search(records.stderr)
    assert found, records.stderr
    assert (int(found.group(2)) > 0) == (k in ('1', '2'))
    assert profile_text(records) == profile_text(frames)


@pytest.mark.parametrize('source, args', [('inline_levels.c', []), ('inline_crossings.c', ['100', '1'])])
def test_records_contexts_equal_oracle(tools, source, args):
    """Every inline-extended context's Ir equals the oracle's (callgrind's
    per-instruction Ir per physical context and llvm-symbolizer's inline
    chains) at k = 1, 2 and 3."""
    exe = tools.compile(source, *INLINE_FLAGS)
    cl = tools.reference('callgrind', exe, *args,
                         opts=['--dump-instr=yes', '--separate-callers=40', '--separate-recs=1'])
    assert cl.returncode == 0, cl.stderr
    oracle = Oracle(cl.profile_path, exe, debian_tool('llvm-symbolizer-14', 'llvm-14'))
    for k in (1, 2, 3):
        kg = tools.kgrind(exe, *args, opts=[f'--k={k}', RECORDS], out=f'kgrind.out.{k}')
        assert kg.returncode == 0, kg.stderr
        expected, ambiguous = oracle.contexts(k)
        assert not ambiguous, ambiguous
        mine = {c: ir for c, ir in kgrind_contexts(kg.profile_path, k).items() if oracle.own(c)}
        assert mine == dict(expected), k
        assert any(n.endswith(' [inlined]') for c in expected for n in c)


@pytest.mark.parametrize('k, records', [('2', True), ('inf', False)])
def test_default_is_records_at_finite_k(tools, k, records):
    """Without --inline-levels: records at a finite k, level frames at
    k = inf (a record per calling context costs more than it saves where
    the inlined code is libc's: docs/design/performance.md)."""
    exe = tools.compile('inline_hostile.c', *INLINE_FLAGS)
    run = tools.kgrind(exe, '30', opts=[f'--k={k}', '--stats=yes'], out='default.out')
    assert run.returncode == 0, run.stderr
    found = FOUND.search(run.stderr)
    assert bool(found and int(found.group(1)) > 0) == records, run.stderr


@pytest.mark.parametrize('opts, why', [
    (['--inline-levels=stack'], '--inline-levels takes frames or records'),
    ([RECORDS, '--tiering=yes'], '--tiering=yes tiers physical frames only'),
    ([RECORDS, '--inline-frames=no'], 'there are no inlined levels'),
    ([RECORDS, '--mode=intra'], 'there are no inlined levels'),
])
def test_records_refuse_what_they_cannot_count_yet(tools, opts, why):
    tools.assert_refused(opts, why)
