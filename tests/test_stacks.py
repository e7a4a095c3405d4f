"""Shadow stacks in hostile programs: more threads over a run than
Valgrind has thread slots, unwinds far longer than --max-stackframe, and
coroutines on stacks of their own. Each run is checked against the
program's own counts, cachegrind's per-function Ir, or the callers the
program's source says."""
import collections
import subprocess

import pytest

import callgrind_format
import ksf_records
from test_annotate import annotate_cmd


def full_paths(prof):
    """{root path: calls} over all threads of a --k=inf profile."""
    out = collections.Counter()
    for forest in prof.forests:
        out.update(ksf_records.kccf(forest, None, None))
    return out


def vertex_calls(prof):
    out = collections.Counter()
    for forest in prof.forests:
        for ctx, n in ksf_records.kccf(forest, ksf_records.k_of(prof), 0).items():
            out[ctx[-1]] += n
    return out


def callers_of(paths, fn):
    out = collections.Counter()
    for p, n in paths.items():
        if p[-1] == fn:
            out[p[-2] if len(p) > 1 else None] += n
    return out


def counts_printed(stdout):
    """The 'program: key value key value ...' counts a program printed."""
    words = stdout.split(':', 1)[1].split()
    return dict(zip(words[::2], map(int, words[1::2])))


def run_like_native(tools, exe, *args, opts, out='kgrind.out'):
    """exe run under kgrind with opts, as it runs natively (same output,
    status 0): the kgrind run, and the counts the program printed."""
    kg = tools.kgrind(exe, *args, opts=opts, out=out)
    native = tools.native(exe, *args)
    assert kg.returncode == native.returncode == 0, kg.stderr
    assert kg.stdout == native.stdout
    return kg, counts_printed(native.stdout)


def subtree_exclusive(forest):
    """Each node's exclusive Ir summed over its subtree."""
    order, stack = [], list(forest.roots)
    while stack:
        n = stack.pop()
        order.append(n)
        stack.extend(forest.children[n])
    sums = {}
    for n in reversed(order):
        sums[n] = forest.nodes[n][3] + sum(sums[c] for c in forest.children[n])
    return sums


def test_600_threads_one_after_another_all_reach_the_profile(tools):
    """Valgrind has 500 thread slots: thread ids are reused, forests are not."""
    exe = tools.compile('many_threads.c', '-O1')
    kg = tools.kgrind(exe, 600, opts=['--k=2'])
    native = tools.native(exe, 600)
    assert kg.returncode == native.returncode == 0, kg.stderr
    assert kg.stdout == native.stdout == 'work calls: 2405\n'
    prof = ksf_records.parse(kg.profile_path)
    assert len(prof.forests) == 601
    assert vertex_calls(prof)['work'] == 2405
    main_forest = [f for f in prof.forests if ('main', 'work') in
                   {c[-2:] for c in ksf_records.kccf(f, 2, 2)}]
    assert len(main_forest) == 1
    body = kg.profile()
    assert sum(f.ir for f in prof.forests) == body.summary == body.total()
    # The program's own lines cost what callgrind says (cachegrind's, with
    # the PLT stubs' instructions at the calling line), in every thread.
    # (Not the whole total: the main thread's waits in pthread_join vary
    # from run to run.)
    cg = tools.reference('callgrind', exe, 600).profile().by_file_line()
    ours = body.by_file_line()
    own_lines = {key for key in cg if key[0].endswith('many_threads.c')}
    assert own_lines and {key: ours[key] for key in own_lines} == {key: cg[key] for key in own_lines}


@pytest.mark.parametrize('source', ['longjmp_deep.c', 'throw_deep.cpp'])
@pytest.mark.parametrize('opts', [['--k=2'], ['--k=inf'], ['--k=2', '--max-stackframe=8000000']])
def test_unwind_out_of_5mb_of_recursion_pops_every_frame(tools, source, opts):
    """20,000 frames of ~256 bytes: far more than the 2 MB that once made
    kgrind take the jump for a stack switch. other() is main's call."""
    exe = tools.compile(source, '-O1')
    kg = tools.kgrind(exe, opts=opts)
    native = tools.native(exe)
    assert kg.returncode == native.returncode == 0, kg.stderr
    assert kg.stdout == native.stdout
    prof = ksf_records.parse(kg.profile_path)
    other = 'other(int)' if source.endswith('.cpp') else 'other'
    dive = 'dive(long)' if source.endswith('.cpp') else 'dive'
    contexts = collections.Counter()
    for forest in prof.forests:
        contexts.update(ksf_records.kccf(forest, ksf_records.k_of(prof), 1))
    assert {c: n for c, n in contexts.items() if c[-1] == other} == {('main', other): 2}
    assert vertex_calls(prof)[dive] == 2 * 20001
    # Nothing stays on the shadow stack: the forest is small at k=2.
    if '--k=2' in opts:
        assert len(prof.forests[0].nodes) < 3000


def test_coroutines_ending_through_uc_link_leave_no_frames(tools):
    assert_uc_link_coroutines(tools)


def assert_uc_link_coroutines(tools):
    """co_uclink.c: 5 coroutines that return through uc_link."""
    exe = tools.compile('co_uclink.c', '-O1')
    kg = tools.kgrind(exe, 5, opts=['--k=inf'])
    native = tools.native(exe, 5)
    assert kg.returncode == native.returncode == 0, kg.stderr
    assert kg.stdout == native.stdout
    paths = full_paths(ksf_records.parse(kg.profile_path))
    assert callers_of(paths, 'after') == {'main': 5}
    # Every coroutine's function is a root of the thread's forest, as a
    # thread's first function is, and its calls are its own.
    assert callers_of(paths, 'co_body') == {'__root__': 5}
    assert callers_of(paths, 'co_leaf') == {'co_body': 10}


def run_scheduler(tools, exe, rounds, opts):
    kg = tools.kgrind(exe, rounds, opts=opts, out=f'sched.{rounds}.{len(opts)}')
    native = tools.native(exe, rounds)
    assert kg.returncode == native.returncode == 0, kg.stderr
    assert kg.stdout == native.stdout
    return ksf_records.parse(kg.profile_path), counts_printed(native.stdout)


def test_resumed_coroutines_continue_their_own_contexts(tools):
    exe = tools.compile('co_sched.c', '-O1')
    prof, own = run_scheduler(tools, exe, 60, ['--k=inf', '--unroll-simple-rec=yes'])
    paths = full_paths(prof)
    calls = vertex_calls(prof)
    assert (calls['leaf'], calls['yield_'], calls['nest']) == (own['leaf'], own['yield'], own['nest'])
    # Coroutine `id` yields from 3 + id nested calls, 60 times.
    yields = {p: n for p, n in paths.items() if p[-1] == 'yield_'}
    assert yields == {('__root__', 'co_main') + ('nest',) * (3 + i) + ('yield_',): 60 for i in range(4)}
    for p in paths:
        if 'nest' in p:
            assert 'schedule' not in p and 'swapcontext' not in p[:-1], p


def test_coroutine_contexts_do_not_grow_with_the_rounds(tools):
    exe = tools.compile('co_sched.c', '-O1')
    sizes = []
    for rounds in (50, 400):
        prof, _ = run_scheduler(tools, exe, rounds, ['--k=inf'])
        sizes.append(len(prof.forests[0].nodes))
    assert sizes[0] == sizes[1]


def test_coroutine_k2_contexts_name_their_real_callers(tools):
    exe = tools.compile('co_sched.c', '-O1')
    prof, own = run_scheduler(tools, exe, 40, ['--k=2'])
    contexts = collections.Counter()
    for forest in prof.forests:
        contexts.update(ksf_records.kccf(forest, 2, 2))
    leaf = {c: n for c, n in contexts.items() if c[-1] == 'leaf'}
    assert leaf == {('co_main', 'nest', 'leaf'): own['leaf']}
    yield_ = {c: n for c, n in contexts.items() if c[-1] == 'yield_'}
    assert yield_ == {('co_main', 'nest', 'yield_'): own['yield']}


def test_suspended_coroutines_inclusive_costs_count_only_their_own_stack(tools):
    """A suspended stack's frames pause: every node's inclusive Ir is exactly
    the exclusive Ir of its subtree (had they gone on counting, yield_ would
    include the scheduler's and the other coroutines' work), and the
    thread's instructions are all counted once."""
    exe = tools.compile('co_sched.c', '-O1')
    prof, _ = run_scheduler(tools, exe, 30, ['--k=inf', '--unroll-simple-rec=yes'])
    assert_inclusive_is_subtree_exclusive(prof.forests[0])



def assert_inclusive_is_subtree_exclusive(forest):
    sums = subtree_exclusive(forest)
    wrong = {tuple(forest.root_path(n)): (forest.nodes[n][4], s) for n, s in sums.items()
             if forest.nodes[n][4] != s}
    assert not wrong
    assert sums[forest.roots[0]] == forest.ir


@pytest.mark.parametrize('k', ['2', 'inf'])
def test_coroutine_linked_to_a_new_coroutine_below_it_starts_at_the_root(tools, k):
    """uc_link into a coroutine that has not run yet, whose stack lies just
    below the ended one's in one mapping: SP never leaves the running
    stack's memory and moves down, as for a deeper call. Taken for a call,
    each next coroutine would nest under the ended one's __start_context >
    setcontext (k=inf: `__start_context > setcontext` repeated 4 times above
    the fifth body), and the first body's inclusive Ir would hold all five."""
    exe = tools.compile('co_chain.c', '-O1')
    kg = tools.kgrind(exe, 5, opts=[f'--k={k}'], out=f'chain.{k}')
    native = tools.native(exe, 5)
    assert kg.returncode == native.returncode == 0, kg.stderr
    assert kg.stdout == native.stdout
    own = counts_printed(native.stdout)
    prof = ksf_records.parse(kg.profile_path)
    kk = None if k == 'inf' else int(k)
    ends = collections.defaultdict(collections.Counter)
    for forest in prof.forests:
        for ctx, n in ksf_records.kccf(forest, kk, kk).items():
            ends[ctx[-1]][ctx[:-1]] += n
    assert ends['body'] == {('__root__',): own['body']}
    assert ends['nest'] == {('__root__', 'body'): own['nest']}
    assert sum(ends['handler_work'].values()) == own['handler_work']
    assert [(ctx[-1], n) for ctx, n in ends['after_chain'].items()] == [('main', 1)]
    if k == 'inf':
        # The handler ran on the sigaltstack, in the deepest nest's context.
        assert all(ctx[:3] == ('__root__', 'body', 'nest') for ctx in ends['handler_work'])
        for forest in prof.forests:
            assert_inclusive_is_subtree_exclusive(forest)


def run_ring(tools, where, switch, opts, rounds=20, gens=3):
    exe = tools.compile('co_ring.c', '-O1')
    args = (rounds, gens, where, switch)
    kg = tools.kgrind(exe, *args, opts=opts, out=f'ring.{where}.{switch}')
    native = tools.native(exe, *args)
    assert kg.returncode == native.returncode == 0, kg.stderr
    assert kg.stdout == native.stdout
    # Every coroutine's first run is entered the same way (by the switch's
    # ret or jump), so its call edge has one site: not the site of a jump
    # that landed inside a function before (longjmp's into a setjmp point).
    entries = {k[2:]: n for k, n in callgrind_format.parse(kg.profile_path).call_sites.items()
               if k[1].split("'")[0] == 'co_entry'}
    assert len(entries) == 1 and sum(entries.values()) == gens * 4, entries
    return ksf_records.parse(kg.profile_path), counts_printed(native.stdout)


def assert_ring_contexts(prof, own, rounds=20, gens=3):
    """What co_ring.c's source says: each coroutine is a root of the forest,
    and coroutine `id` yields from 3 + id nested calls, `rounds` times in
    each generation."""
    paths = full_paths(prof)
    assert callers_of(paths, 'co_entry') == {'__root__': own['entry']}
    yields = {p: n for p, n in paths.items() if p[-1] == 'yield_'}
    assert yields == {('__root__', 'co_entry', 'co_main') + ('nest',) * (3 + i) + ('yield_',): rounds * gens
                      for i in range(4)}
    assert sum(yields.values()) == own['yield']
    for forest in prof.forests:
        assert_inclusive_is_subtree_exclusive(forest)


@pytest.mark.parametrize('switch', ['swap', 'asm', 'jump', 'longjmp'])
@pytest.mark.parametrize('where', ['register', 'local', 'mmap'])
def test_coroutines_switching_directly_keep_their_own_contexts(tools, where, switch):
    """Four coroutines switch to each other directly (swapcontext, an asm
    switch that returns or, as boost.context's, jumps, or longjmp to a
    setjmp point), their stacks malloc'd in the heap's one
    mapping and registered with VALGRIND_STACK_REGISTER, or carved from an
    array in main's frame and registered, or each in an mmap of its own;
    three generations, each's stacks freed and the next's (smaller) in
    their memory. Without the registrations the registered coroutines nest
    in one another (`yield_ > swapcontext > nest > yield_`; the local ones
    under main), and without ending dead stacks the mmap ones of the second
    generation go on in the frames of the first, whose memory had been unmapped (`yield_ >
    swapcontext > co_entry > co_main > ...`)."""
    prof, own = run_ring(tools, where, switch, ['--k=inf', '--unroll-simple-rec=yes'])
    assert_ring_contexts(prof, own)


@pytest.mark.parametrize('switch', ['swap', 'asm', 'jump', 'longjmp'])
@pytest.mark.parametrize('where', ['heap', 'carve', 'pool'])
def test_unregistered_coroutines_in_one_mapping_switching_directly(tools, where, switch):
    """The same ring with stacks nobody registered, all in one mapping: SP
    moving between them stays in the running stack's memory. malloc'd
    (each above the one before), carved from one mmap (each below the one
    before: new coroutines start below the running one), or a static pool
    whose stacks every generation reuses at the same addresses (the new
    coroutines' frames land where the dead ones' lie). Six generations.
    Taken for calls and returns, the coroutines nest in one another:
    `yield_ > swapcontext > nest > ... > yield_` (longjmp: `yield_ >
    switch_to > longjmp > __longjmp > nest`), and with carved stacks each
    new co_entry under the running one's swapcontext."""
    prof, own = run_ring(tools, where, switch, ['--k=inf', '--unroll-simple-rec=yes'], gens=6)
    assert_ring_contexts(prof, own, gens=6)


@pytest.mark.parametrize('where, switch', [('carve', 'jump'), ('pool', 'swap'), ('heap', 'longjmp')])
def test_unregistered_coroutines_k2_contexts_name_their_real_callers(tools, where, switch):
    """At k=2 too, each coroutine's functions are called by its own."""
    prof, own = run_ring(tools, where, switch, ['--k=2'], gens=4)
    contexts = collections.Counter()
    for forest in prof.forests:
        contexts.update(ksf_records.kccf(forest, 2, 2))
    ends = collections.defaultdict(collections.Counter)
    for ctx, n in contexts.items():
        ends[ctx[-1]][ctx[:-1]] += n
    # nest's recursion is one node (rolled, as IHPP does).
    assert ends['yield_'] == {('co_main', 'nest'): own['yield']}
    assert ends['leaf'] == {('co_main', 'nest'): own['leaf']}
    assert ends['co_main'] == {('__root__', 'co_entry'): own['entry']}
    assert sum(ends['nest'].values()) == own['nest'] and 'swapcontext' not in str(ends['nest'])


CO_UNWIND_OWN = {'run_work()': 'run_work', 'dive_jump(long)': 'dive_jump', 'dive_throw(long)': 'dive_throw',
                 'dive_plain(long)': 'dive_plain', 'on_signal': 'on_signal', 'tail_a(long)': 'tail',
                 'tail_b(long)': 'tail'}


@pytest.mark.parametrize('k', ['2', 'inf'])
def test_unwinds_on_unregistered_coroutine_stacks_stay_unwinds(tools, k):
    """The negative control of the switches found between stacks in one
    mapping: on two coroutine stacks carved from one malloc'd block, a
    longjmp out of 5,000 frames of ~1 KB (5 MB), an exception thrown through
    as many, returns from as many with a signal's handler at the bottom,
    and a tail call are what they are on main's stack: below run_work the
    coroutines' contexts are main's (six runs in coroutines, one in main)."""
    exe = tools.compile('co_unwind.cpp', '-O2')
    kg, own = run_like_native(tools, exe, 5000, 3, opts=[f'--k={k}'], out=f'unwind.{k}')
    prof = ksf_records.parse(kg.profile_path)
    calls = vertex_calls(prof)
    by_count = collections.Counter()
    for fn, key in CO_UNWIND_OWN.items():
        by_count[key] += calls[fn]
    assert by_count == {key: own[key] for key in by_count}
    if k == '2':
        assert len(prof.forests[0].nodes) < 3000   # nothing stays on a shadow stack
        return
    below = collections.defaultdict(collections.Counter)
    for p, n in full_paths(prof).items():
        if p[-1] in CO_UNWIND_OWN:
            at = p.index('run_work()')
            below[p[:at]][p[at:]] += n
    main_prefix = [p for p in below if p[-1] == 'main']
    assert len(below) == 2 and len(main_prefix) == 1, list(below)
    in_main = below.pop(main_prefix[0])
    assert below == {('__root__', 'co_entry(int)'): {p: 6 * n for p, n in in_main.items()}}
    assert in_main[('run_work()', 'dive_jump(long)')] == 5001
    for forest in prof.forests:
        assert_inclusive_is_subtree_exclusive(forest)


def fiber_name(name):
    """boost.context's entry (one instantiation a fiber lambda) as `fiber_entry`,
    other C++ names without their parameters."""
    return 'fiber_entry' if 'context::detail::fiber_entry<' in name else name.split('(')[0]


def ring_contexts(tools, exe, opts, out, kk):
    """tests/progs/boost_fibers.cpp run 20 500 under kgrind with opts, as it
    runs natively: (the program's printed counts, {k'-CCF context with
    fiber_name's names: calls}; kk: k', None: whole paths)."""
    kg = tools.kgrind(exe, 20, 500, opts=opts, out=out)
    native = tools.native(exe, 20, 500)
    assert kg.returncode == native.returncode == 0, kg.stderr
    assert kg.stdout == native.stdout
    prof = ksf_records.parse(kg.profile_path)
    contexts = collections.Counter()
    for forest in prof.forests:
        for ctx, n in ksf_records.kccf(forest, ksf_records.k_of(prof), kk).items():
            contexts[tuple(map(fiber_name, ctx))] += n
    return counts_printed(native.stdout), contexts


@pytest.mark.parametrize('k', ['inf', '2'])
def test_boost_context_fibers_switching_directly_keep_their_own_contexts(tools, k):
    """Debian's boost.context (built without BOOST_USE_VALGRIND, so nothing
    is registered): fibers on 16 KB stacks malloc'd in the heap's one
    mapping, three of them switching to each other directly round after
    round, then 500 short-lived fibers. Each fiber's first function is a
    root of the forest, `ring_body` its only frame below it. Switches
    taken for calls would nest the ring in itself (`ring_body > switch_to >
    jump_fcontext > ring_work`) and leave `ring_body` a root without its
    fiber."""
    exe = tools.compile('boost_fibers.cpp', '-O1', libs=['-lboost_context'])
    # the program's calls as physical frames (with inlined levels, boost's
    # invoke and the lambda lie between fiber_entry and ring_body)
    own, contexts = ring_contexts(tools, exe, [f'--k={k}', '--unroll-simple-rec=yes', '--inline-frames=no'],
                                  f'fibers.{k}', None if k == 'inf' else 1)
    ours = {c: n for c, n in contexts.items() if c[-1] in ('ring_work', 'short_work', 'ring_body')}
    if k == 'inf':
        assert ours == {('__root__', 'fiber_entry', 'ring_body'): 3,
                        ('__root__', 'fiber_entry', 'ring_body', 'ring_work'): own['ring_work'],
                        ('__root__', 'fiber_entry', 'short_work'): own['short_work']}
    else:
        assert ours == {('fiber_entry', 'ring_body'): 3, ('ring_body', 'ring_work'): own['ring_work'],
                        ('fiber_entry', 'short_work'): own['short_work']}


def test_boost_context_fibers_with_inlined_levels_run_unchanged(tools):
    """Inlined levels (the default) on boost.context fibers switching
    directly, at k=inf: the program runs as it does natively, and each call
    of ring_work and short_work is in its fiber's path, under no switch. (A
    fiber's landing after jump_fcontext, with an inlined level of switch_to
    on top, was taken for a switch to another fiber's stack: a General
    Protection Fault.)"""
    exe = tools.compile('boost_fibers.cpp', '-O1', libs=['-lboost_context'])
    own, contexts = ring_contexts(tools, exe, ['--k=inf'], 'fibers.inlined', None)
    calls = collections.Counter()
    for ctx, n in contexts.items():
        if ctx[-1] in ('ring_work', 'short_work'):
            assert ctx[:2] == ('__root__', 'fiber_entry') and 'jump_fcontext' not in ctx, ctx
            assert ('ring_body' in ctx) == (ctx[-1] == 'ring_work'), ctx
            calls[ctx[-1]] += n
    assert calls == {'ring_work': own['ring_work'], 'short_work': own['short_work']}


NESTED_FNS = ('body', 'nest', 'work', 'yield_', 'schedule', 'jump_fcontext')


def nested_fibers_paths(prof, k):
    """{context: calls} of a boost_fibers_nested.cpp profile whose last
    function is the program's or jump_fcontext (k=inf: whole paths)."""
    out = collections.Counter()
    for forest in prof.forests:
        for ctx, n in ksf_records.kccf(forest, None if k == 'inf' else int(k), None if k == 'inf' else int(k)).items():
            ctx = tuple(map(fiber_name, ctx))
            if ctx[-1] in NESTED_FNS:
                out[ctx] += n
    return out


def nested_fibers_expected(own, main_paths):
    """The full paths the program's own counts give: each fiber's from its
    root (`fiber_entry > body > nest ... > yield_ > jump_fcontext`), the
    scheduler's (main_paths: those of a k=inf run that end in main's calls)."""
    fiber = ('__root__', 'fiber_entry', 'body')
    # boost.context's fiber_entry first jumps back to the fiber's creator.
    paths = collections.Counter({fiber: own['body'], ('__root__', 'fiber_entry', 'jump_fcontext'): own['body']})
    for level in range(1, 5):
        at = fiber + ('nest',) * level
        for key, tail in ((f'nest{level}', ()), (f'work{level}', ('work',)),
                          (f'yield{level}', ('yield_',)), (f'yield{level}', ('yield_', 'jump_fcontext'))):
            if own[key]:
                paths[at + tail] += own[key]
    paths.update(main_paths)
    return paths


def truncated(paths, k):
    out = collections.Counter()
    for p, n in paths.items():
        out[p if k == 'inf' else p[-(int(k) + 1):]] += n
    return out


def assert_reads(path):
    """kgrind_annotate and callgrind_annotate read the profile."""
    r = subprocess.run([*annotate_cmd(), str(path)], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0 and r.stderr == '', r.stderr
    c = subprocess.run(['callgrind_annotate', str(path)], capture_output=True, text=True, timeout=120)
    assert c.returncode == 0 and c.stderr == '', c.stderr


@pytest.mark.parametrize('k', ['1', '2', '3', 'inf'])
def test_boost_context_fibers_yielding_from_nested_calls(tools, k):
    """boost_fibers_nested.cpp: four boost.context fibers (unregistered
    stacks in the heap's one mapping) each yield to a scheduler in main from
    3 to 5 nested calls, three rounds, their frames open while the others
    run. jump_fcontext switches SP before `ldmxcsr`, whose emulation-warning
    exit comes 11 instructions before its end: checked there, the switch
    left those instructions in the resumed stack's inclusive costs but in
    the suspended one's exclusive, and at finite k kgrind_annotate refused
    the profile (`inclusive Ir 52 is below its exclusive Ir 96`). Each
    fiber's contexts are its own with the program's counts, the finite-k
    contexts are the k=inf paths cut to k callers, every node's inclusive
    Ir is at least its exclusive Ir (at k=inf its subtree's), the records'
    exclusive Ir per function is the body's, the body's inclusive Ir into
    work and the suspending jump_fcontext is their exclusive Ir, and the
    default options' run (recursion rolled) reads without a warning."""
    exe = tools.compile('boost_fibers_nested.cpp', '-O1', libs=['-lboost_context'])
    native = tools.native(exe, 3)
    assert native.returncode == 0
    own = collections.Counter(counts_printed(native.stdout))
    assert own['body'] == 4 and own['yield2'] + own['yield3'] + own['yield4'] == 12
    # physical frames: the program's own calls (inlined levels would put
    # boost's invoke and the lambda between fiber_entry and body)
    ref = tools.kgrind(exe, 3, opts=['--k=inf', '--unroll-simple-rec=yes', '--inline-frames=no'], out='nested.inf')
    assert ref.returncode == 0 and ref.stdout == native.stdout, ref.stderr
    full = nested_fibers_paths(ksf_records.parse(ref.profile_path), 'inf')
    main_paths = {p: n for p, n in full.items() if 'main' in p}
    assert {p[p.index('main'):]: n for p, n in main_paths.items() if p[-1] == 'schedule'} == \
        {('main', 'schedule'): own['schedule']}
    expected = nested_fibers_expected(own, main_paths)
    assert full == expected
    runs = [ref] if k == 'inf' else [tools.kgrind(exe, 3, opts=[f'--k={k}', '--unroll-simple-rec=yes',
                                                                '--inline-frames=no'], out=f'nested.{k}')]
    runs.append(tools.kgrind(exe, 3, opts=[f'--k={k}', '--inline-frames=no'], out=f'nested.{k}.default'))
    for run in runs:
        assert run.returncode == 0 and run.stdout == native.stdout, run.stderr
        assert 'warning' not in run.stderr, run.stderr
        assert_reads(run.profile_path)
        prof = ksf_records.parse(run.profile_path)
        for forest in prof.forests:
            below = {nid: (incl, excl) for nid, (_p, _l, _c, excl, incl) in forest.nodes.items() if incl < excl}
            assert below == {}
            if k == 'inf':
                sums = subtree_exclusive(forest)
                assert {nid: forest.nodes[nid][4] for nid in forest.nodes} == sums
        records = collections.Counter()
        for forest in prof.forests:
            for nid, node in forest.nodes.items():
                records[fiber_name(forest.name(nid))] += node[3]
        body_prof = run.profile()
        body = {callee_name.split('(')[0]: ir for callee_name, ir in body_prof.by_function().items()}
        assert {fn: records[fn] for fn in NESTED_FNS} == {fn: body[fn] for fn in NESTED_FNS}
        # The body's inclusive Ir into the fibers' leaf contexts, work and the
        # jump_fcontext that suspends them, is their exclusive Ir.
        into = collections.Counter()
        for _caller, callee, _count, incl in body_prof.calls:
            names = [fiber_name(x) for x in callee.split("'")]
            if names[0] == 'work' or names[:2] == ['jump_fcontext', 'yield_']:
                into[callee] += incl
        exclusive = body_prof.by_context()
        assert into and into == {c: exclusive[c] for c in into}
    assert nested_fibers_paths(ksf_records.parse(runs[0].profile_path), k) == truncated(expected, k)


def test_thousands_of_suspended_coroutines_keep_their_own_contexts(tools):
    """co_many.c: 5,000 coroutines on malloc'd stacks, all suspended at
    once, three generations, each left suspended in `yield` and its stacks
    freed, the next's malloc'd where the dead ones' frames lie. Every
    resume finds its stack among 5,000 to 15,000 suspended ones by the index
    of their frames' spans (not by a scan of them all at every switch), and each coroutine is a root of the forest with the
    calls the program counted."""
    exe = tools.compile('co_many.c', '-O1')
    kg = tools.kgrind(exe, 5000, 3, opts=['--k=inf'])
    native = tools.native(exe, 5000, 3)
    assert kg.returncode == native.returncode == 0, kg.stderr
    assert kg.stdout == native.stdout
    own = counts_printed(native.stdout)
    paths = {p: n for p, n in full_paths(ksf_records.parse(kg.profile_path)).items()
             if {'body', 'work', 'yield'} & set(p)}
    assert paths == {('__root__', 'body'): own['body'],
                     ('__root__', 'body', 'work'): own['work'],
                     ('__root__', 'body', 'yield'): own['yield'],
                     ('__root__', 'body', 'yield', 'swapcontext'): own['yield']}
    assert own == {'work': 30000, 'body': 15000, 'yield': 30000}


def test_registering_the_running_stack_keeps_its_frames(tools):
    """A program may register the stack it runs on (a fiber library making
    the main thread a fiber): SP must not seem to be on another stack then,
    or `main` and its callers leave every context."""
    exe = tools.compile('register_running.c', '-O1')
    paths = {}
    for register in (0, 1):
        kg = tools.kgrind(exe, register, opts=['--k=inf'], out=f'running.{register}')
        native = tools.native(exe, register)
        assert kg.returncode == native.returncode == 0, kg.stderr
        assert kg.stdout == native.stdout
        paths[register] = {p: n for p, n in full_paths(ksf_records.parse(kg.profile_path)).items()
                           if p[-1] in ('outer', 'work')}
    assert paths[1] == paths[0]
    assert {p[-3:]: n for p, n in paths[1].items()} == {('(below main)', 'main', 'outer'): 1,
                                                         ('main', 'outer', 'work'): 10}


def run_migrating_fibers(tools, where, switch, yields_to, k, *turns, rounds=11):
    exe = tools.compile('fiber_migrate.c', '-O1')
    args = (rounds, where, switch, yields_to, *turns)
    kg = tools.kgrind(exe, *args, opts=[f'--k={k}'], out=f'migrate.{where}.{switch}.{yields_to}.{k}')
    native = tools.native(exe, *args)
    assert kg.returncode == native.returncode == 0, kg.stderr
    assert kg.stdout == native.stdout
    return ksf_records.parse(kg.profile_path), counts_printed(native.stdout)


def assert_fiber_contexts(prof, own, k, rounds=11):
    """fiber_migrate.c's fibers' work calls in the contexts its source gives
    (from the fiber's root), each counted in the thread that ran it: the
    main thread (1) is worker 2, workers 0 and 1 are threads 2 and 3. Every
    call counts once, in whichever thread made it: a frame that moved is
    no new call."""
    calls = vertex_calls(prof)
    steps = 6 * rounds   # 1, 2 and 3 a round
    assert {fn: calls[fn] for fn in ('fiber_entry', 'fiber_body', 'deep', 'mid', 'step', 'yield_')} == \
        {'fiber_entry': 3, 'fiber_body': 3, 'deep': rounds, 'mid': 2 * rounds, 'step': steps, 'yield_': steps + 3}
    kk = None if k == 'inf' else 2
    work = {}
    for forest in prof.forests:
        for ctx, n in ksf_records.kccf(forest, kk, kk).items():
            if ctx[-1] == 'work':
                work.setdefault(int(forest.tid), collections.Counter())[ctx[:-1]] += n
    ran = {1: own['worker2'], 2: own['worker0'], 3: own['worker1']}
    assert {tid: sum(c.values()) for tid, c in work.items()} == {tid: n for tid, n in ran.items() if n}
    both = sum(work.values(), collections.Counter())
    # Fiber 2 steps twice in deep > mid and once in deep itself.
    chains = {('fiber_body', 'step'): own['fiber0'], ('fiber_body', 'mid', 'step'): own['fiber1'],
              ('fiber_body', 'deep', 'mid', 'step'): own['fiber2'] * 2 // 3,
              ('fiber_body', 'deep', 'step'): own['fiber2'] // 3}
    if k == 'inf':
        assert both == {('__root__', 'fiber_entry') + c: n for c, n in chains.items()}
        for forest in prof.forests:
            assert_inclusive_is_subtree_exclusive(forest)
    else:
        expected = collections.Counter()
        for c, n in chains.items():
            expected[c[-2:]] += n
        assert both == expected


@pytest.mark.parametrize('k', ['inf', '2'])
@pytest.mark.parametrize('yields_to', ['worker', 'direct'])
@pytest.mark.parametrize('switch', ['swap', 'asm'])
@pytest.mark.parametrize('where', ['register', 'heap'])
def test_fibers_moved_between_worker_threads_keep_their_contexts(tools, where, switch, yields_to, k):
    """Three fibers resumed by two worker threads in turn (a fiber
    scheduler moving fibers to whichever worker is free), each yielding
    with frames open from a depth of its own; stacks malloc'd, registered
    or not; a fiber yields to the worker, or (`direct`) switches to the
    next fiber, which another worker ran last, as boost.fiber does. Each
    fiber's functions have the contexts its source gives, from its root,
    in both workers' profiles; every call counts once, in the thread that
    made it (a worker's work calls are the program's count for that
    worker). Were shadow stacks bound to one thread, a fiber resumed by the
    other worker would start a new shadow stack there (`__root__ > mid >
    step > work`), and the first worker's stale frames would go on when it
    resumed the fiber again (`... > deep > step > yield_ > work`)."""
    prof, own = run_migrating_fibers(tools, where, switch, yields_to, k)
    assert own['worker2'] == 0
    assert_fiber_contexts(prof, own, k)


@pytest.mark.parametrize('k', ['inf', '2'])
@pytest.mark.parametrize('where, switch, yields_to', [('heap', 'swap', 'direct'), ('register', 'asm', 'worker'),
                                                      ('heap', 'asm', 'worker')])
def test_fibers_of_ended_workers_go_on_in_the_thread_that_resumes_them(tools, where, switch, yields_to, k):
    """The workers end after 8 turns, their fibers suspended, and the main
    thread runs the fibers to their end. Were a thread's suspended stacks
    ended with it, the main thread would start each fiber over at its root (`__root__ > work`, `__root__ > step > yield_ >
    switch_context > swapcontext > work`)."""
    prof, own = run_migrating_fibers(tools, where, switch, yields_to, k, 8)
    assert own['worker0'] and own['worker1'] and own['worker2']
    assert_fiber_contexts(prof, own, k)


def run_altstack_longjmp(tools, k, threads, stack):
    exe = tools.compile('altstack_longjmp.c', '-O1')
    kg = tools.kgrind(exe, threads, stack, opts=[f'--k={k}'], out=f'altjmp.{k}.{threads}.{stack}')
    native = tools.native(exe, threads, stack)
    assert kg.returncode == native.returncode == 0, kg.stderr
    assert kg.stdout == native.stdout
    return ksf_records.parse(kg.profile_path), counts_printed(native.stdout)


def contexts_by_function(prof, k):
    """{function: {its k-context (callers, outermost first): calls}}."""
    kk = None if k == 'inf' else int(k)
    ends = collections.defaultdict(collections.Counter)
    for forest in prof.forests:
        for ctx, n in ksf_records.kccf(forest, kk, kk).items():
            ends[ctx[-1]][ctx[:-1]] += n
    return ends


def in_source(ctx, outer, recursive, least, most, k):
    """Is ctx (callers, outermost first) the k-context of outer followed
    by least to most (None: any number of) calls of recursive?"""
    if k == 'inf':
        calls = len(ctx) - len(outer)
        return (ctx[:len(outer)] == outer and set(ctx[len(outer):]) <= {recursive} and
                least <= calls and (most is None or calls <= most))
    depth = int(k)
    top = most if most is not None else least + depth
    return any((outer + (recursive,) * j)[-depth:] == ctx for j in range(least, top + 1))


@pytest.mark.parametrize('k', ['1', '2', 'inf'])
def test_coroutine_stack_in_a_mapping_that_grows_stays_one_stack(tools, k):
    """A coroutine starts on a stack at the bottom of the only read-write
    half of a reservation, makes the lower half read-write (one mapping
    now) and recurses 400 frames (240 KB) down into it, yielding to main at
    the bottom, three rounds. Its stack is the mapping's as it is now, not
    as it was when the coroutine started: every call counts once, in the
    contexts the source gives (`__root__ > co_main > dive ... > leaf`).
    Taking the lower half for another stack filed 537 dive and every leaf
    call at the root."""
    exe = tools.compile('co_mapping_grows.c', '-O2')
    kg, own = run_like_native(tools, exe, 400, 3, opts=[f'--k={k}'], out=f'mapping_grows.{k}')
    assert own['dive'] == own['leaf'] == 3 * 401
    ends = contexts_by_function(ksf_records.parse(kg.profile_path), k)
    outer = ('__root__', 'co_main')
    source = {'dive': (0, 400), 'leaf': (1, 401)}
    for fn, (least, most) in source.items():
        assert sum(ends[fn].values()) == own[fn], (fn, ends[fn])
        wrong = {ctx: n for ctx, n in ends[fn].items() if not in_source(ctx, outer, 'dive', least, most, k)}
        assert not wrong, (fn, wrong)


def below_handler(prof, k):
    """The calls of each context inside a handler: its k-context from
    `handler` on (the handler's own callees and theirs)."""
    kk = None if k == 'inf' else int(k)
    out = collections.Counter()
    for forest in prof.forests:
        for ctx, n in ksf_records.kccf(forest, kk, kk).items():
            if 'handler' in ctx[:-1]:
                out[ctx[ctx.index('handler'):]] += n
    return out


@pytest.mark.parametrize('threads, where', [(4, 'heap'), (1, 'heap'), (4, 'bss')])
@pytest.mark.parametrize('k', ['1', '2', 'inf'])
def test_siglongjmp_out_of_a_handler_on_an_alternate_stack(tools, k, threads, where):
    """Each thread has its own sigaltstack; SIGUSR1, raised 50 frames deep,
    runs an SA_ONSTACK handler that siglongjmps back to the thread's base
    function thr(), which calls after() 4 times and work() > leaf(). SP
    lands on the thread's stack below the handler's frames when the
    alternate stack lies above it in memory (malloc'd: heap): were the
    handler's frames left on the shadow stack, every later call would nest
    under them (k=1: `__longjmp > after`). Static alternate stacks (bss) lie
    below: SP rises. The same program with the handler on the thread's
    stack (nostack) is the reference."""
    prof, own = run_altstack_longjmp(tools, k, threads, where)
    assert own == {'after': 200 * threads, 'handler': 50 * threads, 'work': 50 * threads, 'leaf': 150 * threads}
    ends = contexts_by_function(prof, k)
    depth = None if k == 'inf' else int(k)
    # The program's own counts, in the contexts its source says.
    for fn, callers in (('after', ('thr',)), ('work', ('thr',)), ('leaf', ('thr', 'work'))):
        assert sum(ends[fn].values()) == own[fn], fn
        want = callers if depth is None else callers[-depth:]
        for ctx in ends[fn]:
            assert ctx[-len(want):] == want, (fn, ctx)
            assert not {'handler', 'deep', '__longjmp', 'longjmp'} & set(ctx), (fn, ctx)
    assert sum(ends['handler'].values()) == own['handler']
    assert sum(ends['in_handler'].values()) == own['handler']
    assert {ctx[-1] for ctx in ends['in_handler']} == {'handler'}
    # Nothing of the program runs below a handler once it jumped out.
    assert not {fn for ctx in below_handler(prof, k) for fn in ctx} & {'thr', 'deep', 'after', 'work', 'leaf'}
    if k == 'inf':
        # One path to thr (the thread's root), and what thr calls after the
        # jump hangs right under it.
        thr_paths = set(ends['thr'])
        assert len(thr_paths) == 1
        thr_path = thr_paths.pop() + ('thr',)
        assert ends['after'] == {thr_path: own['after']}
        assert ends['work'] == {thr_path: own['work']}
        for forest in prof.forests:
            assert_inclusive_is_subtree_exclusive(forest)
    # The same contexts as with the handler on the thread's own stack.
    ref, ref_own = run_altstack_longjmp(tools, k, threads, 'nostack')
    assert ref_own == own
    ref_ends = contexts_by_function(ref, k)
    for fn in ('after', 'work', 'leaf', 'handler', 'in_handler', 'thr'):
        assert ends[fn] == ref_ends[fn], fn
    assert below_handler(prof, k) == below_handler(ref, k)
