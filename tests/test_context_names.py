"""The callgrind body's context names (what KCachegrind, callgrind_annotate
and gprof2dot list): the function's full name, then its callers short
(kgrind_annotate's --names=short, perl/lib/KGrind/Names.pm) where no other
function of the body has the same short name, else full. Checked on C++
programs against the k-SF records' full names."""
import collections
import pathlib
import re
import subprocess

import pytest

import ksf_records
from test_annotate import annotate  # noqa: F401

ROOT = pathlib.Path(__file__).resolve().parent.parent
NAME_DEF = re.compile(r'^(c?fn)=\((\d+)\) (.+)$', re.M)


def perl_short_names(names):
    """Names.pm's short_name of each name, by Perl itself."""
    out = subprocess.run(['perl', '-I', str(ROOT / 'perl' / 'lib'), '-MKGrind::Names=short_name', '-ne',
                          'chomp; print short_name($_), "\\n"'], input=''.join(n + '\n' for n in names),
                         capture_output=True, text=True, check=True).stdout.splitlines()
    return dict(zip(names, out))


def body_names(path):
    return {m.group(3) for m in NAME_DEF.finditer(path.read_text())}


def resolve(names):
    """{body name: its chain of full names}: heads are full names; a caller
    is a head's full name, or the short name of exactly one head."""
    heads = sorted({n.split("'")[0] for n in names})
    short = perl_short_names(heads)
    by_short = collections.defaultdict(list)
    for h in heads:
        by_short[short[h]].append(h)
    out = {}
    for n in names:
        head, *callers = n.split("'")
        chain = [head]
        for c in callers:
            if c.startswith('...#'):
                break
            full = [h for h in by_short.get(c, []) if len(by_short[c]) == 1]
            assert c in heads or full, (c, n)
            # short only while unique: a caller written full has a short name another head shares
            if c in heads and short[c] != c:
                assert len(by_short[short[c]]) > 1, (c, n)
            chain.append(c if c in heads else full[0])
        out[n] = tuple(chain)
    return out


def cpp_profile(tools, source, *flags, opts=()):
    src = ROOT / source
    exe = tools.dir / src.stem
    subprocess.run(['g++', '-g', *flags, str(src), '-o', str(exe)], check=True)
    run = tools.kgrind(exe, opts=opts)
    assert run.returncode == 0, run.stderr
    return run.profile_path


@pytest.mark.parametrize('source', ['tests/progs/templates.cpp', 'tests/progs/caller_names.cpp'])
def test_callers_are_short_while_unique_and_names_stay_apart(tools, source):
    path = cpp_profile(tools, source, '-O0')
    names = body_names(path)
    chains = resolve(names)
    # one name per context: no two names stand for the same chain
    assert len(set(chains.values())) == len(chains)
    # every chain is a 2-context of the records (outermost last in a name)
    prof = ksf_records.parse(path)
    contexts = set()
    for forest in prof.forests:
        contexts |= {tuple(reversed(c)) for c in ksf_records.kccf(forest, 2, 2)}
    missing = [n for n, c in chains.items() if c not in contexts and c[-1] != '__root__' and len(c) == 3]
    assert not missing, missing[:5]
    # short names are used: callers written shorter than their full names
    shortened = {c for n, chain in chains.items() for c, f in zip(n.split("'")[1:], chain[1:]) if c != f}
    assert len(shortened) >= 5


def test_caller_names_by_kind(tools):
    """Each kind of C++ name as a caller of leaf (tests/progs/caller_names.cpp):
    short where no other function has its short name; the overloads and
    the template's two instances in full."""
    path = cpp_profile(tools, 'tests/progs/caller_names.cpp', '-O0')
    callers = {n.split("'")[1] for n in body_names(path) if n.startswith('leaf(long)\'') and n.endswith("'main")}
    assert callers == {
        '(anonymous namespace)::Acc::operator()', '(anonymous namespace)::Acc::operator<<',
        '(anonymous namespace)::Acc::operator<', '(anonymous namespace)::Acc::operator bool',
        '(anonymous namespace)::Acc::get() const &', '(anonymous namespace)::Acc::get() &&',
        'main::{lambda(long)#1}::operator()',
        'over(int)', 'over(double)',
        'std::vector<int, std::allocator<int> > twice<int>(int)',
        'std::vector<long, std::allocator<long> > twice<long>(long)'}


def test_the_kcachegrind_example_tells_its_contexts_apart(tools):
    # as docs/img/make_kcachegrind_pictures.sh profiles it: physical frames
    path = cpp_profile(tools, 'examples/lookups.cpp', '-O2', opts=['--inline-frames=no'])
    names = body_names(path)
    lookups = sorted(n for n in names if n.startswith('Scope::lookup('))
    head = lookups[0].split("'")[0]
    assert [n[len(head):] for n in lookups] == ["'expand'describe", "'expand'evaluate_command",
                                                "'has_depfile'main", "'is_restat'main"]
    memcmp = sorted(n.split("'", 1)[1] for n in names if "'Scope::lookup'" in n and 'memcmp' in n)
    assert memcmp == ['Scope::lookup\'expand', 'Scope::lookup\'has_depfile', 'Scope::lookup\'is_restat']


def test_dot_joins_contexts_named_with_short_callers(tools, annotate):
    """The DOT graph of a body with short callers is the graph of the same
    body with every name written in full."""
    path = cpp_profile(tools, 'tests/progs/templates.cpp', '-O0')
    chains = resolve(body_names(path))
    text = path.read_text()
    full = NAME_DEF.sub(lambda m: f'{m.group(1)}=({m.group(2)}) ' + "'".join(chains.get(m.group(3), (m.group(3),))),
                        text)
    assert full != text
    full_path = tools.dir / 'full-names.kg'
    full_path.write_text(full)
    mine = annotate('--format=dot', '--top=60', path)
    ref = annotate('--format=dot', '--top=60', full_path)
    assert mine.rc == 0 and ref.rc == 0, mine.err + ref.err
    assert mine.err == '' and ref.err == ''
    strip = lambda s: s.replace(str(full_path.name), 'P').replace(str(path.name), 'P')
    assert mine.out.count('->') > 20
    assert strip(mine.out) == strip(ref.out)
