"""Activations that machine code makes hard to see (IHPP 5.4, Nethercote
2.4.3): lazy binding, tail calls, exceptions, signals, threads, deep
recursion, fork, stripped binaries. Each run is checked on its calling
context tree (--k=inf) read back from the k-SF records."""
import collections
import json
import re
import shutil
import subprocess

import pytest

import callgrind_format
import ksf_records
from conftest import PROGS, ROOT, VALGRIND


def cct_paths(prof):
    """{full root path: calls} over all threads."""
    out = collections.Counter()
    for forest in prof.forests:
        out.update(ksf_records.kccf(forest, ksf_records.k_of(prof), None))
    return out


def paths_ending(paths, fn):
    return {p: n for p, n in paths.items() if p[-1] == fn}


def callers_of(paths, fn):
    out = collections.Counter()
    for p, n in paths_ending(paths, fn).items():
        out[p[-2] if len(p) > 1 else None] += n
    return out


def run_cct(tools, exe, *opts):
    kg = tools.kgrind(exe, opts=['--k=inf', *opts])
    native = tools.native(exe)
    assert kg.returncode == native.returncode, kg.stderr
    assert kg.stdout == native.stdout
    return kg, cct_paths(ksf_records.parse(kg.profile_path))


def compile_with_plt_lib(tools, source, opt):
    """source linked against plt_lib.c's shared library, bound lazily."""
    lib = tools.dir / 'libplt.so'
    subprocess.run(['gcc', '-g', '-O1', '-shared', '-fPIC', '-o', str(lib), str(PROGS / 'plt_lib.c')],
                   check=True)
    return tools.compile(source, opt, libs=[f'-L{tools.dir}', '-lplt', f'-Wl,-rpath,{tools.dir}',
                                            '-Wl,-z,lazy'])


def test_lazy_plt_calls_into_shared_library(tools):
    exe = compile_with_plt_lib(tools, 'plt_main.c', '-O1')
    kg, paths = run_cct(tools, exe)
    callers = callers_of(paths, 'lib_work')
    # Three calls from caller_one (two activations) and two from caller_two:
    # the first one goes through _dl_runtime_resolve, which must not appear
    # as a caller of the resolved function.
    assert callers == {'caller_one': 2, 'caller_two': 2}, callers
    assert callers_of(paths, 'lib_inner') == {'lib_work': 8}
    for p in paths:
        for caller, callee in zip(p, p[1:]):
            if callee in ('lib_work', 'lib_inner', 'printf', 'puts'):
                assert not caller.startswith('_dl_runtime_resolve'), p
    # The resolver itself is visible, called from the functions whose PLT
    # entries were bound lazily.
    resolvers = [p for p in paths if p[-1].startswith('_dl_runtime_resolve')]
    assert resolvers


def test_plt_stub_costs_go_to_each_calling_context(tools):
    """A PLT stub runs in every caller's context in turn; a block calling it
    directly counts its instructions (instrument/prologue.cpp, add_plt_prologue),
    a tail call's jump to it leaves that to the stub. Each context's
    exclusive Ir, stubs included, equals callgrind --separate-callers=1's
    (which charges PLT code to the caller too)."""
    exe = compile_with_plt_lib(tools, 'plt_contexts.c', '-O2')
    disasm = subprocess.run(['objdump', '-d', str(exe)], capture_output=True, text=True).stdout
    assert re.search(r'jmp\s+\S+ <lib_inner@plt>', disasm.split('<tail>:')[1].split('\n\n')[0])
    kg = tools.kgrind(exe, opts=['--k=1'])
    cl = tools.reference('callgrind', exe, opts=['--separate-callers=1'])
    assert kg.stdout == cl.stdout == 'plt contexts: 7240\n'
    own = re.compile(r'^(twice|tail|left|right|main)$')

    def contexts(path):
        return {c: ir for c, ir in callgrind_format.parse(path).by_context().items()
                if own.match(c.split("'")[0])}
    mine, ref = contexts(kg.profile_path), contexts(cl.profile_path)
    assert {"twice'left", "twice'right", "tail'left", "right'main"} <= set(ref)
    assert mine == ref


def test_tail_calls_at_O2(tools):
    exe = compiled_with(tools, 'tailcall.c', 'middle', r'jmp\s+\S+ <target>', '-O2')
    kg, paths = run_cct(tools, exe)
    assert callers_of(paths, 'target') == {'middle': 5, 'other': 1}
    assert callers_of(paths, 'middle') == {'main': 5}


def compiled_with(tools, source, fn, pattern, *flags, **kw):
    """source compiled, after checking that fn's machine code matches pattern."""
    exe = tools.compile(source, *flags, **kw)
    disasm = subprocess.run(['objdump', '-d', str(exe)], capture_output=True, text=True).stdout
    body = disasm.split(f'<{fn}>:')[1].split('\n\n')[0]
    assert re.search(pattern, body), body
    return exe


def call_sites_beside_callgrind(tools, exe, *own):
    """{(caller, callee, file, line): calls} of the callers named own, from
    kgrind --k=1 and from callgrind --separate-callers=1 (same names)."""
    kg = tools.kgrind(exe, opts=['--k=1'])
    cl = tools.reference('callgrind', exe, opts=['--separate-callers=1'])

    def sites(path):
        return {k: n for k, n in callgrind_format.parse(path).call_sites.items()
                if k[0].split("'")[0] in own}
    return sites(kg.profile_path), sites(cl.profile_path)


def test_tail_call_positions_match_callgrind(tools):
    """A tail call's `calls=` line is at its jump instruction's line, as
    callgrind puts it, not at the line of the last call before it."""
    exe = tools.compile('tailcall.c', '-O2')
    mine, ref = call_sites_beside_callgrind(tools, exe, 'middle', 'other', 'main')
    tail = [k for k in ref if k[:2] == ("middle'main", "target'middle")]
    assert tail and tail[0][3] == 4, ref
    assert mine == ref


def test_indirect_tail_call_positions_match_callgrind(tools):
    """middle() tail-calls through a function pointer (`jmp *%rax`): the
    helper sees the jump only at the target, and takes its site from the
    jumping block."""
    exe = compiled_with(tools, 'tailcall_indirect.c', 'middle', r'jmp\s+\*', '-O2')
    kg, paths = run_cct(tools, exe)
    assert callers_of(paths, 'target') == {'middle': 5}
    assert callers_of(paths, 'other') == {'middle': 1}
    mine, ref = call_sites_beside_callgrind(tools, exe, 'middle', 'main')
    assert ("middle'main", "target'middle", str(PROGS / 'tailcall_indirect.c'), 11) in ref, ref
    assert mine == ref


def test_repeated_indirect_tail_call_is_made_a_call_by_the_jump(tools):
    """Once a tail call through the pointer entered target(), the jump
    itself makes the next ones pending calls (their target cached), so
    target's first block pushes its frame as after a call: the entries'
    fix-ups stay as many at 20,006 calls as at 6, and every call still
    counts in middle > target (the program's own count), the last in
    middle > other, a target the cache did not hold."""
    exe = compiled_with(tools, 'tailcall_indirect.c', 'middle', r'jmp\s+\*', '-O2')
    fixups = {}
    for n in (6, 20006):
        kg = tools.kgrind(exe, n, opts=['--k=inf', '--stats=yes'], out=f'tail-{n}.out')
        assert kg.returncode == 0 and kg.stdout == tools.native(exe, n).stdout, kg.stderr
        paths = cct_paths(ksf_records.parse(kg.profile_path))
        assert callers_of(paths, 'target') == {'middle': n - 1}
        assert callers_of(paths, 'other') == {'middle': 1}
        assert callers_of(paths, 'middle') == {'main': n}
        found = re.search(r'kg_entry_fixup (\d+)', kg.stderr)
        assert found, kg.stderr
        fixups[n] = int(found.group(1))
    assert fixups[20006] == fixups[6], fixups


def test_conditional_tail_call(tools):
    """clang -Os makes pick()'s tail call a conditional jump (`jge big`): a
    side exit of pick's superblock, which leaves the call pending only when
    taken."""
    exe = compiled_with(tools, 'tailcall_cond.c', 'pick', r'\bj(ge|g|l|le|ne|e)\s+\S+ <big>', '-Os',
                        compiler='clang-14')
    kg, paths = run_cct(tools, exe)
    assert callers_of(paths, 'big') == {'pick': 4}
    assert callers_of(paths, 'pick') == {'main': 10}
    mine, ref = call_sites_beside_callgrind(tools, exe, 'pick', 'main')
    assert mine == ref


def test_tail_call_through_plt_positions_match_callgrind(tools):
    """The same for a tail call's jump to a PLT stub."""
    exe = compile_with_plt_lib(tools, 'plt_contexts.c', '-O2')
    mine, ref = call_sites_beside_callgrind(tools, exe, 'twice', 'tail', 'left', 'right', 'main')
    assert any(k[1].startswith("lib_inner'tail") for k in ref), ref
    assert mine == ref


def test_tail_call_through_plt_got_stub_counts_as_a_call_of_its_target(tools):
    """say() calls puts through a pointer, then tail-jumps to it through
    puts's .plt.got stub, as sqlite3LeaveMutexAndCloseZombie calls
    sqlite3_free on Debian 12 (kgrind 10 calls, callgrind 9 and one call of
    the stub). kgrind counts the calls the program counts, at the call and
    at the jump; callgrind makes the stub a function named by its address,
    called at the jump ("Known limits and deviations")."""
    exe = compiled_with(tools, 'tailcall_plt_got.c', 'say', r'jmp\s+[0-9a-f]+ <puts@plt>', '-O2')
    disasm = subprocess.run(['objdump', '-d', str(exe)], capture_output=True, text=True).stdout
    assert re.search(r'section \.plt\.got:\n\n[0-9a-f]+ <puts@plt>:', disasm)
    say = disasm.split('<say>:')[1].split('\n\n')[0]
    call_at = int(re.search(r'([0-9a-f]+):\s+(?:[0-9a-f]{2} )+\s*call\s+\*', say).group(1), 16)
    jump_at = int(re.search(r'([0-9a-f]+):\s+(?:[0-9a-f]{2} )+\s*jmp\s+\S+ <puts@plt>', say).group(1), 16)
    kg = tools.kgrind(exe, opts=['--k=1', '--dump-instr=yes'])
    cl = tools.reference('callgrind', exe, opts=['--dump-instr=yes'])
    assert kg.stdout == cl.stdout == 'x\n' * 12 + 'say called puts 12 times\n'

    def calls_by_say(prof):
        out = collections.Counter()
        for (caller, target, addr), n in prof.call_instrs.items():
            if callgrind_format.callee(caller) == 'say':
                out[(callgrind_format.callee(target), addr)] += n
        return out
    assert calls_by_say(kg.profile()) == {('puts', call_at): 9, ('puts', jump_at): 3}
    ref = calls_by_say(cl.profile())
    stub = [fn for fn, addr in ref if addr == jump_at]
    assert len(stub) == 1 and stub[0].startswith('0x'), ref
    assert ref == {('puts', call_at): 9, (stub[0], jump_at): 3}


def test_tail_jump_into_another_objects_code_without_symbol(tools):
    """jump_lib() tail-jumps (`jmp *%rax`) into libnosym.so's code without
    a symbol (found on Debian: libgcc's _Unwind_DeleteException into
    libstdc++'s exception cleanup, ld.so's _dl_call_fini into a library's
    _fini): a call of a function named by its address, as callgrind shows
    it, so jump_lib keeps only its own instructions (cachegrind's count).
    jump_here()'s jump into its own object's code without a symbol stays
    jump_here's code, as callgrind counts it."""
    n, times = 100, 10
    lib = tools.dir / 'libnosym.so'
    subprocess.run(['gcc', '-shared', '-fPIC', '-o', str(lib), str(PROGS / 'nosym_lib.c')], check=True)
    exe = tools.compile('jump_out_nosym.c', '-O1', libs=[f'-L{tools.dir}', '-lnosym', f'-Wl,-rpath,{tools.dir}'])
    kg, paths = run_cct(tools, exe)
    mine = kg.profile().by_function()
    cg = tools.reference('cachegrind', exe).profile()
    cl = tools.reference('callgrind', exe).profile().by_function()
    assert mine['jump_lib'] == cg.by_function()['jump_lib'] == cl['jump_lib'] == 3 * times
    jumped_to = {p[-1] for p in paths if p[-2:-1] == ('jump_lib',)}
    assert len(jumped_to) == 1, jumped_to
    jumped_to = jumped_to.pop()
    assert jumped_to.startswith('0x') and jumped_to.endswith(' [libnosym.so]'), jumped_to
    # mov, n + 1 times dec and jnz, ret
    assert mine[jumped_to] == times * (2 * (n + 1) + 2)
    assert callers_of(paths, jumped_to) == {'jump_lib': times}
    assert mine['jump_here'] == cl['jump_here'] == times * (3 + 2 * (n + 1) + 2)
    assert sum(mine.values()) == cg.total()


def test_exception_through_five_frames_then_more_calls(tools):
    exe = tools.compile('exceptions.cpp', '-O1')
    kg, paths = run_cct(tools, exe)
    assert_exception_contexts(paths)


def assert_exception_contexts(paths):
    """exceptions.cpp's calling contexts (also tests/test_arm64.py's)."""
    # after() is always called by main, never by a frame the exception left.
    assert callers_of(paths, 'after(int)') == {'main': 10}
    assert callers_of(paths, 'level1(int)') == {'main': 10}
    assert callers_of(paths, 'level5(int)') == {'level4(int)': 10}
    # Throwing frames are popped: nothing but the unwinder nests under level5.
    for p in paths:
        if 'level5(int)' in p:
            assert 'after(int)' not in p and p.count('level1(int)') == 1


def test_siglongjmp_out_of_a_handler(tools):
    exe = tools.compile('siglongjmp.c', '-O1')
    kg, paths = run_cct(tools, exe)
    assert_siglongjmp_contexts(paths)


def assert_siglongjmp_contexts(paths):
    """siglongjmp.c's calling contexts (also tests/test_arm64.py's)."""
    assert callers_of(paths, 'after') == {'main': 3}
    assert callers_of(paths, 'deep1') == {'main': 3}
    # The handler nests under the interrupted activation (inside raise).
    handler_paths = paths_ending(paths, 'handler')
    assert sum(handler_paths.values()) == 3
    for p in handler_paths:
        assert p[:p.index('handler')][-1] != 'main' and 'deep2' in p
    assert callers_of(paths, 'in_handler') == {'handler': 3}


def test_handler_on_sigaltstack(tools):
    exe = tools.compile('altstack.c', '-O1')
    kg, paths = run_cct(tools, exe)
    # The interrupted stack survives the handler: the second leaf() of each
    # busy() is still busy's child.
    assert callers_of(paths, 'leaf') == {'busy': 4}
    assert callers_of(paths, 'busy') == {'main': 2}
    assert callers_of(paths, 'in_handler') == {'handler': 4}
    for p in paths_ending(paths, 'handler'):
        assert 'busy' in p


def test_eight_threads_have_their_own_forests(tools):
    exe = tools.compile('threads8.c', '-O1')
    kg = tools.kgrind(exe, opts=['--k=2'])
    assert kg.returncode == 0
    assert_eight_thread_forests(ksf_records.parse(kg.profile_path))


def assert_eight_thread_forests(prof):
    """threads8.c's forests at k=2 (also tests/test_arm64.py's)."""
    assert len(prof.forests) == 9        # main thread + 8 workers
    seen = set()
    for forest in prof.forests:
        contexts = ksf_records.kccf(forest, 2, 2)
        paths = {ctx[-1] for ctx in contexts if ctx[-1].startswith('path_')}
        if not paths:
            continue
        assert len(paths) == 1
        (path,) = paths
        i = int(path.split('_')[1])
        seen.add(i)
        steps = sum(n for ctx, n in contexts.items() if ctx[-2:] == (path, 'step'))
        leaves = sum(n for ctx, n in contexts.items() if ctx == (path, 'step', 'leaf'))
        assert steps == i + 1 and leaves == 2 * (i + 1)
    assert seen == set(range(8))


def test_recursion_100000_deep(tools):
    exe = tools.compile('deeprec.c', '-O0')
    for opts in (['--k=2'], ['--k=2', '--unroll-simple-rec=yes'], ['--k=inf']):
        kg = tools.kgrind(exe, opts=opts)
        assert kg.returncode == 0 and kg.stdout == 'deeprec: 100000 100000\n', kg.stderr
        prof = ksf_records.parse(kg.profile_path)
        k = ksf_records.k_of(prof)
        vertex = collections.Counter()
        for ctx, n in ksf_records.kccf(prof.forests[0], k, 0).items():
            vertex[ctx[-1]] += n
        assert vertex['rec'] == 100001 and vertex['even'] + vertex['odd'] == 100001
        if k is not None:
            assert len(prof.forests[0].nodes) < 5000   # bounded by k, not by the depth


def test_stripped_binary_names_functions_by_address(tools):
    exe = tools.compile('seven.c', '-O1', '-s')
    kg, paths = run_cct(tools, exe)
    by_address = collections.Counter()
    for p, n in paths.items():
        # By offset in the object, qualified by the object
        m = re.fullmatch(r'0x([0-9a-f]+) \[seven\]', p[-1])
        if m:
            by_address[int(m.group(1), 16)] += n
    text = re.search(r'\.text\s+PROGBITS\s+([0-9a-f]+)\s+[0-9a-f]+\s+([0-9a-f]+)',
                     subprocess.run(['readelf', '-SW', str(exe)], capture_output=True, text=True).stdout)
    start, size = int(text.group(1), 16), int(text.group(2), 16)
    called_seven = [a for a, n in by_address.items() if n == 7]
    assert called_seven and all(start <= a < start + size for a in called_seven), by_address


def test_stripped_binary_without_unwind_tables_names_called_code_by_address(tools):
    """Without .eh_frame entries for its functions a stripped program's
    code is known only by the calls into it: named by the called address."""
    built = tools.compile('seven.c', '-O1', '-fno-asynchronous-unwind-tables', '-fno-unwind-tables')
    nm = subprocess.run(['nm', str(built)], capture_output=True, text=True).stdout
    hidden = int(re.search(r'^([0-9a-f]+) T hidden$', nm, re.M).group(1), 16)
    frames = subprocess.run(['readelf', '--debug-dump=frames', str(built)], capture_output=True, text=True).stdout
    eh_frame = frames.split('Contents of the .eh_frame section:')[1].split('Contents of the')[0]   # not -g's .debug_frame
    for lo, hi in re.findall(r'FDE .*pc=([0-9a-f]+)\.\.([0-9a-f]+)', eh_frame):
        assert not int(lo, 16) <= hidden < int(hi, 16)
    exe = tools.dir / 'seven_stripped'
    subprocess.run(['strip', '-o', str(exe), str(built)], check=True)
    kg, paths = run_cct(tools, exe)
    assert paths[tuple(p for p in paths if p[-1] == f'0x{hidden:x} [seven_stripped]')[0]] == 7, paths


def forest_by_path(profile, rename):
    """{root path of names (renamed): (calls, exclusive Ir, inclusive Ir)}
    of every k-SF node of every thread."""
    prof = ksf_records.parse(profile)
    out = {}
    for forest in prof.forests:
        for nid, (_parent, _label, calls, excl, incl) in forest.nodes.items():
            path = tuple(rename(name) for name in forest.root_path(nid))
            assert path not in out, path
            out[path] = (calls, excl, incl)
    return out


@pytest.mark.parametrize('k', ['1', '2', 'inf'])
def test_stripped_binary_keeps_its_functions_from_unwind_tables(tools, k):
    """A stripped program's static functions keep their FDEs (.eh_frame):
    kgrind finds each one's entry and end there, so the stripped program's
    k-SF is the unstripped one's node for node, with every count equal, its
    functions named by their entries' offsets (nm of the unstripped copy
    gives the names back). Without the unwind tables a tail call between
    static functions (mid -> tail_target) and the function it jumps into
    were one function, and their costs one."""
    built = tools.compile('nosym_fde.c', '-O2', '-g0', out='nosym_fde')
    disasm = subprocess.run(['objdump', '-d', str(built)], capture_output=True, text=True).stdout
    assert re.search(r'jmp\s+[0-9a-f]+ <tail_target>', disasm.split('<mid>:')[1].split('\n\n')[0])
    full, stripped = tools.dir / 'a' / 'prog', tools.dir / 'b' / 'prog'   # same path length, same name
    for exe in (full, stripped):
        exe.parent.mkdir(exist_ok=True)
    shutil.copy2(built, full)
    subprocess.run(['strip', '-o', str(stripped), str(full)], check=True)
    symbols = {}
    for line in subprocess.run(['nm', str(full)], capture_output=True, text=True).stdout.splitlines():
        addr, kind, name = line.split()[:3] if len(line.split()) >= 3 else (None, None, None)
        if kind in ('t', 'T'):
            symbols[int(addr, 16)] = name.split('.')[0]   # rec.constprop.0: rec
    assert {'leaf', 'mid', 'tail_target', 'rec', 'rare', 'main'} <= set(symbols.values())
    renamed = []

    def rename(name):
        m = re.fullmatch(r'0x([0-9a-f]+) \[prog\]', name)
        if not m:
            return name.split('.')[0]
        renamed.append(name)
        return symbols[int(m.group(1), 16)]

    runs = {}
    for exe in (full, stripped):
        kg = tools.kgrind(exe, opts=[f'--k={k}'], out=f'{exe.parent.name}.out')
        native = tools.native(exe)
        assert kg.returncode == native.returncode == 0, kg.stderr
        assert kg.stdout == native.stdout == 'leaf 2736 mid 600 tail_target 600 rec 180\n'
        runs[exe] = forest_by_path(kg.profile_path, rename)
    assert runs[stripped] == runs[full]
    assert {'0x%x [prog]' % a for a, n in symbols.items() if n == 'tail_target'} <= set(renamed)


def test_stack_switches_do_not_corrupt_or_grow(tools):
    exe = tools.compile('coroutines.c', '-O1')
    for k in ('2', 'inf'):
        kg = tools.kgrind(exe, opts=[f'--k={k}'], out=f'co{k}.out')
        native = tools.native(exe)
        assert kg.returncode == native.returncode == 0, kg.stderr
        assert kg.stdout == native.stdout
        prof = ksf_records.parse(kg.profile_path)
        forest = prof.forests[0]
        # 2000 switches each way: the forest stays small (no chain of
        # coroutine frames growing with every resume).
        assert len(forest.nodes) < 3000
        vertex = collections.Counter()
        for ctx, n in ksf_records.kccf(forest, ksf_records.k_of(prof), 0).items():
            vertex[ctx[-1]] += n
        assert vertex['main_leaf'] == 2000 and vertex['co_leaf'] == 2000


def test_fork_child_forest_starts_at_zero(tools):
    exe = tools.compile('forker.c', '-O1')
    kg = tools.kgrind(exe, opts=['--k=inf', '--funcs=main,before_fork,child_work,parent_work'], out='kg.%p')
    assert kg.returncode == 0
    forests = {}
    for path in tools.dir.glob('kg.*'):
        prof = ksf_records.parse(path)
        paths = cct_paths(prof)
        role = 'child' if paths_ending(paths, 'child_work') else 'parent'
        forests[role] = paths
    parent, child = forests['parent'], forests['child']
    assert parent[('__root__', 'main', 'before_fork')] == 1
    assert parent[('__root__', 'main', 'parent_work')] == 1
    assert ('__root__', 'main', 'child_work') not in parent
    # The child continues main's activation, with counters from zero.
    assert child[('__root__', 'main', 'child_work')] == 1
    assert child.get(('__root__', 'main', 'before_fork'), 0) == 0
    assert child.get(('__root__', 'main'), 0) == 0


def subtree_counts(forest):
    """{node id: calls + excl + incl summed over the node's subtree}."""
    total = {}
    for nid in sorted(forest.nodes, key=lambda n: -forest.depth_in_tree(n)):   # children first
        _parent, _label, calls, excl, incl = forest.nodes[nid]
        total[nid] = calls + excl + incl + sum(total[c] for c in forest.children[nid])
    return total


def slab_copies(forest, k):
    """The top-region copies of the slab nodes (depth >= k) and their
    ancestors: each slab node's path below its depth-k ancestor, in the
    tree rooted at that ancestor's label (Fig. 3.8)."""
    if k is None or k == 0:
        return set()
    root_of = {forest.name(r): r for r in forest.roots[1:]}
    child_of = {(forest.nodes[n][0], forest.name(n)): n for n in forest.nodes}
    copies = set()
    for nid in forest.nodes:
        path = forest.root_path(nid)      # names, the tree's root first
        if len(path) <= k:
            continue
        copy = root_of[path[k]]
        copies.add(copy)
        for name in path[k + 1:]:
            copy = child_of[(copy, name)]
            copies.add(copy)
    return copies


FORK_FOREST_DEPTH, FORK_FOREST_LEAVES = 5, 10      # tests/progs/fork_forest.c
OWN_FUNCTIONS = {'main', 'branch', 'b0', 'b1', 'b2', 'child_work', 'leaf'}


def json_report(path):
    """kgrind_annotate --format=json of a profile, checked against its schema."""
    import jsonschema
    r = subprocess.run(['perl', str(ROOT / 'perl' / 'kgrind_annotate.pl'), '--format=json', str(path)],
                       capture_output=True, text=True)
    assert r.returncode == 0 and r.stderr == '', r.stderr
    d = json.loads(r.stdout)
    jsonschema.validate(d, json.loads((ROOT / 'docs' / 'kgrind-annotate.schema.json').read_text()))
    return d


@pytest.mark.parametrize('k', ['2', 'inf'])
def test_fork_child_profile_leaves_out_its_parents_zeroed_forest(tools, k):
    """A fork child's k-SF is its parent's with every counter zeroed; its
    profile leaves out the subtrees that count nothing (and says so), keeps
    every path to what the child counted, and loses no count. The parent's
    profile keeps its whole forest: every branch/b* context the program's
    structure makes, once each."""
    exe = tools.compile('fork_forest.c', '-O1', '-I', str(ROOT / 'include'), '-I', VALGRIND.includedir)
    kg = tools.kgrind(exe, opts=[f'--k={k}'], out='kg.%p')
    assert kg.returncode == 0 and kg.stdout == 'tree 2184 child exit 0\n', kg.stderr
    profiles = {}
    for path in tools.dir.glob('kg.*'):
        text = path.read_text()
        profiles['child' if 'child_work' in text else 'parent'] = (path, text, ksf_records.parse(path))
    (ppath, ptext, parent), (cpath, ctext, child) = profiles['parent'], profiles['child']
    for path, text, prof in profiles.values():
        [forest] = prof.forests
        summary = int(re.search(r'^summary: (\d+)$', text, re.M).group(1))
        canonical_excl = sum(prof_excl for nid, (_, _, _, prof_excl, _) in forest.nodes.items()
                             if forest.roots.index(ksf_records._tree_of(forest, nid)) == 0
                             or k == 'inf' or forest.depth_in_tree(nid) >= int(k))
        assert summary == forest.ir == canonical_excl > 0, path
        assert re.search(rf'^desc: thread 1: k-SF nodes {len(forest.nodes)}$', text, re.M), path
        report = subprocess.run(['perl', str(ROOT / 'perl' / 'kgrind_annotate.pl'), str(path)],
                                capture_output=True, text=True)
        assert report.returncode == 0 and report.stderr == '', report.stderr

    [cforest] = child.forests
    counts = subtree_counts(cforest)
    # Only paths to counts: a node that counts nothing below is the first
    # tree's root or the top-region copy of a slab node (Fig. 3.8).
    zero = {n for n, c in counts.items() if c == 0} - {cforest.roots[0]}
    assert zero <= slab_copies(cforest, None if k == 'inf' else int(k))
    names = {cforest.name(n) for n in cforest.nodes}
    assert not {'branch', 'b0', 'b1', 'b2'} & names
    left_out = re.search(r'^desc: thread 1 left out: (\d+) k-SF nodes whose subtrees count nothing$', ctext, re.M)
    # The parent's nodes of the tree it built before the fork are among them.
    [pforest] = parent.forests
    built = [n for n in pforest.nodes if pforest.name(n) in {'branch', 'b0', 'b1', 'b2'}]
    assert left_out and int(left_out.group(1)) >= len(built) > 0
    # kgrind_annotate's report says so too, where it counts the k-SF's
    # nodes: the header, the --ksf dump and JSON (none in the parent's).
    report = subprocess.run(['perl', str(ROOT / 'perl' / 'kgrind_annotate.pl'), '--ksf', str(cpath)],
                            capture_output=True, text=True)
    note = rf'\({int(left_out.group(1)):,} counting nothing left out by kgrind\)'
    assert re.search(rf'^Thread 1: +Ir [\d,]+, k-SF nodes {len(cforest.nodes)} {note},', report.stdout, re.M), \
        report.stdout[:2000]
    assert re.search(rf'^DUMP of K-SF \(k={k}, thread 1, {len(cforest.nodes)} nodes {note}\)$', report.stdout, re.M)
    for path, prof, want in ((cpath, child, int(left_out.group(1))), (ppath, parent, 0)):
        d = json_report(path)
        assert [(t['ksf_nodes'], t['ksf_nodes_left_out']) for t in d['threads']] == [(len(prof.forests[0].nodes), want)]
    # Each ksf-fns table lists exactly the functions its records name: the
    # nodes' labels, __root__ and the kgrind-context record's (b2's context
    # taken before the fork: in the child, functions of left-out nodes
    # only), numbered densely; both profiles name that context alike.
    decoded = set()
    for path, text, prof in profiles.values():
        [(context_id, labels)] = re.findall(r'^# kgrind-context (\d+) 1((?: \d+)+)$', text, re.M)
        named = {0} | {label for (_p, label, *_c) in prof.forests[0].nodes.values()} | {int(x) for x in labels.split()}
        assert set(prof.names) == named == set(range(len(prof.names))), path
        r = subprocess.run(['perl', str(ROOT / 'perl' / 'kgrind_annotate.pl'), f'--context-id={context_id}', str(path)],
                           capture_output=True, text=True)
        assert r.returncode == 0 and r.stdout.endswith(' > branch > b2\n'), r.stdout + r.stderr
        decoded.add(r.stdout)
    assert len(decoded) == 1
    paths = cct_paths(child) if k == 'inf' else None
    if paths is not None:
        # The program's own functions in the child: main > child_work > leaf.
        own = {p[p.index('main'):]: n for p, n in paths.items() if 'main' in p and set(p[p.index('main'):]) <= OWN_FUNCTIONS}
        assert own == {('main', 'child_work'): 1, ('main', 'child_work', 'leaf'): FORK_FOREST_LEAVES}

    # The parent: nothing left out, the whole tree of branch/b* contexts.
    assert 'left out' not in ptext
    if k == 'inf':
        tree = {p[p.index('main'):]: n for p, n in cct_paths(parent).items()
                if 'main' in p and set(p[p.index('main') + 1:]) & {'branch', 'b0', 'b1', 'b2'}}
        expected = {}
        level = [('main', 'branch')]
        for depth in range(FORK_FOREST_DEPTH, -1, -1):
            expected.update((p, 1) for p in level)
            below = [p + (b,) for p in level for b in ('b0', 'b1', 'b2')]
            expected.update((p, 1) for p in below)
            level = [p + ('branch',) for p in below] if depth else []
        assert tree == expected


def test_fork_child_without_pid_in_the_file_name_keeps_its_own_profile(tools):
    """--kgrind-out-file without %p: the fork child writes <name>.<pid> and
    says so, instead of its parent's file (whichever exited last overwrote
    the other's profile); the parent's file is its own."""
    exe = tools.compile('forker.c', '-O1')
    kg = tools.kgrind(exe, opts=['--k=inf', '--funcs=main,before_fork,child_work,parent_work'], out='kg.out')
    assert kg.returncode == 0, kg.stderr
    children = list(tools.dir.glob('kg.out.*'))
    assert len(children) == 1 and children[0].suffix[1:].isdigit()
    child_pid = children[0].suffix[1:]
    assert (f'kgrind: --kgrind-out-file has no %p: this fork child writes {children[0]}, '
            f"not its parent's {tools.dir / 'kg.out'}") in kg.stderr
    parent, child = cct_paths(ksf_records.parse(tools.dir / 'kg.out')), cct_paths(ksf_records.parse(children[0]))
    assert parent[('__root__', 'main', 'parent_work')] == 1 and not paths_ending(parent, 'child_work')
    assert child[('__root__', 'main', 'child_work')] == 1 and not paths_ending(child, 'parent_work')
    assert f'pid: {child_pid}' in children[0].read_text()


def test_traced_children_sharing_one_file_name_are_warned_about(tools):
    """--trace-children=yes with a file name without %p: every process says
    that the last one to exit overwrites the others' profiles; with %p
    every profile has a file of its own."""
    script = '/bin/echo hi; /bin/echo there'
    r = tools.kgrind('/bin/sh', '-c', script, opts=['--trace-children=yes'], out='one.out')
    assert r.returncode == 0 and r.stdout == 'hi\nthere\n', r.stderr
    warning = 'kgrind: warning: --trace-children=yes with --kgrind-out-file='
    processes = r.stderr.count(warning)      # the shell and at least one echo
    assert processes >= 2
    r = tools.kgrind('/bin/sh', '-c', script, opts=['--trace-children=yes'], out='each.%p')
    assert warning not in r.stderr
    # One file per process, and one per exec (every image but the shell
    # was exec'd): the exec'ing image's profile, next to its process's file.
    names = {p.name for p in tools.dir.glob('each.*')}
    execs = {n for n in names if re.fullmatch(r'each\.\d+\.exec-1', n)}
    assert len(execs) == processes - 1
    assert {n.rsplit('.', 1)[0] for n in execs} <= names


FORK_THREAD_WORK = {'finished_work': '2', 'blocked_work': '3', 'forker_work': '4', 'child_thread_work': '5'}


@pytest.mark.parametrize('opts', [['--k=2'], ['--k=inf'], ['--join-threads=yes', '--k=3'],
                                  ['--mode=inter', '--k=2'], ['--mode=intra', '--k=2']],
                         ids=['k2', 'kinf', 'joined', 'inter', 'intra'])
def test_fork_child_profiles_only_its_own_threads(tools, opts):
    """A fork child has one thread, the one that forked (here not the main
    thread, while another thread of the parent is blocked and one has
    finished), plus those it starts: its profile has their forests only
    (tests/progs/fork_threads.c: threads 4 and 5), and the parent's all four.
    Each work function runs once, in the thread and the process the program
    says; the parent's threads' work is not in the child's profile."""
    exe = tools.compile('fork_threads.c', '-O1')
    native = tools.native(exe)
    kg = tools.kgrind(exe, opts=opts, out='kg.%p')
    assert kg.returncode == native.returncode == 0, kg.stderr
    child_pid = re.search(r'forker: child (\d+) exit 5', kg.stdout).group(1)
    assert re.sub(r'child \d+ exit', 'child exit', kg.stdout) == re.sub(r'child \d+ exit', 'child exit', native.stdout)
    profiles = {('child' if path.name == f'kg.{child_pid}' else 'parent'): ksf_records.parse(path)
                for path in tools.dir.glob('kg.*')}
    assert len(profiles) == 2
    joined = '--join-threads=yes' in opts
    expected = {'parent': ['1', '2', '3', '4'], 'child': ['4', '5']}
    for role, prof in profiles.items():
        threads = sorted({forest.tid for forest in prof.forests})
        assert threads == (['all'] if joined else expected[role]), role
    if opts[0].startswith('--mode'):
        return
    ran_in = {role: collections.defaultdict(set) for role in profiles}
    for role, prof in profiles.items():
        for forest in prof.forests:
            for path, calls in ksf_records.kccf(forest, ksf_records.k_of(prof), 0).items():
                if calls and path[-1] in FORK_THREAD_WORK:
                    ran_in[role][path[-1]].add(forest.tid)
    where = (lambda fn: {'all'}) if joined else (lambda fn: {FORK_THREAD_WORK[fn]})
    assert ran_in['parent'] == {fn: where(fn) for fn in ('finished_work', 'blocked_work')}
    assert ran_in['child'] == {fn: where(fn) for fn in ('forker_work', 'child_thread_work')}


def split_stack_leaf_paths(prof):
    """Per thread: {path to leaf from its thread's first function, with
    libgcc's __morestack frames left out and rolled recursion folded: calls}
    for leaf's activations entered by its callers (not the continuations of
    leaf's own body that __morestack calls when leaf's prologue switched
    segments)."""
    out = {}
    for forest in prof.forests:
        paths = collections.Counter()
        for path, calls in ksf_records.kccf(forest, ksf_records.k_of(prof), None).items():
            if path[-1] != 'leaf' or path[-2] == '__morestack':
                continue
            folded = []
            for fn in path:
                if fn in ('main', 'worker', 'rec', 'leaf') and (not folded or folded[-1] != fn):
                    folded.append(fn)
            paths[tuple(folded)] += calls
        out[forest.tid] = paths
    return out


def test_split_stack_segments_continue_the_stack(tools):
    """-fsplit-stack code (gccgo's, or C built with it) runs out of its stack
    segment in a function's prologue: libgcc's __morestack moves SP to a new
    segment and calls the rest of the function there. That continues the
    stack, not a new one (a coroutine): taken for a new stack, every segment
    would start over at __root__. With __morestack left out, the contexts are
    those of the same program built without -fsplit-stack, on the main
    thread and on another, and leaf's calls are the program's own count."""
    plain = tools.compile('split_stack.c', '-O1', out='plain')
    split = tools.compile('split_stack.c', '-O1', '-fsplit-stack', out='split')
    native = tools.native(split)
    expected_calls = int(re.search(r'leaf calls (\d+)', native.stdout).group(1))
    assert expected_calls == 4 * 501 + 3 * 301
    profiles = {}
    for exe in (plain, split):
        kg = tools.kgrind(exe, opts=['--k=inf'], out=f'kg.{exe.name}')
        assert kg.returncode == 0 and kg.stdout == native.stdout, kg.stderr
        profiles[exe.name] = ksf_records.parse(kg.profile_path)
    paths = cct_paths(profiles['split'])
    segments = sum(n for p, n in paths.items() if p[-1] == '__morestack')
    assert segments > 50     # the test runs what it means to test
    assert all('main' in p or 'worker' in p for p in paths if 'rec' in p or 'leaf' in p)
    leaf_paths = split_stack_leaf_paths(profiles['split'])
    assert leaf_paths == split_stack_leaf_paths(profiles['plain'])
    assert leaf_paths == {'1': {('main', 'rec', 'leaf'): 4 * 501}, '2': {('worker', 'rec', 'leaf'): 3 * 301}}


def test_same_context_in_several_threads_sums_like_callgrind(tools):
    """Each thread has its own forest; the body reports a context once,
    summed over the threads that reached it (kg_context_names.cpp
    fold_contexts, ExitCosts' regroup). sum_to'worker'start_thread runs in threads 2 and 4, squares'...
    in 1 and 3: every own context's exclusive Ir equals callgrind
    --separate-callers=2's, which sums threads the same way. (A thread's
    first function is called by __root__ here, by clone there: worker's
    contexts are compared without their last caller.)"""
    exe = tools.compile('threads.c', '-O1')
    kg = tools.kgrind(exe, opts=['--k=2'])
    cl = tools.reference('callgrind', exe, opts=['--separate-callers=2', '--separate-recs=1'])
    assert kg.stdout == cl.stdout
    own = re.compile(r'^(sum_to|squares|worker)$')

    def contexts(path):
        out = {}
        for c, ir in callgrind_format.parse(path).by_context().items():
            chain = c.split("'")
            if own.match(chain[0]):
                key = "'".join(chain[:2] if chain[0] == 'worker' else chain)
                out[key] = out.get(key, 0) + ir
        return out
    mine, ref = contexts(kg.profile_path), contexts(cl.profile_path)
    assert {"sum_to'worker'start_thread", "squares'worker'start_thread", "worker'start_thread"} == set(mine)
    assert mine == ref



def per_object_and_file(prof, objects):
    """Ir by (object's base name, file's base name) over the objects named."""
    out = collections.Counter()
    for (ob, fl, _fn, _line), ir in prof.lines.items():
        name = ob.rsplit('/', 1)[-1] if ob else ob
        if name in objects:
            out[(name, fl.rsplit('/', 1)[-1])] += ir
    return out


def run_dl_reload(tools, stripped):
    """dl_reload.c with two libraries that define work() in files of their
    own; returns the kgrind run and the libraries' base names. Checks that
    the program's output is its own and that the libraries shared an address
    (what the look-ups at translation must keep apart)."""
    libs = []
    for name in ('a', 'b'):
        lib = tools.dir / f'libdl_{name}{"_s" if stripped else ""}.so'
        subprocess.run(['gcc', '-g', '-O1', '-shared', '-fPIC', '-o', str(lib), str(PROGS / f'dl_lib_{name}.c')],
                       check=True)
        if stripped:
            subprocess.run(['strip', str(lib)], check=True)
        libs.append(lib)
    exe = tools.compile('dl_reload.c', '-O1', libs=['-ldl'])
    kg = tools.kgrind(exe, *libs, out=f'kgrind{"_s" if stripped else ""}.out')
    native = tools.native(exe, *libs)
    assert kg.returncode == native.returncode == 0, kg.stderr
    printed = [line.split() for line in kg.stdout.splitlines()]
    assert [(i, n) for i, _at, n in printed] == [(l.split()[0], l.split()[2]) for l in native.stdout.splitlines()]
    assert len({at for _i, at, _n in printed}) == 1, 'the libraries did not share an address: ' + kg.stdout
    return kg, exe, libs


def test_libraries_loaded_in_turn_at_one_address_keep_their_own_code(tools):
    """Two libraries loaded, called and unloaded in turn land at one address:
    each one's instructions stay its own object's and its own source file's
    (the look-ups at translation reuse the last object and file ids only for
    the same strings of the same debug-info epoch), and, stripped, their
    functions named by address (both work() at one offset) stay apart by
    object, each with its own library's instructions."""
    kg, exe, libs = run_dl_reload(tools, stripped=False)
    objects = {lib.name for lib in libs}
    mine = per_object_and_file(kg.profile(), objects)
    cl = per_object_and_file(tools.reference('callgrind', exe, *libs).profile(), objects)
    sources = {key: ir for key, ir in mine.items() if key[1].endswith('.c')}
    assert set(sources) == {('libdl_a.so', 'dl_lib_a.c'), ('libdl_b.so', 'dl_lib_b.c')}, mine
    assert sources == {key: cl[key] for key in sources}
    # Stripped, the same instructions run, in functions named by address.
    kg_s, _exe, libs_s = run_dl_reload(tools, stripped=True)
    prof = kg_s.profile()
    stripped_objects = {lib.name for lib in libs_s}
    per_object = collections.Counter()
    for (ob, _fl), ir in per_object_and_file(prof, stripped_objects).items():
        per_object[ob.replace('_s.so', '.so')] += ir
    whole = collections.Counter()
    for (ob, _fl), ir in mine.items():
        whole[ob] += ir
    assert per_object == whole
    by_address = {fn: {ob.rsplit('/', 1)[-1] for ob, _fl in where} for fn, where in prof.function_homes.items()
                  if fn.startswith('0x') and any(ob.rsplit('/', 1)[-1] in stripped_objects for ob, _fl in where)}
    # each function named by address is bound to one of the libraries only
    assert by_address and all(len(obs) == 1 for obs in by_address.values()), by_address
    assert set().union(*by_address.values()) == stripped_objects, by_address
