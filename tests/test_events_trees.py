"""Events beyond Ir in the thesis trees (--ksf, --kccf and JSON's ksf and
kccf): --show's columns per node, exclusive and inclusive, derived events,
siblings by a --sort event. Checked against the k-SF records
(ksf_records), independently of kgrind_annotate: a k-SF node's counts are
its records'; at k=inf a node's inclusive counts are its subtree's
exclusive ones; a k-CCF node's counts are the sums over the k-SF nodes
whose chains (the innermost k'+1 labels of their root paths, inv_k's; the
cleared top of the trees but the first counting nothing) start with the
node's chain, as its Ir is."""
import base64
import collections
import json
import re
import subprocess

import pytest

import ksf_records

from conftest import ROOT, Toolbox

ANNOTATE = ['perl', str(ROOT / 'perl' / 'kgrind_annotate.pl')]
SCHEMA = ROOT / 'docs' / 'kgrind-annotate.schema.json'
SIM = ['--cache-sim=yes', '--branch-sim=yes', '--I1=32768,8,64', '--D1=49152,12,64', '--LL=8388608,16,64']
# KCachegrind's formulas (docs/manual.md), an absent event counting 0
DERIVED = {'L1m': {'I1mr': 1, 'D1mr': 1, 'D1mw': 1}, 'LLm': {'ILmr': 1, 'DLmr': 1, 'DLmw': 1},
           'Bm': {'Bcm': 1, 'Bim': 1},
           'CEst': {'Ir': 1, 'Bcm': 10, 'Bim': 10, 'I1mr': 10, 'D1mr': 10, 'D1mw': 10, 'Ge': 20,
                    'ILmr': 100, 'DLmr': 100, 'DLmw': 100}}


@pytest.fixture(scope='module')
def profiles(tmp_path_factory):
    """tests/progs/cache_work.c with the caches and branches simulated, at
    k=2 and k=inf: {k: (profile, its records)}."""
    tools = Toolbox(tmp_path_factory.mktemp('events_trees'))
    exe = tools.compile('cache_work.c', '-O1')
    out = {}
    for k in ('2', 'inf'):
        run = tools.kgrind(exe, opts=[*SIM, f'--k={k}'], out=f'cw-k{k}.kg')
        assert run.returncode == 0, run.stderr
        prof = ksf_records.parse(run.profile_path)
        assert prof.options['events-incl'] == 'yes' and len(prof.forests) == 1
        out[k] = (run.profile_path, prof)
    return out


def annotate(*args, status=0):
    r = subprocess.run([*ANNOTATE, *map(str, args)], capture_output=True, text=True)
    assert r.returncode == status, r.stderr
    return r


def frame_name(name):
    """A tree's name for a function (KGrind::Format::frame_name): '()'
    added unless it has a parameter list."""
    if re.search(r'\)(?:\s+(?:const|volatile|noexcept)|\s*&&?)*(?:\s\[[^\[\]]*\]|#\d+)*\Z', name):
        return name
    return name + '()'


def counts(ir, incl, events, events_incl):
    """A node's columns as the trees print them with every event shown:
    Ir, the events, the derived ones, and their inclusive counts ('incl'
    for Ir's)."""
    out = {'Ir': ir, 'incl': incl}
    for prefix, base in (('', dict(events, Ir=ir)), ('incl:', dict(events_incl, Ir=incl))):
        for e in events:
            out[prefix + e] = base[e]
        for d, terms in DERIVED.items():
            out[prefix + d] = sum(w * base.get(t, 0) for t, w in terms.items())
    return out


def show_all(prof):
    return '--show=' + ','.join(['Ir', *prof.options['events'].split(','), *DERIVED])


LINE = re.compile(r'^( *)\| (.*),(\d+)  \[(.*)\]$')


def tree_nodes(text, header):
    """The tree after the line starting with header: [(chain of names from
    its root, calls, {column: count})] in the printed order."""
    lines = text.split(header, 1)[1].splitlines()[2:]
    nodes, path = [], []
    for line in lines:
        m = LINE.match(line)
        if not m:
            if line.startswith('note: '):
                continue
            break
        depth = len(m.group(1)) // 2
        del path[depth:]
        path.append(m.group(2))
        cols = dict(c.rsplit(' ', 1) for c in m.group(4).split(', '))
        nodes.append((tuple(path), int(m.group(3)), {k: int(v) for k, v in cols.items()}))
    assert nodes, text
    return nodes


def ccf_sums(forest, k, kk):
    """k'-CCF node chain (activated function first, its callers after, at
    most kk + 1 names; None: whole paths) -> Counter of the columns of every
    event: the sums over the k-SF nodes whose chains start with it, a node
    of the cleared top of a tree but the first (depth < k) adding nothing."""
    out = collections.defaultdict(collections.Counter)
    for index, root in enumerate(forest.roots):
        stack = [(root, (frame_name(forest.name(root)),), 0)]
        while stack:
            nid, path, depth = stack.pop()
            chain = tuple(reversed(path))[:None if kk is None else kk + 1]
            cleared = index > 0 and k is not None and depth < k
            _, _, calls, excl, incl = forest.nodes[nid]
            add = counts(excl, incl, forest.events[nid], forest.events_incl[nid])
            for j in range(1, len(chain) + 1):
                node = out[chain[:j]]    # a cleared node's chain is the k-CCF's too, counting nothing
                if not cleared:
                    node.update(add)
                    node['calls'] += calls
            for kid in forest.children[nid]:
                stack.append((kid, path + (frame_name(forest.name(kid)),), depth + 1))
    return out


def ksf_expected(forest, nid):
    _, _, calls, excl, incl = forest.nodes[nid]
    return calls, counts(excl, incl, forest.events[nid], forest.events_incl[nid])


@pytest.mark.parametrize('k', ['2', 'inf'])
def test_ksf_nodes_print_the_records_events(profiles, k):
    """--ksf with every event shown, in the records' order: each node's
    exclusive and inclusive events are its records', its derived ones
    the formulas of them."""
    path, prof = profiles[k]
    forest = prof.forests[0]
    nodes = tree_nodes(annotate('--ksf', '--tree-order=natural', show_all(prof), path).stdout, 'DUMP of K-SF')
    assert len(nodes) == len(forest.nodes)
    for nid, (chain, calls, cols) in enumerate(nodes):
        assert chain == tuple(frame_name(n) for n in forest.root_path(nid)[-len(chain):])
        assert (calls, cols) == ksf_expected(forest, nid)
    assert sum(cols['D1mr'] for _, _, cols in nodes) > 10_000
    assert sum(cols['Bcm'] for _, _, cols in nodes) > 1_000


def test_cct_inclusive_events_are_subtree_sums(profiles):
    """At k=inf a k-SF node's printed inclusive events are the sums of its
    subtree's exclusive events in the records."""
    path, prof = profiles['inf']
    forest = prof.forests[0]
    events = prof.options['events'].split(',')
    nodes = tree_nodes(annotate('--ksf', '--tree-order=natural', show_all(prof), path).stdout, 'DUMP of K-SF')
    below = [collections.Counter(ev) for ev in forest.events]
    for nid in sorted(forest.nodes, key=forest.depth_in_tree, reverse=True):
        parent = forest.nodes[nid][0]
        if parent is not None:
            below[parent].update(below[nid])
    checked = 0
    for nid, (_, _, cols) in enumerate(nodes):
        assert {e: cols[f'incl:{e}'] for e in events} == {e: below[nid][e] for e in events}
        checked += bool(forest.children[nid]) and cols['incl:D1mr'] > cols['D1mr']
    assert checked > 5


@pytest.mark.parametrize('k, args', [('2', []), ('2', ['--k=1']), ('2', ['--top=3']),
                                     ('inf', []), ('inf', ['--top=3']), ('inf', ['--k=2'])],
                         ids=['k2', 'k2-view1', 'k2-top3', 'inf', 'inf-top3', 'inf-view2'])
def test_kccf_node_events_are_sums_of_their_ksf_nodes(profiles, k, args):
    """--kccf with every event shown: each node's calls, Ir and events
    (exclusive, inclusive, derived) are the sums over the k-SF nodes inv_k
    maps to it; whole, every k-CCF node is printed; --top=3 prints the
    chains of the contexts selected, each node with its whole counts."""
    path, prof = profiles[k]
    kk = next((a.split('=')[1] for a in args if a.startswith('--k=')), k)
    want = ccf_sums(prof.forests[0], ksf_records.k_of(prof), None if kk == 'inf' else int(kk))
    nodes = tree_nodes(annotate('--kccf', show_all(prof), *args, path).stdout, 'DUMP of K-CCF')
    got = {chain: (calls, cols) for chain, calls, cols in nodes}
    assert len(got) == len(nodes)
    for chain, (calls, cols) in got.items():
        w = dict(want[chain])
        assert (calls, cols) == (w.pop('calls', 0), {c: w.get(c, 0) for c in cols})
        assert not {c: n for c, n in w.items() if c not in cols and n}
    if '--top=3' not in args:
        assert set(got) == set(want)
    else:
        assert 3 <= len(got) < len(want) / 10
    assert max(cols['D1mr'] for _, _, cols in nodes) > 10_000


@pytest.mark.parametrize('tree, sort', [('--kccf', 'D1mr'), ('--kccf', 'incl:CEst'), ('--ksf', 'Bcm'),
                                        ('--ksf', 'incl:L1m')])
@pytest.mark.parametrize('k', ['2', 'inf'])
def test_siblings_follow_the_sort_event(profiles, k, tree, sort):
    """--sort=<event> (sorted trees, the default): every node's children,
    and the roots, by the event's count (its inclusive count for incl:),
    most first, then by name (the function's: `malloc` before
    `malloc [inlined]`, whose labels `malloc()` and `malloc [inlined]()`
    would sort the other way)."""
    path, _ = profiles[k]
    nodes = tree_nodes(annotate(tree, f'--sort={sort}', f'--show={sort}', path).stdout,
                       'DUMP of K-SF' if tree == '--ksf' else 'DUMP of K-CCF')
    groups = collections.defaultdict(list)
    for chain, _, cols in nodes:
        groups[chain[:-1]].append((-cols[sort], chain[-1].removesuffix('()')))
    assert all(g == sorted(g) for g in groups.values())
    assert sum(len({n for n, _ in g if n}) > 1 for g in groups.values()) >= 3


def test_json_trees_carry_the_events(profiles):
    """JSON's ksf and kccf nodes have the contexts' event fields: events,
    derived and events_inclusive, the records' (k-SF) and their inv_k sums
    (k-CCF); the document still valid against the schema."""
    import jsonschema
    for k in ('2', 'inf'):
        path, prof = profiles[k]
        forest = prof.forests[0]
        d = json.loads(annotate('--format=json', '--tree-order=natural', path).stdout)
        jsonschema.validate(d, json.loads(SCHEMA.read_text()))
        t = d['threads'][0]

        def columns(node):
            cols = {'Ir': node['Ir'], 'incl': node['inclusive'], **node['events'], **node['derived']}
            cols.update({f'incl:{e}': n for e, n in node['events_inclusive'].items()})
            return node['calls'], cols

        assert [columns(n) for n in t['ksf']] == [ksf_expected(forest, nid) for nid in range(len(forest.nodes))]
        want = ccf_sums(forest, ksf_records.k_of(prof), ksf_records.k_of(prof))
        chains = {}
        for n in t['kccf']:
            chains[n['id']] = (chains[n['parent']] if n['parent'] is not None else ()) + (frame_name(n['name']),)
            w = dict(want[chains[n['id']]])
            calls, cols = columns(n)
            assert (calls, cols) == (w.pop('calls', 0), {c: w.get(c, 0) for c in cols})
        assert set(chains.values()) == set(want)


@pytest.mark.writes_bad_profiles
def test_records_without_inclusive_events(profiles, tmp_path):
    """Records of an older kgrind (no events-incl): the trees print the
    exclusive events and say once that inclusive counts are Ir's only;
    incl:<event> is refused with one message."""
    path, prof = profiles['2']
    forest = prof.forests[0]
    names = prof.options['events'].split(',')
    numbers = []
    for ev in forest.events:
        numbers.append(sum(1 << c for c, e in enumerate(names) if ev[e]))
        numbers.extend(ev[e] for e in names if ev[e])
    line = '# ksf-events ' + base64.b64encode(ksf_records.ber(numbers)).decode() + '\n'
    out, wrote = [], False
    for text in open(path):
        if text.startswith('# ksf-options: '):
            text = text.replace(' events-incl=yes', '')
        if text.startswith('# ksf-events '):
            text, wrote = ('' if wrote else line), True
        out.append(text)
    old = tmp_path / 'old.kg'
    old.write_text(''.join(out))
    r = annotate('--kccf', '--show=Ir,D1mr,CEst', '--sort=D1mr', old)
    assert r.stdout.count('note: the k-SF records have no inclusive events') == 1
    want = ccf_sums(forest, 2, 2)
    for chain, calls, cols in tree_nodes(r.stdout, 'DUMP of K-CCF'):
        assert set(cols) == {'Ir', 'D1mr', 'CEst', 'incl'}
        assert {c: want[chain][c] for c in cols} == cols
    for args in (['--kccf', '--show=incl:D1mr'], ['--ksf', '--sort=incl:D1mr']):
        r = annotate(*args, old, status=2)
        assert r.stdout == '' and r.stderr.count('\n') == 1
        assert 'the k-SF records have no inclusive events' in r.stderr
