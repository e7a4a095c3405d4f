"""--dump-instr=yes and --collect-jumps=yes in function mode:
per-instruction costs, calls= at the call instruction and jump=/jcnd= lines
as callgrind writes them with the same options. Expectations: callgrind
and cachegrind on the same binaries, objdump, and counts known from the
program's source (tests/progs/counted_jumps.c)."""
import collections
import math
import re
import subprocess

import pytest

import callgrind_format
from test_annotate import annotate  # noqa: F401
from conftest import PROGS, VALGRIND
from test_block_modes import JUMP_FUNCS, instr_costs, jump_counts
from test_callgrind_view import sections

POSITIONS = ['--dump-instr=yes', '--collect-jumps=yes']
COUNTED_FUNCS = {'main', 'loop', 'leaf'}     # tests/progs/counted_jumps.c
PASSES = 1000


@pytest.mark.parametrize('opts,message', [
    (['--dump-instr=perhaps'], "Invalid boolean value 'perhaps'"),
    (['--collect-jumps=1'], "Invalid boolean value '1'"),
    (['--collect-jumps=yes', '--cache-sim=yes'], '--cache-sim=yes with --collect-jumps=yes is not implemented yet'),
    (['--mode=intra', '--dump-instr=no'], 'the block modes (--mode=intra|inter) always write instruction positions'),
])
def test_bad_position_options(tools, opts, message):
    tools.assert_refused(opts, message)


def test_options_in_help():
    out = subprocess.run(VALGRIND.argv('kgrind', '--help'), env=VALGRIND.env(), capture_output=True, text=True).stdout
    assert re.search(r'^\s+--dump-instr=no\|yes\s+\S', out, re.M), out
    assert re.search(r'^\s+--collect-jumps=no\|yes\s+\S', out, re.M), out


def call_instrs(prof, callers):
    """{(caller function, callee function, call instruction): calls} summed
    over the contexts, for calls from `callers`."""
    out = collections.Counter()
    for (caller, callee, addr), n in prof.call_instrs.items():
        if callgrind_format.callee(caller) in callers:
            out[(callgrind_format.callee(caller), callgrind_format.callee(callee), addr)] += n
    return out


def own_lines(prof, source):
    return {k: v for k, v in prof.by_file_line().items() if k[0] == str(source)}


@pytest.mark.parametrize('opt', ['-O0', '-O2'])
def test_function_mode_equals_callgrind(tools, opt):
    """Per-instruction Ir summed over contexts, jumps (taken, executed) and
    calls per call instruction equal callgrind --dump-instr=yes
    --collect-jumps=yes for the program's own functions; the total and the
    per-line Ir of the program's file still equal cachegrind's."""
    exe = tools.compile('jumps.c', opt)
    kg = tools.kgrind(exe, opts=POSITIONS)
    assert kg.returncode == 0, kg.stderr
    cg = tools.reference('callgrind', exe, opts=POSITIONS)
    cache = tools.reference('cachegrind', exe)
    mine, ref, cache_ref = kg.profile(), cg.profile(), cache.profile()
    assert mine.header['positions'] == 'instr line'
    assert instr_costs(mine, JUMP_FUNCS) == instr_costs(ref, JUMP_FUNCS)
    expected = jump_counts(ref, JUMP_FUNCS)
    assert {k[3] for k in expected} == {True, False}      # jcnd= and jump= both occur
    sources = collections.Counter(k[1] for k in expected if k[4] == 'taken')
    assert max(sources.values()) >= 5                      # the switch's computed jump
    assert jump_counts(mine, JUMP_FUNCS) == expected
    calls = call_instrs(ref, JUMP_FUNCS)
    # main calls walk(40), walk(41), walk(42); walk(n) calls classify ceil(n / 3) times
    assert sum(calls.values()) == 3 + sum(math.ceil(n / 3) for n in (40, 41, 42))
    assert call_instrs(mine, JUMP_FUNCS) == calls
    assert mine.total() == cache_ref.summary == mine.totals
    src = PROGS / 'jumps.c'
    assert own_lines(mine, src) == own_lines(cache_ref, src) != {}


LOOP_FUNCS = {'main', 'find', 'bits', 'sum_until_negative'}    # tests/progs/loops.c


@pytest.mark.parametrize('opt', ['-O1', '-O2'])
def test_unrolled_loops_jumps_equal_callgrind(tools, opt):
    """Small loops (which VEX would unroll into one superblock) have the
    jumps callgrind counts, and no conditional jump is taken more often than
    it runs. Were loops unrolled with the option on, an unrolled loop's copies jumped back to its
    start inside the superblock, uncounted, and its exits' counters were
    read as reached counts (jcnd=37/1 in ld.so, 9456/9998 for 61460/65551
    here): kgrind turns unrolling off with --collect-jumps=yes."""
    exe = tools.compile('loops.c', opt)
    kg = tools.kgrind(exe, opts=POSITIONS)
    assert kg.returncode == 0, kg.stderr
    mine = kg.profile()
    ref = tools.reference('callgrind', exe, opts=POSITIONS).profile()
    assert all(j.taken <= j.executed for j in mine.jumps if j.cond)
    expected = jump_counts(ref, LOOP_FUNCS)
    assert sum(n for k, n in expected.items() if k[3] and k[4] == 'executed') > 10000
    assert jump_counts(mine, LOOP_FUNCS) == expected
    assert instr_costs(mine, LOOP_FUNCS) == instr_costs(ref, LOOP_FUNCS)


def own_jumps(prof, exe, leave_out=()):
    """{(from, to, conditional, 'taken'|'executed'): count} of the jumps in
    the executable's .text, summed over contexts (kgrind) or BBs, but those
    from leave_out."""
    start, end, _x = sections(exe)['.text']
    out = collections.Counter()
    for j in prof.jumps:
        if start <= j.from_addr < end and j.from_addr not in leave_out and \
                any(ob == str(exe) for ob, _fl in prof.function_homes[j.fn]):
            out[(j.from_addr, j.to_addr, j.cond, 'taken')] += j.taken
            out[(j.from_addr, j.to_addr, j.cond, 'executed')] += j.executed
    return out


def test_computed_jumps_without_symbols(tools):
    """A switch's computed jump in a function without a symbol (a stripped
    executable, as liblzma's and python3's static functions) is counted as
    callgrind counts it: it was left out, the block modes' rule (which trace
    functions with symbols only) applied to function mode (xz -9: 3.8
    million jumps of one switch missing)."""
    exe = tools.compile('jumps.c', '-O2', out='jumps_stripped')
    subprocess.run(['strip', str(exe)], check=True)
    mine = tools.kgrind(exe, opts=POSITIONS).profile()
    ref = tools.reference('callgrind', exe, opts=POSITIONS).profile()
    # callgrind names code without a symbol by its address alone: a name
    # that is code of several objects (main at 0x1050 and ld.so's) is left out
    shared = {j.from_addr for j in ref.jumps if len({ob for ob, _ in ref.function_homes[j.fn]}) > 1}
    expected = own_jumps(ref, exe, shared)
    sources = collections.Counter(k[0] for k in expected if k[3] == 'taken' and not k[2])
    assert max(sources.values()) >= 5      # the switch's computed jump, unnamed
    assert own_jumps(mine, exe, shared) == expected


def objdump_calls(exe, callee):
    """{(calling function, call instruction's address)} of direct calls to
    callee (objdump)."""
    out = subprocess.run(['objdump', '-d', '--no-show-raw-insn', str(exe)],
                         capture_output=True, text=True, check=True).stdout
    found, fn = set(), None
    for line in out.splitlines():
        m = re.match(r'^[0-9a-f]+ <(\S+)>:$', line)
        if m:
            fn = m.group(1)
        m = re.match(rf'^\s*([0-9a-f]+):\s+call\s+[0-9a-f]+ <{re.escape(callee)}>', line)
        if m:
            found.add((fn, int(m.group(1), 16)))
    return found


def function_ranges(exe):
    """{function: (start, end)} of the executable's own functions (nm -S)."""
    out = subprocess.run(['nm', '-S', str(exe)], capture_output=True, text=True, check=True).stdout
    ranges = {}
    for f in (l.split() for l in out.splitlines()):
        if len(f) == 4 and f[2] in 'tT':
            start = int(f[0], 16)
            ranges[f[3]] = (start, start + int(f[1], 16))
    return ranges


@pytest.fixture
def counted(tools):
    exe = tools.compile('counted_jumps.c', '-O0')
    kg = tools.kgrind(exe, PASSES, opts=POSITIONS)
    assert kg.returncode == 0, kg.stderr
    return exe, kg


def test_counts_known_from_the_source(tools, counted):
    """loop(n)'s for-condition runs n + 1 times and jumps back n times; its
    if is decided n times and one pass of three (ceil(n / 3)) calls leaf;
    main calls leaf once more. The calls are at the call instructions that
    objdump shows, and every cost of the program's own contexts lies in
    their functions (PLT stubs' instructions are the call's)."""
    exe, kg = counted
    prof = kg.profile()
    called = math.ceil(PASSES / 3)
    cond = {(j.taken, j.executed) for j in prof.jumps if callgrind_format.callee(j.fn) == 'loop' and j.cond}
    assert cond in ({(PASSES, PASSES + 1), (PASSES - called, PASSES)},
                    {(PASSES, PASSES + 1), (called, PASSES)}), cond
    leaf_calls = {(caller, addr): n for (caller, callee, addr), n in call_instrs(prof, COUNTED_FUNCS).items()
                  if callee == 'leaf'}
    sites = objdump_calls(exe, 'leaf')
    assert set(leaf_calls) == sites
    assert sorted(leaf_calls.values()) == [1, called]
    ranges = function_ranges(exe)
    positions = [(fn, addr) for (_ob, fn, addr) in prof.instrs if callgrind_format.callee(fn) in COUNTED_FUNCS]
    assert len(positions) > 30
    for fn, addr in positions:
        start, end = ranges[callgrind_format.callee(fn)]
        assert start <= addr < end, (fn, hex(addr))


def lines_past_the_loader(prof):
    """Ir per (object, file, line) of every object but the dynamic loader."""
    out = collections.Counter()
    for (ob, fl, _fn, line), ir in prof.lines.items():
        if 'ld-linux' not in ob:
            out[(ob, fl, line)] += ir
    return out


def test_readers(tools, counted, annotate):
    """The strict reader takes the profile (tools' parse); callgrind_annotate
    reads it without warnings, with the same total; kgrind_annotate
    annotates the source as it does a profile without instruction
    positions of the same program."""
    exe, kg = counted
    # An output name as long as the fixture's ('kgrind.out'): its length
    # moves the guest's start-up data. The dynamic loader's count still
    # depends on where the tool's own allocations (which differ with the
    # options) put the client's mappings: 155,844 against 155,858 in a
    # clone at another path, the program's own work identical. So its lines
    # are compared apart: every other object's lines exactly.
    # Physical frames, as with --collect-jumps=yes (no inlined levels).
    plain = tools.kgrind(exe, PASSES, opts=['--inline-frames=no'], out='plain0.out')
    assert plain.returncode == 0, plain.stderr
    mine, ref = kg.profile(), plain.profile()
    assert ref.header['positions'] == 'line' and not ref.jumps   # the default is unchanged
    assert lines_past_the_loader(mine) == lines_past_the_loader(ref)
    assert any(fl.endswith('counted_jumps.c') for (_ob, fl, _line) in lines_past_the_loader(mine))
    for extra in ([], ['--inclusive=yes'], ['--auto=yes']):
        ann = subprocess.run(['callgrind_annotate', *extra, str(kg.profile_path)],
                             capture_output=True, text=True, check=True)
        assert 'WARNING' not in ann.stderr and ann.stderr == '', ann.stderr
        total = re.search(r'^([\d,]+) \(100\.0%\)\s+PROGRAM TOTALS', ann.stdout, re.M)
        assert int(total.group(1).replace(',', '')) == mine.total()

    def annotated_source(path):
        r = annotate('--auto=yes', path)
        assert r.rc == 0 and r.err == '', r.err
        # Every count compares exactly; the shares of the thread's total
        # (the context comments' "(14.12%)") move with the loader's count
        # above, which differs between the two runs by tens of Ir.
        return re.sub(r'\(\d+(\.\d+)?%\)', '(share)', r.out[r.out.index('-- Annotated source:'):])
    text = annotated_source(kg.profile_path)
    assert 'counted_jumps.c' in text
    assert text == annotated_source(plain.profile_path)


def test_block_modes_collect_jumps_no(tools):
    """The block modes write jumps unless --collect-jumps=no, which drops
    them and leaves the per-instruction costs as they were."""
    exe = tools.compile('jumps.c', '-O2')
    with_jumps = tools.kgrind(exe, opts=['--mode=intra'], out='with.out')
    without = tools.kgrind(exe, opts=['--mode=intra', '--collect-jumps=no'], out='without.out')
    assert with_jumps.returncode == without.returncode == 0, without.stderr
    a, b = with_jumps.profile(), without.profile()
    assert a.header['positions'] == b.header['positions'] == 'instr line'
    assert jump_counts(a, JUMP_FUNCS) and not b.jumps
    assert a.instrs == b.instrs
