"""Two functions of one name in one object: static functions of two C
files, or C++ anonymous-namespace functions of two translation units
(tests/progs/twin_a.c and twin_b.c, `helper` each). callgrind tells them
apart by their files; kgrind keys functions by their entries and names them
by their files (`helper [twin_a.c]`, docs/output-format.md). Each keeps its
own costs and calls at every k, in the k-SF records, the callgrind body,
the block modes and kgrind_annotate's reports: callgrind's per-function
numbers and the program's own counts."""
import collections
import os
import re
import subprocess

import pytest

import callgrind_format
import ksf_records
from callgrind_format import callee
from conftest import PROGS, Toolbox
from test_annotate import annotate, ok  # noqa: F401
from test_regions import WaitingProgram, read_line

FILES = ('twin_a.c', 'twin_b.c')
# the language: its compiler, the helpers' and twin_leaf's demangled names
LANGS = {'c': ('gcc', 'helper', 'twin_leaf'),
         'c++': ('g++', '(anonymous namespace)::helper(int)', 'twin_leaf(int)')}
STEP = {'c': 'twin_step', 'c++': '(anonymous namespace)::twin_step(long, int)'}


def name_of(lang, file):
    """The name the profile gives the helper of file."""
    return f'{LANGS[lang][1]} [{file}]'


class Twins:
    """The program built in one language, its own counts, and callgrind's
    numbers for each file's helper: {file: {'calls', 'excl', 'incl'}}."""

    def __init__(self, lang, tmp):
        compiler, helper, _leaf = LANGS[lang]
        self.lang = lang
        self.tools = Toolbox(tmp)
        self.exe = tmp / 'twins'
        srcs = [str(PROGS / f) for f in (*FILES, 'twin_main.c')]
        lang_flag = ['-x', 'c++'] if lang == 'c++' else []
        subprocess.run([compiler, '-g', '-O1', *lang_flag, *srcs, '-o', str(self.exe)], check=True)
        out = self.tools.native(self.exe).stdout
        own = dict((k, int(v)) for k, v in re.findall(r'(\w+) (\d+)', out))
        self.calls = {'twin_a.c': own['helper_a'], 'twin_b.c': own['helper_b']}
        self.leaf_calls = {'twin_a.c': own['leaf_a'], 'twin_b.c': own['leaf_b']}
        self.callgrind_profile = self.tools.reference('callgrind', self.exe).profile()
        homes = self.callgrind_profile.function_homes[helper]
        assert {os.path.basename(fl) for _ob, fl in homes} == set(FILES)
        self.callgrind = self.reference(helper)

    def reference(self, fn):
        """callgrind's functions named fn: exclusive Ir by the file it binds
        each to, calls and inclusive Ir by the file of the call sites
        (twin_a.c's run_a calls twin_a.c's helper)."""
        prof = self.callgrind_profile
        out = collections.defaultdict(collections.Counter)
        for (_ob, fl, name, _line), ir in prof.lines.items():
            if name == fn:
                out[os.path.basename(fl)]['excl'] += ir
        for (caller, name, fl, line), n in prof.call_sites.items():
            if name == fn:
                out[os.path.basename(fl)]['calls'] += n
                out[os.path.basename(fl)]['incl'] += prof.call_site_costs[(caller, name, fl, line)]
        return out


@pytest.fixture(scope='module', params=sorted(LANGS))
def twins(request, tmp_path_factory):
    return Twins(request.param, tmp_path_factory.mktemp(f'twins-{request.param}'))


def records_by_function(path):
    """From the k-SF records: each function's calls (its 0-CCF root) and
    exclusive and inclusive Ir (summed over its nodes: only canonical nodes
    hold costs), and the calls of each (caller, function) pair (1-CCF)."""
    prof = ksf_records.parse(path)
    k = ksf_records.k_of(prof)
    out = collections.defaultdict(collections.Counter)
    pairs = collections.Counter()
    for forest in prof.forests:
        for (fn,), n in ksf_records.kccf(forest, k, 0).items():
            out[fn]['calls'] += n
        for _parent, label, _calls, excl, incl in forest.nodes.values():
            out[prof.names[label]]['excl'] += excl
            out[prof.names[label]]['incl'] += incl
        if k != 0:
            for ctx, n in ksf_records.kccf(forest, k, 1).items():
                if len(ctx) == 2:
                    pairs[ctx] += n
    return prof.names, out, pairs


def body_by_function(prof):
    """From the callgrind body: each function's exclusive Ir, and its calls
    and inclusive Ir from the calls= lines into its contexts."""
    out = collections.defaultdict(collections.Counter)
    for fn, ir in prof.by_function().items():
        out[fn]['excl'] += ir
    for _caller, ctx, n, incl in prof.calls:
        out[callee(ctx)]['calls'] += n
        out[callee(ctx)]['incl'] += incl
    return out


@pytest.mark.parametrize('k', ['0', '1', '2', 'inf'])
def test_each_namesake_keeps_its_own_costs(twins, k):
    """At every k, the k-SF records and the callgrind body give each
    helper callgrind's exclusive and inclusive Ir and the program's calls,
    under its own name and file; twin_leaf's contexts keep their callers
    apart."""
    run = twins.tools.kgrind(twins.exe, opts=[f'--k={k}'], out=f'kgrind.out.k{k}')
    assert run.returncode == 0, run.stderr
    names, records, pairs = records_by_function(run.profile_path)
    body = run.profile()
    _compiler, helper, leaf = LANGS[twins.lang]
    assert helper not in names.values()
    for f in FILES:
        name = name_of(twins.lang, f)
        want = {key: twins.callgrind[f][key] for key in ('calls', 'excl', 'incl')}
        assert want['calls'] == twins.calls[f]
        assert dict(records[name]) == want, name
        assert dict(body_by_function(body)[name]) == want, name
        homes = body.function_homes
        contexts = [c for c in homes if callee(c) == name]
        assert contexts and all({os.path.basename(fl) for _ob, fl in homes[c]} == {f} for c in contexts)
        if k != '0':
            assert pairs[(name, leaf)] == twins.leaf_calls[f]
    assert list(names.values()).count(leaf) == 1


def test_reports_show_two_functions(twins, annotate):  # noqa: F811
    """kgrind_annotate's flat report (--k=0: one row a function) and its
    JSON, and callgrind_annotate on kgrind's profile, show the two helpers
    with callgrind's numbers."""
    run = twins.tools.kgrind(twins.exe, opts=['--k=2'])
    assert run.returncode == 0, run.stderr
    want = {f: twins.callgrind[f] for f in FILES}
    data = annotate('--format=json', '--k=0', run.profile_path).json()
    got = {}
    for c in data['threads'][0]['contexts']:
        for f in FILES:
            if c['path'] == [name_of(twins.lang, f)]:
                got[f] = {'calls': c['calls'], 'excl': c['Ir'], 'incl': c['inclusive']}
    assert got == {f: {key: w[key] for key in ('calls', 'excl', 'incl')} for f, w in want.items()}
    # the text table: short names, "[file]" kept
    text = ok(annotate('--k=0', '--top=0', '--threshold=100', run.profile_path)).out
    rows = re.findall(r'^ +([\d,]+) +\S+% +([\d,]+) +([\d,]+)  (.*)$', text, re.M)
    short = 'helper' if twins.lang == 'c' else '(anonymous namespace)::helper'
    assert {r[3]: tuple(int(x.replace(',', '')) for x in r[:3]) for r in rows if r[3].startswith(short + ' ')} == {
        f'{short} [{f}]': (w['excl'], w['incl'], w['calls']) for f, w in want.items()}
    ann = subprocess.run(['callgrind_annotate', '--inclusive=no', str(run.profile_path)],
                         capture_output=True, text=True, check=True).stdout
    shown = collections.Counter()
    helper = LANGS[twins.lang][1]
    for ir, fl, ctx in re.findall(r'^\s*([\d,]+) \(\s*[\d.]+%\)\s+(\S+?):(.*) \[\S+\]$', ann, re.M):
        if callee(ctx).startswith(helper + ' ['):
            assert callee(ctx) == name_of(twins.lang, os.path.basename(fl)), (fl, ctx)
            shown[callee(ctx)] += int(ir.replace(',', ''))
    assert shown == {name_of(twins.lang, f): w['excl'] for f, w in want.items()}


@pytest.mark.parametrize('mode', ['intra', 'inter'])
def test_block_modes_keep_namesakes_apart(twins, mode):
    """--mode=intra has one block forest per function: one per helper,
    holding its exclusive Ir; both modes' bodies give each helper its own
    Ir, and their blocks belong to their own helper."""
    run = twins.tools.kgrind(twins.exe, opts=[f'--mode={mode}', '--k=2'], out=f'kgrind.out.{mode}')
    assert run.returncode == 0, run.stderr
    prof = ksf_records.parse(run.profile_path)
    body = body_by_function(run.profile())
    for f in FILES:
        name = name_of(twins.lang, f)
        assert body[name]['excl'] == twins.callgrind[f]['excl']
        blocks = [b for b in prof.blocks.values() if b['fn'] == name]
        assert blocks and all(os.path.basename(b['file']) == f for b in blocks)
        if mode == 'intra':
            assert [x.ir for x in prof.forests if x.fn == name] == [twins.callgrind[f]['excl']]


@pytest.mark.parametrize('option', ['--funcs', '--toggle-collect'])
def test_a_pattern_selects_both_namesakes(twins, option):
    """Function patterns match the plain name: the helpers' name traces
    both (--funcs: twin_leaf's cost goes to its traced caller), or
    collects both and nothing else (--toggle-collect), each with its own
    calls and exclusive Ir (--toggle-collect: twin_leaf's calls inside)."""
    opts = [f'{option}={LANGS[twins.lang][1]}', '--k=1']
    if option == '--toggle-collect':
        opts.append('--collect-atstart=no')
    run = twins.tools.kgrind(twins.exe, opts=opts, out=f'kgrind.out{option}')
    assert run.returncode == 0, run.stderr
    _names, records, _pairs = records_by_function(run.profile_path)
    leaf = LANGS[twins.lang][2]
    for f in FILES:
        name = name_of(twins.lang, f)
        want = twins.callgrind[f]
        assert records[name]['calls'] == twins.calls[f]
        if option == '--funcs':
            assert records[name]['excl'] == records[name]['incl'] == want['incl']
        else:
            assert records[name]['excl'] == want['excl'] and records[name]['incl'] == want['incl']
    if option == '--toggle-collect':
        assert records[leaf]['calls'] == sum(twins.leaf_calls.values())
        assert sum(r['excl'] for r in records.values()) == sum(twins.callgrind[f]['incl'] for f in FILES)


def test_a_headers_static_function_has_a_copy_per_file(twins):
    """twin.h's static twin_step: one copy in each file, one name and one
    file. kgrind names them by their entries (the symbols' addresses, nm)
    and gives each its own calls (run_a's, run_b's: the program's counts)
    and Ir; callgrind, which keys functions by file and name, shows one
    function with the sum."""
    run = twins.tools.kgrind(twins.exe, opts=['--k=1'], out='kgrind.out.step')
    assert run.returncode == 0, run.stderr
    names, records, pairs = records_by_function(run.profile_path)
    step = STEP[twins.lang]
    nm = subprocess.run(['nm', '-C', str(twins.exe)], capture_output=True, text=True, check=True).stdout
    entries = sorted(int(a, 16) for a, n in re.findall(r'^([0-9a-f]+) t (.*)$', nm, re.M) if n == step)
    copies = sorted(n for n in names.values() if n.startswith(step + ' ['))
    assert copies == sorted(f'{step} [twin.h 0x{e:x}]' for e in entries) and len(copies) == 2
    ref = twins.reference(step)
    assert {os.path.basename(fl) for _ob, fl in twins.callgrind_profile.function_homes[step]} == {'twin.h'}
    for f, caller in zip(FILES, ('run_a', 'run_b')):
        mine = [c for c in copies if any(p[1] == c and p[0].startswith(caller) for p in pairs)]
        assert len(mine) == 1, (f, mine)
        assert records[mine[0]]['calls'] == twins.calls[f] == ref[f]['calls']
        assert records[mine[0]]['excl'] == records[mine[0]]['incl'] == ref[f]['incl']
    assert sum(records[c]['excl'] for c in copies) == ref['twin.h']['excl']


def test_status_names_namesakes_without_fixing_their_names(twins):
    """kgrind_control -s while twin_a.c's helper waits (in twin_leaf): only
    one helper has run, so the context names it plainly; then while
    twin_b.c's waits: by its file. Asking fixes no name: the profile names
    both helpers by their files."""
    out = twins.tools.dir / 'kgrind.out.status'
    prog = WaitingProgram(twins.tools, out, exe=twins.exe, args=['wait'], opts=['--k=inf'])
    helper, leaf = LANGS[twins.lang][1:]

    def context():
        status = prog.control('-s', prog.pid)
        assert status.returncode == 0, status.stderr
        return re.search(r'^thread 1 \(Valgrind tid 1\): .* context (.*)$', status.stdout, re.M)[1]
    try:
        assert f"'{leaf}'{helper}'run_a" in context()
        prog.proc.stdin.write('go\n')
        prog.proc.stdin.flush()
        assert read_line(prog.proc.stdout, 120) == 'ready\n'
        assert f"'{leaf}'{name_of(twins.lang, 'twin_b.c')}'run_b" in context()
        _stdout, stderr = prog.go_on()
    finally:
        prog.kill()
    assert prog.proc.returncode == 0, stderr
    names = set(ksf_records.parse(out).names.values())
    assert {name_of(twins.lang, f) for f in FILES} <= names and helper not in names


def test_constructor_and_destructor_variants_are_named_by_kind(tmp_path):
    """A C++ class's deleting destructor (D0: a polymorphic `delete`) and
    complete one (D1, which D0 calls, and an object on the stack's end)
    are two functions of one demangled name, file and object: kgrind names
    them by their variant (`C2::~C2() [structors.cpp deleting]`, read from
    the mangled name, whose class and namespace names look like variant
    codes), each with the program's count of its runs and together with
    callgrind's Ir for the one function it makes of them."""
    tools = Toolbox(tmp_path)
    exe = tools.compile('structors.cpp', '-O0')   # D0 calls D1, not inlined
    own = dict((k, int(v)) for k, v in re.findall(r'(\w+) (\d+)', tools.native(exe).stdout))
    nm = subprocess.run(['nm', str(exe)], capture_output=True, text=True, check=True).stdout
    symbols = dict((n, int(a, 16)) for a, n in re.findall(r'^([0-9a-f]+) [TW] (\S+)$', nm, re.M))
    assert symbols['_ZN2C2D0Ev'] != symbols['_ZN2C2D1Ev']
    run = tools.kgrind(exe, opts=['--k=1'])
    assert run.returncode == 0, run.stderr
    names, records, _pairs = records_by_function(run.profile_path)
    callgrind = tools.reference('callgrind', exe).profile().by_function()
    # D1 and D2 share an address (one function, Valgrind picks one name).
    complete = r'(complete|base)'
    for cls, deleted, whole in (('C2::~C2()', own['deleted'], own['deleted'] + own['on_stack']),
                                ('Box<long>::~Box()', own['boxes_deleted'], own['boxes_deleted'])):
        variants = {n: records[n] for n in names.values() if n.startswith(cls)}
        deleting = [n for n in variants if n == f'{cls} [structors.cpp deleting]']
        rest = [n for n in variants if re.fullmatch(re.escape(cls) + rf' \[structors\.cpp {complete}\]', n)]
        assert len(rest) == len(deleting) == 1 and len(variants) == 2, variants
        assert records[rest[0]]['calls'] == whole
        assert records[deleting[0]]['calls'] == deleted
        assert sum(v['excl'] for v in variants.values()) == callgrind[cls]
    # Shape's deleting destructor never runs: its complete one, alone, keeps
    # the bare name.
    shape = 'D1::Shape::~Shape()'
    assert [n for n in names.values() if n.startswith(shape)] == [shape]
    assert records[shape]['calls'] == own['deleted'] + own['on_stack'] + own['boxes_deleted']
    assert records[shape]['excl'] == callgrind[shape]
