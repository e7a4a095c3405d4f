"""Tiered instrumentation (docs/design/tiers.md): a block runs at tier 1
(helper calls) until it has run --tier-threshold times, then leaves before
its first instruction and runs again, retranslated, at tier 2 (the inline
fast path). Both tiers count in the same counters, frames and transitions,
so a run that switches tiers must write exactly the profile of a run that
never does (--tiering=no), whatever the threshold: the switch falls in the
middle of hot loops, recursion, signal handlers, coroutines, longjmp and
exception unwinding, and code checked for modification (--smc-check=all,
run-time generated code rewritten between calls)."""
import re

import pytest

# name: (source, compiler flags, program arguments, kgrind options); every
# run in physical frames: tiering applies to them only (with inlined
# levels, the default, every block is translated at tier 2)
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

STATS = re.compile(r'kgrind tiers: threshold (\d+); translations: tier 1 (\d+), tier 2 (\d+) \((\d+) promoted\)')
PID_LINE = re.compile(r'^pid: \d+$', re.M)


def without_pid(path):
    return PID_LINE.sub('pid:', path.read_text())


@pytest.mark.parametrize('name', list(PROGRAMS))
def test_switching_tiers_keeps_every_count(tools, name):
    """Each threshold's profile equals the one of a run that never tiers (one
    reference run for all thresholds)."""
    source, flags, args, opts = PROGRAMS[name]
    exe = tools.compile(source, *flags)
    native = tools.native(exe, *args)
    opts = [*opts, '--inline-frames=no']
    never = tools.kgrind(exe, *args, opts=[*opts, '--tiering=no'], out='never.out')
    assert never.returncode == native.returncode == 0, never.stderr
    assert never.stdout == native.stdout
    for threshold in THRESHOLDS:
        tiered = tools.kgrind(exe, *args, opts=[*opts, '--tiering=yes', f'--tier-threshold={threshold}',
                                                '--stats=yes'], out=f'tiered-{threshold}.out')
        assert tiered.returncode == 0, (threshold, tiered.stderr)
        assert tiered.stdout == native.stdout, threshold
        stats = STATS.search(tiered.stderr)
        assert stats, tiered.stderr
        assert int(stats.group(1)) == threshold
        tier_one, tier_two, promoted = map(int, stats.groups()[1:])
        assert tier_one > 0 and tier_two >= promoted, threshold
        if threshold <= 7:
            # blocks switched tiers while the program ran
            assert promoted > 50, threshold
        assert without_pid(tiered.profile_path) == without_pid(never.profile_path), threshold


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
