"""Inclusive Ir that counts recursion once: a context's
inclusive_outermost is the inclusive Ir of its outermost activations (an
activation nested in another of the same context is not counted twice),
checked against a brute-force computation over the activations; exact at
k = inf, an upper bound at most the thread's Ir at finite k."""
import collections
import random
import re

import pytest

import test_annotate_model as M
from test_annotate import annotate, ok  # noqa: F401
from test_annotate_export import twice_profile  # noqa: F401


def brute_outermost(root, kk):
    """context -> inclusive Ir of its activations that no activation of the
    same context encloses (walking the activation tree with the contexts
    open on the stack)."""
    out = collections.Counter()
    open_ctx = collections.Counter()
    # two passes: inclusive Ir per activation, then the outermost sums
    incl = {}

    def inclusive(a):
        incl[id(a)] = a.excl + sum(inclusive(k) for k in a.kids)
        return incl[id(a)]

    def walk(a, path):
        path = path + (a.fn,)
        ctx = path if kk is M.INF else path[-(kk + 1):]
        out[ctx] += 0 if open_ctx[ctx] else incl[id(a)]
        open_ctx[ctx] += 1
        for k in a.kids:
            walk(k, path)
        open_ctx[ctx] -= 1
    inclusive(root)
    walk(root, ())
    return dict(out)


def recursive_run(rng):
    """Two labels, deep: most activations are nested in one of the same
    context (at least 40 activations)."""
    while True:
        run = M.random_activations(rng, labels=('a', 'b'), max_depth=9, fanout=3)
        if len(M.walk(run)) >= 40:
            return run


def outermost_by_thread(d):
    return {str(t['tid']): {tuple(c['path']): c['inclusive_outermost'] for c in t['contexts']}
            for t in d['threads']}


def kk_values(k):
    return ['inf', 0, 1, 2, 3] if k is M.INF else list(range(k + 1))


@pytest.mark.parametrize('k', [1, 2, 3, M.INF])
def test_outermost_inclusive_against_brute_force(annotate, tmp_path, k):
    rng = random.Random(77 + (k or 0))
    runs = {1: recursive_run(rng), 2: recursive_run(rng)}
    prof = M.write_profile(tmp_path / 'rec.out', runs, k)
    doubled = recounted = False
    for kk in kk_values(k):
        d = annotate('--format=json', f'--k={kk}', prof).json()
        got = outermost_by_thread(d)
        for t in d['threads']:
            run = runs[t['tid']]
            want = brute_outermost(run, M.INF if kk == 'inf' else kk)
            plain = {tuple(c['path']): c['inclusive'] for c in t['contexts']}
            assert set(got[str(t['tid'])]) == set(want)
            for ctx, v in got[str(t['tid'])].items():
                assert v <= t['Ir'], (kk, ctx)
                if k is M.INF:
                    assert v == want[ctx], (kk, ctx)        # exact
                else:
                    assert want[ctx] <= v <= plain[ctx], (kk, ctx)   # an upper bound
            doubled = doubled or any(plain[c] > t['Ir'] for c in plain)
            recounted = recounted or any(plain[c] > got[str(t['tid'])][c] for c in plain)
    # nesting was there to remove; at k = inf the plain inclusive Ir passes 100 %
    assert recounted and (doubled or k is not M.INF)


# tests/progs/twice.c's functions below main (no libc call below them).
TWICE_OWN = {'twice', 'fixed', 'scaled', 'step', 'even', 'odd'}


def cct_outermost(inf_json, kk):
    """Brute force from a k=inf profile's contexts (the calling context
    tree's nodes, outermost first): a node counts unless a proper prefix of
    its path ends with the same kk+1 names."""
    out = collections.Counter()
    for t in inf_json['threads']:
        for c in t['contexts']:
            p = tuple(c['path'])
            key = p[-(kk + 1):]
            nested = any(p[:j][-(kk + 1):] == key for j in range(1, len(p)))
            out[key] += 0 if nested else c['inclusive']
    return dict(out)


def test_recursive_program(annotate, twice_profile):
    """tests/progs/twice.c: even and odd call each other nine levels deep."""
    inf = twice_profile('inf')
    d_inf = annotate('--format=json', inf).json()
    total = d_inf['total']['Ir']
    for kk in (0, 1, 2):
        want = cct_outermost(d_inf, kk)
        d = annotate('--format=json', f'--k={kk}', inf).json()
        got = {tuple(c['path']): c['inclusive_outermost'] for t in d['threads'] for c in t['contexts']}
        assert got == want, kk
        assert any(c['inclusive'] > c['inclusive_outermost'] for t in d['threads'] for c in t['contexts']
                   if c['path'][-1] in ('even', 'odd'))
        # the text table: shares of at most 100 %, the outermost values
        text = ok(annotate('--sort=inclusive', '--top=0', '--threshold=100', f'--k={kk}', inf)).out
        rows = re.findall(r'^ +[\d,]+ +(\S+)% +([\d,]+) +[\d,]+  (.*)$', text, re.M)
        assert rows and all(float(p) <= 100 for p, _i, _c in rows)
        assert {tuple(c.split(' > ')): int(i.replace(',', '')) for _p, i, c in rows} == want
    # finite k: an upper bound of the same brute force, at most the total.
    # The brute force is another run's: only contexts of the program's own
    # functions below main are compared (the start-up's and libc's counts
    # vary between runs with the environment's and paths' lengths).
    two = twice_profile(2)
    for kk in (0, 1):
        want = cct_outermost(d_inf, kk)
        d = annotate('--format=json', f'--k={kk}', two).json()
        compared = set()
        for t in d['threads']:
            for c in t['contexts']:
                assert c['inclusive_outermost'] <= min(c['inclusive'], d['total']['Ir'])
                if c['path'][-1] in TWICE_OWN:
                    assert want[tuple(c['path'])] <= c['inclusive_outermost']
                    compared.add(c['path'][-1])
        assert compared == TWICE_OWN
