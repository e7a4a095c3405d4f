"""Tiered instrumentation (docs/design/tiers.md): a block runs at tier 1
(helper calls: for every block with --tiering=yes, for inlined levels'
steps with --tiering=levels) until it has run --tier-threshold times (with
--tiering=levels: and called the levels' helper once in 8 runs at least),
then leaves before
its first instruction and runs again, retranslated, at tier 2 (the inline
fast path). Both tiers count in the same counters, frames and transitions,
so a run that switches tiers must write exactly the profile of a run that
never does (--tiering=no), whatever the threshold: the switch falls in the
middle of hot loops, recursion, signal handlers, coroutines, longjmp and
exception unwinding, and code checked for modification (--smc-check=all,
run-time generated code rewritten between calls)."""
import collections
import re

import pytest

import ksf_records

# --tiering=yes, name: (source, compiler flags, program arguments, kgrind
# options); every run in physical frames: tiering every block applies to
# them only (inlined levels have --tiering=levels, below)
PROGRAMS = {
    'loops': ('loops.c', ['-O2'], [], []),
    'recursion': ('mutual_rec.c', ['-O1'], [], []),
    'deep-recursion': ('deeprec.c', ['-O1'], ['3000'], ['--k=inf']),
    'signals': ('self_signals.c', ['-O1'], ['more'], []),
    'siglongjmp': ('siglongjmp.c', ['-O1'], [], []),
    'coroutines': ('coroutines.c', ['-O1'], [], ['--k=3']),
    'longjmp': ('longjmp_deep.c', ['-O1'], ['300'], []),
    'exceptions': ('exceptions.cpp', ['-O1'], [], ['--k=inf']),
    'jit-smc-all': ('jit.c', ['-O1'], [], ['--smc-check=all']),
    'tail-calls': ('tailcall.c', ['-O2'], [], ['--dump-instr=yes', '--collect-jumps=yes']),
}

THRESHOLDS = [1, 2, 7, 1000]
# The fewest blocks promoted at the low thresholds: with --tiering=levels
# only those that called the levels' helper once in 8 runs (at threshold 7,
# 30-60 of these programs' blocks).
MIN_PROMOTED = {'yes': {1: 50, 2: 50, 7: 50}, 'levels': {1: 50, 2: 50, 7: 20}}

# --tiering=levels (the default): programs with inlined levels of their own
# (-O2; -no-pie -fno-plt as tests/test_inline_frames.py builds them), the
# levels as frames (--inline-levels=frames; records have no steps); the
# superblocks that step levels start with the steps in the levels' helper
# and get the inline steps when hot. Each switch falls where its program's
# levels are entered and left abruptly: a hot loop, recursion from inside a
# level, a signal raised from a level, longjmp out of two, swapcontext from
# inside them, several levels at once, a jump back to the entry from a
# level, the STL at -O2.
INLINE_FLAGS = ['-O2', '-no-pie', '-fno-plt']
FRAMES = '--inline-levels=frames'
LEVEL_PROGRAMS = {
    'hostile': ('inline_hostile.c', INLINE_FLAGS, ['300'], [FRAMES]),
    'hostile-kinf': ('inline_hostile.c', INLINE_FLAGS, ['300'], ['--k=inf']),
    'crossings': ('inline_crossings.c', INLINE_FLAGS, ['100', '4'], ['--k=3', FRAMES]),
    'loopback': ('inline_loopback.c', INLINE_FLAGS, ['50', '20'], ['--k=inf']),
    'stl': ('inline_maps.cpp', ['-O2'], [], [FRAMES]),
}
LEVEL_STATS = re.compile(r"kgrind tiers: inlined levels' steps, threshold (\d+); "
                         r'translations: tier 1 (\d+), tier 2 (\d+) \((\d+) promoted\)')

STATS = re.compile(r'kgrind tiers: threshold (\d+); translations: tier 1 (\d+), tier 2 (\d+) \((\d+) promoted\)')
PID_LINE = re.compile(r'^pid: \d+$', re.M)


def without_pid(path):
    return PID_LINE.sub('pid:', path.read_text())


def assert_switches_keep_every_count(tools, program, tiering, stats_line):
    """Each threshold's profile equals the one of a run that never tiers (one
    reference run for all thresholds); blocks switched tiers while the
    program ran (stats_line: the tiers' statistics of --stats=yes)."""
    source, flags, args, opts = program
    exe = tools.compile(source, *flags)
    native = tools.native(exe, *args)
    never = tools.kgrind(exe, *args, opts=[*opts, '--tiering=no'], out='never.out')
    assert never.returncode == native.returncode == 0, never.stderr
    assert never.stdout == native.stdout
    for threshold in THRESHOLDS:
        tiered = tools.kgrind(exe, *args, opts=[*opts, f'--tiering={tiering}', f'--tier-threshold={threshold}',
                                                '--stats=yes'], out=f'tiered-{threshold}.out')
        assert tiered.returncode == 0, (threshold, tiered.stderr)
        assert tiered.stdout == native.stdout, threshold
        stats = stats_line.search(tiered.stderr)
        assert stats, tiered.stderr
        assert int(stats.group(1)) == threshold
        tier_one, tier_two, promoted = map(int, stats.groups()[1:])
        assert tier_one > 0 and tier_two >= promoted, threshold
        if threshold in MIN_PROMOTED[tiering]:
            assert promoted > MIN_PROMOTED[tiering][threshold], threshold
        assert without_pid(tiered.profile_path) == without_pid(never.profile_path), threshold
    return never


@pytest.mark.parametrize('name', list(PROGRAMS))
def test_switching_tiers_keeps_every_count(tools, name):
    source, flags, args, opts = PROGRAMS[name]
    assert_switches_keep_every_count(tools, (source, flags, args, [*opts, '--inline-frames=no']), 'yes', STATS)


@pytest.mark.parametrize('name', list(LEVEL_PROGRAMS))
def test_switching_level_tiers_keeps_every_count(tools, name):
    """With the levels' steps tiered, the same against runs whose steps are
    inline from the start."""
    never = assert_switches_keep_every_count(tools, LEVEL_PROGRAMS[name], 'levels', LEVEL_STATS)
    assert ' [inlined]' in never.profile_path.read_text()


def test_level_tiering_is_the_default(tools):
    """A plain run with level frames tiers the levels' steps (the program's own inlined
    functions and libc's) at threshold 1000, with the entries the program
    counts of each inlined function whose body gcc keeps in one piece
    (descend's is split around rec's own push of %rbx, so each call enters
    it twice), and the profile of --tiering=no."""
    exe = tools.compile('inline_hostile.c', *INLINE_FLAGS)
    run = tools.kgrind(exe, '30', opts=[FRAMES, '--stats=yes'])
    assert run.returncode == 0, run.stderr
    stats = LEVEL_STATS.search(run.stderr)
    assert stats and int(stats.group(1)) == 1000 and int(stats.group(2)) > 0, run.stderr
    counts = dict(zip(*[iter(run.stdout.split()[1:])] * 2))
    calls = collections.Counter()
    for forest in ksf_records.parse(run.profile_path).forests:
        for context, n in ksf_records.kccf(forest, 2, 0).items():
            calls[context[-1]] += n
    for fn in ('step', 'handle', 'raise_from_level', 'bail', 'guard', 'yield', 'resume'):
        assert calls[f'{fn} [inlined]'] == int(counts[fn]), fn
    never = tools.kgrind(exe, '30', opts=[FRAMES, '--tiering=no'], out='never.out')
    assert without_pid(run.profile_path) == without_pid(never.profile_path)


HELPER_CALLS = re.compile(r'kgrind helpers: kg_inline_enter (\d+),')


def test_levels_tier_promotes_the_blocks_that_call_its_helper(tools):
    """A superblock is promoted to the inline steps by the levels' helper
    calls it makes, not by its runs: a loop that runs wholly inside one
    inlined function (stay) never changes levels and stays at tier 1 however
    long it runs, with no helper call an iteration; a loop that enters two
    inlined functions at every iteration (step) calls the helper and is
    promoted once it has run 1000 times (the default threshold). Each run's profile equals --tiering=no's."""
    exe = tools.compile('inline_tier_loops.c', *INLINE_FLAGS)
    seen = {}
    for loop in ('stay', 'step'):
        for n in (10, 1000000):
            run = tools.kgrind(exe, loop, str(n), opts=[FRAMES, '--stats=yes'], out=f'{loop}-{n}.out')
            assert run.returncode == 0 and run.stdout == f'{loop} {n}\n', run.stderr
            stats, helper = LEVEL_STATS.search(run.stderr), HELPER_CALLS.search(run.stderr)
            assert stats and helper, run.stderr
            seen[loop, n] = (int(stats.group(4)), int(helper.group(1)))
            if n > 10:
                never = tools.kgrind(exe, loop, str(n), opts=[FRAMES, '--tiering=no'], out=f'{loop}-never.out')
                assert without_pid(run.profile_path) == without_pid(never.profile_path), loop
    assert seen['stay', 1000000] == seen['stay', 10], seen
    assert seen['step', 1000000][0] > seen['step', 10][0], seen
    # A helper call an iteration for the threshold's (1000) runs at least.
    assert seen['step', 1000000][1] >= seen['step', 10][1] + 1000, seen


def test_promotion_takes_level_steps_from_the_helper(tools):
    """--stats=yes counts the levels' helper calls: every step a superblock
    makes at tier 1 is one, so a run that never promotes calls it more than
    one that promotes at once, and physical frames never call it."""
    exe = tools.compile('inline_hostile.c', *INLINE_FLAGS)
    calls = {}
    for name, opts in [('never', [FRAMES, '--tier-threshold=1000000000']), ('at-once', [FRAMES, '--tier-threshold=1']),
                       ('physical', ['--inline-frames=no'])]:
        run = tools.kgrind(exe, '300', opts=[*opts, '--stats=yes'], out=f'{name}.out')
        assert run.returncode == 0, run.stderr
        found = HELPER_CALLS.search(run.stderr)
        assert found, run.stderr
        calls[name] = int(found.group(1))
    assert calls['physical'] == 0 < calls['at-once'] < calls['never'], calls


@pytest.mark.parametrize('opts,why', [
    (['--tiering=yes'], 'inlined levels are tiered by --tiering=levels'),
    (['--tiering=yes', '--inline-frames=no', '--cache-sim=yes'], 'events beyond Ir are counted at tier 2 only'),
    (['--tiering=yes', '--mode=intra'], 'the block modes'),
])
def test_tiering_every_block_needs_physical_frames_and_ir(tools, opts, why):
    tools.assert_refused(opts, why)


def test_tiering_stats_absent_without_tiering(tools):
    exe = tools.compile('prog4.c', '-O0')
    run = tools.kgrind(exe, opts=['--tiering=no', '--stats=yes'])
    assert run.returncode == 0
    assert 'kgrind tiers:' not in run.stderr


@pytest.mark.parametrize('value', ['0', '-3', 'many', '', '1x', '10000000000'])
def test_bad_threshold_is_refused(tools, value):
    tools.assert_refused([f'--tier-threshold={value}'],
                         '--tier-threshold takes a whole number of runs from 1 to 1000000000')


def test_bad_tiering_value_is_refused(tools):
    exe = tools.compile('prog4.c', '-O0')
    run = tools.kgrind(exe, opts=['--tiering=maybe'], out=None)
    assert run.returncode == 1
    assert '--tiering=maybe' in run.stderr
