"""Events beyond Ir in kgrind_annotate's views that weigh contexts by one
event: --tree by --event (or a --sort by an event) and --tree-min on its
inclusive share, --diff --event=incl:<event> with --fail-above on it, and
incl:<event> refused where a view derives inclusive cost itself. Checked
against brute-force sums of the k-SF records (ksf_records)."""
import collections
import json
import subprocess

import ksf_records

from conftest import ROOT

ANNOTATE = ['perl', str(ROOT / 'perl' / 'kgrind_annotate.pl')]
GEOMETRY = ['--I1=32768,8,64', '--D1=49152,12,64', '--LL=8388608,16,64']
SMALL_D1 = ['--I1=32768,8,64', '--D1=4096,1,64', '--LL=8388608,16,64']
SIM = ['--cache-sim=yes', '--branch-sim=yes']


def annotate(*args, status=0):
    r = subprocess.run([*ANNOTATE, *map(str, args)], capture_output=True, text=True)
    assert r.returncode == status, r.stderr
    return r


def profile(tools, out, k, geometry=GEOMETRY):
    exe = tools.compile('cache_work.c', '-O1')
    run = tools.kgrind(exe, opts=[*SIM, *geometry, f'--k={k}'], out=out)
    assert run.returncode == 0, run.stderr
    return run.profile_path


def context_events(forest, k, event, incl=False):
    """Context path (outermost first; k: at most k + 1 functions, None: the
    root path) -> the event's count summed over the nodes that count for it
    (inv_k's: the cleared top of the trees other than the first left out);
    incl: the nodes' inclusive counts."""
    counts = forest.events_incl if incl else forest.events
    out = collections.Counter()
    for index, root in enumerate(forest.roots):
        stack = [(root, (forest.name(root),), 0)]
        while stack:
            nid, path, depth = stack.pop()
            if not (index > 0 and k is not None and depth < k):
                out[path] += counts[nid].get(event, 0)
            for kid in forest.children[nid]:
                kid_path = path + (forest.name(kid),)
                stack.append((kid, kid_path if k is None else kid_path[-(k + 1):], depth + 1))
    return out


def tree_rows(text):
    """--tree's rows: (incl %, self %, name), the name without its guide."""
    rows = text.split('context (outermost caller first)')[1].splitlines()[1:]
    return sorted((r[0:8].strip(), r[9:17].strip(), r[32:].lstrip('+| .')) for r in rows if r.strip())


def expected_tree(contexts, total, tree_min):
    """The tree's rows from the contexts' exclusive counts: a node per path
    prefix of a context with a count, its self count its own context's, its
    inclusive the sum of those at or below it; those below tree_min % out."""
    self_, incl = collections.Counter(), collections.Counter()
    for path, n in contexts.items():
        if n:
            self_[path] += n
            for i in range(1, len(path) + 1):
                incl[path[:i]] += n
    pc = lambda n: '%.2f%%' % (100 * n / total)
    return sorted((pc(incl[p]), pc(self_[p]), p[-1]) for p in incl if incl[p] and incl[p] >= tree_min * total / 100)


def test_tree_by_an_event(tools):
    """--tree --event=D1mr at k=inf (the calling context tree: a node's
    inclusive share its recorded inclusive D1mr) and k=2 (contexts merged
    from their outermost callers): each row's shares are the brute-force
    sums of the records' D1mr, --tree-min prunes by inclusive D1mr; --event=
    incl:D1mr and --sort=D1mr draw the same tree."""
    for k, kk in (('inf', None), ('2', 2)):
        path = profile(tools, f'kg.out.{k}', k)
        forest = ksf_records.parse(path).forests[0]
        total = sum(ev.get('D1mr', 0) for ev in forest.events)
        contexts = context_events(forest, kk, 'D1mr')
        assert total > 0 and sum(contexts.values()) == total
        if kk is None:   # the tree's inclusive sums are the records' inclusive counts
            incl = context_events(forest, None, 'D1mr', incl=True)
            below = collections.Counter()
            for p, n in contexts.items():
                for i in range(1, len(p) + 1):
                    below[p[:i]] += n
            assert {p: below[p] for p in incl} == dict(incl)
        for tree_min in ('0', '2'):
            text = annotate('--tree', '--event=D1mr', f'--tree-min={tree_min}', '--names=full', path).stdout
            assert 'at least %s%% of its D1mr inclusive' % tree_min in text
            got = tree_rows(text)
            assert got == expected_tree(contexts, total, float(tree_min))
            assert len(got) > (10 if tree_min == '0' else 3)
            for same in (['--event=incl:D1mr'], ['--sort=D1mr'], ['--sort=incl:D1mr']):
                assert tree_rows(annotate('--tree', *same, f'--tree-min={tree_min}', '--names=full',
                                          path).stdout) == got
        # Ir's tree is not D1mr's
        assert tree_rows(annotate('--tree', '--tree-min=0', '--names=full', path).stdout) != got


def test_diff_of_an_inclusive_event(tools):
    """--diff --event=incl:D1mr between a 48 KB and a 4 KB direct-mapped D1
    (k=inf): each context's base and new counts are the records' inclusive
    D1mr of its path, the totals the runs' D1mr; --fail-above fails on the
    largest growth of a context's inclusive D1mr and passes above it."""
    base, new = profile(tools, 'kg.out.1', 'inf'), profile(tools, 'kg.out.2', 'inf', geometry=SMALL_D1)
    want = [context_events(ksf_records.parse(p).forests[0], None, 'D1mr', incl=True) for p in (base, new)]
    totals = [sum(ev.get('D1mr', 0) for ev in ksf_records.parse(p).forests[0].events) for p in (base, new)]
    d = json.loads(annotate('--diff', '--event=incl:D1mr', '--format=json', base, new).stdout)
    assert d['event'] == d['sort'] == 'incl:D1mr'
    assert (d['base']['total']['incl:D1mr'], d['new']['total']['incl:D1mr']) == tuple(totals)
    changed = {p for p in {*want[0], *want[1]} if want[0][p] != want[1][p]}
    assert len(changed) > 5
    shown = {tuple(c['path']): c for c in d['contexts']}
    assert changed <= set(shown)
    for p, c in shown.items():
        assert (c['base']['incl:D1mr'], c['new']['incl:D1mr']) == (want[0][p], want[1][p])
    deltas = [abs(c['delta']['incl:D1mr']) for c in d['contexts']]
    assert deltas == sorted(deltas, reverse=True)
    # the largest context growth (the root's: all the run's growth) in % of the base total
    top = max(100 * (want[1][p] - want[0][p]) / totals[0] for p in changed)
    r = annotate('--diff', '--event=incl:D1mr', f'--fail-above={top * 0.9:.3f}', base, new, status=1)
    assert 'context(s) (incl:D1mr) grew' in r.stderr and 'delta incl:D1mr' in r.stdout
    annotate('--diff', '--event=incl:D1mr', f'--fail-above={top * 1.1:.3f}', base, new)


def test_inclusive_event_refused_where_derived(tools):
    """folded (--diff's too) and speedscope weigh stacks by their
    exclusive counts, dot shows both counts of --event: incl:<event> is one
    message saying to use <event>; --event without --tree in the text
    report too."""
    path = profile(tools, 'kg.out.1', '1')
    for args, needle in [
        (['--format=folded', '--event=incl:D1mr'], 'the viewer derives the inclusive one: use --event=D1mr'),
        (['--format=speedscope', '--event=incl:D1mr'], 'the viewer derives the inclusive one: use --event=D1mr'),
        (['--diff', '--format=folded', '--event=incl:D1mr', path], 'the viewer derives the inclusive one: use --event=D1mr'),
        (['--format=dot', '--event=incl:D1mr'], 'inclusive count of --event=D1mr: use --event=D1mr'),
        (['--event=D1mr'], '--event: only with --format=folded, speedscope or dot, --tree, or --diff'),
        (['--tree', '--event=incl:Xyz'], "--event: unknown event 'Xyz'"),
    ]:
        r = annotate(*args, path, status=2)
        assert r.stdout == '' and needle in r.stderr and r.stderr.count('\n') == 1, r.stderr
