"""kgrind_annotate on block-mode profiles (--mode=intra|inter, --roll-loops):
real profiles of the thesis's prog4, prog5 and prog6 (Listings 4.13-4.24).
The trees printed are compared with the forests read by tests/ksf_records.py
(structure and counts), the k-CCFs with ksf_records.kccf, the block table with
the ksf-block records; JSON against the schema; bad input."""
import base64
import collections
import json
import os
import re
import shutil

import pytest

import ksf_records
from annotate_json import nested
from test_annotate import SCHEMA, annotate, bad, ok  # noqa: F401


def profile(tools, src, opts, out='kgrind.out'):
    exe = tools.compile(src, '-O0')
    r = tools.kgrind(exe, opts=opts, out=out)
    assert r.returncode == 0, r.stderr
    return exe, r.profile_path


def reference(path):
    """ksf_records' forests, labelled by block names, with their function
    (intra) from the ksf-thread records."""
    prof = ksf_records.parse(path)
    names = {label: b['name'] for label, b in prof.blocks.items()}
    for f in prof.forests:
        f.names = names
    return prof, prof.blocks


def tree_sections(text):
    """{(kind, tid, function or None): canonical tree} of the DUMP sections."""
    out, cur = {}, None
    for line in text.splitlines():
        m = re.match(r'^DUMP of (K-SF|K-CCF) \(k=\S+, thread (\w+)(?:, function (.+))?, (\d+) nodes\)$', line)
        if m:
            cur = out.setdefault((m.group(1), m.group(2), m.group(3)), [])
            continue
        if cur is not None and re.match(r'^ *\| ', line):
            cur.append(line)
        elif cur is not None and line and not line.startswith('---'):
            cur = None
    return {k: parse_tree(v) for k, v in out.items()}


def parse_tree(lines):
    """'| {foo+0 at prog4.c:7},2  [Ir 12, incl 12]' lines -> sorted (name, calls, kids)."""
    entries = []
    for line in lines:
        m = re.match(r'^( *)\| (.+),(\d+)(?:  \[Ir \d+, incl \d+\])?$', line)
        assert m, line
        entries.append((len(m.group(1)) // 2, m.group(2), int(m.group(3))))

    def build(i):
        depth, name, calls = entries[i]
        kids, j = [], i + 1
        while j < len(entries) and entries[j][0] > depth:
            assert entries[j][0] == depth + 1
            kid, j = build(j)
            kids.append(kid)
        return (name, calls, tuple(sorted(kids))), j
    trees, i = [], 0
    while i < len(entries):
        t, i = build(i)
        trees.append(t)
    return sorted(trees)


def kccf_tree(contexts):
    """The k-CCF as canonical trees from {context (outermost first): calls}:
    a node with reversed path rho counts every context ending with rho."""
    root = {}
    for ctx, calls in contexts.items():
        level = root
        for name in reversed(ctx):
            node = level.setdefault(name, [0, {}])
            node[0] += calls
            level = node[1]

    def canon(level):
        return sorted((name, c, tuple(canon(kids))) for name, (c, kids) in level.items())
    return canon(root)


def context_table(text):
    """{(tid, function): {context tuple: calls}} of the hottest-contexts tables."""
    out, cur = {}, None
    for line in text.splitlines():
        m = re.match(r'^Hottest \S+ block-contexts, thread (\w+)(?:, function (.+))?: \d+ of', line)
        if m:
            cur = out.setdefault((m.group(1), m.group(2)), {})
            continue
        m = re.match(r'^ +[\d,]+ +\S+ +[\d,]+ +([\d,]+)  (.+)$', line)
        if cur is not None and m:
            cur[tuple(m.group(2).split(' > '))] = int(m.group(1).replace(',', ''))
        elif cur is not None and line.startswith('DUMP'):
            cur = None
    return out


def check_trees(annotate, path, kprime=None):
    prof, _ = reference(path)
    k = ksf_records.k_of(prof)
    args = ['--ksf', '--kccf', '--threshold=100', '--top=0', path]
    if kprime is not None:
        args.insert(0, f'--k={kprime}')
    r = ok(annotate(*args))
    secs = tree_sections(r.out)
    table = context_table(r.out)
    kk = k if kprime is None else kprime
    assert len(secs) == 2 * len(prof.forests)
    for f in prof.forests:
        assert secs[('K-SF', f.tid, f.fn)] == f.canonical()
        ctx = {c: n for c, n in ksf_records.kccf(f, k, kk).items() if n}
        assert secs[('K-CCF', f.tid, f.fn)] == kccf_tree(ctx)
        assert {c: n for c, n in table[(f.tid, f.fn)].items() if n} == ctx
    return prof, r


# ---------------------------------------------------------------------------
# Trees


def test_prog4_intra_rolled_trees(annotate, tools):
    _, path = profile(tools, 'prog4.c', ['--mode=intra', '--roll-loops=yes'])
    prof, r = check_trees(annotate, path)
    assert 'Mode:                 intra (basic blocks, one k-SF per thread and function), loops rolled' in r.out
    # Listing 4.17: foo's loop rolled, the blocks of lines 11-12 counted 3 times.
    foo = tree_sections(r.out)[('K-SF', '1', 'foo')]
    assert len(foo) == 1 and foo[0][0].startswith('{foo+0 at prog4.c:7}') and foo[0][1] == 2
    # one header line per (thread, function) with its node counts
    for f in prof.forests:
        assert re.search(rf'^Thread {f.tid}, {re.escape(f.fn)}: +Ir [\d,]+, k-SF nodes {len(f.nodes)}, inf-CCF nodes \d+$',
                         r.out, re.M), f.fn
    # the k-CCF at lower k' (k=inf: any k')
    check_trees(annotate, path, kprime=1)
    check_trees(annotate, path, kprime=0)


def test_prog4_intra_k100_trees(annotate, tools):
    _, path = profile(tools, 'prog4.c', ['--mode=intra', '--k=100', '--funcs=foo,p'])
    prof, r = check_trees(annotate, path)
    check_trees(annotate, path, kprime=2)
    foo = tree_sections(r.out)[('K-SF', '1', 'foo')]
    # Listing 4.14: the loop unrolled, one chain of count-1 blocks after the root
    assert foo[0][1] == 2 and len(foo[0][2]) == 2


def test_prog4_intra_k1_cleared_top_regions(annotate, tools):
    # k=1: R trees with cleared top regions; the text must still equal inv_k'
    _, path = profile(tools, 'prog4.c', ['--mode=intra', '--k=1', '--funcs=foo,p'])
    prof, _ = check_trees(annotate, path)
    assert any(len(f.roots) > 1 for f in prof.forests)


def test_prog5_intra_threads(annotate, tools):
    _, path = profile(tools, 'prog5.c', ['--mode=intra', '--roll-loops=yes', '--funcs=foo'])
    prof, r = check_trees(annotate, path)
    assert {(f.tid, f.fn) for f in prof.forests} == {('1', 'foo'), ('2', 'foo')}
    r1 = ok(annotate('--thread=2', '--ksf', path))
    assert set(tree_sections(r1.out)) == {('K-SF', '2', 'foo')}
    # joined by kgrind_annotate: one forest, counts summed
    j = ok(annotate('--join-threads', '--ksf', path))
    t = tree_sections(j.out)[('K-SF', 'all', 'foo')]
    assert t[0][1] == 2


def test_prog6_inter_chain(annotate, tools):
    _, path = profile(tools, 'prog6.c', ['--mode=inter', '--k=100', '--funcs=foo,bar,f3'])
    prof, r = check_trees(annotate, path)
    t = tree_sections(r.out)[('K-SF', '1', None)]
    assert len(t) == 1
    chain, node = [], t[0]
    while True:
        chain.append(node)
        if not node[2]:
            break
        assert len(node[2]) == 1
        node = node[2][0]
    fns = [n if n == '__root__' else re.match(r'\{(\w+)\+', n).group(1) for n, _, _ in chain]
    # Listing 4.23
    assert fns == ['__root__', 'foo', 'bar', 'bar', 'foo', 'f3', 'foo', 'bar', 'bar', 'f3', 'bar', 'foo']
    assert all(c == 1 for _, c, _ in chain)


def test_prog4_inter_rolled(annotate, tools):
    _, path = profile(tools, 'prog4.c', ['--mode=inter', '--roll-loops=yes', '--funcs=foo'])
    check_trees(annotate, path)


# ---------------------------------------------------------------------------
# JSON


def json_tree(flat, kids):
    """A JSON tree (flat, annotate_json) as sorted (name, calls, (children))."""
    def tree(nodes):
        return sorted((n['name'], n['calls'], tuple(tree(n.get(kids, [])))) for n in nodes)
    return tree(nested(flat, kids))


@pytest.mark.parametrize('mode', ['intra', 'inter'])
def test_json(annotate, tools, mode):
    import jsonschema
    _, path = profile(tools, 'prog4.c', [f'--mode={mode}', '--roll-loops=yes'])
    prof, blocks = reference(path)
    d = annotate('--format=json', path).json()
    jsonschema.validate(d, json.loads(SCHEMA.read_text()))
    assert d['mode'] == mode and d['roll_loops'] is True and d['k'] == 'inf'
    assert len(d['threads']) == len(prof.forests)
    for t, f in zip(d['threads'], prof.forests):
        assert str(t['tid']) == f.tid
        if mode == 'intra':
            assert t['function'] == f.fn
        else:
            assert 'function' not in t
        assert t['ksf_nodes'] == len(f.nodes)
        assert json_tree(t['ksf'], 'children') == f.canonical()
        ctx = {c: n for c, n in ksf_records.kccf(f, None, None).items() if n}
        assert {tuple(c['path']): c['calls'] for c in t['contexts'] if c['calls']} == ctx
        assert json_tree(t['kccf'], 'callers') == kccf_tree(ctx)
    assert {b['name']: b['count'] for b in d['blocks']} == \
        {b['name']: b['count'] for label, b in blocks.items() if label}


@pytest.mark.parametrize('mode', ['intra', 'inter'])
def test_nothing_traced(annotate, tools, mode):
    """A block-mode run whose --funcs matched nothing that ran is a valid,
    empty profile: a note, not an error (bzip2's and sqlite3's work is in
    stripped libraries the default --funcs does not trace)."""
    import jsonschema
    _, path = profile(tools, 'prog4.c', [f'--mode={mode}', '--funcs=no_such_function'])
    forests = ksf_records.parse(path).forests
    # inter: each thread's forest is its __root__ alone; intra: no forest.
    assert [len(f.nodes) for f in forests] == ([1] if mode == 'inter' else [])
    text = ok(annotate(path)).out
    assert 'No basic block of a traced function ran' in text
    d = annotate('--format=json', path).json()
    jsonschema.validate(d, json.loads(SCHEMA.read_text()))
    assert len(d['threads']) == len(forests) and d['mode'] == mode
    # With a traced function the note is absent.
    _, path = profile(tools, 'prog4.c', [f'--mode={mode}'], out='traced.out')
    assert 'No basic block' not in ok(annotate(path)).out


# ---------------------------------------------------------------------------
# The block table and the disassembly

ROW = re.compile(r'^ +([\d,]+)  (0x[0-9a-f]+) +(\{.*\}) \[(.+), (.+):(\d+)\]$')


def block_rows(text):
    return [ROW.match(line).groups() for line in text.splitlines() if ROW.match(line)]


def test_show_blocks(annotate, tools):
    _, path = profile(tools, 'prog4.c', ['--mode=intra', '--roll-loops=yes'])
    _, blocks = reference(path)
    r = ok(annotate('--show-blocks', path))
    rows = block_rows(r.out)
    want = {b['name']: (b['count'], b['addr'], b['fn']) for label, b in blocks.items() if label}
    got = {name: (int(c.replace(',', '')), int(a, 16), fn) for c, a, name, fn, _f, _l in rows}
    assert got == want
    keys = [(-int(c.replace(',', '')), int(a, 16)) for c, a, *_ in rows]
    assert keys == sorted(keys)
    # foo's loop blocks (lines 11-12) ran 3 times
    assert sorted(c for c, _a, fn in want.values() if fn == 'foo').count(3) == 2


def disasm_of(text):
    """{block name: [instructions]} of a --blocks-disasm output."""
    out, cur = {}, None
    for line in text.splitlines():
        m = ROW.match(line)
        if m:
            cur = out.setdefault(m.group(3), [])
        elif cur is not None and line.startswith('    '):
            cur.append(line.strip())
    return out


def test_blocks_disasm(annotate, tools):
    if not shutil.which('objdump'):
        pytest.skip('objdump not installed')
    exe, path = profile(tools, 'prog4.c', ['--mode=intra', '--roll-loops=yes'])
    r = ok(annotate('--blocks-disasm', path))
    dis = disasm_of(r.out)
    names = [n for n in dis]
    p0 = next(n for n in names if n.startswith('{p+0 '))
    foo0 = next(n for n in names if n.startswith('{foo+0 '))
    # Listing 4.15: calls and branches name the target blocks
    loop = [n for n in names if n.startswith('{foo+') and dis[n] and dis[n][-1] == f'call   {p0}']
    assert len(loop) >= 2                                  # p(0), p(1) in the loop (and p(2))
    assert any(ins == f'call   {foo0}' for n in names for ins in dis[n])   # the recursion
    assert any(re.match(r'^j\w+ +\{foo\+\d+ at prog4\.c:\d+\}$', ins) for n in names for ins in dis[n])
    # Intel syntax, as Pin's disassembly in Listing 4.15 (destination first,
    # operand sizes spelled out, no AT&T % registers)
    every = [ins for n in names for ins in dis[n]]
    assert any(re.match(r'^mov +DWORD PTR \[rbp-0x[0-9a-f]+\],', ins) for ins in every), every
    assert not any('%' in ins for ins in every)
    # every block of the main program has instructions; its last one ends it
    for n in names:
        if n.startswith(('{foo+', '{p+', '{main+')):
            assert dis[n], n
    # the object file is gone: one line saying so, the table is still there
    os.rename(exe, str(exe) + '.moved')
    r2 = ok(annotate('--blocks-disasm', path))
    assert len([line for line in r2.out.splitlines() if "object file '" in line and 'not found' in line]) == 1
    assert len(block_rows(r2.out)) == len(block_rows(r.out))


def test_blocks_disasm_without_objdump(annotate, tools, tmp_path):
    _, path = profile(tools, 'prog4.c', ['--mode=intra', '--roll-loops=yes', '--funcs=foo'])
    import subprocess
    from test_annotate import annotate_cmd
    env = dict(os.environ, PATH=str(tmp_path / 'empty'))
    cmd = annotate_cmd()
    if cmd[0] == 'perl':
        cmd[0] = shutil.which('perl')
    p = subprocess.run([*cmd, '--blocks-disasm', str(path)], capture_output=True, text=True, env=env)
    assert p.returncode == 0, p.stderr
    assert p.stdout.count('objdump not found') == 1
    assert block_rows(p.stdout)


# ---------------------------------------------------------------------------
# Bad input


@pytest.fixture(scope='module')
def intra_profile(tmp_path_factory):
    """One run for the module's tests, which only read it (or copy it)."""
    from conftest import Toolbox
    tools = Toolbox(tmp_path_factory.mktemp('intra-profile'))
    return profile(tools, 'prog4.c', ['--mode=intra', '--roll-loops=yes', '--funcs=foo,p'])[1]


def with_first_label(text, label):
    """The profile with its first k-SF node relabelled (a tree root: its
    label is written as it is, the second number of the node stream)."""
    def edit(m):
        numbers = list(ksf_records.NodeStream.numbers(base64.b64decode(m.group(2))))
        numbers[1] = label
        return m.group(1) + base64.b64encode(ksf_records.ber(numbers)).decode()
    return re.sub(r'^(# ksf-nodes )(\S+)', edit, text, count=1, flags=re.M)


@pytest.mark.writes_bad_profiles
def test_bad_node_label(annotate, intra_profile, tmp_path):
    text = intra_profile.read_text()
    n = max(int(m) for m in re.findall(r'^# ksf-block (\d+) ', text, re.M))
    bad_path = tmp_path / 'bad.out'
    bad_path.write_text(with_first_label(text, n + 1))
    i = next(i for i, line in enumerate(text.splitlines()) if line.startswith('# ksf-nodes '))
    bad(annotate(bad_path), f'block label {n + 1} has no ksf-block record', f'bad.out:{i + 1}:')


@pytest.mark.writes_bad_profiles
def test_truncated(annotate, intra_profile, tmp_path):
    text = intra_profile.read_text()
    for cut, needle in ((text.index('# ksf-end\n'), "no '# ksf-end'"),
                        (text.index('# ksf-end-thread'), "no '# ksf-end-thread'"),
                        (text.index('# ksf-block 2 '), 'truncated')):
        p = tmp_path / 'cut.out'
        p.write_text(text[:cut])
        bad(annotate(p), 'truncated', needle)


@pytest.mark.parametrize('edit,needle', [
    (lambda t: re.sub(r'( ir=\d+) fn=\d+\n', r'\1\n', t, count=1), 'intra-mode forests need fn='),
    (lambda t: re.sub(r'^# ksf-block 1 0x[0-9a-f]+', '# ksf-block 1 xyz', t, count=1, flags=re.M), 'malformed ksf-block'),
    (lambda t: re.sub(r'^# ksf-block 2 ', '# ksf-block 7 ', t, count=1, flags=re.M), 'out of order'),
    (lambda t: with_first_label(t, 0), 'cannot be rooted at __root__'),
    (lambda t: t.replace('roll-loops=yes', 'roll-loops=maybe'), 'bad roll-loops value'),
])
@pytest.mark.writes_bad_profiles
def test_bad_block_records(annotate, intra_profile, tmp_path, edit, needle):
    p = tmp_path / 'bad.out'
    text = intra_profile.read_text()
    new = edit(text)
    assert new != text
    p.write_text(new)
    bad(annotate(p), needle)


def test_mismatched_merge_and_show_blocks_in_func_mode(annotate, tools, intra_profile):
    exe = tools.compile('prog4.c', '-O0', out='prog4b')
    r = tools.kgrind(exe, opts=['--mode=intra', '--k=3', '--funcs=foo,p'], out='k3.out')
    assert r.returncode == 0
    bad(annotate(intra_profile, r.profile_path), 'cannot merge')
    f = tools.kgrind(exe, opts=['--k=2'], out='func.out')
    bad(annotate('--show-blocks', f.profile_path), 'function-mode profile')
    # merging two runs (two files, same contents) doubles the counts
    again = tools.dir / 'again.out'
    shutil.copy(intra_profile, again)
    d = annotate('--format=json', intra_profile, again).json()
    single = annotate('--format=json', intra_profile).json()
    assert [b['count'] for b in d['blocks']] == [2 * b['count'] for b in single['blocks']]
