"""A brute-force reference model of k-calling-context profiling, written from
the definitions of the IHPP thesis (chapter 3), independently of
kgrind_annotate: random activation trees, the CCT, k-contexts (Defs 1-3), the
k-CCF (Def 5), the k-SF built online (Listing 3.2) and by Def. 7, and a writer
of kgrind profiles (docs/output-format.md) holding such a k-SF.

The tests in this file check the model against itself and the thesis's
figures; tests/test_annotate.py compares kgrind_annotate with it."""
import collections
import random

ROOT = '__root__'
INF = None


class Act:
    """One activation: function label, exclusive Ir, callee activations."""
    __slots__ = ('fn', 'excl', 'kids')

    def __init__(self, fn, excl, kids=None):
        self.fn, self.excl, self.kids = fn, excl, kids or []

    def incl(self):
        return self.excl + sum(k.incl() for k in self.kids)


def random_activations(rng, labels=('a', 'b', 'c', 'd', 'e'), max_depth=7, fanout=3, ir=True):
    """A random run: the __root__ activation with random nested calls."""
    def grow(depth):
        kids = []
        if depth < max_depth:
            for _ in range(rng.randint(0, fanout if depth < 2 else fanout - 1)):
                kids.append(grow(depth + 1))
        return Act(rng.choice(labels) if depth else ROOT, rng.randint(0, 20) if ir else 0, kids)
    return grow(0)


def walk(root):
    """Yields (path from __root__, activation, inclusive Ir) for every activation."""
    out = []

    def rec(a, path):
        path = path + (a.fn,)
        inc = a.excl
        i = len(out)
        out.append(None)
        for k in a.kids:
            inc += rec(k, path)
        out[i] = (path, a, inc)
        return inc
    rec(root, ())
    return out


def contexts(root, k):
    """Def. 3: activated k-contexts -> [calls, excl, incl] (paths outermost
    first); root may be a list of runs (threads joined)."""
    res = collections.defaultdict(lambda: [0, 0, 0])
    roots = root if isinstance(root, list) else [root]
    for path, a, inc in (w for r in roots for w in walk(r)):
        c = path if k is INF else path[-(k + 1):]
        r = res[c]
        r[0] += 1
        r[1] += a.excl
        r[2] += inc
    return dict(res)


def kccf(ctx):
    """Def. 5 with counters: join of the reversed k-contexts; the node of a
    reversed prefix counts the activations whose context has that prefix.
    Returned as a canonical nested dict {name: (calls, Ir, incl, {callers})}."""
    forest = {}
    for path, (c, x, i) in ctx.items():
        level = forest
        for name in reversed(path):
            node = level.setdefault(name, [0, 0, 0, {}])
            node[0] += c
            node[1] += x
            node[2] += i
            level = node[3]
    return forest


def count_nodes(forest):
    return sum(1 + count_nodes(n[3]) for n in forest.values())


class Node:
    __slots__ = ('fn', 'calls', 'excl', 'incl', 'kids')

    def __init__(self, fn):
        self.fn, self.calls, self.excl, self.incl, self.kids = fn, 0, 0, 0, {}

    def child(self, fn):
        n = self.kids.get(fn)
        if n is None:
            n = self.kids[fn] = Node(fn)
        return n


def ksf_online(root, k):
    """Listing 3.2: the k-SF built online with the top and bottom pointers.
    Costs go to the canonical node (bottom when it exists, else top).
    Returns the list of trees (R in creation order; __root__'s first); root
    may be a list of runs (threads joined: one k-SF for all)."""
    trees = collections.OrderedDict()

    def call(a, depth, top, bottom, inc):
        if depth == 0 or (k is not INF and depth % k == 0):
            bottom = top
            top = trees.get(a.fn)
            if top is None:
                top = trees[a.fn] = Node(a.fn)
        else:
            top = top.child(a.fn)
        top.calls += 1
        if bottom is not None:
            bottom = bottom.child(a.fn)
            bottom.calls += 1
        canon = bottom if bottom is not None else top
        canon.excl += a.excl
        canon.incl += inc[id(a)]
        for kid in a.kids:
            call(kid, depth + 1, top, bottom, inc)

    inc = {}

    def incl(a):
        inc[id(a)] = a.excl + sum(incl(x) for x in a.kids)
        return inc[id(a)]
    for r in (root if isinstance(root, list) else [root]):
        incl(r)
        call(r, 0, None, None, inc)
    return list(trees.values())


def cct(root):
    t = Node(ROOT)

    def rec(a, n):
        n.calls += 1
        for kid in a.kids:
            rec(kid, n.child(kid.fn))
    rec(root, t)
    return t


def ksf_def7(root, k):
    """Def. 7: join of the CCT's subtrees of depth <= 2k-1 rooted at levels
    multiple of k (counts only)."""
    t = cct(root)
    trees = {}

    def copy_join(src, dst, depth):
        dst.calls += src.calls
        if depth < 2 * k - 1:
            for f, s in src.kids.items():
                copy_join(s, dst.child(f), depth + 1)

    def visit(n, level):
        if level % k == 0:
            dst = trees.get(n.fn)
            if dst is None:
                dst = trees[n.fn] = Node(n.fn)
            copy_join(n, dst, 0)
        for c in n.kids.values():
            visit(c, level + 1)
    visit(t, 0)
    return trees


def tree_dict(n, counts_only=False):
    v = (n.calls,) if counts_only else (n.calls, n.excl, n.incl)
    return (v, {f: tree_dict(c, counts_only) for f, c in n.kids.items()})


def ksf_records(trees, labels, width=50):
    """A forest as version 2 ksf-nodes lines (file-local fn ids): pre-order
    nested lists, broken into lines of about `width` characters at a space
    (which the line break replaces) or before a ')'. Returns (lines, node count)."""
    pieces = []      # node texts, '(', ')' and ' '
    count = 0

    def rec(n):
        nonlocal count
        count += 1
        t = str(labels[n.fn])
        if n.calls != 1:
            t += f'*{n.calls}'
        if n.excl or n.incl:
            t += f'={n.excl}'
        if n.incl != n.excl:
            t += f'/{n.incl}'
        pieces.append(t)
        if n.kids:
            pieces.append('(')
            for i, c in enumerate(n.kids.values()):
                if i:
                    pieces.append(' ')
                rec(c)
            pieces.append(')')
    for i, t in enumerate(trees):
        if i:
            pieces.append(' ')
        rec(t)
    lines, cur = [], ''
    for p in pieces:
        if p in (' ', ')') and len(cur) >= width:
            lines.append(cur)
            cur = '' if p == ' ' else p
        else:
            cur += p
    lines.append(cur)
    return [f'# ksf-nodes {line}' for line in lines], count


def write_profile(path, runs, k, joined=False, pid=1000, cmd='./random', rolling='no'):
    """Writes a kgrind profile with one thread per activation tree in runs
    ({tid: root activation}); the body holds each k-context's exclusive Ir."""
    names = [ROOT]
    runs = {t: (r if isinstance(r, list) else [r]) for t, r in runs.items()}
    for roots in runs.values():
        for p, _a, _i in (w for r in roots for w in walk(r)):
            for f in p:
                if f not in names:
                    names.append(f)
    labels = {f: i for i, f in enumerate(names)}
    kk = 'inf' if k is INF else k
    total = sum(r.incl() for rs in runs.values() for r in rs)
    out = ['# callgrind format', 'version: 1', 'creator: kgrind-0.1.0', f'pid: {pid}', f'cmd: {cmd}',
           'positions: line', 'events: Ir', f'summary: {total}', f'desc: k: {kk}', 'desc: mode: func',
           '', '# ksf-version: 2',
           f'# ksf-options: k={kk} mode=func rolling={rolling} joined={"yes" if joined else "no"}']
    out += ['# ksf-fns ' + '\t'.join(names[:3])] + ['# ksf-fns ' + '\t'.join(names[3:])] * (len(names) > 3)
    body = []
    fnids = {}
    for part, (tid, root) in enumerate(runs.items(), 1):
        recs, count = ksf_records(ksf_online(root, k), labels)
        out.append(f'# ksf-thread {tid} nodes={count} ir={sum(r.incl() for r in root)}')
        out += recs
        out.append(f'# ksf-end-thread {tid}')
        body += ['', f'part: {part}', f'thread: {tid}', 'fl=(1) random.c']
        for cpath, (_c, x, _i) in sorted(contexts(root, k).items()):
            name = "'".join(reversed(cpath))
            if name in fnids:
                body.append(f'fn=({fnids[name]})')
            else:
                fnids[name] = len(fnids) + 1
                body.append(f'fn=({fnids[name]}) {name}')
            body.append(f'{1 + labels[cpath[-1]]} {x}')
    out.append('# ksf-end')
    out += body
    out += ['', f'totals: {total}']
    path.write_text('\n'.join(out) + '\n')
    return path


# ---------------------------------------------------------------------------
# Self-checks of the model against the thesis.

def fig31():
    """Fig. 3.1's trace: r calls a (calls b), then c (calls a (calls b, b))."""
    return Act(ROOT, 0, [Act('a', 0, [Act('b', 0)]),
                         Act('c', 0, [Act('a', 0, [Act('b', 0), Act('b', 0)])])])


def test_model_fig32_counts():
    run = fig31()
    c0 = {p[-1]: v[0] for p, v in contexts(run, 0).items()}
    assert c0 == {ROOT: 1, 'a': 2, 'b': 3, 'c': 1}
    c2 = {p: v[0] for p, v in contexts(run, 2).items()}
    assert c2[('c', 'a', 'b')] == 2 and c2[(ROOT, 'a', 'b')] == 1


def test_model_ksf_online_equals_def7():
    rng = random.Random(7)
    for _ in range(60):
        run = random_activations(rng)
        for k in (1, 2, 3):
            online = {t.fn: tree_dict(t, True) for t in ksf_online(run, k)}
            d7 = {f: tree_dict(t, True) for f, t in ksf_def7(run, k).items()}
            assert online == d7


def test_model_kinf_ksf_is_cct():
    rng = random.Random(3)
    run = random_activations(rng)
    (t,) = ksf_online(run, INF)
    assert tree_dict(t, True) == tree_dict(cct(run), True)
