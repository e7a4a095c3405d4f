"""Inlined functions as context levels (--inline-frames, docs/design/
shadow-stacks.md, "Inlined levels"): every inline-extended context's Ir
equals an oracle independent of kgrind (tests/inline_oracle.py: callgrind's
per-instruction Ir per physical context, llvm-symbolizer's inline chains) at
k = 1, 2, 3 and inf; entries of inlined functions equal the program's own
counts where the compiler keeps an inlined body in one piece."""
import collections
import pathlib
import re
import subprocess

import pytest

import ksf_records
from inline_oracle import Oracle, kgrind_contexts
from test_annotate import annotate_cmd
from testdeps import debian_tool

KS = [1, 2, 3, None]
# -no-pie: callgrind's addresses are the executable's own (llvm-symbolizer's);
# -fno-plt: no stub between a call and its callee.
FLAGS = ['-O2', '-no-pie', '-fno-plt']


def k_opt(k):
    return f'--k={"inf" if k is None else k}'


def check_against_oracle(tools, exe, args=()):
    cl = tools.reference('callgrind', exe, *args,
                         opts=['--dump-instr=yes', '--separate-callers=40', '--separate-recs=1'])
    assert cl.returncode == 0, cl.stderr
    oracle = Oracle(cl.profile_path, exe, debian_tool('llvm-symbolizer-14', 'llvm-14'))
    compared = 0
    for k in KS:
        kg = tools.kgrind(exe, *args, opts=[k_opt(k), '--inline-frames=yes'], out=f'kgrind.out.{k}')
        assert kg.returncode == 0, kg.stderr
        assert kg.stdout == cl.stdout
        assert 'desc: inline frames: yes' in kg.profile_path.read_text()
        expected, ambiguous = oracle.contexts(k)
        mine = kgrind_contexts(kg.profile_path, k)
        mine = {c: ir for c, ir in mine.items() if oracle.own(c)}
        assert not ambiguous, ambiguous
        assert dict(mine) == dict(expected), k
        assert any(n.endswith(' [inlined]') for c in expected for n in c)
        compared += len(expected)
    return compared


def test_own_program_contexts_equal_oracle(tools):
    exe = tools.compile('inline_levels.c', *FLAGS)
    assert check_against_oracle(tools, exe) > 0


HELPER_COUNTS = re.compile(r'kgrind helpers: .*kg_run_counters (\d+), kg_block_start \d+, kg_block_counters (\d+),')


def test_level_context_in_two_forest_nodes(tools):
    """tests/progs/inline_two_nodes.c alternates between two k-SF nodes of
    one level's k-context at every iteration: the contexts equal the
    oracle's, and with level frames the level's counters are found in each
    node's array (kg_counters.cpp), with no helper call an iteration (the
    counter helpers' calls do not grow with the iterations)."""
    exe = tools.compile('inline_two_nodes.c', *FLAGS)
    assert check_against_oracle(tools, exe, ['2000']) > 0
    calls = {}
    for n in (10, 100000):
        run = tools.kgrind(exe, str(n), opts=['--inline-levels=frames', '--stats=yes'], out=f'stats-{n}.out')
        assert run.returncode == 0 and run.stdout == f'{n}\n', run.stderr
        found = HELPER_COUNTS.search(run.stderr)
        assert found, run.stderr
        calls[n] = int(found.group(1)) + int(found.group(2))
    assert calls[100000] < calls[10] + 100, calls


GTEST_SAMPLES = pathlib.Path('/usr/src/googletest/googletest/samples')


def gtest_sample(tools, *sources):
    """One of googletest's samples (Debian's libgtest-dev: its sources, and
    libgtest.a, which has no debug info) built with -g -O2: gtest's header
    templates and the sample's own code inlined into the tests."""
    paths = [GTEST_SAMPLES / s for s in sources]
    if not all(p.exists() for p in paths):
        pytest.skip('googletest\'s samples are not installed (libgtest-dev)')
    exe = tools.dir / paths[-1].stem
    subprocess.run(['g++', '-g', *FLAGS, *map(str, paths), '-o', str(exe), '-lgtest', '-lgtest_main', '-pthread'],
                   check=True, capture_output=True, text=True)
    return exe


@pytest.mark.parametrize('sources', [('sample1.cc', 'sample1_unittest.cc'), ('sample3_unittest.cc',)],
                         ids=['sample1', 'sample3'])
def test_googletest_samples_contexts_equal_oracle(tools, sources):
    assert check_against_oracle(tools, gtest_sample(tools, *sources), ['--gtest_print_time=0']) > 0


@pytest.mark.parametrize('k', ['inf', '3'])
def test_entries_of_inlined_functions_are_the_programs_counts(tools, k):
    """outer and sq inlined in a loop (1000 calls each), tick in a branch
    taken 334 times, calling bump: the program prints its own counts. At
    k = 3 (the finite layout, whose levels inline IR pushes from shared kid
    arrays) the longest context, run > work > outer > sq, still has all its
    callers."""
    exe = tools.compile('inline_levels.c', *FLAGS)
    kg = tools.kgrind(exe, opts=[f'--k={k}', '--inline-frames=yes'])
    _r, n_sq, n_outer, n_tick = map(int, kg.stdout.split())
    prof = ksf_records.parse(kg.profile_path)
    calls = {}
    for forest in prof.forests:
        calls.update(ksf_records.kccf(forest, None, None))
    under = {c[c.index('run'):]: n for c, n in calls.items() if 'run' in c}
    assert under == {
        ('run',): 1,
        ('run', 'work'): 1,
        ('run', 'work', 'outer [inlined]'): n_outer,
        ('run', 'work', 'outer [inlined]', 'sq [inlined]'): n_sq,
        ('run', 'branchy'): 1,
        ('run', 'branchy', 'tick [inlined]'): n_tick,
        ('run', 'branchy', 'tick [inlined]', 'bump'): n_tick,
    }
    assert (n_sq, n_outer, n_tick) == (1000, 1000, 334)


def crossing_paths(n, depth):
    """tests/progs/inline_crossings.c's root paths from main and their
    entries (the k=inf k-CCF): deep enters a > b > c > d and pair's levels n
    times each; rec(depth), called n times, enters x > y > z and calls
    itself from z, depth calls deep."""
    paths = collections.Counter()
    deep = ('main', 'deep')
    paths[deep] += 1
    for tail in (('a', 'b', 'c', 'd'), ('pair', 'a', 'b', 'c', 'd'), ('pair', 'e', 'f', 'g')):
        for i in range(len(tail)):
            paths[deep + tuple(f + ' [inlined]' for f in tail[:i + 1])] = n
    path = ('main',)
    for _ in range(depth):
        path += ('rec',)
        paths[path] += n
        for level in ('x', 'y', 'z'):
            path += (level + ' [inlined]',)
            paths[path] += n
    return paths


CROSSING_FUNCTIONS = {'deep', 'rec'} | {f + ' [inlined]' for f in 'abcdefgxyz'} | {'pair [inlined]'}


def test_multi_level_crossings_equal_oracle(tools):
    """Crossings of several levels at once (tests/progs/inline_crossings.c:
    four levels pushed at once and popped at once, four popped and three
    pushed, three popped by a jump), which inline IR takes in one unrolled
    step where the superblock's previous run's levels are known: every
    context's Ir equals the oracle's at k = 1, 2, 3 and inf. Without
    recursion (depth 1), which the oracle's callgrind contexts merge."""
    exe = tools.compile('inline_crossings.c', *FLAGS)
    assert check_against_oracle(tools, exe, ['100', '1']) > 0


@pytest.mark.parametrize('k', [None, 3, 2])
def test_multi_level_crossings_count_entries(tools, k):
    """Each inlined level of tests/progs/inline_crossings.c is entered as
    often as the program says (it keeps each inlined body in one piece):
    the k-CCF's entries equal the program's paths' entries, cut to their
    last k callers and summed. rec recurses four deep: its calls from z
    push a frame above the levels, whose return leaves z's level on top."""
    exe = tools.compile('inline_crossings.c', *FLAGS)
    kg = tools.kgrind(exe, '100', '4', opts=[k_opt(k), '--inline-frames=yes'])
    assert kg.returncode == 0, kg.stderr
    _r, n_d, n_g, n_z, n_own, n_rec = map(int, kg.stdout.split())
    assert (n_d, n_g, n_z, n_own, n_rec) == (200, 100, 400, 200, 400)
    expected = collections.Counter()
    for path, n in crossing_paths(100, 4).items():
        expected[path if k is None else path[-(k + 1):]] += n
    prof = ksf_records.parse(kg.profile_path)
    calls = collections.Counter()
    for forest in prof.forests:
        calls.update(ksf_records.kccf(forest, k, k))
    mine = {(c[c.index('main'):] if 'main' in c else c): n for c, n in calls.items() if c[-1] in CROSSING_FUNCTIONS}
    assert mine == dict(expected)


def inline_chain(symbolizer, exe, addr):
    """llvm-symbolizer --inlining's functions at addr, innermost first."""
    out = subprocess.run([symbolizer, '--inlining', '--functions=linkage', '-e', str(exe), hex(addr)],
                         capture_output=True, text=True, check=True).stdout
    return out.split('\n')[0::2][:-1] if out.strip() else []


@pytest.mark.parametrize('k', [None, 2, 1])
def test_jump_back_to_entry_from_a_level_ends_the_level(tools, k):
    """tests/progs/inline_loopback.c: walk's first instruction, its own
    code, is reached by an indirect jump from hop's level inlined into it
    (premise checked with llvm-symbolizer); kgrind takes the jump for a loop
    of walk's, whose first block must end the level: hop is entered as
    often as the program counts, each time from walk's own code, and walk
    once per call from main. (callgrind takes the jump for a call, so the
    oracle's contexts are not these.)"""
    exe = tools.compile('inline_loopback.c', *FLAGS)
    symbolizer = debian_tool('llvm-symbolizer-14', 'llvm-14')
    walk = objdump_addresses(exe, ['walk'])['walk']
    text = subprocess.run(['objdump', '-d', '--no-show-raw-insn', str(exe)], capture_output=True, text=True,
                          check=True).stdout
    jumps = [int(a, 16) for a in re.findall(r'^\s*([0-9a-f]+):\s+jmp\s+\*%\w+', text, re.M)
             if int(a, 16) in walk]
    assert inline_chain(symbolizer, exe, walk[0]) == ['walk']
    assert len(jumps) == 1 and inline_chain(symbolizer, exe, jumps[0]) == ['hop', 'walk']
    kg = tools.kgrind(exe, '50', '20', opts=[k_opt(k), '--inline-frames=yes'])
    assert kg.returncode == 0, kg.stderr
    _sum, n_walk, n_hop = map(int, kg.stdout.split())
    assert (n_walk, n_hop) == (20 * 51, 20 * 50)
    prof = ksf_records.parse(kg.profile_path)
    calls = collections.Counter()
    for forest in prof.forests:
        calls.update(ksf_records.kccf(forest, k, k))
    mine = {(c[c.index('main'):] if 'main' in c else c): n for c, n in calls.items()
            if c[-1] in ('walk', 'hop [inlined]')}
    whole = {('main', 'walk'): 20, ('main', 'walk', 'hop [inlined]'): n_hop}
    assert mine == {c if k is None else c[-(k + 1):]: n for c, n in whole.items()}


# inline_levels.c's functions that -O2 inlines (test_entries_of_inlined_functions_are_the_programs_counts)
OWN_LEVELS = ['outer [inlined]', 'sq [inlined]', 'tick [inlined]']


@pytest.mark.parametrize('optimize,opts,frames', [
    ('-O2', [], 'yes'), ('-O0', [], 'yes'), ('-O2', ['--inline-frames=no'], 'no'),
    ('-O2', ['--mode=intra'], 'no'), ('-O2', ['--collect-jumps=yes'], 'no'),
    ('-O2', ['--read-inline-info=no'], 'no')],
    ids=['default', 'default-O0', 'no', 'intra', 'jumps', 'no-inline-info'])
def test_default_has_inlined_levels_where_they_can_be(tools, optimize, opts, frames):
    """On by default in function mode: -O2's inlined functions are levels;
    -O0 code has no inline records, so its own functions stay physical
    frames (libc's may still have levels, from libc6-dbg). Where levels
    cannot be, the default is physical frames. The header says which."""
    exe = tools.compile('inline_levels.c', optimize, *FLAGS[1:])
    kg = tools.kgrind(exe, opts=['--k=2', *opts])
    assert kg.returncode == 0, kg.stderr
    text = kg.profile_path.read_text()
    assert f'\ndesc: inline frames: {frames}\n' in text
    assert [n for n in OWN_LEVELS if n in text] == (OWN_LEVELS if optimize == '-O2' and frames == 'yes' else [])
    if frames == 'no':
        assert '[inlined]' not in text


@pytest.mark.parametrize('opts,why', [
    (['--mode=inter'], 'the block modes (--mode=intra|inter) count physical frames'),
    (['--collect-jumps=yes'], '--collect-jumps=yes counts jumps between physical frames'),
    (['--read-inline-info=no'], '--read-inline-info=no leaves out the inline records')],
    ids=['inter', 'jumps', 'no-inline-info'])
def test_explicit_yes_where_levels_cannot_be_is_refused(tools, opts, why):
    tools.assert_refused([*opts, '--inline-frames=yes'],
                         f'--inline-frames=yes cannot apply: {why}; drop one of them')


def test_annotate_says_which_frames_and_refuses_to_join_both(tools):
    exe = tools.compile('inline_levels.c', *FLAGS)
    on = tools.kgrind(exe, opts=['--k=2'], out='on.out')
    off = tools.kgrind(exe, opts=['--k=2', '--inline-frames=no'], out='off.out')
    for run, said in ((on, 'yes (inlined functions are context levels, marked [inlined])'),
                      (off, "no (physical frames, as callgrind's)")):
        out = subprocess.run([*annotate_cmd(), '--top=1', str(run.profile_path)], capture_output=True, text=True,
                             check=True).stdout
        assert re.search(r'^Inline frames: +' + re.escape(said) + '$', out, re.M), out
    joined = subprocess.run([*annotate_cmd(), str(on.profile_path), str(off.profile_path)], capture_output=True,
                            text=True)
    assert joined.returncode == 2
    assert joined.stderr == (f'kgrind_annotate: cannot merge {on.profile_path} (inline-frames=yes) with '
                             f'{off.profile_path} (inline-frames=no): profiles must have the same frames '
                             '(inlined levels or physical frames only)\n')


def test_annotate_table_marks_inlined_levels(tools):
    exe = tools.compile('inline_levels.c', *FLAGS)
    kg = tools.kgrind(exe, opts=['--k=2', '--inline-frames=yes'])
    out = subprocess.run([*annotate_cmd(), str(kg.profile_path)], capture_output=True, text=True, check=True).stdout
    assert re.search(r'work > outer \[inlined\] > sq \[inlined\]', out), out


def objdump_addresses(exe, functions):
    """The instruction addresses of the executable's functions (objdump -d)."""
    text = subprocess.run(['objdump', '-d', '--no-show-raw-insn', str(exe)], capture_output=True, text=True,
                          check=True).stdout
    addrs = {}
    for fn in functions:
        body = re.search(r'^[0-9a-f]+ <%s>:\n(.*?)(?:\n\n|\Z)' % re.escape(fn), text, re.M | re.S)
        addrs[fn] = [int(m[1], 16) for m in re.finditer(r'^\s*([0-9a-f]+):', body[1], re.M)]
    return addrs


def test_pprof_locations_carry_inline_chains(tools):
    """pprof: a function and the functions inlined into it are one Location
    whose Lines are the chain, innermost first (profile.proto's inline
    frames). Every multi-line Location's chain is one that llvm-symbolizer
    --inlining gives an instruction of that physical function; the samples'
    stacks are the contexts' levels; go tool pprof -traces lists them and
    -top ranks the inlined functions by their own Ir."""
    import collections
    import pprof_wire
    from inline_oracle import base_name, inline_chains
    from test_annotate_export import expected_stacks, go_pprof, parse_top, parse_traces
    exe = tools.compile('inline_levels.c', *FLAGS)
    kg = tools.kgrind(exe, opts=['--k=inf', '--inline-frames=yes'])
    out = tools.dir / 'inl.pb.gz'
    out.write_bytes(subprocess.run([*annotate_cmd(), '--format=pprof', str(kg.profile_path)], check=True,
                                   capture_output=True).stdout)
    p = pprof_wire.decode(out)
    chains = {tuple(line['function']['name'] for line in loc['lines']) for loc in p['locations'].values()}
    assert ('sq [inlined]', 'outer [inlined]', 'work') in chains
    assert ('bump',) in chains and ('tick [inlined]', 'branchy') in chains
    # the oracle: llvm-symbolizer's chains of the physical functions' instructions
    # (the program's own functions; libc's chains are libc's debug info)
    own = set(re.findall(r'^[0-9a-f]+ [tT] (\S+)$', subprocess.run(['nm', str(exe)], capture_output=True, text=True,
                                                                   check=True).stdout, re.M))
    physical = {c[-1] for c in chains if len(c) > 1 and c[-1] in own}
    assert physical == {'work', 'branchy'}
    # libc's and ld.so's namesakes inlined are qualified by their objects
    # (`__mmap64 [inlined] [ld-linux-x86-64.so.2]`): levels too, lines of
    # their physical function's Location, never its last (physical) line
    qualified = [c for c in chains if any(re.search(r' \[inlined\] \[', n) for n in c)]
    assert qualified and all(not re.search(r' \[inlined\] \[', c[-1]) for c in qualified), qualified
    symbolized = set()
    for fn, addrs in objdump_addresses(exe, physical).items():
        by_addr, _names = inline_chains(exe, addrs, debian_tool('llvm-symbolizer-14', 'llvm-14'))
        symbolized |= {tuple(base_name(n) for n in reversed(c)) + (fn,) for c in by_addr.values()}
    for c in chains:
        if len(c) > 1 and c[-1] in own:
            assert tuple(base_name(n) for n in c[:-1]) + c[-1:] in symbolized, c
    stacks = {tuple(reversed(smp['stack'])) for smp in p['samples']}
    assert any(st[-4:] == ('run', 'work', 'outer [inlined]', 'sq [inlined]') for st in stacks)
    # go tool pprof reads it: -traces shows every context's stack (the
    # inlined levels marked "(inline)"), -top the inlined functions' flat Ir
    d = subprocess.run([*annotate_cmd(), '--format=json', str(kg.profile_path)], check=True,
                       capture_output=True, text=True).stdout
    import json
    d = json.loads(d)
    traces = collections.Counter()
    flat = collections.Counter()
    for (_t, stack, _calls, ir), n in expected_stacks(d).items():
        traces[(stack, ir)] += n
        flat[stack[-1]] += ir * n
    assert parse_traces(go_pprof(out, '-traces')) == traces
    assert '(inline)' in go_pprof(out, '-traces')
    rows, total = parse_top(go_pprof(out, '-top', '-nodecount=100000'))
    assert total == d['total']['Ir']
    # (-top marks a function only ever inlined "(inline)")
    rows = {re.sub(r' \(inline\)$', '', f): r for f, r in rows.items()}
    assert {f: r[0] for f, r in rows.items() if r[0]} == {f: v for f, v in flat.items() if v}
    assert rows['sq [inlined]'][0] > 0 and rows['outer [inlined]'][0] > 0


def test_pprof_address_names_of_a_program_named_inlined_are_no_levels(tools):
    """pprof: a function without a symbol is named by its address and its
    object, so the functions of a program named `inlined` whose symbols are
    stripped are `0x401190 [inlined]`: each is a physical frame, a Location
    of its own holding the program's real inlined levels (sq and outer in
    work, tick in branchy: the debug info is kept), never a level of its
    caller's Location."""
    import pprof_wire
    exe = tools.compile('inline_levels.c', *FLAGS, out='inlined')
    # the functions' addresses (-no-pie: where they run), then the symbols stripped
    nm = subprocess.run(['nm', str(exe)], capture_output=True, text=True, check=True).stdout
    address = {m[2]: int(m[1], 16) for m in re.finditer(r'^([0-9a-f]+) [tT] (\w+)$', nm, re.M)}
    subprocess.run(['strip', '--strip-all', '--keep-section=.debug_*', str(exe)], check=True)
    assert 'no symbols' in subprocess.run(['nm', str(exe)], capture_output=True, text=True).stderr
    kg = tools.kgrind(exe, opts=['--k=inf', '--inline-frames=yes'])
    assert kg.returncode == 0, kg.stderr
    out = tools.dir / 'inlined.pb.gz'
    out.write_bytes(subprocess.run([*annotate_cmd(), '--format=pprof', str(kg.profile_path)], check=True,
                                   capture_output=True).stdout)
    chains = {tuple(line['function']['name'] for line in loc['lines'])
              for loc in pprof_wire.decode(out)['locations'].values()}
    name = {f: f'0x{address[f]:x} [inlined]' for f in ('main', 'run', 'work', 'branchy', 'bump')}
    assert ('sq [inlined]', 'outer [inlined]', name['work']) in chains
    assert ('outer [inlined]', name['work']) in chains
    assert ('tick [inlined]', name['branchy']) in chains
    for f in ('main', 'run', 'work', 'branchy', 'bump'):
        assert (name[f],) in chains
    # a function named by its address is the last (physical) line of its Location
    assert [c for c in chains if any(re.match(r'0x[0-9a-f]+ \[', n) for n in c[:-1])] == []


def test_superblocks_of_many_inlined_runs_translate(tools):
    """examples/lookups.cpp at -O2 (std::map and std::string code inlined
    into main: superblocks of many runs, each a crossing of several levels)
    runs under the defaults as it runs natively, at k = 2 and 3: a
    superblock's unrolled level steps stay within VEX's temporary storage,
    which unbounded ones exhausted (Valgrind's "impossible happened")."""
    exe = tools.compile(pathlib.Path(__file__).resolve().parent.parent / 'examples' / 'lookups.cpp', '-O2')
    native = tools.native(exe)
    for k in (2, 3):
        kg = tools.kgrind(exe, opts=[f'--k={k}'], out=f'lookups.{k}')
        assert kg.returncode == native.returncode == 0, kg.stderr
        assert kg.stdout == native.stdout
        assert '\ndesc: inline frames: yes\n' in kg.profile_path.read_text()
