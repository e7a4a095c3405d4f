"""Inlined functions' qualified names (--inline-frames, kg_inline_names.h):
each inlined level is named as llvm-symbolizer --inlining names the inline
frames of the instructions its context holds (their linkage names,
demangled by binutils' c++filt: the same demangler as Valgrind's), so that
std::map::find and the std::_Rb_tree::find it calls are two functions in
every output; where the debug info is not read, short names and files keep
them apart."""
import collections
import json
import re
import subprocess

import pytest

import ksf_records
from test_annotate import annotate_cmd
from test_inline_frames import FLAGS, objdump_addresses
from testdeps import debian_tool

OWN = ('fill', 'lookups')   # extern "C": objdump names them plainly
INLINED = ' [inlined]'
MAP_FIND = 'std::map<int, int, std::less<int>, std::allocator<std::pair<int const, int> > >::find(int const&)'
TREE_FIND = ('std::_Rb_tree<int, std::pair<int const, int>, std::_Select1st<std::pair<int const, int> >, '
             'std::less<int>, std::allocator<std::pair<int const, int> > >::find(int const&)')


def symbolized_chains(exe, functions):
    """{physical function: {inline chain, outermost first}} of each of its
    instructions: llvm-symbolizer's frames by linkage name (else DW_AT_name),
    demangled by c++filt."""
    addrs = sorted(a for fn in functions for a in objdump_addresses(exe, [fn])[fn])
    symbolizer = debian_tool('llvm-symbolizer-14', 'llvm-14')
    text = subprocess.run([symbolizer, '--inlining', '--no-demangle', f'--obj={exe}'],
                          input=''.join(f'{a:#x}\n' for a in addrs), capture_output=True, text=True,
                          check=True).stdout
    blocks = [b.strip('\n').splitlines()[0::2] for b in text.strip('\n').split('\n\n')]
    assert len(blocks) == len(addrs)
    mangled = sorted({n for b in blocks for n in b if n.startswith('_Z')})
    plain = dict(zip(mangled, subprocess.run(['c++filt'], input=''.join(f'{n}\n' for n in mangled),
                                             capture_output=True, text=True, check=True).stdout.splitlines()))
    chains = collections.defaultdict(set)
    for b in blocks:
        chains[b[-1]].add(tuple(plain.get(n, n) for n in reversed(b[:-1])))
    return chains


def same_function(mine, expected):
    """kgrind's name of an inlined level against the oracle's: equal, or,
    where the debug info has no linkage name (llvm-symbolizer then says
    DW_AT_name), the scopes and that name."""
    return mine == expected or mine.endswith('::' + expected)


def inline_runs(profile):
    """{(physical function, inlined levels above it)} of the k-SF's contexts
    with exclusive cost, --k=inf."""
    prof = ksf_records.parse(profile)
    runs = set()
    for forest in prof.forests:
        stack = [(root, (forest.name(root),)) for root in forest.roots]
        while stack:
            nid, path = stack.pop()
            if forest.nodes[nid][3] and path[-1].endswith(INLINED):
                i = len(path)
                while path[i - 1].endswith(INLINED):
                    i -= 1
                runs.add((path[i - 1], tuple(n[:-len(INLINED)] for n in path[i:])))
            stack.extend((kid, path + (forest.name(kid),)) for kid in forest.children[nid])
    return runs


def test_inlined_levels_have_llvm_symbolizers_names(tools):
    exe = tools.compile('inline_maps.cpp', *FLAGS)
    kg = tools.kgrind(exe, opts=['--k=inf', '--inline-frames=yes'])
    assert kg.returncode == 0, kg.stderr
    assert kg.stdout == tools.native(exe).stdout
    oracle = symbolized_chains(exe, OWN)
    runs = {(fn, levels) for fn, levels in inline_runs(kg.profile_path) if fn in OWN}
    assert runs
    for fn, levels in runs:
        assert any(len(c) == len(levels) and all(map(same_function, levels, c)) for c in oracle[fn]), (fn, levels)
    # each of the program's calls, under its own name
    names = {n for _fn, levels in runs for n in levels}
    for fn, name in [('lookups', MAP_FIND), ('lookups', TREE_FIND),
                     ('lookups', 'std::map<int, int, std::less<int>, std::allocator<std::pair<int const, int> > >'
                                 '::operator[](int&&)'),
                     ('fill', 'std::vector<int, std::allocator<int> >::push_back(int const&)')]:
        assert name in names, name
        assert any(name in levels for f, levels in runs if f == fn)
    assert any(levels[:2] == (MAP_FIND, TREE_FIND) for _f, levels in runs)
    # no level calls a namesake of its own short name: functions of one
    # short name stay apart
    assert not any(a == b for _f, levels in runs for a, b in zip(levels, levels[1:]))


def test_every_output_keeps_namesakes_apart(tools):
    """callgrind body, kgrind_annotate's table, JSON, pprof, speedscope,
    folded and DOT: std::map::find calling std::_Rb_tree::find is a call
    between two functions, never a function calling itself."""
    exe = tools.compile('inline_maps.cpp', *FLAGS)
    kg = tools.kgrind(exe, opts=['--k=3', '--inline-frames=yes'])
    text = kg.profile_path.read_text()
    fns = set(re.findall(r'^c?fn=\(\d+\) (.*)$', text, re.M))
    assert any(f.startswith(MAP_FIND + INLINED) for f in fns) and any(f.startswith(TREE_FIND + INLINED) for f in fns)

    def run(*args):
        return subprocess.run([*annotate_cmd(), *args, str(kg.profile_path)], capture_output=True,
                              check=True).stdout

    table = run('--top=1000').decode()
    assert 'std::map<...>::find [inlined] > std::_Rb_tree<...>::find [inlined]' in table
    d = json.loads(run('--format=json'))
    assert MAP_FIND + INLINED in json.dumps(d) and TREE_FIND + INLINED in json.dumps(d)
    for fmt in ('speedscope', 'folded', 'dot'):
        out = run(f'--format={fmt}').decode()
        assert MAP_FIND + INLINED in out and TREE_FIND + INLINED in out, fmt
    import pprof_wire
    pb = tools.dir / 'maps.pb.gz'
    pb.write_bytes(run('--format=pprof'))
    p = pprof_wire.decode(pb)
    chains = {tuple(line['function']['name'] for line in loc['lines']) for loc in p['locations'].values()}
    assert any(c[-1] == 'lookups' and TREE_FIND + INLINED in c and MAP_FIND + INLINED in c for c in chains)


def compressed_copy(tools, exe, how):
    """exe with its debug info compressed by objcopy: in its own sections
    (SHF_COMPRESSED for zlib, .zdebug_* for zlib-gnu), or, as Debian's -dbg
    packages, moved to a separate file found by .gnu_debuglink."""
    out = tools.dir / f'{exe.name}.{how}'
    if how == 'debuglink':
        debug = tools.dir / f'{exe.name}.debug'
        subprocess.run(['objcopy', '--only-keep-debug', '--compress-debug-sections=zlib', str(exe), str(debug)],
                       check=True)
        subprocess.run(['objcopy', '--strip-debug', f'--add-gnu-debuglink={debug}', str(exe), str(out)], check=True,
                       cwd=tools.dir)
        sections = subprocess.run(['readelf', '-SW', str(debug)], capture_output=True, text=True, check=True).stdout
    else:
        subprocess.run(['objcopy', f'--compress-debug-sections={how}', str(exe), str(out)], check=True)
        sections = subprocess.run(['readelf', '-SW', str(out)], capture_output=True, text=True, check=True).stdout
    info = next(line for line in sections.splitlines() if 'debug_info' in line)
    # compressed: the C flag, or GNU's .zdebug name
    assert '.zdebug_info' in info if how == 'zlib-gnu' else re.search(r'\s[A-Z]*C[A-Z]*\s+\d+\s+\d+\s+\d+$', info), info
    return out


def same_inline_runs(kg, plain):
    """kgrind's run kg has the inline runs of the program's own functions
    that plain (the same program, its debug info as built) has, with
    std::map::find and std::_Rb_tree::find told apart; returns them."""
    assert kg.returncode == 0, kg.stderr
    assert kg.stdout == plain.stdout
    runs = {(fn, levels) for fn, levels in inline_runs(kg.profile_path) if fn in OWN}
    assert runs == {(fn, levels) for fn, levels in inline_runs(plain.profile_path) if fn in OWN}
    names = {n for _fn, levels in runs for n in levels}
    assert MAP_FIND in names and TREE_FIND in names
    return runs


@pytest.mark.parametrize('how', ['zlib', 'zlib-gnu', 'debuglink'])
def test_compressed_debug_info_names_alike(tools, how):
    """The program's debug info compressed: the same qualified names as
    uncompressed (kgrind inflates the sections itself), each one
    llvm-symbolizer's for the compressed file."""
    exe = tools.compile('inline_maps.cpp', *FLAGS)
    plain = tools.kgrind(exe, opts=['--k=inf', '--inline-frames=yes'], out='plain.out')
    zexe = compressed_copy(tools, exe, how)
    kg = tools.kgrind(zexe, opts=['--k=inf', '--inline-frames=yes'], out=f'{how}.out')
    runs = same_inline_runs(kg, plain)
    oracle = symbolized_chains(zexe if how != 'debuglink' else exe, OWN)
    for fn, levels in runs:
        assert any(len(c) == len(levels) and all(map(same_function, levels, c)) for c in oracle[fn]), (fn, levels)


def test_dwz_supplementary_file_names_alike(tools):
    """Two programs' common debug info moved by dwz into a supplementary
    file (.gnu_debugaltlink; DW_FORM_GNU_ref_alt and DW_FORM_GNU_strp_alt
    into it): the same qualified names as without dwz, where Valgrind's own
    records say UnknownInlinedFun."""
    dwz = debian_tool('dwz', 'dwz')
    exe = tools.compile('inline_maps.cpp', *FLAGS)
    plain = tools.kgrind(exe, opts=['--k=inf', '--inline-frames=yes'], out='plain.out')
    one, two = tools.dir / 'one', tools.dir / 'two'
    for copy in (one, two):
        copy.write_bytes(exe.read_bytes())
        copy.chmod(0o755)
    subprocess.run([dwz, '-m', 'common.debug', '-M', 'common.debug', 'one', 'two'], cwd=tools.dir, check=True)
    forms = subprocess.run(['readelf', '--debug-dump=info', str(one)], capture_output=True, text=True).stdout
    assert '<alt 0x' in forms and 'alt indirect string' in forms
    kg = tools.kgrind(one, opts=['--k=inf', '--inline-frames=yes'], out='dwz.out')
    same_inline_runs(kg, plain)
