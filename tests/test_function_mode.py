"""Function mode against the thesis's listings (IHPP chapter 4 and 5.4)."""
import pytest

import ksf_records
from ksf_records import parse_listing
from thesis_listings import LISTING_45_KSF

LISTING_4_3_THREAD1 = """
| __root__(),1
  | a(),1
    | b(),1
    | c(),1
  | e(),2
    | d(),2
      | c(),4
    | c(),2
    | a(),2
      | b(),2
      | c(),2
"""
LISTING_4_3_THREAD2 = """
| __root__(),1
  | a(),1
    | b(),1
    | f(),1
"""
LISTING_4_4 = """
| __root__(),2
  | a(),2
    | b(),2
    | c(),1
    | f(),1
  | e(),2
    | d(),2
      | c(),4
    | c(),2
    | a(),2
      | b(),2
      | c(),2
"""
# Listing 4.5: the 2-SF of prog1, threads joined.
LISTING_4_5_KSF = LISTING_45_KSF

LISTING_4_7 = """
| __root__(),1
  | main(),1
    | foo(),1
      | recFunc(),6
        | bar(),1
"""
LISTING_4_8 = """
| __root__(),1
  | main(),1
    | foo(),1
      | recFunc(),1
        | recFunc(),1
          | recFunc(),1
            | recFunc(),1
              | recFunc(),1
                | recFunc(),1
                  | bar(),1
"""
LISTING_4_10 = """
| __root__(),1
  | main(),1
    | foo(),1
      | bar(),1
        | foo(),1
          | bar(),1
            | foo(),1
              | bar(),1
"""

PROG1_FUNCS = '--funcs=a,b,c,d,e,f'


def run(tools, source, *opts, flags=('-O0',)):
    exe = tools.compile(source, *flags)
    kg = tools.kgrind(exe, opts=list(opts))
    assert kg.returncode == tools.native(exe).returncode, kg.stderr
    return kg, ksf_records.parse(kg.profile_path)


def test_prog1_listing_4_5_joined_2sf(tools):
    kg, prof = run(tools, 'prog1.c', '--k=2', PROG1_FUNCS, '--join-threads=yes')
    assert len(prof.forests) == 1
    forest = prof.forests[0]
    assert forest.canonical() == parse_listing(LISTING_4_5_KSF)
    assert len(forest.nodes) == 20
    # The 2-CCF of Listing 4.5 has 25 nodes: one per distinct reversed
    # prefix of the 2-contexts.
    contexts = ksf_records.kccf(forest, 2, 2)
    prefixes = {tuple(reversed(ctx))[:i] for ctx in contexts for i in range(1, len(ctx) + 1)}
    assert len(prefixes) == 25
    # A few counters as printed in the listing's k-CCF.
    calls_of = lambda *rev: sum(n for ctx, n in contexts.items() if tuple(reversed(ctx))[:len(rev)] == rev)
    assert calls_of('c') == 9
    assert calls_of('c', 'a') == 3 and calls_of('c', 'a', '__root__') == 1 and calls_of('c', 'a', 'e') == 2
    assert calls_of('c', 'd', 'e') == 4 and calls_of('c', 'e', '__root__') == 2
    assert calls_of('b', 'a') == 4 and calls_of('f', 'a', '__root__') == 1


def test_prog1_listing_4_3_cct_per_thread(tools):
    kg, prof = run(tools, 'prog1.c', '--k=inf', PROG1_FUNCS)
    trees = sorted(f.canonical() for f in prof.forests)
    assert trees == sorted([parse_listing(LISTING_4_3_THREAD1), parse_listing(LISTING_4_3_THREAD2)])


def test_prog1_listing_4_4_cct_joined(tools):
    kg, prof = run(tools, 'prog1.c', '--k=inf', PROG1_FUNCS, '--join-threads=yes')
    assert prof.forests[0].canonical() == parse_listing(LISTING_4_4)


def own_subtree(forest, top='main'):
    """The canonical tree below the (only) `top` node of the first tree."""
    stack = [forest.roots[0]]
    while stack:
        n = stack.pop()
        if forest.name(n) == top:
            return forest.canonical(n)
        stack.extend(forest.children[n])
    raise AssertionError(f'{top} not found')


def test_prog2_simple_recursion_rolled_listing_4_7(tools):
    kg, prof = run(tools, 'prog2.c', '--k=inf')
    expected = parse_listing(LISTING_4_7)[0]
    main = expected[2][0]
    assert own_subtree(prof.forests[0]) == main


def test_prog2_unroll_simple_rec_listing_4_8(tools):
    kg, prof = run(tools, 'prog2.c', '--k=inf', '--unroll-simple-rec=yes')
    main = parse_listing(LISTING_4_8)[0][2][0]
    assert own_subtree(prof.forests[0]) == main


@pytest.mark.parametrize('unroll', ['no', 'yes'])
def test_prog3_mutual_recursion_listing_4_10(tools, unroll):
    kg, prof = run(tools, 'prog3.c', '--k=inf', f'--unroll-simple-rec={unroll}')
    main = parse_listing(LISTING_4_10)[0][2][0]
    assert own_subtree(prof.forests[0]) == main


@pytest.mark.parametrize('source', ['prog7.c', 'prog8.c'])
def test_long_jump_second_call_is_a_child_of_main(tools, source):
    # Unrolled, so that a missed unwind would show as testJmp under testJmp.
    kg, prof = run(tools, source, '--k=inf', '--funcs=main,testJmp', '--unroll-simple-rec=yes')
    assert prof.forests[0].canonical() == parse_listing("""
| __root__(),1
  | main(),1
    | testJmp(),2
""")


def test_root_inclusive_equals_thread_total(tools):
    kg, prof = run(tools, 'prog1.c', '--k=2')
    for forest in prof.forests:
        root = forest.nodes[forest.roots[0]]
        assert root[4] == forest.ir
    assert sum(f.ir for f in prof.forests) == kg.profile().total()


def canonical_exclusive(forest, k):
    """Sum of exclusive Ir over canonical nodes (all but the top regions of
    the trees after the first)."""
    total = 0
    for tree_index, root in enumerate(forest.roots):
        stack = [(root, 0)]
        while stack:
            nid, depth = stack.pop()
            if not (tree_index > 0 and k is not None and depth < k):
                total += forest.nodes[nid][3]
            stack.extend((c, depth + 1) for c in forest.children[nid])
    return total


@pytest.mark.parametrize('opts', [['--k=2'], ['--k=0'], ['--k=1', '--join-threads=yes'],
                                  ['--k=3', PROG1_FUNCS], ['--k=inf', '--funcs=e']])
def test_every_instruction_is_counted_once_in_canonical_nodes(tools, opts):
    kg, prof = run(tools, 'prog1.c', *opts)
    k = ksf_records.k_of(prof)
    body = kg.profile()
    for forest in prof.forests:
        assert canonical_exclusive(forest, k) == forest.ir
    assert sum(f.ir for f in prof.forests) == body.total() == body.totals


def test_untraced_functions_pass_their_cost_to_the_nearest_traced_caller(tools):
    kg, prof = run(tools, 'prog1.c', '--k=inf', '--funcs=e,c')
    (forest, _) = prof.forests
    # d is not traced: its calls to c appear under e, and d's own cost is e's.
    assert forest.canonical() == parse_listing("""
| __root__(),1
  | c(),1
  | e(),2
    | c(),8
""")
    body = kg.profile().by_context()
    e_cost = sum(n for ctx, n in body.items() if ctx.startswith("e'"))
    assert e_cost > 0


def test_unmatched_funcs_pattern_is_reported(tools):
    kg, prof = run(tools, 'prog1.c', '--funcs=a,no_such_fn*')
    assert "--funcs pattern 'no_such_fn*' matched no function" in kg.stderr
    assert "pattern 'a'" not in kg.stderr


@pytest.mark.parametrize('bad,message', [
    ('--k=abc', '--k takes a whole number'),
    ('--k=-1', '--k takes a whole number'),
    ('--k=1001', '--k takes a whole number'),
    ('--k=', '--k takes a whole number'),
    ('--funcs=', '--funcs needs at least one'),
    ('--funcs=a,,b', 'empty pattern'),
    ('--join-threads=maybe', 'Invalid boolean value'),
    ('--unroll-simple-rec=1', 'Invalid boolean value'),
])
def test_bad_option_values(tools, bad, message):
    exe = tools.compile('marker.c')
    kg = tools.kgrind(exe, opts=[bad], out=None)
    assert kg.returncode == 1
    assert 'marker: ran' not in kg.stdout
    assert message in kg.stderr and bad in kg.stderr
