"""kgrind_annotate's views: folded stacks that keep names intact,
--callers (the k-CCF as caller stacks), --names=short on C++ names, and
--format=dot as a connected call graph of the k-contexts."""
import collections
import random
import re
import subprocess

import pytest

import test_annotate_model as M
from annotate_json import node_paths
from conftest import PROGS
from test_annotate import THESIS, annotate, ok  # noqa: F401
from test_annotate_export import twice_profile  # noqa: F401

# Demangled names and what --names=short makes of them (by hand, after
# KCachegrind's "Shorten Templates": no parameter lists, return types or
# qualifiers, template arguments as <...>).
SHORT = {
    'std::vector<int, std::allocator<int> >::push_back(int const&)': 'std::vector<...>::push_back',
    'Shape::area() const': 'Shape::area',
    'operator<<(std::ostream&, Point const&)': 'operator<<',
    'operator new(unsigned long)': 'operator new',
    'operator delete[](void*)': 'operator delete[]',
    'Point::operator<(Point const&) const': 'Point::operator<',
    'Point::operator()(int) &&': 'Point::operator()',
    '(anonymous namespace)::f(int)': '(anonymous namespace)::f',
    'long sum_pairs<int, long>(std::map<int, long, std::less<int>, std::allocator<std::pair<int const, long> > > const&)':
        'sum_pairs<...>',
    'main::{lambda(long)#1}::operator()(long) const': 'main::{lambda(long)#1}::operator()',
    'A<int>::~A()': 'A<...>::~A',
    'plain_c_function': 'plain_c_function',
    # what tells namesakes apart stays: the object, a clone, an older profile's "#2"
    'Shape::area() const [libshape.so]': 'Shape::area [libshape.so]',
    'std::vector<int, std::allocator<int> >::size() const [clone .isra.0]': 'std::vector<...>::size [clone .isra.0]',
    'f(int)#2': 'f#2',
}


def folded(text):
    out = {}
    for line in text.splitlines():
        stack, n = line.rsplit(' ', 1)
        out[stack] = out.get(stack, 0) + int(n)
    return out


def marked_path(d, c):
    """A JSON context's path as the stack formats show it: at finite k one
    that does not start at __root__ starts with the truncation marker (and
    says so in the JSON)."""
    cut = d['k'] != 'inf' and c['path'][0] != '__root__'
    assert c.get('truncated', False) == cut, c
    return [f"[truncated k={d['k']}]"] * cut + c['path']


def json_folded(d, reverse=False):
    want = collections.Counter()
    for t in d['threads']:
        for c in t['contexts']:
            if c['Ir']:
                path = marked_path(d, c)
                want[';'.join(reversed(path) if reverse else path)] += c['Ir']
    return dict(want)


@pytest.fixture
def cxx_profile(tmp_path):
    """A model profile whose functions have C++ names (spaces, commas,
    brackets, operators)."""
    rng = random.Random(3)
    runs = {1: M.random_activations(rng, labels=tuple(SHORT)), 2: M.random_activations(rng, labels=tuple(SHORT))}
    return M.write_profile(tmp_path / 'cxx.out', runs, 2)


def test_folded_keeps_names(annotate, cxx_profile):
    d = annotate('--format=json', cxx_profile).json()
    got = folded(ok(annotate('--format=folded', cxx_profile)).out)
    assert got == json_folded(d)
    assert any(' ' in s for s in got)     # names with spaces came through whole


def test_names_short(annotate, cxx_profile):
    d = annotate('--format=json', cxx_profile).json()
    want = collections.Counter()
    for stack, n in json_folded(d).items():
        want[';'.join(SHORT.get(f, f) for f in stack.split(';'))] += n
    assert folded(ok(annotate('--format=folded', '--names=short', cxx_profile)).out) == dict(want)
    # the text table is short by default, JSON full
    table = ok(annotate('--top=0', '--threshold=100', cxx_profile)).out
    rows = re.findall(r'^ +[\d,]+ +\S+% +[\d,]+ +[\d,]+  (.*)$', table, re.M)
    shown = {f for row in rows for f in row.split(' > ')}
    assert shown and shown <= set(SHORT.values()) | {'__root__'}
    full = ok(annotate('--top=0', '--threshold=100', '--names=full', cxx_profile)).out
    assert 'std::vector<int, std::allocator<int> >::push_back(int const&)' in full
    assert {f for t in d['threads'] for c in t['contexts'] for f in c['path']} <= set(SHORT) | {'__root__'}


OPERATOR = re.compile(r'operator(?:\(\)|\[\]|<<=?|>>=?|<=>|->\*?|[-+*/%^&|~!=<>,]=?| new(?:\[\])?| delete(?:\[\])?)')


def plain_short(name):
    """A shown name (no return type) without its parameter list and
    trailing qualifiers, template arguments collapsed to <...>: what
    --names=short shows of a name no other function shares."""
    out, i, groups = '', 0, []
    while i < len(name):
        m = OPERATOR.match(name, i) if name.startswith('operator', i) else None
        if m:
            out += m[0]
            i = m.end()
            continue
        if name[i] in '<({':
            close = {'<': '>', '(': ')', '{': '}'}
            depth, j = 0, i
            while True:
                if name[j] in '<({':
                    depth += 1
                elif name[j] in '>)}':
                    depth -= 1
                j += 1
                if depth == 0:
                    break
            assert name[j - 1] == close[name[i]], name
            out += '<...>' if name[i] == '<' else name[i:j]
            groups.append((len(out) - (5 if name[i] == '<' else j - i), name[i], len(out)))
            i = j
            continue
        out += name[i]
        i += 1
    # the parameter list: the last top-level (...) after a name, then qualifiers
    if groups and groups[-1][1] == '(' and groups[-1][0] > 0 and out[groups[-1][0] - 1] != ' ':
        tail = out[groups[-1][2]:]
        if re.fullmatch(r'(?:\s*(?:const|volatile|noexcept|&&?))*', tail):
            out = out[:groups[-1][0]]
    return out


def test_names_short_real_cxx(annotate, tools):
    """Short names drop parameter lists and template arguments while no other
    function of the profile has the same short name; functions that share it
    (overloads, instances of a template) show what tells them apart."""
    exe = tools.compile('templates.cpp', '-O0')
    run = tools.kgrind(exe, opts=['--k=1'])
    assert run.returncode == 0, run.stderr
    text = ok(annotate('--top=0', '--threshold=100', run.profile_path)).out
    for name in ('sum_pairs<...>', '(anonymous namespace)::Point::operator<', '(anonymous namespace)::Point::area',
                 'std::map<...>::operator[]', 'main::{lambda(long)#1}::operator()'):
        assert re.search(rf'(?:^|  |> ){re.escape(name)}(?: >|$)', text, re.M), name
    # at k=0 a row is one function: the table's names against the JSON's, in the same order
    row = r'^ +[\d,]+ +\S+% +[\d,]+ +[\d,]+  (.*)$'
    names = re.findall(row, ok(annotate('--k=0', '--top=0', '--threshold=100', run.profile_path)).out, re.M)
    paths = [c['path'] for c in annotate('--format=json', '--k=0', run.profile_path).json()['threads'][0]['contexts']]
    assert len(names) == len(paths) > 100 and all(len(p) == 1 for p in paths)
    shown = {p[0]: n for p, n in zip(paths, names)}
    assert len(set(shown.values())) == len(shown) == len(names)     # no two functions shown alike
    by_plain = collections.defaultdict(set)
    for f, s in shown.items():
        by_plain[plain_short(s)].add(f)
    for f, s in shown.items():
        # the plain short name while unique, else more of the full name
        assert (s == plain_short(s)) == (len(by_plain[plain_short(s)]) == 1), (s, f)
    assert any(len(v) > 1 for v in by_plain.values())   # templates.cpp has namesakes under short names


@pytest.mark.parametrize('k', [1, 2, M.INF])
def test_callers_folded_is_the_kccf(annotate, tmp_path, k):
    rng = random.Random(40 + (k or 0))
    prof = M.write_profile(tmp_path / 'c.out', {1: M.random_activations(rng), 2: M.random_activations(rng)}, k)
    d = annotate('--format=json', prof).json()
    got = folded(ok(annotate('--format=folded', '--callers', prof)).out)
    assert got == json_folded(d, reverse=True)
    # every k-CCF node's Ir is the Ir of the caller stacks it starts
    prefix = collections.Counter()
    for stack, n in got.items():
        frames = stack.split(';')
        if frames[-1] == f'[truncated k={k}]':    # the caller stack goes on beyond k callers
            frames.pop()
        for i in range(1, len(frames) + 1):
            prefix[tuple(frames[:i])] += n

    kccf = collections.Counter()
    for t in d['threads']:
        for p, n in node_paths(t['kccf']):
            kccf[p] += n['Ir']
    assert {p: v for p, v in kccf.items() if v} == {p: v for p, v in prefix.items() if v}


def test_callers_needs_folded(annotate):
    from test_annotate import bad
    bad(annotate('--callers', THESIS), '--callers: only with --format=folded')
    bad(annotate('--names=long', THESIS), "bad --names value 'long'")


# ---------------------------------------------------------------------------
# Graphviz.

def parse_dot(text, k=None):
    """Nodes {id: (path, calls, label)} and edges; a tooltip's truncation
    marker (k given: a path that does not start at __root__) checked and
    dropped."""
    nodes, edges = {}, []
    for m in re.finditer(r'^  n(\d+) \[label="([^"]*)", tooltip="([^"]*)"', text, re.M):
        calls = int(re.search(r'\\ncalls ([\d,]+)', m[2])[1].replace(',', ''))
        path = m[3].split(' > ')
        if k is not None:
            cut = path[0] == f'[truncated k={k}]'
            path = path[cut:]
            assert cut == (k != 'inf' and path[0] != '__root__'), m[3]
        nodes[int(m[1])] = (tuple(path), calls, m[2])
    for m in re.finditer(r'^  n(\d+) -> n(\d+) \[label="([\d,]+)x\\n([\d,]+)"\];', text, re.M):
        edges.append((int(m[1]), int(m[2]), int(m[3].replace(',', '')), int(m[4].replace(',', ''))))
    return nodes, edges


def connected(nodes, edges):
    adj = collections.defaultdict(set)
    for a, b, _c, _i in edges:
        adj[a].add(b)
        adj[b].add(a)
    seen, todo = set(), [next(iter(nodes))]
    while todo:
        n = todo.pop()
        if n not in seen:
            seen.add(n)
            todo += adj[n]
    return seen == set(nodes)


@pytest.mark.parametrize('k', [2, 'inf'])
def test_dot_call_graph(annotate, twice_profile, k):
    prof = twice_profile(k)
    d = annotate('--format=json', prof).json()
    calls = collections.Counter()
    for t in d['threads']:
        for c in t['contexts']:
            calls[tuple(c['path'])] += c['calls']
    full = ok(annotate('--format=dot', '--threshold=100', '--top=0', prof)).out
    nodes, edges = parse_dot(full, k)
    # one node per context, with its calls; one edge per caller -> callee pair
    assert sorted(p for p, _c, _l in nodes.values()) == sorted(calls)
    assert all(c == calls[p] for p, c, _l in nodes.values())
    assert len({(a, b) for a, b, _c, _i in edges}) == len(edges)
    assert connected(nodes, edges)
    # the calls into a context are its activations (all but the root's)
    into = collections.Counter()
    for _a, b, c, _i in edges:
        into[b] += c
    for n, (p, c, _l) in nodes.items():
        assert into[n] == (0 if p == ('__root__',) else c), p
    # a callee context extends its caller's by one function
    for a, b, _c, _i in edges:
        pa, pb = nodes[a][0], nodes[b][0]
        assert pb[:-1] == pa[-len(pb) + 1:] if k != 'inf' else pb[:-1] == pa
    # pruned: the hottest contexts, still connected, every node named plainly
    top = ok(annotate('--format=dot', '--top=5', prof)).out
    n5, e5 = parse_dot(top, k)
    assert 5 <= len(n5) < len(nodes) and connected(n5, e5)
    assert any(p[-1] == 'scaled' for p, _c, _l in n5.values())
    assert '()' not in top
    svg = subprocess.run(['dot', '-Tsvg'], input=top, capture_output=True, text=True)
    assert svg.returncode == 0 and '<svg' in svg.stdout, svg.stderr


# ---------------------------------------------------------------------------
# --top / --threshold given: the trees and the machine formats show only the
# contexts the table selects (a k=inf forest of millions of nodes has an
# inf-CCF of tens of millions).

def tree_nodes(nodes):
    """{path of names from a root: (calls, Ir, inclusive)}, in pre-order."""
    return {p: (n['calls'], n['Ir'], n['inclusive']) for p, n in node_paths(nodes)}


@pytest.mark.parametrize('k', [2, M.INF])
@pytest.mark.parametrize('order', ['sorted', 'natural'])
def test_limited_outputs_are_the_selected_contexts(annotate, tmp_path, k, order):
    rng = random.Random(22 + (k or 7))
    prof = M.write_profile(tmp_path / 'l.out', {1: M.random_activations(rng), 2: M.random_activations(rng)}, k)
    full = annotate('--format=json', f'--tree-order={order}', prof).json()
    for limit in (['--top=3'], ['--threshold=50'], ['--top=5', '--threshold=80']):
        part = annotate('--format=json', f'--tree-order={order}', *limit, prof).json()
        text = ok(annotate(f'--tree-order={order}', *limit, prof)).out
        for tf, tp in zip(full['threads'], part['threads']):
            # the table's contexts, in its order
            rows = text.split(f"Hottest {full['k']}-contexts, thread {tf['tid']}:", 1)[1].split('\n\n', 1)[0]
            shown = [r.split(None, 4)[4] for r in rows.splitlines()[3:]]
            assert [' > '.join(c['path']) for c in tp['contexts']] == shown
            assert tp['contexts'] == tf['contexts'][:len(shown)] and tp['kccf_nodes'] == tf['kccf_nodes']
            # the k-CCF: exactly the chains of those contexts, counters and sibling order of the whole one
            kf, kp = tree_nodes(tf['kccf']), tree_nodes(tp['kccf'])
            chains = {tuple(reversed(c['path']))[:i] for c in tp['contexts'] for i in range(1, len(c['path']) + 1)}
            assert set(kp) == chains and [p for p in kf if p in kp] == list(kp)
            assert all(kp[p] == kf[p] for p in kp)
            # the k-SF: at k=inf the root paths of those contexts, else whole
            sf, sp = tree_nodes(tf['ksf']), tree_nodes(tp['ksf'])
            paths = {tuple(c['path'])[:i] for c in tp['contexts'] for i in range(1, len(c['path']) + 1)}
            assert (set(sp) == paths if k is M.INF else sp == sf) and all(sp[p] == sf[p] for p in sp)
        # folded stacks: those of the selected contexts, summed over threads
        assert folded(ok(annotate('--format=folded', *limit, prof)).out) == json_folded(part)
        # --kccf prints the same pruned tree
        dump = ok(annotate('--kccf', '--costs=no', f'--tree-order={order}', *limit, prof)).out
        first = dump.split('DUMP of K-CCF', 1)[1].split('\n', 2)[2].split('\n\n', 1)[0]
        names = [l.split('| ', 1)[1].rsplit(',', 1)[0] for l in first.splitlines()]
        tp = part['threads'][0]
        assert names == [p[-1] + '()' for p in tree_nodes(tp['kccf'])]


def test_namesakes_stay_apart(annotate, tools):
    """tests/progs/namesake_main.cpp: two functions `(anonymous
    namespace)::work(int)`, one in the executable called 3 times by main,
    one in a shared library called twice by lib_entry.  The text table and
    the call graph keep them apart, qualified by their objects, short names
    included; the calls are the program's own."""
    lib = tools.dir / 'libnamesake.so'
    subprocess.run(['g++', '-g', '-O1', '-shared', '-fPIC', '-o', str(lib), str(PROGS / 'namesake_lib.cpp')],
                   check=True)
    exe = tools.compile('namesake_main.cpp', '-O1', libs=[f'-L{tools.dir}', '-lnamesake', f'-Wl,-rpath,{tools.dir}'])
    run = tools.kgrind(exe, opts=['--k=2'])
    assert run.returncode == 0, run.stderr
    work = '(anonymous namespace)::work'
    want = {(f'{work} [namesake_main]', 'main', 3), (f'{work} [libnamesake.so]', 'lib_entry', 2)}
    text = ok(annotate('--top=0', '--threshold=100', run.profile_path)).out
    rows = re.findall(r'^ +[\d,]+ +\S+% +[\d,]+ +([\d,]+)  .* > (\S+) > (.*)$', text, re.M)
    assert {(f, c, int(n)) for n, c, f in rows if f.startswith(work)} == want
    nodes, edges = parse_dot(ok(annotate('--format=dot', '--threshold=100', '--top=0', run.profile_path)).out)
    got = set()
    for a, b, calls, _i in edges:
        label = nodes[b][2].split('\\n')[0]
        if label.startswith(work):
            got.add((label, nodes[a][0][-1].split('(')[0], calls))
            assert nodes[b][1] == calls
    assert got == want
