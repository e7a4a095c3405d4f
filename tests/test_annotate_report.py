"""What kgrind_annotate's text report shows of deep contexts and C++ names,
and the messages it gives: the tree of the hot contexts (--tree), the
table's contexts fitted in --width columns, short names that stay apart,
the trees' C++ names, gzipped and truncated profiles, --auto on a program
without debug info."""
import collections
import gzip
import random
import re
import shutil

import pytest

import test_annotate_model as M
from test_annotate import annotate, bad, ok  # noqa: F401

ROW = r'^ *[\d,]+ +\S+% +[\d,]+ +[\d,]+  (.*)$'


# ---------------------------------------------------------------------------
# --tree

def parse_tree(text):
    """The --tree lines as {path: (incl %, self %, calls)}, the paths
    rebuilt from the guides: "+ " starts a callee of the last node one
    column left, a line without it continues the last node of its column."""
    body = text.split('Tree of the hot', 1)[1].splitlines()[3:]
    nodes, last = {}, {}     # last: column -> path of the last node printed there
    for line in body:
        if not line.strip():
            break
        # the columns: '%8s %8s %12s  ' (32 characters), then the guide and the name
        m = re.match(r'^ *(\S+%) +(\S+%) +([\d,]*)$', line[:30])
        g = re.match(r'^((?:[+| ] )*)(\S.*)$', line[32:])
        assert m and g and line[30:32] == '  ', line
        guide, name = g[1], g[2]
        col = len(guide)
        parent = last.get(col - 2) if guide.endswith('+ ') else last.get(col)
        path = (parent or ()) + (name,)
        last[col] = path
        for c in [c for c in last if c > col]:
            del last[c]
        nodes[path] = (m[1], m[2], m[3])
    return nodes


def expected_tree(contexts, ir, minimum):
    """Every prefix of the contexts' paths whose contexts (those that start
    with it) hold at least minimum % of the Ir: (incl %, self %, calls), the
    self and calls of the context that is the prefix itself ('' when none)."""
    incl = collections.Counter()
    for path, (_calls, excl, _i) in contexts.items():
        for i in range(1, len(path) + 1):
            incl[path[:i]] += excl
    pc = lambda x: f'{100 * x / ir:.2f}%'   # noqa: E731
    return {p: (pc(v), pc(contexts[p][1] if p in contexts else 0),
                f'{contexts[p][0]:,}' if p in contexts else '')
            for p, v in incl.items() if v and v >= minimum * ir / 100}


@pytest.mark.parametrize('k', [2, M.INF])
@pytest.mark.parametrize('minimum', ['0', '5'])
def test_tree_of_hot_contexts(annotate, tmp_path, k, minimum):
    rng = random.Random(71 + (k or 0))
    root = M.random_activations(rng, max_depth=6)
    prof = M.write_profile(tmp_path / 't.out', {1: root}, k)
    ctx = M.contexts(root, k)
    ir = sum(excl for _c, excl, _i in ctx.values())
    r = ok(annotate('--tree', f'--tree-min={minimum}', prof))
    assert f"Tree of the hot {'inf' if k is M.INF else k}-contexts, thread 1 (at least {minimum}% of its Ir" in r.out
    got = parse_tree(r.out)
    # every calls value of a context: the contexts of M are rolled as the profile's are
    want = expected_tree({p: (c if p in ctx else 0, x, i) for p, (c, x, i) in ctx.items()}, ir, float(minimum))
    assert got == want


def test_tree_options(annotate):
    from test_annotate import THESIS
    bad(annotate('--tree-min=101', THESIS), "bad --tree-min value '101'")
    bad(annotate('--tree', '--format=json', THESIS), '--tree, --tree-min: only with --format=text')
    bad(annotate('--width=-3', THESIS), "bad --width value '-3'")


# ---------------------------------------------------------------------------
# --width: a k = inf report of python3

def shown_path(shown, common):
    """A fitted row as a pattern of the path it stands for: '...' the common
    part, '..N..' N functions left out (None each)."""
    out = []
    for part in shown.split(' > '):
        if part == '...':
            out += common
        elif re.fullmatch(r'\.\.(\d+)\.\.', part):
            out += [None] * int(part[2:-2])
        else:
            out.append(part)
    return out


def matches(pattern, path):
    return len(pattern) == len(path) and all(p is None or p == q for p, q in zip(pattern, path))


@pytest.fixture(scope='module')
def python_inf(tmp_path_factory):
    """python3 (Debian's, its own symbols only) at k = inf."""
    from conftest import Toolbox
    python = shutil.which('python3', path='/usr/bin')
    if not python:
        pytest.skip('no /usr/bin/python3')
    tools = Toolbox(tmp_path_factory.mktemp('python_inf'))
    run = tools.kgrind(python, '-c', 'import json; json.loads(json.dumps([{"a": i} for i in range(2000)]))',
                       opts=['--k=inf'], out='python.out')
    assert run.returncode == 0, run.stderr
    return run.profile_path


def test_python_report_fits_120_columns(annotate, python_inf):
    """The 40 hottest contexts (15 to 60 functions each) fit in 120 columns,
    and each row still tells its context: its pattern matches its own path
    and no other row's."""
    text = ok(annotate(python_inf)).out
    table = text.split('Hottest inf-contexts, thread 1:', 1)[1]
    lines = table.splitlines()[2:]
    head = lines.index(next(l for l in lines if l.endswith('  context')))
    note, rows = lines[:head], [l for l in lines[head + 1:] if l.strip()]
    assert len(rows) == 40 and all(len(l) <= 120 for l in rows), max(rows, key=len)
    assert all(len(l) <= 120 for l in note)
    # the common part, printed once
    common = ' '.join(note[:-1]).split('Every context below starts with: ', 1)[1].replace('   > ', ' > ').split(' > ')
    assert common[0] == '__root__' and len(common) >= 4
    assert note[-1].startswith("'...' in a row: that part")
    paths = [c['path'] for c in annotate('--format=json', '--names=short', '--top=40', python_inf).json()
             ['threads'][0]['contexts']]
    shown = [re.match(ROW, r)[1] for r in rows]
    assert all(s.startswith('... > ') for s in shown)
    assert max(len(p) for p in paths) >= 15
    names = ok(annotate('--width=0', python_inf)).out
    whole = [r.split(' > ') for r in re.findall(ROW, names, re.M)[:40]]
    for i, s in enumerate(shown):
        pattern = shown_path(s, common)
        assert [j for j, p in enumerate(whole) if matches(pattern, p)] == [i], s
    assert len(whole) == len(paths) == 40


def test_width_leaves_short_contexts_alone(annotate):
    """Rows that fit are printed as they are (and --width=0 never fits)."""
    from test_annotate import THESIS
    assert ok(annotate('--width=40', THESIS)).out == ok(annotate('--width=0', THESIS)).out
    assert 'Every context below' not in ok(annotate(THESIS)).out


# ---------------------------------------------------------------------------
# --names=short: unique

def test_short_names_tell_overloads_apart(annotate, tools):
    """tests/progs/overloads.cpp: overloads of norm, Box<int>::get and
    Box<long>::get, and canon(std::string*) calling canon(char*, unsigned
    long*): each shown with what tells it from its namesakes, with the
    program's own calls; a short name without namesakes stays short."""
    exe = tools.compile('overloads.cpp', '-O1')
    run = tools.kgrind(exe, opts=['--k=2'])
    assert run.returncode == 0 and run.stdout == '1056\n', run.stderr
    rows = {ctx: int(calls.replace(',', '')) for calls, ctx in
            re.findall(r'^ *[\d,]+ +\S+% +[\d,]+ +([\d,]+)  (.*)$',
                       ok(annotate('--top=0', '--threshold=100', run.profile_path)).out, re.M)}
    want = {'(below main) > main > norm(int)': 7, '(below main) > main > norm(double)': 5,
            '(below main) > main > norm(char const*)': 3, '(below main) > main > Box<int>::get': 11,
            '(below main) > main > Box<long>::get': 13,
            '(below main) > main > canon(std::__cxx11::basic_string<...>*)': 9,
            'main > canon(std::__cxx11::basic_string<...>*) > canon(char*, unsigned long*)': 9}
    assert {c: rows.get(c) for c in want} == want
    assert not [c for c in rows if c.endswith('canon > canon') or ' > norm' in c and '(' not in c.rsplit('>', 1)[1]]
    assert [c for c in rows if c.endswith(' > (below main) > main')]      # a name without namesakes: as it is
    # the other outputs with short names: the same names
    folded = ok(annotate('--format=folded', '--names=short', run.profile_path)).out
    assert re.search(r'^\[truncated k=2\];main;canon\(std::__cxx11::basic_string<\.\.\.>\*\);canon\(char\*, '
                     r'unsigned long\*\) \d+$', folded, re.M)


# ---------------------------------------------------------------------------
# Messages

def test_tree_dumps_keep_cxx_names(annotate, tools):
    """--kccf and --ksf print "name()" for names without a parameter list,
    C++ names as they are: "Box<int>::get() const", not "... const()"."""
    exe = tools.compile('overloads.cpp', '-O1')
    run = tools.kgrind(exe, opts=['--k=1'])
    assert run.returncode == 0, run.stderr
    for dump in ('--kccf', '--ksf'):
        text = ok(annotate(dump, '--top=0', '--threshold=100', run.profile_path)).out
        names = re.findall(r'^ *\| (.*),\d+', text, re.M)
        assert 'Box<int>::get() const' in names and 'main()' in names
        assert not [n for n in names if n.endswith(')()') or n.endswith('const()')]


def test_gzipped_profile_is_read(annotate, tmp_path):
    from test_annotate import THESIS
    gz = tmp_path / 'thesis.out.gz'
    gz.write_bytes(gzip.compress(THESIS.read_bytes()))
    assert ok(annotate(gz)).out.replace(str(gz), '') == ok(annotate(THESIS)).out.replace(str(THESIS), '')


@pytest.mark.writes_bad_profiles
def test_gzipped_and_cut_profiles_say_where(annotate, tmp_path):
    from test_annotate import THESIS
    data = THESIS.read_bytes()
    cut = tmp_path / 'cut.out.gz'
    cut.write_bytes(gzip.compress(data)[:-20])
    bad(annotate(cut), f'{cut}: a gzipped file that does not decompress', 'cut short? gunzip -t tells')
    inside = tmp_path / 'inside.out'
    n = data.index(b'# ksf-end-thread') + 5
    inside.write_bytes(data[:n])
    line = data[:n].count(b'\n') + 1
    bad(annotate(inside), f'{inside}:{line}: truncated: the file ends inside line {line}, after byte {n}')
    zinside = tmp_path / 'inside.out.gz'
    zinside.write_bytes(gzip.compress(data[:n]))
    bad(annotate(zinside), f'{zinside}:{line}: truncated: the file ends inside line {line}, after byte {n} of '
        'its gzipped contents')
    lines = tmp_path / 'lines.out'
    n = data.index(b'\n', data.index(b'# ksf-thread')) + 1
    lines.write_bytes(data[:n])
    bad(annotate(lines), 'truncated after byte', str(n))


def test_auto_says_the_program_has_no_line_data(annotate, tools):
    """A program built without -g: --auto says its functions have no
    file:line data, naming them; built with -g it does not."""
    for flags, says in ((['-O1', '-g0'], True), (['-O1'], False)):
        exe = tools.compile('mutual_rec.c', *flags, out='mutual_rec' + ('_nog' if says else ''))
        run = tools.kgrind(exe, opts=['--k=1'], out=f'{exe.name}.out')
        assert run.returncode == 0 and run.stdout == '4200\n', run.stderr
        text = ok(annotate('--auto=yes', run.profile_path)).out
        line = [l for l in text.splitlines() if 'has no file:line data' in l]
        if says:
            assert len(line) == 1 and line[0].startswith(f'-- {exe.name} has no file:line data for its functions')
            assert 'leaf' in line[0] and 'built without debug info (-g)' in line[0]
        else:
            assert line == [] and 'Annotated source:' in text
