"""Split functions and ret-jumps (docs/design/shadow-stacks.md, "Rule 2:
calls"). gcc -O2 moves a function's unlikely paths into `f.cold`, which f
jumps to and which jumps back into the middle of f: that code is f's, in f's
activation, so every later call of f is `main > f > h`, never
`main > f > f.cold > h`. A jump into the middle of a function whose
activation is open below the top frame returns to it (the IHPP thesis's
"ret-jump", Listings 5.26-5.28). Checked in every mode against the
programs' own counts and, for the split programs, against the same program
built without hot/cold splitting (-fno-reorder-blocks-and-partition)."""
import collections
import re
import subprocess

import pytest

import callgrind_format
import ksf_records
from conftest import PROGS

FUNCTION_MODES = [['--k=0'], ['--k=2'], ['--k=inf']]
BLOCK_MODES = [['--mode=intra', '--k=2'], ['--mode=inter', '--k=2']]
NO_SPLIT = '-fno-reorder-blocks-and-partition'
SPLIT_SUFFIX = re.compile(r'\.cold(\.\d+)?$|\[clone \.cold(\.\d+)?\]$')


def symbols(exe):
    return subprocess.run(['nm', '-C', str(exe)], capture_output=True, text=True, check=True).stdout


def split_build(tools, source, parts):
    """source at -O2 with the given split parts (skipped if this compiler
    does not split them), and the same program built without splitting."""
    split = tools.compile(source, '-O2')
    names = symbols(split)
    missing = [p for p in parts if not re.search(rf' {re.escape(p)}$', names, re.M)]
    if missing:
        pytest.skip(f'{source}: gcc -O2 made no {", ".join(missing)} here')
    whole = tools.compile(source, '-O2', NO_SPLIT, out=f'{PROGS.joinpath(source).stem}-nosplit')
    assert '.cold' not in symbols(whole)
    return split, whole


def contexts(path, own, also=()):
    """{k-context (outermost first): calls} of the contexts that end in one
    of own or also or are called from one of own, from the profile's k-SF
    records at its k."""
    prof = ksf_records.parse(path)
    out = collections.Counter()
    k = ksf_records.k_of(prof)
    for forest in prof.forests:
        out.update(ksf_records.kccf(forest, k, k))
    # No context anywhere (the C library's too) is a split part's.
    no_split_names(out)
    return {p: n for p, n in out.items()
            if p[-1] in own or p[-1] in also or (len(p) > 1 and p[-2] in own)}


def body_contexts(path, own):
    """The callgrind body's {context: exclusive Ir} and
    {(caller, callee, file, line): calls} of the contexts of own (the block
    modes write function contexts there too)."""
    prof = callgrind_format.parse(path)
    ir = {c: n for c, n in prof.by_context().items() if c.split("'")[0] in own}
    calls = {k: n for k, n in prof.call_sites.items() if k[0].split("'")[0] in own}
    return ir, calls


def run_kgrind(tools, exe, opts, out):
    r = tools.kgrind(exe, opts=opts, out=out)
    native = tools.native(exe)
    assert r.returncode == native.returncode == 0, r.stderr
    assert r.stdout == native.stdout
    return r


def no_split_names(paths):
    for p in paths:
        assert not any(SPLIT_SUFFIX.search(fn) for fn in p), p


def by_k(paths, k):
    """The program's own contexts cut to k callers."""
    out = collections.Counter()
    for p, n in paths.items():
        out[p if k is None else p[-(k + 1):]] += n
    return out


def k_of(opts):
    k = [o.split('=')[1] for o in opts if o.startswith('--k=')][0]
    return None if k == 'inf' else int(k)


def own_contexts(paths):
    """paths without their callers above main."""
    out = collections.Counter()
    for p, n in paths.items():
        out[p[p.index('main'):] if 'main' in p else p] += n
    return out


C_FUNCS = {'main', 'f', 'h', 'rare'}


@pytest.mark.parametrize('opts', FUNCTION_MODES, ids=lambda o: ' '.join(o))
def test_cold_part_stays_in_its_function(tools, opts):
    split, whole = split_build(tools, 'split_cold.c', ['f.cold'])
    r = run_kgrind(tools, split, opts, 'split.out')
    assert r.stdout == 'f 50 cold 8 rare 8 h 100\n'
    mine = contexts(r.profile_path, C_FUNCS - {'main'})
    k = k_of(opts)
    # The program's own counts: f called 50 times by main, h 100 times by
    # f (the second a tail call), rare 8 times by f from its cold part.
    expected = by_k({('main', 'f'): 50, ('main', 'f', 'h'): 100, ('main', 'f', 'rare'): 8}, k)
    ours = {p: n for p, n in own_contexts(mine).items() if p[-1] in C_FUNCS}
    assert ours == expected
    ref = run_kgrind(tools, whole, opts, 'nosplit.out')
    assert contexts(ref.profile_path, C_FUNCS - {'main'}) == mine


CPP_FUNCS = {'f(int)', 'g(int)', 'h(int)', 'caught(int)'}


@pytest.mark.parametrize('opts', FUNCTION_MODES, ids=lambda o: ' '.join(o))
def test_catch_in_cold_part_stays_in_its_function(tools, opts):
    """g++ -O2 puts f's catch handler in `f(int) [clone .cold]` and g's
    throw in g's: the unwinder lands in f's cold part, which calls caught()
    and jumps back into f."""
    split, whole = split_build(tools, 'split_cold.cpp', ['f(int) [clone .cold]'])
    r = run_kgrind(tools, split, opts, 'split.out')
    assert r.stdout == 'f 40 g 40 throws 8 caught 8 h 80\n'
    mine = contexts(r.profile_path, CPP_FUNCS, also={'__cxa_throw'})
    k = k_of(opts)
    expected = by_k({('main', 'f(int)'): 40, ('main', 'f(int)', 'g(int)'): 40,
                     ('main', 'f(int)', 'caught(int)'): 8, ('main', 'f(int)', 'h(int)'): 80}, k)
    ours = {p: n for p, n in own_contexts(mine).items() if p[-1] in CPP_FUNCS | {'main'}}
    assert ours == expected
    throws = {p: n for p, n in own_contexts(mine).items() if p[-1] == '__cxa_throw'}
    assert throws == by_k({('main', 'f(int)', 'g(int)', '__cxa_throw'): 8}, k)
    ref = run_kgrind(tools, whole, opts, 'nosplit.out')
    assert contexts(ref.profile_path, CPP_FUNCS, also={'__cxa_throw'}) == mine


@pytest.mark.parametrize('opts', BLOCK_MODES, ids=lambda o: ' '.join(o))
def test_cold_part_in_block_modes(tools, opts):
    """The block modes keep the same shadow stacks: the function contexts
    of the callgrind body are those of the build without splitting, and in
    intra mode the cold part's blocks are in f's forest, named after the
    part."""
    split, whole = split_build(tools, 'split_cold.c', ['f.cold'])
    r = run_kgrind(tools, split, opts, 'split.out')
    ir, calls = body_contexts(r.profile_path, C_FUNCS)
    assert not any('cold' in c for c in ir), ir
    per_callee = collections.Counter()
    for (_caller, callee, _file, _line), n in calls.items():
        per_callee[callee] += n
    assert per_callee == {"f'main'_start": 50, "h'f'main": 100, "rare'f'main": 8}
    ref = run_kgrind(tools, whole, opts, 'nosplit.out')
    ref_ir, ref_calls = body_contexts(ref.profile_path, C_FUNCS)
    assert set(ref_ir) == set(ir)
    assert {(a, c): n for (a, c, _f, _l), n in calls.items()} == \
        {(a, c): n for (a, c, _f, _l), n in ref_calls.items()}
    blocks = ksf_records.parse(r.profile_path).blocks.values()
    cold = [b for b in blocks if b['name'].startswith('{f.cold+')]
    assert cold and all(b['fn'] == 'f' for b in cold), cold
    assert sum(b['count'] for b in cold if b['name'].startswith('{f.cold+0 ')) == 8


LISTING_528 = {
    ('__root__', 'main'): 1,
    ('__root__', 'main', 'foo'): 1,
    ('__root__', 'main', 'foo', 'printf'): 1,
    ('__root__', 'main', 'foo', 'real_foo'): 1,
    ('__root__', 'main', 'foo', 'real_foo', 'printf'): 1,
    ('__root__', 'main', 'printf'): 1,
    ('__root__', 'main', 'bar'): 1,
}


@pytest.mark.parametrize('opts', FUNCTION_MODES + BLOCK_MODES, ids=lambda o: ' '.join(o))
def test_thesis_listing_526_ret_jump(tools, opts):
    """IHPP Listing 5.26 (prog9.asm) on x86-64: main jumps to foo, foo to
    real_foo, and real_foo back into main, which then calls printf and bar.
    The jump into main returns to main's activation: the contexts are
    Listing 5.28's, not Listing 5.27's (real_foo calling printf twice and
    bar), with --funcs as the thesis ran it."""
    exe = tools.compile('thesis_prog9.S')
    funcs = ['main', 'foo', 'real_foo', 'bar', 'printf']
    r = run_kgrind(tools, exe, [*opts, '--funcs=' + ','.join(funcs)], 'prog9.out')
    assert r.stdout == 'foo() base called\nreal_foo() called\nhello from main()\n'
    k = k_of(opts)
    if '--mode=intra' in opts or '--mode=inter' in opts:
        _ir, calls = body_contexts(r.profile_path, set(funcs))
        per_edge = collections.Counter()
        for (caller, callee, _file, _line), n in calls.items():
            per_edge[(caller.split("'")[0], callee.split("'")[0])] += n
        assert per_edge == {('main', 'foo'): 1, ('foo', 'printf'): 1, ('foo', 'real_foo'): 1,
                            ('real_foo', 'printf'): 1, ('main', 'printf'): 1, ('main', 'bar'): 1}
        return
    assert contexts(r.profile_path, (), also=funcs) == by_k(LISTING_528, k)
