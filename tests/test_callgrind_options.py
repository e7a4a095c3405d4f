"""callgrind's options on kgrind: the ones it takes mean what they mean to
callgrind (--fn-skip), and each one it does not take stops the run with one
line saying what kgrind does instead. Expectations come from callgrind
itself on the same programs."""
import collections
import pathlib
import shutil
import subprocess

import pytest

import ksf_records

EXAMPLES = pathlib.Path(__file__).resolve().parent.parent / 'examples'
JUMP_FUNCS = {'main', 'walk', 'classify'}    # tests/progs/jumps.c
OWN = ('main', 'work', 'helper', 'leaf', 'fib')


def calls_program(tools):
    exe = tools.dir / 'calls'
    subprocess.run(['gcc', '-g', '-O0', str(EXAMPLES / 'calls.c'), '-o', str(exe)], check=True)
    return exe


def own_functions(prof):
    """Exclusive Ir per own function, and calls per (caller, callee) of own
    functions, self-calls aside (callgrind's --skip-direct-rec hides them,
    kgrind rolls them)."""
    ir = {f: n for f, n in prof.by_function().items() if f in OWN}
    calls = collections.Counter()
    for caller, callee, count, _incl in prof.calls:
        if callee in OWN and caller != callee:
            calls[(caller, callee)] += count
    return ir, calls


@pytest.mark.parametrize('skip', ['helper', 'hel*'])
def test_fn_skip_equals_callgrinds(tools, skip):
    exe = calls_program(tools)
    kg = tools.kgrind(exe, opts=['--k=0', f'--fn-skip={skip}'])
    cg = tools.reference('callgrind', exe, opts=[f'--fn-skip={skip}'])
    assert kg.returncode == 0, kg.stderr
    assert kg.stdout == cg.stdout
    mine, ref = own_functions(kg.profile()), own_functions(cg.profile())
    assert 'helper' not in ref[0] and ref[1][('work', 'leaf')] == 2000   # helper's calls of leaf
    assert mine == ref


def test_funcs_exclusion_is_fn_skip(tools):
    exe = calls_program(tools)
    skipped = ksf_records.parse(tools.kgrind(exe, opts=['--fn-skip=helper'], out='skip.out').profile_path)
    excluded = ksf_records.parse(tools.kgrind(exe, opts=['--funcs=!helper'], out='excl.out').profile_path)
    assert [ksf_records.kccf(f, 2, 2) for f in skipped.forests] == [ksf_records.kccf(f, 2, 2) for f in excluded.forests]
    contexts = ksf_records.kccf(skipped.forests[0], 2, 2)
    assert contexts[('main', 'work', 'leaf')] == 2000 and not any('helper' in c for c in contexts)
    # a list with exclusions: the named functions but the excluded ones
    only = ksf_records.parse(tools.kgrind(exe, opts=['--funcs=main,work,leaf,helper,!wor*'], out='only.out').profile_path)
    names = {n for ctx in ksf_records.kccf(only.forests[0], 2, 2) for n in ctx}
    assert names <= {'main', 'leaf', 'helper', '__root__'} and {'main', 'leaf', 'helper'} <= names


def test_unmatched_exclusion_is_reported(tools):
    exe = calls_program(tools)
    r = tools.kgrind(exe, opts=['--fn-skip=nosuch', '--funcs=!nothing*'])
    assert r.returncode == 0
    assert "Warning: --fn-skip pattern 'nosuch' matched no function that ran" in r.stderr
    assert "Warning: --funcs pattern '!nothing*' matched no function that ran" in r.stderr


@pytest.mark.parametrize('opt, message', [
    ('--funcs=!', "--funcs has an empty pattern (two commas, a comma at an end, or '!' alone)"),
    ('--fn-skip=', '--fn-skip needs a function name or pattern'),
])
def test_bad_exclusions(tools, opt, message):
    tools.assert_refused([opt], message)


@pytest.mark.parametrize('opt, instead', [
    ('--callgrind-out-file=x.out', '--kgrind-out-file=<file>'),
    ('--separate-callers=3', '--k=<n> keeps n callers'),
    ('--separate-callers2=main', '--k=<n> keeps n callers'),
    ('--separate-recs=4', '--unroll-simple-rec=yes keeps each level'),
    ('--separate-recs3=fib', '--unroll-simple-rec=yes keeps each level'),
    ('--skip-direct-rec=no', '--unroll-simple-rec=yes keeps each level'),
    ('--skip-plt=no', 'passes PLT stubs through'),
    ('--combine-dumps=yes', 'each dump to its own file'),
    ('--compress-strings=no', 'always compresses names'),
    ('--compress-pos=no', 'always writes relative positions'),
    ('--dump-bb=yes', '--mode=intra|inter profiles basic blocks'),
    ('--dump-bbs=yes', '--mode=intra|inter profiles basic blocks'),
    ('--collect-alloc=yes', 'does not count allocations'),
    ('--fn-group2=main', 'no function groups'),
    ('--mangle-names=no', 'demangled names'),
    ('--simulate-cache=yes', 'use --cache-sim=yes'),
    ('--simulate-wb=yes', 'no write-back events'),
    ('--simulate-hwpref=yes', 'no hardware prefetch'),
    ('--cacheuse=yes', 'no cache use events'),
    ('--ct-verbose=1', '--help-debug'),
])
def test_callgrind_only_options_say_what_kgrind_does_instead(tools, opt, instead):
    name = opt.split('=')[0].rstrip('0123456789')
    r = tools.kgrind(tools.compile('prog4.c', '-O0'), opts=[opt], out=None)
    assert r.returncode == 1 and r.stdout == ''
    lines = [l for l in r.stderr.splitlines() if "is callgrind's" in l]
    assert len(lines) == 1, r.stderr
    assert f'{name} is callgrind\'s; ' in lines[0] and instead in lines[0]
    assert 'Unknown option' not in r.stderr


def test_a_name_that_only_starts_like_callgrinds_is_unknown(tools):
    r = tools.kgrind(tools.compile('prog4.c', '-O0'), opts=['--separate-callersx=2'], out=None)
    assert r.returncode == 1 and 'Unknown option: --separate-callersx=2' in r.stderr


def line_jumps(prof):
    """{(function, from line, to line, conditional, 'taken'|'executed'): n}
    of JUMP_FUNCS' jumps, contexts counting for their function."""
    out = collections.Counter()
    for j in prof.jumps:
        fn = j.fn.split("'")[0]
        if fn in JUMP_FUNCS:
            out[(fn, j.from_line, j.to_line, j.cond, 'taken')] += j.taken
            out[(fn, j.from_line, j.to_line, j.cond, 'executed')] += j.executed
    return out


@pytest.mark.parametrize('k', ['0', '2'])
def test_collect_jumps_alone_gives_callgrinds_line_level_jumps(tools, k):
    exe = tools.compile('jumps.c', '-O2')
    kg = tools.kgrind(exe, opts=[f'--k={k}', '--collect-jumps=yes'])
    cg = tools.reference('callgrind', exe, opts=['--collect-jumps=yes'])
    assert kg.returncode == 0, kg.stderr
    assert kg.stdout == cg.stdout
    mine, ref = kg.profile(), cg.profile()
    assert mine.header['positions'] == 'line' == ref.header['positions']
    expected = line_jumps(ref)
    assert {key[3] for key in expected} == {True, False}      # jcnd= and jump= both occur
    assert sum(n for key, n in expected.items() if key[4] == "executed") > 500
    assert line_jumps(mine) == expected
    # the costs per line are those of a run without jumps (in physical
    # frames, as --collect-jumps=yes counts)
    plain = tools.kgrind(exe, opts=[f'--k={k}', '--inline-frames=no'], out='plain.out').profile()
    assert mine.lines == plain.lines


THREAD_FUNCS = ('main', 'worker', 'sum_to', 'squares')    # tests/progs/threads.c


def own_per_function(prof):
    """Exclusive Ir per THREAD_FUNCS function and calls into them per
    (caller, callee)."""
    ir = collections.Counter({f: n for f, n in prof.by_function().items() if f in THREAD_FUNCS})
    calls = collections.Counter()
    for caller, callee, count, _incl in prof.calls:
        if callee.split("'")[0] in THREAD_FUNCS:
            calls[(caller.split("'")[0], callee.split("'")[0])] += count
    return ir, calls


def test_separate_threads_writes_callgrinds_files(tools):
    """One file a thread, named as callgrind's; the main thread's equals
    callgrind's first file, and the workers' (run one after another, so
    Valgrind gives each the same thread id, whose file callgrind shares
    among them) sum to callgrind's second, in per-function Ir and calls."""
    exe = tools.compile('threads.c', '-O0')
    kg = tools.kgrind(exe, opts=['--separate-threads=yes'], out='kg.out')
    cg = tools.reference('callgrind', exe, opts=['--separate-threads=yes'])
    assert kg.returncode == 0, kg.stderr
    assert kg.stdout == cg.stdout
    assert 'Output written to' in kg.stderr and 'one file a thread' in kg.stderr
    mine = sorted(p.name for p in tools.dir.glob('kg.out*'))
    assert mine == ['kg.out-01', 'kg.out-02', 'kg.out-03', 'kg.out-04', 'kg.out-05']
    ref_files = sorted(p for p in pathlib.Path(cg.profile_path).parent.glob(pathlib.Path(cg.profile_path).name + '-*'))
    assert [p.name[-3:] for p in ref_files] == ['-01', '-02']
    import callgrind_format
    ref = [own_per_function(callgrind_format.parse(p)) for p in ref_files]
    files = [callgrind_format.parse(tools.dir / n) for n in mine]
    assert [f.header.get('thread') for f in files] == ['1', '2', '3', '4', '5']
    per_thread = [own_per_function(f) for f in files]
    assert per_thread[0] == ref[0] and per_thread[0][0]['main'] > 0
    workers = (sum((p[0] for p in per_thread[1:]), collections.Counter()),
               sum((p[1] for p in per_thread[1:]), collections.Counter()))
    assert workers == ref[1] and workers[0]['sum_to'] > 0 and workers[0]['squares'] > 0
    # each file's Ir is its thread's
    for f in files:
        assert f.totals == f.summary == f.total()
    # the k-SF records are a run's without the option, a thread a file
    whole = ksf_records.parse(tools.kgrind(exe, out='whole.out').profile_path)
    split = [ksf_records.parse(tools.dir / n) for n in mine]
    assert [len(s.forests) for s in split] == [1] * 5
    assert [ksf_records.kccf(s.forests[0], 2, 2) for s in split] == [ksf_records.kccf(f, 2, 2) for f in whole.forests]


def test_separate_threads_with_joined_threads_is_one_file(tools):
    exe = tools.compile('threads.c', '-O0')
    kg = tools.kgrind(exe, opts=['--separate-threads=yes', '--join-threads=yes'], out='kg.out')
    assert kg.returncode == 0, kg.stderr
    assert sorted(p.name for p in tools.dir.glob('kg.out*')) == ['kg.out']
