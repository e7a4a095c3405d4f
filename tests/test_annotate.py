"""kgrind_annotate: the thesis's Listing 4.5 from a hand-written
2-SF, inv_k against a brute-force model (tests/test_annotate_model.py),
merging, sources, output formats and every bad-input case."""
import base64
import collections
import json
import os
import pathlib
import random
import re
import shutil
import subprocess
import time

import pytest

from annotate_json import nested
import ksf_records
import test_annotate_model as M

ROOT = pathlib.Path(__file__).resolve().parent.parent
DATA = ROOT / 'tests' / 'data' / 'annotate'
SCHEMA = ROOT / 'docs' / 'kgrind-annotate.schema.json'
SRC = ROOT / 'perl' / 'kgrind_annotate.pl'
BUILT = pathlib.Path(os.environ.get('KGRIND_BUILD', ROOT / 'build')) / 'perl' / 'kgrind_annotate'
THESIS = DATA / 'thesis-listing45.kgrind.out'
# The same profile in the k-SF records' version 1 (one ksf-fn / ksf-node per line).
THESIS_V1 = DATA / 'thesis-listing45-v1.kgrind.out'
# And in version 3 (base64 BER nodes, ksf-fns referring to the body's names),
# the records after the body as the tool writes them.
THESIS_V3 = DATA / 'thesis-listing45-v3.kgrind.out'


def annotate_cmd():
    """The built script when it is up to date, else perl on the source."""
    if BUILT.exists() and BUILT.stat().st_mtime >= SRC.stat().st_mtime:
        return [str(BUILT)]
    return ['perl', str(SRC)]


class Result:
    def __init__(self, proc):
        self.rc, self.out, self.err = proc.returncode, proc.stdout, proc.stderr

    def json(self):
        assert self.rc == 0, self.err
        return json.loads(self.out)


@pytest.fixture
def annotate(annotate_runner):
    """kgrind_annotate's runs (tests/annotate_runner.py; annotate_runner is
    conftest's)."""
    def run(*args, cwd=None):
        return Result(annotate_runner.run(args, cwd=cwd, timeout=120))
    return run


def ok(r):
    assert r.rc == 0, r.err
    assert r.err == ''
    return r


def bad(r, *needles):
    """Exit status 2, one clear line on stderr, nothing on stdout, no Perl trace."""
    assert r.rc == 2, (r.rc, r.out, r.err)
    assert r.out == ''
    lines = r.err.splitlines()
    assert len(lines) == 1, r.err
    assert lines[0].startswith('kgrind_annotate: ')
    assert not re.search(r' at \S+ line \d+', r.err), r.err
    assert 'internal error' not in r.err
    for n in needles:
        assert n in r.err, (n, r.err)
    return lines[0]


# ---------------------------------------------------------------------------
# Listing 4.5 (thesis): the 2-SF and 2-CCF of prog1, joined threads.

from thesis_listings import LISTING_45_KCCF, LISTING_45_KSF  # noqa: E402



def sections(text):
    """Tree dumps of a text output: title -> lines."""
    out, cur = {}, None
    for line in text.splitlines():
        if line.startswith('DUMP of '):
            cur = out.setdefault(line.split(' (')[0], [])
        elif cur is not None and re.match(r'^ *\| ', line):
            cur.append(line)
        elif cur is not None and line and not line.startswith('---'):
            cur = None
    return {k: '\n'.join(v) for k, v in out.items()}


def parse_listing(text):
    """Thesis tree text -> canonical {name: (calls, {children})}."""
    root = {}
    stack = [(-1, root)]
    for line in text.splitlines():
        m = re.match(r'^( *)\| (.+)\(\),(\d+)', line)
        depth = len(m.group(1)) // 2
        while stack[-1][0] >= depth:
            stack.pop()
        node = (int(m.group(3)), {})
        parent = stack[-1][1]
        assert m.group(2) not in parent
        parent[m.group(2)] = node
        stack.append((depth, node[1]))
    return root


def json_counts(flat, kids):
    """A JSON tree (flat, annotate_json) as {name: (calls, {children})}."""
    def counts(nodes):
        return {n['name']: (n['calls'], counts(n.get(kids, []))) for n in nodes}
    return counts(nested(flat, kids))


def sorted_listing(text):
    """The listing's tree with siblings sorted by calls (desc) then name."""
    def emit(tree, depth, out):
        for name, (calls, kids) in sorted(tree.items(), key=lambda kv: (-kv[1][0], kv[0])):
            out.append('  ' * depth + f'| {name}(),{calls}')
            emit(kids, depth + 1, out)
        return out
    return '\n'.join(emit(parse_listing(text), 0, []))


def test_listing45_text_exact(annotate):
    r = ok(annotate('--ksf', '--kccf', '--tree-order=natural', '--costs=no', THESIS))
    s = sections(r.out)
    assert s['DUMP of K-SF'] == LISTING_45_KSF
    assert s['DUMP of K-CCF'] == LISTING_45_KCCF
    assert re.search(r'^Thread all: +Ir 176, k-SF nodes 20, 2-CCF nodes 25$', r.out, re.M)
    assert re.search(r'^K value: +2$', r.out, re.M)
    assert re.search(r'^Command: +\./prog1$', r.out, re.M)
    assert re.search(r'^PID: +4242$', r.out, re.M)


def test_listing45_sorted_by_calls(annotate):
    r = ok(annotate('--ksf', '--kccf', '--sort=calls', '--costs=no', THESIS))
    s = sections(r.out)
    assert s['DUMP of K-SF'] == sorted_listing(LISTING_45_KSF)
    assert s['DUMP of K-CCF'] == sorted_listing(LISTING_45_KCCF)


def test_listing45_costs_in_trees(annotate):
    r = ok(annotate('--kccf', '--sort=calls', THESIS))
    lines = sections(r.out)['DUMP of K-CCF'].splitlines()
    assert lines[0] == '| c(),9  [Ir 27, incl 27]'
    assert '| e(),2  [Ir 12, incl 58]' in lines


def test_listing45_json(annotate):
    import jsonschema
    d = annotate('--format=json', THESIS).json()
    jsonschema.validate(d, json.loads(SCHEMA.read_text()))
    assert (d['version'], d['tool'], d['cmd'], d['pid'], d['k'], d['mode']) == (2, 'kgrind', './prog1', 4242, 2, 'func')
    assert d['events'] == ['Ir'] and d['total'] == {'Ir': 176}
    (t,) = d['threads']
    assert (t['tid'], t['ksf_nodes'], t['ksf_nodes_left_out'], t['kccf_nodes']) == ('all', 20, 0, 25)
    assert json_counts(t['ksf'], 'children') == parse_listing(LISTING_45_KSF)
    assert json_counts(t['kccf'], 'callers') == parse_listing(LISTING_45_KCCF)
    ctx = {tuple(c['path']): (c['calls'], c['Ir'], c['inclusive']) for c in t['contexts']}
    assert ctx[('e', 'd', 'c')] == (4, 12, 12)
    assert ctx[('__root__', 'e')] == (2, 12, 58)
    assert ctx[('__root__',)] == (2, 100, 176)
    assert len(ctx) == len(t['contexts']) == 12
    assert sum(c[1] for c in ctx.values()) == 176
    # sorted by Ir, then by path
    keys = [(-c['Ir'], c['path']) for c in t['contexts']]
    assert keys == sorted(keys)


def test_listing45_contexts_table(annotate):
    r = ok(annotate('--threshold=100', THESIS))
    rows = [l for l in r.out.splitlines() if re.match(r'^ +[\d,]+ +[\d.]+% ', l)]
    assert len(rows) == 12
    assert rows[0].split() == ['100', '56.82%', '176', '2', '__root__']
    assert rows[2].split()[-5:] == ['4', 'e', '>', 'd', '>', 'c'][-5:]
    assert 'e > d > c' in rows[2]
    r = ok(annotate('--sort=calls', '--top=1', THESIS))
    rows = [l for l in r.out.splitlines() if re.match(r'^ +[\d,]+ +[\d.]+% ', l)]
    assert len(rows) == 1 and rows[0].endswith('e > d > c') and '16.67%' in rows[0]   # 4 of 24 activations
    r = ok(annotate('--sort=inclusive', '--top=2', THESIS))
    rows = [l for l in r.out.splitlines() if re.match(r'^ +[\d,]+ +[\d.]+% ', l)]
    assert [x.split('  ')[-1] for x in rows] == ['__root__', '__root__ > e']
    # threshold: cumulative share of the sort key
    r = ok(annotate('--threshold=60', THESIS))
    rows = [l for l in r.out.splitlines() if re.match(r'^ +[\d,]+ +[\d.]+% ', l)]
    assert len(rows) == 2     # 56.8% < 60% -> one more


def test_listing45_lower_k(annotate):
    """--k=1 and --k=0 from the 2-SF equal the model's on the same contexts."""
    ctx2 = {('__root__',): 2, ('__root__', 'a'): 2, ('__root__', 'a', 'b'): 2, ('__root__', 'a', 'c'): 1,
            ('__root__', 'a', 'f'): 1, ('__root__', 'e'): 2, ('__root__', 'e', 'd'): 2, ('e', 'd', 'c'): 4,
            ('__root__', 'e', 'c'): 2, ('__root__', 'e', 'a'): 2, ('e', 'a', 'b'): 2, ('e', 'a', 'c'): 2}
    for k in (0, 1):
        want = {}
        for p, c in ctx2.items():
            q = p[-(k + 1):]
            want[q] = want.get(q, 0) + c
        t = annotate('--format=json', f'--k={k}', THESIS).json()['threads'][0]
        assert {tuple(c['path']): c['calls'] for c in t['contexts']} == want
        assert t['kccf_nodes'] == M.count_nodes(M.kccf({p: (c, 0, 0) for p, c in want.items()}))
    t = annotate('--format=json', '--k=0', THESIS).json()['threads'][0]
    assert {n['name']: n['calls'] for n in t['kccf'] if n['parent'] is None} == {'__root__': 2, 'a': 4, 'b': 4, 'c': 9, 'd': 2, 'e': 2, 'f': 1}


# ---------------------------------------------------------------------------
# inv_k against the brute-force model on random runs.

def json_forest(flat):
    """A JSON k-CCF (flat, annotate_json) as {name: [calls, Ir, inclusive, {callers}]}."""
    def forest(nodes):
        return {n['name']: [n['calls'], n['Ir'], n['inclusive'], forest(n.get('callers', []))] for n in nodes}
    return forest(nested(flat, 'callers'))


def model_forest(f):
    return {k: [v[0], v[1], v[2], model_forest(v[3])] for k, v in f.items()}


@pytest.mark.parametrize('k', [1, 2, 3, M.INF])
def test_inv_k_random_against_model(annotate, tmp_path, k):
    rng = random.Random(1000 + (k or 99))
    for trial in range(6):
        run = M.random_activations(rng)
        prof = M.write_profile(tmp_path / f'r{trial}.out', {1: run}, k)
        kmax = 5 if k is M.INF else k
        for kk in range(0, kmax + 1):
            t = annotate('--format=json', f'--k={kk}', prof).json()['threads'][0]
            ctx = M.contexts(run, kk)
            got = {tuple(c['path']): [c['calls'], c['Ir'], c['inclusive']] for c in t['contexts']}
            assert got == {p: v for p, v in ctx.items()}, (trial, kk)
            assert all(len(c['path']) <= kk + 1 for c in t['contexts'])
            want = M.kccf(ctx)
            assert json_forest(t['kccf']) == model_forest(want), (trial, kk)
            assert t['kccf_nodes'] == M.count_nodes(want)
        # the recorded k-SF comes back unchanged
        t = annotate('--format=json', prof).json()['threads'][0]
        assert t['ksf_nodes'] == len(ksf_records.parse(prof).forests[0].nodes)


def test_kinf_folded_is_exact_flame_graph(annotate, tmp_path):
    rng = random.Random(5)
    run = M.random_activations(rng)
    prof = M.write_profile(tmp_path / 'inf.out', {1: run}, M.INF)
    r = ok(annotate('--format=folded', prof))
    want = {}
    for path, a, _inc in M.walk(run):
        if a.excl:
            key = ';'.join(path)
            want[key] = want.get(key, 0) + a.excl
    got = {}
    for line in r.out.splitlines():
        stack, n = line.rsplit(' ', 1)
        got[stack] = int(n)
    assert got == want
    assert sum(got.values()) == run.incl()


# ---------------------------------------------------------------------------
# Threads and merging (join).

def two_thread_profile(tmp_path, rng, k=2):
    r1, r2 = M.random_activations(rng), M.random_activations(rng)
    return r1, r2, M.write_profile(tmp_path / 'two.out', {1: r1, 2: r2}, k)


def test_threads_select_and_join(annotate, tmp_path):
    rng = random.Random(11)
    r1, r2, prof = two_thread_profile(tmp_path, rng)
    d = annotate('--format=json', prof).json()
    assert [t['tid'] for t in d['threads']] == [1, 2]
    d2 = annotate('--format=json', '--thread=2', prof).json()
    assert [t['tid'] for t in d2['threads']] == [2] and d2['threads'][0] == d['threads'][1]
    j = annotate('--format=json', '--join-threads', prof).json()
    (t,) = j['threads']
    assert t['tid'] == 'all' and j['joined'] is True
    want = M.kccf(M.contexts([r1, r2], 2))
    assert json_forest(t['kccf']) == model_forest(want)
    # the joined k-SF is the k-SF of the joined run (Listing 4.4)
    single = M.write_profile(tmp_path / 'joined.out', {'all': [r1, r2]}, 2, joined=True)
    tj = annotate('--format=json', single).json()['threads'][0]
    assert json_counts(t['ksf'], 'children') == json_counts(tj['ksf'], 'children')
    r = ok(annotate(prof))
    assert re.search(r'^Thread 1: ', r.out, re.M) and re.search(r'^Thread 2: ', r.out, re.M)
    bad(annotate('--thread=7', prof), 'thread 7', 'threads: 1, 2')
    bad(annotate('--thread=1', single), 'joined')


def test_merge_fork_parent_and_child(annotate, tmp_path):
    """Parent and child profiles (each thread 1) merge into one joined forest."""
    rng = random.Random(12)
    r1, r2 = M.random_activations(rng), M.random_activations(rng)
    parent = M.write_profile(tmp_path / 'kgrind.out.100', {1: r1}, 2, pid=100)
    child = M.write_profile(tmp_path / 'kgrind.out.101', {1: r2}, 2, pid=101)
    d = annotate('--format=json', parent, child).json()
    (t,) = d['threads']
    assert d['pids'] == [100, 101] and len(d['files']) == 2
    want_ctx = M.contexts([r1, r2], 2)
    assert {tuple(c['path']): [c['calls'], c['Ir'], c['inclusive']] for c in t['contexts']} == want_ctx
    assert json_forest(t['kccf']) == model_forest(M.kccf(want_ctx))
    assert d['total']['Ir'] == r1.incl() + r2.incl()


def test_merge_identical_runs_doubles(annotate, tmp_path):
    """Two runs that wrote the same file contents are joined (the same file
    given twice is refused: test_same_file_twice_is_refused)."""
    again = tmp_path / 'again.kgrind.out'
    shutil.copy(THESIS, again)
    one = annotate('--format=json', THESIS).json()['threads'][0]
    two = annotate('--format=json', THESIS, again).json()['threads'][0]
    assert (two['ksf_nodes'], two['kccf_nodes']) == (20, 25)

    def doubled(nodes):
        return [dict(n, calls=2 * n['calls'], Ir=2 * n['Ir'], inclusive=2 * n['inclusive']) for n in nodes]
    assert two['ksf'] == doubled(one['ksf'])
    assert two['kccf'] == doubled(one['kccf'])
    assert two['Ir'] == 2 * one['Ir']


def test_same_file_twice_is_refused(annotate, tmp_path):
    """Joining a profile with itself would double every count:
    the same file, by one path or by two, is one clear error."""
    bad(annotate(THESIS, THESIS), str(THESIS), 'given twice', 'double every count')
    link = tmp_path / 'link.out'
    link.symlink_to(THESIS)
    bad(annotate('--format=json', THESIS, link), str(link), f'the same file as {THESIS}')


def test_names_not_utf8_give_utf8_output(annotate, tmp_path):
    """A symbol with a Latin-1 byte: every output format is valid UTF-8, the
    byte read as the Latin-1 character it encodes (valid UTF-8 is kept)."""
    p = tmp_path / 'latin1.out'
    p.write_bytes(THESIS.read_bytes().replace(b'\ta\tb\t', b'\ta\xe9\xc3\xa9\tb\t', 1))
    d = json.loads(ok(annotate('--format=json', p)).out)
    names = {n for c in d['threads'][0]['contexts'] for n in c['path']}
    assert names == {'__root__', 'a\u00e9\u00e9', 'b', 'c', 'd', 'e', 'f'}
    for fmt in ('text', 'dot', 'folded'):
        r = subprocess.run([*annotate_cmd(), f'--format={fmt}', str(p)], capture_output=True)
        assert r.returncode == 0 and r.stderr == b''
        assert 'a\u00e9\u00e9' in r.stdout.decode('utf-8')


@pytest.mark.writes_bad_profiles
def test_long_node_lines_give_one_clear_error(annotate, tmp_path):
    """A 400 KB ksf-nodes line: the reader's checks, not Perl's regex
    engine, report what is wrong (no 'recursion limit' diagnostic)."""
    text = THESIS.read_text()
    p = tmp_path / 'long.out'
    p.write_text(text.replace(NODES_2, NODES_2 + ' 1' * 200000))
    bad(annotate(p), ':25: ksf-nodes: node 20: ')
    p.write_text(text.replace('3*4=12', '3*4=12x' + '1 ' * 200000))
    bad(annotate(p), ":24: malformed ksf-nodes record at column 75: 'x1 1 1 ")
    p.write_text(text.replace('3*4=12', '3*4=1234567890123456789'))
    bad(annotate(p), ":24: malformed ksf-nodes record at column 73: '1234567890123456789)")


@pytest.mark.writes_bad_profiles
def test_merge_mismatch_is_an_error(annotate, tmp_path):
    rng = random.Random(13)
    run = M.random_activations(rng)
    a = M.write_profile(tmp_path / 'k2.out', {1: run}, 2)
    b = M.write_profile(tmp_path / 'k3.out', {1: run}, 3)
    bad(annotate(a, b), 'k2.out', 'k3.out', 'k=2', 'k=3')
    c = tmp_path / 'intra.out'
    c.write_text(a.read_text().replace('mode=func', 'mode=intra'))
    bad(annotate(a, c), 'mode')


# ---------------------------------------------------------------------------
# Sources.

def test_source_annotation(annotate, tmp_path):
    r = ok(annotate('--auto=yes', '-I', DATA, THESIS))
    out = r.out
    assert 'Annotated source: ' + str(DATA / 'prog1.c') in out
    lines = out.splitlines()
    i = next(n for n, l in enumerate(lines) if l.endswith('void c() { }'))
    assert lines[i].split()[0] == '27'
    assert 'hottest 2-contexts of c:' in lines[i - 5]
    assert 'e > d > c: Ir 12' in lines[i - 4]
    assert 'WARNING' not in out
    j = next(n for n, l in enumerate(lines) if l.endswith('void a(int x) {'))
    assert lines[j].split()[0] == '8' and 'hottest 2-contexts of a:' in lines[j - 3]
    # explicit source file on the command line
    r = ok(annotate(THESIS, 'prog1.c', '-I', DATA))
    assert 'void e() { d(); c(); a(0); }' in r.out


def test_source_missing_and_newer(annotate, tmp_path):
    shutil.copy(THESIS, tmp_path / 'alone.out')
    r = ok(annotate('--auto=yes', 'alone.out', cwd=tmp_path))
    miss = [l for l in r.out.splitlines() if 'prog1.c' in l]
    assert len(miss) == 1 and 'not found' in miss[0]
    src = tmp_path / 'src'
    src.mkdir()
    shutil.copy(DATA / 'prog1.c', src / 'prog1.c')
    prof = tmp_path / 'p.out'
    shutil.copy(THESIS, prof)
    os.utime(prof, (time.time() - 100, time.time() - 100))
    r = ok(annotate('--auto=yes', '-I', src, prof))
    assert re.search(r"^WARNING: source file .*prog1\.c' is newer than the profile", r.out, re.M)


def test_auto_names_unfound_sources_in_one_line(annotate, tools):
    """--auto=yes on a real program whose own source was removed after the
    build, and whose C library sources are not installed: one line names
    every file it cannot find, once; with -I to the source's new place that
    file is annotated instead and leaves the line."""
    src = tools.dir / 'src'
    src.mkdir()
    shutil.copy(ROOT / 'tests' / 'progs' / 'twice.c', src / 'twice.c')
    exe = tools.dir / 'twice'
    subprocess.run(['gcc', '-g', '-O0', '-o', str(exe), str(src / 'twice.c')], check=True)
    run = tools.kgrind(exe, opts=['--k=2'])
    assert run.returncode == 0, run.stderr
    moved = tools.dir / 'moved'
    src.rename(moved)

    def unfound(out):
        lines = [line for line in out.splitlines() if 'not found' in line]
        assert len(lines) == 1, lines
        files = re.findall(r"'([^']*)'", lines[0].split(': ', 1)[1])
        assert len(files) == len(set(files)) and re.match(rf'-- {len(files)} source files not found', lines[0])
        return files
    out = ok(annotate('--auto=yes', run.profile_path)).out
    missing = unfound(out)
    assert str(src / 'twice.c') in missing and len(missing) > 1      # and the C library's
    assert 'Annotated source' not in out
    assert not any(os.path.exists(f) for f in missing)
    out = ok(annotate('--auto=yes', '-I', moved, run.profile_path)).out
    assert unfound(out) == [f for f in missing if f != str(src / 'twice.c')]
    assert f'-- Annotated source: {moved / "twice.c"}' in out


# ---------------------------------------------------------------------------
# Graphviz and folded.

def test_dot_renders(annotate, tmp_path):
    r = ok(annotate('--format=dot', '--top=5', THESIS))
    assert r.out.startswith('digraph kgrind {')
    svg = subprocess.run(['dot', '-Tsvg'], input=r.out, capture_output=True, text=True)
    assert svg.returncode == 0, svg.stderr
    # function names as they are: no "()" added
    assert '<svg' in svg.stdout and '>c</text>' in svg.stdout and '()' not in r.out


def test_folded_finite_k(annotate):
    r = ok(annotate('--format=folded', THESIS))
    got = dict(l.rsplit(' ', 1) for l in r.out.splitlines())
    assert got['[truncated k=2];e;d;c'] == '12' and got['__root__'] == '100'    # not rooted: marked
    assert sum(map(int, got.values())) == 176


# ---------------------------------------------------------------------------
# Bad input.

def body_of(text):
    return text


@pytest.mark.writes_bad_profiles
def test_bad_truncated(annotate, tmp_path):
    text = THESIS.read_text()
    p = tmp_path / 'trunc.out'
    p.write_text(text.replace('# ksf-end\n', ''))
    bad(annotate(p), str(p), "truncated", "ksf-end")
    cut = text[:text.index('# ksf-nodes 1*2=10/20')]
    p.write_text(cut)
    msg = bad(annotate(p), str(p), 'truncated')
    assert re.search(r'trunc\.out:\d+:', msg)
    p.write_text(text[:text.index('totals:')])
    bad(annotate(p), 'truncated', 'totals')
    p.write_text(text[:len(text) // 3])
    bad(annotate(p), 'truncated')


def test_record_versions_1_2_and_3_read_alike(annotate):
    for opts in (['--ksf', '--kccf'], ['--format=json'], ['--k=1'], ['--format=folded'], ['--auto=yes']):
        v2 = ok(annotate(*opts, THESIS)).out
        for other in (THESIS_V1, THESIS_V3):
            assert ok(annotate(*opts, other)).out.replace(other.name, THESIS.name) == v2
    # the tests' reader too
    v2, v3 = ksf_records.parse(THESIS), ksf_records.parse(THESIS_V3)

    def by_path(f):   # siblings come in another order: nodes by root path
        return {tuple(f.root_path(n)): f.nodes[n][2:] for n in f.nodes}
    assert v3.names == v2.names and [by_path(f) for f in v3.forests] == [by_path(f) for f in v2.forests]


def v3_nodes(numbers):
    """A version 3 ksf-nodes line holding these BER numbers."""
    return '# ksf-nodes ' + base64.b64encode(ksf_records.ber(numbers)).decode()


V3_NODES = [line for line in THESIS_V3.read_text().splitlines() if line.startswith('# ksf-nodes ')][0]
V3_FIRST = ksf_records.node_stream(ksf_records.parse(THESIS_V3).forests[0])[:4]   # the root, 0*2=100/176(


@pytest.mark.parametrize('old,new,needle', [
    (V3_NODES, '# ksf-nodes Og!k', ':98: malformed ksf-nodes record: not base64'),
    (V3_NODES, '# ksf-nodes ', ':98: malformed ksf-nodes record: not base64'),
    (V3_NODES, '# ksf-nodes ' + base64.b64encode(bytes([58, 0, 0x81])).decode(), ':98: ksf-nodes: the line ends inside a number'),
    (V3_NODES, v3_nodes([8, 1]), ':98: ksf-nodes: the line ends inside node 0'),
    (V3_NODES, v3_nodes([1 << 6 | 32 | 1, 0]), ':98: ksf-nodes: node 0 both has children and closes lists'),
    (V3_NODES, v3_nodes([3 << 6 | 1, 0]), ':98: ksf-nodes: node 0 closes 3 lists, 0 are open'),
    (V3_NODES, v3_nodes([8 | 1, 0, 10 ** 18]), ':98: ksf-nodes: a number above 10^18'),
    (V3_NODES, v3_nodes(V3_FIRST), ':99: ksf-nodes: 1 list(s) not closed'),
    # two children 'a' (label 1, then a difference of 0): the forest check names it
    (V3_NODES, v3_nodes(V3_FIRST + [2, 1, 1 << 6 | 2, 0]), "'a' appears twice among the children of node 0"),
    # the same twin on the next line: named at its own line
    (V3_NODES, v3_nodes(V3_FIRST + [2, 1]) + '\n' + v3_nodes([1 << 6 | 2, 0]),
     ":99: ksf-nodes: node 2: 'a' appears twice among the children of node 0"),
    # whole nodes, then one cut after its shape: the cut node is named
    (V3_NODES, v3_nodes(V3_FIRST + [2, 1, 8]), ':98: ksf-nodes: the line ends inside node 2'),
    # a later node closing more lists than the line's first opened
    (V3_NODES, v3_nodes(V3_FIRST + [2 << 6 | 2, 1]), ':98: ksf-nodes: node 1 closes 2 lists, 1 are open'),
    # a first child's label is written as it is (0 here: not a difference
    # of 0 from a sibling, even when its parent ends the line before)
    (V3_NODES, v3_nodes(V3_FIRST + [32 | 2, 1]) + '\n' + v3_nodes([2 << 6 | 2, 0]), ':100: thread all declares nodes=20 but has 3 nodes'),
    ('\t@4\t', '\t@99\t', ":96: ksf-fns: '@99' names no function of the callgrind body"),
    ('\t@4\t', '\t@x4\t', ":96: ksf-fns: '@x4' names no function of the callgrind body"),
    ('# ksf-version: 3', '# ksf-version: 4', 'unsupported k-SF record version 4'),
])
@pytest.mark.writes_bad_profiles
def test_bad_corrupted_version_3(annotate, tmp_path, old, new, needle):
    corrupt(annotate, tmp_path, THESIS_V3, old, new, needle)


def test_version_3_nodes_read_alike_however_split_into_lines(annotate, tmp_path):
    """The reader decodes a ksf-nodes line at a time, its state (open lists,
    parents, the previous sibling's label) carrying over to the next line:
    the thesis forest one node a line, and in random runs of nodes, reads
    as the one-line file does."""
    groups = ksf_records.node_groups(ksf_records.parse(THESIS_V3).forests[0])
    rng = random.Random(3)
    splits = [[[x for g in groups[i:i + 1] for x in g] for i in range(len(groups))]]
    for _ in range(4):
        cuts = sorted(rng.sample(range(1, len(groups)), rng.randint(1, 6)))
        splits.append([[x for g in groups[a:b] for x in g] for a, b in zip([0] + cuts, cuts + [len(groups)])])
    text = THESIS_V3.read_text()
    for lines in splits:
        p = tmp_path / THESIS_V3.name
        p.write_text(text.replace(V3_NODES, '\n'.join(v3_nodes(numbers) for numbers in lines)))
        for opts in (['--ksf', '--kccf'], ['--format=json'], ['--k=1'], ['--format=folded']):
            assert ok(annotate(*opts, p)).out.replace(str(p), str(THESIS_V3)) == ok(annotate(*opts, THESIS_V3)).out


@pytest.mark.parametrize('new,needle', [
    (v3_nodes(V3_FIRST + [2, 1, 1 << 6 | 2, 0]), ":98: ksf-nodes: node 2: 'a' appears twice among the children of node 0"),
    (v3_nodes(V3_FIRST + [2, 1]) + '\n' + v3_nodes([1 << 6 | 2, 0]),
     ":99: ksf-nodes: node 2: 'a' appears twice among the children of node 0"),
    (v3_nodes(V3_FIRST + [32 | 2, 1]) + '\n' + v3_nodes([2 << 6 | 2, 0]), ':100: thread all declares nodes=20 but has 3 nodes'),
    (v3_nodes(V3_FIRST + [1 << 6 | 2, 1, 2, 1, 2, 1]), ":98: ksf-nodes: node 3: a second tree rooted at 'a'"),
    (v3_nodes(V3_FIRST + [1 << 6 | 2, 1, 2, 0]), ':98: ksf-nodes: node 2: only the first tree may be rooted at __root__'),
])
@pytest.mark.writes_bad_profiles
def test_bad_version_3_forest_at_k_inf(annotate, tmp_path, new, needle):
    """At k = inf the reader finds a repeated sibling label itself (a
    difference of 0 after a sibling); the forest check names it as at
    finite k, after the roots' errors."""
    kinf = tmp_path / 'kinf.out'
    kinf.write_text(THESIS_V3.read_text().replace('k=2 mode=func', 'k=inf mode=func').replace('desc: k: 2\n', 'desc: k: inf\n'))
    assert 'K value:              inf' in ok(annotate(kinf)).out
    corrupt(annotate, tmp_path, kinf, V3_NODES, new, needle)


def test_version_3_names_starting_with_at(annotate, tmp_path):
    """'@@name' is the name '@name' (no body reference), in both readers."""
    p = tmp_path / 'at.out'
    p.write_text(THESIS_V3.read_text().replace('\t@6\n', '\t@@f\n', 1))
    rows = ok(annotate('--ksf', p)).out
    assert '@f' in rows and '@@f' not in rows
    assert ksf_records.parse(p).names[6] == '@f'


def corrupt(annotate, tmp_path, source, old, new, needle):
    text = source.read_text()
    assert old in text
    p = tmp_path / 'corrupt.out'
    p.write_text(text.replace(old, new, 1))
    bad(annotate(p), 'corrupt.out', needle)
    bad(annotate('--auto=yes', p), 'corrupt.out', needle)


NODES_1 = '# ksf-nodes 0*2=100/176(1*2=10/18(2*2=4 3=3 6=1) 5*2=12/58(4*2=8/20(3*4=12) 3*2=6'
NODES_2 = '# ksf-nodes 1*2=10/20(2*2=4 3*2=6))) 2*2 3*3 4*2(3*4) 1*2(2*2 3*2) 6'


@pytest.mark.parametrize('old,new,needle', [
    ('3*4=12', '3*4=1x2', ":24: malformed ksf-nodes record at column 74: 'x2) 3*2=6'"),
    ('3*4=12', '3*4=12/', ':24: malformed ksf-nodes record'),
    ('3*4=12', '3*=12', ':24: malformed ksf-nodes record'),
    ('3*4=12', '42*4=12', ':24: ksf-nodes: node 7: unknown function id 42'),
    ('2*2=4 3=3', '2*2=4 2=3', ':24: ksf-nodes: node 3: \'b\' appears twice among the children of node 1'),
    ('2*2=4 3=3', '2*2=4  3=3', ':24: ksf-nodes: misplaced space'),
    ('2*2=4 3=3', '2*2=4 (3=3', ":24: ksf-nodes: '(' does not follow a node"),
    ('(2*2=4 3=3 6=1)', '()', ":24: ksf-nodes: empty list '()'"),
    (NODES_1, NODES_1 + ' ', ':24: ksf-nodes: record ends with a space'),
    (NODES_2, NODES_2 + ')', ":25: ksf-nodes: ')' without '('"),
    (NODES_2, NODES_2 + '(1', ":26: ksf-nodes: 1 list(s) not closed"),
    (NODES_2, NODES_2.replace(' 6', ' 1'), "a second tree rooted at 'a'"),
    (NODES_2, NODES_2.replace(' 6', ' 0'), 'only the first tree may be rooted at __root__'),
    (NODES_2, NODES_2.replace(' 6', ' 6 7'), ':25: ksf-nodes: node 20: unknown function id 7'),
    (NODES_2, NODES_2.replace(' 6', ''), 'declares nodes=20 but has 19'),
    (NODES_1, NODES_1.replace('0*2', '1*2', 1), 'must be the root of the first tree, labelled __root__'),
    (NODES_2, '# ksf-node 12 - 2 2 0 0', 'ksf-node record in a version 2 file'),
    ('# ksf-fns __root__', '# ksf-fns a\t__root__', 'function 0 must be __root__'),
    ('\tc\t', '\t__root__\t', 'function 3: __root__ is reserved for id 0'),
    ('\tc\t', '\t\t', 'function 3 has an empty name'),
    ('# ksf-thread all nodes=20', '# ksf-thread all nodes=21', 'declares nodes=21 but has 20'),
    ('# ksf-version: 2', '# ksf-version: 7', 'unsupported k-SF record version 7'),
    ('k=2 mode=func', 'k=two mode=func', "bad k value 'two'"),
    # numbers the file states twice
    ('ir=176', 'ir=100000', ":23: ksf-thread all: ir=100000, but its nodes' exclusive Ir sums to 176"),
    ('summary: 176', 'summary: 100000', ':8: summary: says Ir 100000, but totals: (line 102) says 176'),
    ('summary: 176', 'summary: 17x6', ":8: malformed summary: line: '17x6'"),
    ('summary: 176', 'summary: 176\nsummary: 176', ":9: a second 'summary:' line"),
    ('summary: 176', 'summary: 176 5', ':8: summary: has 2 counts for 1 events'),
    ('totals: 176', 'totals: 360795', 'summary: says Ir 176, but totals: (line 102) says 360795'),
    ('0*2=100/176', '0*2=100/177', ':23: ksf-thread all: ir=176, but the inclusive Ir of its __root__ node is 177'),
    ('3*4=12', '3*4=1000000000000000', ":23: ksf-thread all: ir=176, but its nodes' exclusive Ir sums to 1000000000000164"),
    ('3*4=12', '3*4=1000000000000000/12', ':24: ksf-nodes: node 7: inclusive Ir 12 is below its exclusive Ir 1000000000000000'),
    ('3*4=12', '3*1000000000000000=12',
     ':25: ksf-nodes: node 15: calls=4, but the slab nodes it copies count 1000000000000000 activations'),
    (NODES_2, NODES_2.replace('3*3', '3*0'), ':25: ksf-nodes: node 13: calls=0, but the slab nodes it copies count 3'),
    ('0*2=100/176', '0*2=95/176', "ir=176, but its nodes' exclusive Ir sums to 171"),
    (NODES_1 + '\n' + NODES_2, NODES_1.replace('0*2=100/176', '0*2=95/176') + '\n' + NODES_2.replace(' 2*2 ', ' 2*2=5 '),
     ':25: ksf-nodes: node 12: a top-region copy holds cost (Ir 5, incl 5)'),
    ('(3*4=12)', '(2*4=12)', ":24: ksf-nodes: node 7: no copy of its slab in the top region of the tree rooted at 'd'"),
    ('# ksf-fns __root__\ta\tb\tc\td\te\tf\n', '# ksf-fns __root__\ta\tb\tc\td\te\tf\n' * 2,
     ':23: ksf-fns line repeats the previous one'),
    ('desc: thread all: k-SF nodes 20', 'desc: thread all: k-SF nodes 21',
     ":23: thread all has 20 k-SF nodes, but its desc: line says 'k-SF nodes 21'"),
    ('desc: k: 2', 'desc: k: 3', 'desc: k: 3 disagrees with the k-SF records'),
])
@pytest.mark.writes_bad_profiles
def test_bad_corrupted(annotate, tmp_path, old, new, needle):
    corrupt(annotate, tmp_path, THESIS, old, new, needle)


@pytest.mark.parametrize('old,new,needle', [
    ('# ksf-node 7 6 3 4 12 12', '# ksf-node 7 6 3 4 12 x', ':37: malformed ksf-node'),
    ('# ksf-node 7 6 3 4 12 12', '# ksf-node 7 9 3 4 12 12', ':37: ksf-node 7: parent 9'),
    ('# ksf-node 7 6 3 4 12 12', '# ksf-node 7 6 42 4 12 12', ':37: ksf-node 7: unknown function id 42'),
    ('# ksf-node 7 6 3 4 12 12', '# ksf-node 8 6 3 4 12 12', ':37: ksf-node id 8 out of order'),
    ('# ksf-thread all nodes=20', '# ksf-thread all nodes=21', 'declares nodes=21 but has 20'),
    ('# ksf-node 16 - 1 2 0 0', '# ksf-node 16 - 2 2 0 0', 'a second tree rooted at'),
    ('# ksf-fn 3 c', '# ksf-fn 4 c', 'ksf-fn id 4 out of order'),
    ('# ksf-fn 6 f', '# ksf-fns f', 'ksf-fns record in a version 1 file'),
    ('# ksf-node 19 - 6 1 0 0', '# ksf-nodes 6', 'ksf-nodes record in a version 1 file'),
])
@pytest.mark.writes_bad_profiles
def test_bad_corrupted_version_1(annotate, tmp_path, old, new, needle):
    corrupt(annotate, tmp_path, THESIS_V1, old, new, needle)


@pytest.mark.writes_bad_profiles
@pytest.mark.parametrize('source,alphabet', [(THESIS, '0123456789()*=/ \t-x'),
                                             (THESIS_V3, 'AgQw09+/=@ \t-x')])
def test_random_record_corruption_is_handled(annotate, tmp_path, source, alphabet):
    """Random one-character edits of the records (in the node lists, the
    function table, the thread lines): every run either succeeds quietly or
    fails with one clear line, never a Perl warning, trace or hang."""
    text = source.read_text()
    start, end = text.index('# ksf-version: '), text.index('# ksf-end\n')
    rng = random.Random(20261123)
    outcomes = collections.Counter()
    for trial in range(120):
        i = rng.randrange(start, end)
        op = rng.randrange(3)
        if op == 0:
            new = text[:i] + rng.choice(alphabet) + text[i + 1:]
        elif op == 1:
            new = text[:i] + text[i + 1:]
        else:
            new = text[:i] + rng.choice(alphabet) + text[i:]
        p = tmp_path / f'm{trial}.out'
        p.write_text(new)
        r = annotate('--ksf', p)
        if r.rc == 0:
            assert r.err == '', (trial, r.err)
            outcomes['read'] += 1
        else:
            bad(r, f'm{trial}.out')
            outcomes['rejected'] += 1
    # most edits break the syntax or the counts; some are valid forests
    assert outcomes['rejected'] > 60, outcomes


@pytest.mark.parametrize('old,new,needle', [
    ('fn=(12)\n', 'fn=(77)\n', ':99: fn=(77) used before'),
    ('\n18 6\n', '\n18 6 ]]\n', 'malformed cost line'),
    ('calls=2 17\n', 'calls=x 17\n', 'malformed calls= line'),
    ('\n22 12\n', '\n@@@ 22 12\n', 'unrecognized line'),
])
@pytest.mark.writes_bad_profiles
def test_bad_corrupted_body(annotate, tmp_path, old, new, needle):
    """The callgrind body is read in full when sources are annotated (the
    k-SF records are always checked)."""
    text = THESIS.read_text()
    assert old in text
    p = tmp_path / 'corrupt.out'
    p.write_text(text.replace(old, new, 1))
    bad(annotate('--auto=yes', p), 'corrupt.out', needle)


@pytest.mark.writes_bad_profiles
def test_bad_empty_binary_and_text(annotate, tmp_path):
    e = tmp_path / 'empty.out'
    e.write_text('')
    bad(annotate(e), 'empty.out', 'empty')
    b = tmp_path / 'binary.out'
    b.write_bytes(bytes(range(256)) * 4)
    bad(annotate(b), 'binary.out:1:', 'not a kgrind profile')
    t = tmp_path / 'notes.txt'
    t.write_text('hello\nworld\n')
    bad(annotate(t), 'notes.txt:1:', 'not a kgrind profile')
    bad(annotate(DATA / 'prog1.c' if False else t, THESIS), 'notes.txt')


def test_bad_callgrind_profile(annotate, tools):
    exe = tools.compile('simple.c')
    run = tools.reference('callgrind', exe)
    assert run.returncode == 0, run.stderr
    msg = bad(annotate(run.profile_path), str(run.profile_path), 'callgrind', 'not by kgrind')
    assert 'k-SF' in msg


@pytest.mark.writes_bad_profiles
def test_bad_kgrind_profile_without_records(annotate, tmp_path):
    p = tmp_path / 'flat.out'
    p.write_text('# callgrind format\nversion: 1\ncreator: kgrind-0.1.0\npositions: line\nevents: Ir\n'
                 'summary: 3\n\nfl=(1) x.c\nfn=(1) main\n1 3\n\ntotals: 3\n')
    bad(annotate(p), 'flat.out', 'no k-SF records')


@pytest.mark.writes_bad_profiles
def test_bad_paths(annotate, tmp_path):
    bad(annotate(tmp_path / 'nope.out'), 'nope.out', 'no such file')
    bad(annotate(tmp_path), 'is a directory')
    if os.geteuid() != 0:
        p = tmp_path / 'secret.out'
        shutil.copy(THESIS, p)
        p.chmod(0)
        bad(annotate(p), 'secret.out', 'cannot open')


def test_bad_k_and_options(annotate, tmp_path):
    bad(annotate('--k=3', THESIS), '--k=3', 'recorded k=2', THESIS.name)
    bad(annotate('--k=inf', THESIS), 'recorded k=2')
    bad(annotate('--k=-1', THESIS), '--k')
    bad(annotate('--frobnicate', THESIS), "unknown option '--frobnicate'")
    bad(annotate('--sort=speed', THESIS), '--sort')
    bad(annotate('--format=xml', THESIS), '--format')
    bad(annotate('--threshold=120', THESIS), '--threshold')
    bad(annotate(), 'no profile given')
    # a k=inf profile allows any --k
    rng = random.Random(2)
    prof = M.write_profile(tmp_path / 'inf.out', {1: M.random_activations(rng)}, M.INF)
    assert annotate('--format=json', '--k=9', prof).json()['k'] == 9
    assert annotate('--format=json', prof).json()['k'] == 'inf'


def test_help_and_version(annotate):
    r = ok(annotate('--help'))
    assert '--kccf' in r.out and '--format=' in r.out
    r = ok(annotate('--version'))
    assert r.out.startswith('kgrind_annotate ')


def test_odd_names_are_read_as_written(annotate, tmp_path):
    """Names with escaped newlines and tabs (the tool writes `\\n`, `\\t`),
    parentheses, `=`, `#`, quotes and spaces: the reader
    keeps them as written, in every output and with the body read."""
    odd = r'ns::op\n()(int) = x#1 \t"y"'
    text = THESIS.read_text()
    text = text.replace('\tc\t', f'\t{odd}\t', 1)
    text = re.sub(r"^(c?fn=\(\d+\) )c'", lambda m: f"{m.group(1)}{odd}'", text, flags=re.M)
    text = text.replace('cmd: ./prog1', r'cmd: ./prog1 a\nb')
    p = tmp_path / 'odd.out'
    p.write_text(text)
    d = json.loads(ok(annotate('--format=json', p)).out)
    assert d['cmd'] == r'./prog1 a\nb'
    plain = json.loads(ok(annotate('--format=json', THESIS)).out)
    rename = {'c': odd}
    want = sorted((tuple(rename.get(n, n) for n in c['path']), c['calls'], c['Ir']) for c in plain['threads'][0]['contexts'])
    assert sorted((tuple(c['path']), c['calls'], c['Ir']) for c in d['threads'][0]['contexts']) == want
    # Text tables shorten names by default (--names=short).
    r = ok(annotate('--auto=yes', '--threshold=100', '--names=full', p))
    assert f'e > d > {odd}' in r.out
