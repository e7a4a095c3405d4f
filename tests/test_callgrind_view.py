"""The callgrind view (what KCachegrind, callgrind_annotate and gprof2dot
show): every context in its own ELF object, names by object and offset
where symbols are missing, PLT stubs of every kind passed through.
Expectations come from plain callgrind, cachegrind, readelf and
objdump of the same binaries."""
import collections
import json
import pathlib
import re
import subprocess

import pytest

import ksf_records
from callgrind_format import callee
from conftest import assert_plt_moves
from test_annotate import annotate  # noqa: F401

PROGS = pathlib.Path(__file__).resolve().parent / 'progs'
OWN_SOURCE = str(PROGS / 'plt_kinds.c')
# plt_kinds.c's calls through PLT stubs (the pointer call reaches puts itself)
PLT_CALLS = {'strlen': 10, 'printf': 1, 'puts': 1, 'malloc': 1, 'free': 1}
VARIANTS = {
    'lazy': [],
    'now': ['-Wl,-z,now'],
    'ibt': ['-fcf-protection', '-Wl,-z,ibtplt'],
    'ibt-now': ['-fcf-protection', '-Wl,-z,ibtplt', '-Wl,-z,now'],
}
QUALIFIED = re.compile(r'^(.*) \[([^]]+)\]$')


def run(*cmd):
    return subprocess.run([str(c) for c in cmd], capture_output=True, text=True, check=True).stdout


def sections(path):
    """{name: (start, end)} of an ELF file's sections (readelf)."""
    out = {}
    for m in re.finditer(r'^\s*\[\s*\d+\]\s+(\S+)\s+\S+\s+([0-9a-f]+)\s+[0-9a-f]+\s+([0-9a-f]+)\s+\S+\s+(\S*)',
                         run('readelf', '-SW', path), re.M):
        start = int(m.group(2), 16)
        out[m.group(1)] = (start, start + int(m.group(3), 16), 'X' in m.group(4))
    return out


def disassembly(path):
    """{section: [(address, instruction)]} (objdump -d)."""
    out, cur = {}, None
    for line in run('objdump', '-d', '--no-show-raw-insn', path).splitlines():
        m = re.match(r'^Disassembly of section (\S+):', line)
        if m:
            cur = out.setdefault(m.group(1), [])
            continue
        m = re.match(r'^\s+([0-9a-f]+):\s+(\S.*)$', line)
        if m and cur is not None:
            cur.append((int(m.group(1), 16), m.group(2)))
    return out


def instructions_to_jump(code, start):
    """How many instructions run from start through the first jmp."""
    addrs = [a for a, _ in code]
    i = addrs.index(start)
    n = 0
    for _a, text in code[i:]:
        n += 1
        if re.match(r'^(bnd )?jmp\b', text):
            return n
    raise AssertionError(f'no jmp after {start:#x}')


def plt_stub_costs(exe, lazy):
    """{call instruction: (calls, Ir)}: how often plt_kinds.c's calls
    through PLT stubs run and the instructions their stubs run, from
    objdump: each call runs its stub up to its jmp; the first call through
    a lazily bound .plt or .plt.sec entry also runs the .plt entry's push
    and jmp and .plt's first entry (to the resolver)."""
    dis = disassembly(exe)
    plt = dis['.plt']
    plt_start = plt[0][0]
    costs = collections.Counter()
    for fn in ('work', 'main'):
        body = run('objdump', '-d', '--no-show-raw-insn', exe).split(f'<{fn}>:')[1].split('\n\n')[0]
        for m in re.finditer(r'^\s+([0-9a-f]+):\s+call\s+([0-9a-f]+) <(\w+)@plt>', body, re.M):
            site, stub, name = int(m.group(1), 16), int(m.group(2), 16), m.group(3)
            section = next(s for s, code in dis.items() if s.startswith('.plt') and
                           any(a == stub for a, _ in code))
            per_call = instructions_to_jump(dis[section], stub)
            extra = 0
            if lazy and section == '.plt':      # GOT -> the entry's push
                after_jmp = [a for a, _ in plt if a > stub][0]
                extra = instructions_to_jump(plt, after_jmp) + instructions_to_jump(plt, plt_start)
            elif lazy and section == '.plt.sec':  # GOT -> the n-th .plt entry
                n = (stub - dis['.plt.sec'][0][0]) // 16   # 16-byte entries
                entry = plt_start + 16 * (n + 1)
                extra = instructions_to_jump(plt, entry) + instructions_to_jump(plt, plt_start)
            costs[site] = (PLT_CALLS[name], PLT_CALLS[name] * per_call + extra)
    return costs


def by_line(exe, site_costs):
    """{(file, line): Ir} of {call instruction: (calls, Ir)} (addr2line)."""
    out = collections.Counter()
    for site, (_calls, ir) in site_costs.items():
        where = run('addr2line', '-e', exe, hex(site)).split()[0].rsplit(':', 1)
        out[(where[0], int(where[1]))] += ir
    return out


def compile_variant(tools, variant):
    exe = tools.compile('plt_kinds.c', '-O1', *VARIANTS[variant], out=f'plt_{variant}')
    secs = sections(exe)
    assert ('.plt.sec' in secs) == variant.startswith('ibt')
    # puts's calls go through .plt.got (its address is also in the GOT)
    call = re.search(r'call\s+([0-9a-f]+) <puts@plt>', run('objdump', '-d', exe))
    start, end, _ = secs['.plt.got']
    assert start <= int(call.group(1), 16) < end
    return exe


@pytest.mark.parametrize('mode', ['func', 'intra', 'inter'])
@pytest.mark.parametrize('variant', list(VARIANTS))
def test_plt_stubs_pass_through(tools, variant, mode):
    """Per-line Ir: cachegrind's, with each PLT stub's instructions moved
    from `???` line 0 to the calling line (objdump's count of what the stub
    runs); in the block modes, per instruction, to the call instruction (as
    callgrind --dump-instr=yes charges .plt stubs); no `???`/line-0 cost in
    the program's own contexts; no stub is a context level."""
    exe = compile_variant(tools, variant)
    kg = tools.kgrind(exe, opts=[f'--mode={mode}'])
    cg = tools.reference('cachegrind', exe)
    cl = tools.reference('callgrind', exe)
    assert kg.returncode == cg.returncode == 0
    assert kg.stdout == cg.stdout
    mine, ref = kg.profile(), cg.profile()
    assert mine.total() == ref.summary == mine.totals
    site_costs = plt_stub_costs(exe, lazy='now' not in variant)
    moved = by_line(exe, site_costs)
    assert len(moved) == len(PLT_CALLS)
    own = collections.Counter({key: ir for key, ir in ref.by_file_line().items() if key[0] == OWN_SOURCE}) + moved
    assert_plt_moves(mine, ref, cl.profile(), own)
    for (_ob, fl, fn, line), ir in mine.lines.items():
        if callee(fn) in ('work', 'main') and ir:
            # (block modes: libc is not traced, its code runs in work's context)
            assert fl != '???' and line > 0, (fl, fn, line)
            assert fl == OWN_SOURCE or mode != 'func', (fl, fn, line)
    stubs = [(s, e) for name, (s, e, _x) in sections(exe).items() if name.startswith('.plt')]
    for name in set(mine.by_context()) | {c for _a, c, _n, _i in mine.calls}:
        for level in name.split("'"):
            m = QUALIFIED.match(level)
            if m and m.group(2) == exe.name and m.group(1).startswith('0x'):
                assert not any(s <= int(m.group(1), 16) < e for s, e in stubs), name
    if mode != 'func':
        at = collections.Counter()
        for (ob, fl, addr), ir in mine.instr_lines.items():
            if ob == str(exe) and fl == OWN_SOURCE:
                at[addr] += ir
        assert {site: at[site] for site in site_costs} == {site: n + ir for site, (n, ir) in site_costs.items()}
        return
    called_by_work = {callee(c) for a, c, _n, _i in mine.calls if callee(a) == 'work'}
    assert {'printf', 'puts'} <= called_by_work, called_by_work
    assert not any(c.startswith('0x') for c in called_by_work), called_by_work


@pytest.mark.parametrize('mode', ['func', 'intra'])
def test_indirect_call_to_a_plt_stub(tools, mode):
    """A non-PIE executable built without -fpie takes puts's address as its
    PLT entry (`movq $puts@plt, put_ptr`), so work's call through the
    pointer is `call *put_ptr` into the stub: the stub's jmp is charged to
    that line too, not to `???` line 0."""
    exe = tools.compile('plt_kinds.c', '-O1', '-no-pie', '-fno-pie', out='plt_nopie')
    dis = run('objdump', '-d', '--no-show-raw-insn', exe)
    stub = int(re.search(r'^\s*([0-9a-f]+) <puts@plt>:', dis, re.M).group(1), 16)
    assert re.search(rf'movq\s+\$0x{stub:x},.*<put_ptr>', dis)
    work = dis.split('<work>:')[1].split('\n\n')[0]
    indirect = int(re.search(r'^\s+([0-9a-f]+):\s+call\s+\*', work, re.M).group(1), 16)
    kg = tools.kgrind(exe, opts=[f'--mode={mode}'])
    cg = tools.reference('cachegrind', exe)
    cl = tools.reference('callgrind', exe)
    assert kg.returncode == 0 and kg.stdout == cg.stdout
    mine, ref = kg.profile(), cg.profile()
    # puts is bound by the direct call before: the stub runs its jmp only.
    site_costs = plt_stub_costs(exe, lazy=True)
    site_costs[indirect] = (1, 1)
    own = collections.Counter({key: ir for key, ir in ref.by_file_line().items() if key[0] == OWN_SOURCE})
    assert_plt_moves(mine, ref, cl.profile(), own + by_line(exe, site_costs))
    for (_ob, fl, fn, line), ir in mine.lines.items():
        if callee(fn) in ('work', 'main') and ir:
            assert fl != '???' and line > 0, (fl, fn, line)


def unique_homes(prof):
    """{function name: object} of the names bound to one object only."""
    out = {}
    for name, homes in prof.function_homes.items():
        objects = {ob for ob, _fl in homes}
        if len(objects) == 1:
            out[name] = objects.pop()
    return out


def test_every_context_in_its_functions_object(tools):
    """A strict reader binds every context to one object (cob= where a
    callee's differs), the object plain callgrind gives the function."""
    exe = tools.compile('plt_kinds.c', '-O1')
    kg = tools.kgrind(exe, opts=['--k=2', '--inline-frames=no'])   # callgrind's frames
    cl = tools.reference('callgrind', exe)
    mine, ref = kg.profile(), cl.profile()
    ref_objects = {name: ob for name, ob in unique_homes(ref).items() if not name.startswith('0x')}
    checked = set()
    for ctx in mine.function_homes:
        fn = callee(ctx)
        m = QUALIFIED.match(fn)
        if m:
            fn = m.group(1)
        if fn in ref_objects:
            assert mine.object_of(ctx) == ref_objects[fn], ctx
            checked.add(fn)
    assert {'main', 'work', 'printf', 'puts', '_dl_start'} <= checked
    assert mine.object_of("main'(below main)'__libc_start_main@@GLIBC_2.34") == str(exe)


def test_every_context_in_its_functions_file(tools):
    """Every context is bound to the object and source file plain callgrind
    gives its function: the file of the function's first instruction, also
    where kgrind first looks up another of its addresses (libc's ifunc
    resolvers, run at start-up: memchr's entry is ifunc-evex.h, its later
    lines memchr.c)."""
    exe = tools.compile('plt_kinds.c', '-O1')
    mine = tools.kgrind(exe, opts=['--k=2', '--inline-frames=no']).profile()   # callgrind's frames
    ref = tools.reference('callgrind', exe).profile()
    ref_homes = {name: homes.copy().pop() for name, homes in ref.function_homes.items()
                 if len(homes) == 1 and not name.startswith('0x')}
    checked, wrong = set(), []
    for ctx, homes in mine.function_homes.items():
        m = QUALIFIED.match(callee(ctx))
        fn = m.group(1) if m else callee(ctx)
        if fn in ref_homes:
            checked.add(fn)
            if homes != {ref_homes[fn]}:
                wrong.append((ctx, homes, ref_homes[fn]))
    assert not wrong
    assert {'main', 'work', 'printf', '_dl_start'} <= checked
    # the entry's file differs from the rest of the function's for some
    assert any(fl != fl2 for fn in checked for (ob, fl) in [ref_homes[fn]]
               for (_ob, fl2, f, _l) in ref.lines if f == fn)


def sticky_cob_objects(path):
    """{callee: {objects}} as gprof2dot reads calls (its CallgrindParser):
    a cob= holds until the caller's next cost line of its own (not for one
    call, as the format says), then the callee is in ob='s object."""
    names = {'ob': {}, 'fn': {}}
    ob = cob = None
    after_call = False
    out = collections.defaultdict(set)
    for line in pathlib.Path(path).read_text().splitlines():
        m = re.match(r'^(c?)(ob|fn)=\((\d+)\)(?: (.*))?$', line)
        if m:
            space = names[m.group(2)]
            if m.group(4) is not None:
                space[m.group(3)] = m.group(4)
            name = space[m.group(3)]
            if m.group(2) == 'ob':
                if m.group(1):
                    cob = name
                else:
                    ob = name
            elif m.group(1):
                callee_name = name
            continue
        if line.startswith('calls='):
            out[callee_name].add(cob if cob is not None else ob)
            after_call = True
        elif re.match(r'^[0-9+*-]', line):
            if not after_call:
                cob = ob
            after_call = False
    return out


def test_gprof2dot_reading_binds_callees_to_their_objects(tools):
    """gprof2dot is in no Debian package (and PyPI is not reachable here),
    so its reading of calls is replayed: every callee in the object the
    strict reader (and plain callgrind) gives it, e.g. `(below main)` in
    libc after a call into ld.so from the same caller."""
    exe = tools.compile('plt_kinds.c', '-O1')
    for mode in ('func', 'intra'):
        kg = tools.kgrind(exe, opts=['--k=2', f'--mode={mode}'], out=f'kg.{mode}')
        prof = kg.profile()
        read = sticky_cob_objects(kg.profile_path)
        assert any(c.startswith("(below main)'") for c in read) or mode != 'func'
        for callee_name, objects in read.items():
            assert objects == {prof.object_of(callee_name)}, (mode, callee_name, objects)


def ksf_names(path):
    return [name for _, name in sorted(ksf_records.parse(path).names.items())]


def test_names_by_object_and_offset(tools, annotate):
    """Code without symbols is named `0x<offset> [object]` by its address
    in the object's file (readelf), same names of different objects are
    qualified by object, of one object by source file, and `(below main)`
    is one function: main's caller."""
    exe = tools.compile('plt_kinds.c', '-O1')
    # physical functions' names (inlined levels': tests/test_inline_names.py)
    kg = tools.kgrind(exe, opts=['--k=2', '--inline-frames=no'])
    prof = kg.profile()
    names = ksf_names(kg.profile_path)
    assert len(names) == len(set(names))
    assert names.count('(below main)') == 1 and '_start' in names
    assert any(c.startswith("main'(below main)'") for c in prof.by_context())
    bases = collections.Counter(QUALIFIED.match(n).group(1) if QUALIFIED.match(n) else n for n in names)
    contexts = set(prof.by_context()) | {c for _a, c, _n, _i in prof.calls}
    offsets = 0
    for ctx in contexts:
        m = QUALIFIED.match(callee(ctx))
        if not m:
            continue
        name, obj = m.groups()
        path = prof.object_of(ctx)
        if pathlib.Path(path).name != obj:
            # namesakes of one object (static functions): by their files
            assert {pathlib.Path(fl).name for _ob, fl in prof.function_homes[ctx]} == {obj}, ctx
            assert bases[name] > 1, ctx
            continue
        if name.startswith('0x'):
            offset = int(name, 16)
            assert any(s <= offset < e and x for s, e, x in sections(path).values()), ctx
            offsets += 1
        else:
            assert bases[name] > 1, ctx
    assert offsets > 0
    # .init has no symbol Valgrind knows: named by its address in the file.
    init = sections(exe)['.init'][0]
    assert f'0x{init:x} [{exe.name}]' in names
    assert 'memset [libc.so.6]' in names and 'memset [ld-linux-x86-64.so.2]' in names
    # ld.so's two static check_match (callgrind: dl-lookup.c:check_match and
    # dl-lookup-direct.c:check_match)
    assert 'check_match [dl-lookup.c]' in names and 'check_match [dl-lookup-direct.c]' in names
    # kgrind_annotate shows the same names, without `#n`.
    d = annotate('--format=json', kg.profile_path).json()
    shown = {n for t in d['threads'] for c in t['contexts'] for n in c['path']}
    assert f'0x{init:x} [{exe.name}]' in shown
    assert not any(re.search(r'#\d+$', n) for n in shown)


def test_each_call_site_has_its_own_edge(tools):
    """work() calls leaf() 1,000 times from line 9 and once, expensively,
    from line 10: one calls= line per site, with its count and inclusive
    cost, as plain callgrind writes them; callgrind_annotate --inclusive=yes
    --tree=caller shows each site on its own line, as it does callgrind's."""
    exe = tools.compile('two_sites.c', '-O1')
    kg = tools.kgrind(exe, opts=['--k=2'])
    cl = tools.reference('callgrind', exe)
    assert kg.stdout == cl.stdout

    def sites(prof):
        return {(callee(a), callee(c), line): (n, prof.call_site_costs[(a, c, fl, line)])
                for (a, c, fl, line), n in prof.call_sites.items() if callee(c) == 'leaf'}
    mine, ref = sites(kg.profile()), sites(cl.profile())
    assert mine == ref
    assert mine[('work', 'leaf', 9)][0] == 1000 and mine[('work', 'leaf', 10)][0] == 1
    assert mine[('work', 'leaf', 10)][1] > 10 * mine[('work', 'leaf', 9)][1]

    def annotated_calls(path):
        out = run('callgrind_annotate', '--inclusive=yes', '--tree=caller', path)
        return re.findall(r'^\s*([\d,]+) \(\s*[\d.]+%\)\s+=> \S+:(leaf)\S* \(([\d,]+)x\)$', out, re.M)
    shown = annotated_calls(kg.profile_path)
    assert shown == annotated_calls(cl.profile_path)
    assert shown == [(f'{mine[("work", "leaf", 9)][1]:,}', 'leaf', '1,000'),
                     (f'{mine[("work", "leaf", 10)][1]:,}', 'leaf', '1')]


HOOKS = r'''
#include <stdio.h>
#include <stdlib.h>
/* -finstrument-functions: every entry's (function, return address) */
static FILE *calls_log;
__attribute__((no_instrument_function)) void __cyg_profile_func_enter(void *fn, void *site)
{
   if (!calls_log) calls_log = fopen(getenv("CALLS_LOG"), "w");
   fprintf(calls_log, "%lx %lx\n", (unsigned long)fn, (unsigned long)site);
}
__attribute__((no_instrument_function)) void __cyg_profile_func_exit(void *fn, void *site) {}
'''


def instrumented_call_sites(tools, src):
    """{(caller, line, callee): calls} of src's own functions, counted by
    the program itself built with -finstrument-functions (no PIE: addresses
    as in the file), the lines by addr2line."""
    hooks = tools.dir / 'hooks.c'
    hooks.write_text(HOOKS)
    exe = tools.dir / 'instrumented'
    subprocess.run(['gcc', '-g', '-O0', '-no-pie', '-finstrument-functions', str(src), str(hooks),
                    '-o', str(exe)], check=True)
    log = tools.dir / 'calls.log'
    subprocess.run([str(exe)], check=True, capture_output=True, env={'CALLS_LOG': str(log)})
    pairs = collections.Counter(tuple(line.split()) for line in log.read_text().splitlines())
    names = {int(a, 16): n for a, _t, n in re.findall(r'^([0-9a-f]+) (\w) (\S+)$', run('nm', exe), re.M)}
    sites = sorted({site for _fn, site in pairs})
    where = run('addr2line', '-f', '-e', exe, *[hex(int(s, 16) - 1) for s in sites]).splitlines()
    site_of = {s: (where[2 * i], where[2 * i + 1].rsplit(':', 1)) for i, s in enumerate(sites)}
    out = collections.Counter()
    for (fn, site), n in pairs.items():
        caller, (path, line) = site_of[site]
        if path == str(src):
            out[(caller, int(line.split()[0]), names[int(fn, 16)])] += n
    return out


def profile_call_sites(prof, src):
    """{(caller, line, callee): calls} between a profile's own functions
    (generated: main, f<i>), summed over contexts."""
    out = collections.Counter()
    for (a, c, fl, line), n in prof.call_sites.items():
        if fl == str(src) and re.match(r'^(f\d+|main)$', callee(c)):
            out[(callee(a), line, callee(c))] += n
    return out


@pytest.mark.parametrize('seed', [3, 4])
def test_call_sites_equal_an_independent_count(tools, seed):
    """Generated programs with known call sites: calls per (caller, call
    line, callee), summed over k-contexts, equal what the program counts
    with -finstrument-functions and what plain callgrind writes; inclusive
    cost per call site equals callgrind's."""
    from test_callgrind_agreement import generate_program
    src = tools.dir / f'gen{seed}.c'
    generate_program(src, seed)
    exe = tools.dir / f'gen{seed}'
    subprocess.run(['gcc', '-g', '-O0', str(src), '-o', str(exe)], check=True)
    kg = tools.kgrind(exe, opts=['--k=2'])
    cl = tools.reference('callgrind', exe)
    mine, ref = kg.profile(), cl.profile()
    want = instrumented_call_sites(tools, src)
    assert len(want) > 15
    assert profile_call_sites(mine, src) == want == profile_call_sites(ref, src)

    def costs(prof):
        out = collections.Counter()
        for (a, c, fl, line), ir in prof.call_site_costs.items():
            if fl == str(src) and callee(c) != 'printf':
                out[(callee(a), line, callee(c))] += ir
        return out
    assert costs(mine) == costs(ref)


@pytest.mark.parametrize('opts', [['--mode=func'], ['--mode=func', '--dump-instr=yes'], ['--mode=intra']])
def test_signal_handler_edge_at_the_interrupted_line(tools, opts):
    """A handler is entered by the kernel, not by a call: its edge is at the
    interrupted instruction's line (the next one to run, after send_self's
    syscall, by objdump and addr2line), not line 0, with as many calls as
    the handler counted (plain callgrind writes no edge for a handler). The
    signal restorer the handler returns into (the C library's
    `mov $15,%rax; syscall`) is charged there too, as a PLT stub is to its
    call: that line costs cachegrind's and two instructions per signal,
    and no `???`/line-0 cost is left in send_self's context."""
    exe = tools.compile('self_signals.c', '-O1')
    kg = tools.kgrind(exe, 'more', opts=opts)
    cg = tools.reference('cachegrind', exe, 'more')
    assert kg.returncode == 0, kg.stderr
    assert kg.stdout == cg.stdout == tools.native(exe, 'more').stdout
    handled = int(re.search(r'^handled (\d+)$', kg.stdout, re.M).group(1))
    body = run('objdump', '-d', '--no-show-raw-insn', exe).split('<send_self>:')[1]
    resume = int(re.search(r'^\s+[0-9a-f]+:\s+syscall\s*\n\s+([0-9a-f]+):', body, re.M).group(1), 16)
    file, line = run('addr2line', '-e', exe, hex(resume)).split()[0].rsplit(':', 1)
    mine, ref = kg.profile(), cg.profile()
    assert mine.total() == ref.summary
    edges = {(callee(a), fl, ln): n for (a, c, fl, ln), n in mine.call_sites.items() if callee(c) == 'handler'}
    assert edges == {('send_self', file, int(line)): handled}
    assert mine.by_file_line()[(file, int(line))] == ref.by_file_line()[(file, int(line))] + 2 * handled
    unknown = [(fl, ln) for (_ob, fl, fn, ln), ir in mine.lines.items()
               if callee(fn) == 'send_self' and (fl == '???' or ln == 0) and ir]
    assert unknown == []
