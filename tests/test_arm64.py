"""kgrind on arm64-linux, run under qemu-user on this machine: the tool
cross-compiled against Debian's arm64 Valgrind in build-arm64/
(KGRIND_ARM64_BUILD; ./setup.sh --tests makes it on amd64), the programs
built with the cross compiler (static, where start-up is short and arm64
cachegrind runs; one dynamically linked program, whose ld.so and libc.so
come from the cross compiler's sysroot through qemu -L). On arm64 a call
leaves its return address in x30, not on the stack
(docs/design/shadow-stacks.md, "arm64"): these check the returns, tail
calls, longjmp, exceptions, signals and threads against the programs' own
counts and the thesis's listings, the instruction counts and events
against arm64 cachegrind's, and the inline levels against the
executable's inline chains.

KGRIND_ARM64_FULL=1 adds the larger run (more generated programs and k,
deep recursion)."""
import collections
import os
import pathlib
import re
import shutil
import subprocess

import pytest

import callgrind_format
import inline_oracle
import ksf_records
import test_events
import test_inline_frames
import test_stress
import test_tiers
import valgrind_launch
from conftest import PROGS, ROOT, Run, Toolbox, run_compiler
from ksf_records import parse_listing
from test_callgrind_agreement import generate_program
from test_function_mode import LISTING_4_3_THREAD1, LISTING_4_3_THREAD2, LISTING_4_7, LISTING_4_10, PROG1_FUNCS
from test_function_mode import own_subtree
from test_pitfalls import assert_eight_thread_forests, assert_exception_contexts, assert_siglongjmp_contexts
from test_pitfalls import callers_of, run_cct
from test_stacks import assert_inclusive_is_subtree_exclusive, assert_ring_contexts, assert_uc_link_coroutines
from test_stacks import full_paths, run_ring
from test_stacks import run_scheduler, vertex_calls
from testdeps import debian_tool
from thesis_listings import LISTING_45_KSF

ARM64_BUILD = pathlib.Path(os.environ.get('KGRIND_ARM64_BUILD', ROOT / 'build-arm64'))
ARM64 = valgrind_launch.Valgrind(ARM64_BUILD)
CC, CXX = 'aarch64-linux-gnu-gcc', 'aarch64-linux-gnu-g++'
FULL = bool(os.environ.get('KGRIND_ARM64_FULL'))


def why_skipped():
    for tool, package in ((CC, 'gcc-aarch64-linux-gnu'), (CXX, 'g++-aarch64-linux-gnu'),
                          ('qemu-aarch64-static', 'qemu-user-static')):
        if not shutil.which(tool):
            return f'{tool} is not installed (Debian package {package}; ./setup.sh --test-deps installs it on amd64)'
    missing = ARM64.missing()
    if missing:
        return f'no arm64 build: {missing.replace("./setup.sh --build", "./setup.sh --tests")}'
    if ARM64.platform != 'arm64-linux':
        return f'{ARM64_BUILD} is built for {ARM64.platform}, not arm64-linux'
    return None


WHY = why_skipped()
pytestmark = pytest.mark.skipif(WHY is not None, reason=WHY or '')


class Arm64Tools(Toolbox):
    """Toolbox's compile, native, kgrind and reference, for arm64 under qemu.
    env: variables every run of the test gets (the same in each, as the
    guest's start-up depends on its environment)."""

    def __init__(self, tmp_path):
        super().__init__(tmp_path)
        self.env = {}
        self.compile_flags = ()
        self.link = ('-static',)   # () links dynamically (ld.so from qemu's sysroot)

    def compile(self, source, *flags, out=None, libs=(), compiler=None):
        src = source if isinstance(source, pathlib.Path) else PROGS / source
        exe = self.dir / (out or src.stem)
        compiler = compiler or (CXX if src.suffix in ('.cpp', '.cc') else CC)
        run_compiler([compiler, '-g', *self.link, *self.compile_flags, *flags, str(src), '-o', str(exe), *libs,
                      '-pthread'], src, exe)
        return exe

    def native(self, exe, *args, input=None):
        return subprocess.run(ARM64.native_argv(exe, *args), capture_output=True, text=True, cwd=self.dir,
                              input=input, timeout=120, env={**os.environ, **self.env})

    def valgrind(self, tool, opts, exe, args=(), env=None):
        env = {k: v for k, v in ARM64.env({**os.environ, **self.env}).items() if k != 'PYTEST_CURRENT_TEST'}
        return subprocess.run(ARM64.argv(tool, *opts, exe, *args), capture_output=True, text=True,
                              cwd=self.dir, timeout=300, env=env)

    def kgrind(self, exe, *args, opts=(), out='kgrind.out'):
        path = self.dir / out
        return Run(self.valgrind('kgrind', [f'--kgrind-out-file={path}', *opts], exe, args), path)


@pytest.fixture
def arm(tmp_path):
    return Arm64Tools(tmp_path)


# -finstrument-functions: the program keeps its own call stack and counts
# every entry's k-context (callers first), for k up to 3.
HOOKS = r'''
#include <stdio.h>
#include <stdlib.h>
static void *stack[4096];
static int depth;
static FILE *log_file;
__attribute__((no_instrument_function)) void __cyg_profile_func_enter(void *fn, void *site)
{
   if (!log_file) log_file = fopen(getenv("CALLS_LOG"), "w");
   stack[depth++] = fn;
   for (int i = depth - 1; i >= 0 && i >= depth - 4; i--) fprintf(log_file, "%lx ", (unsigned long)stack[i]);
   fputc('\n', log_file);
}
__attribute__((no_instrument_function)) void __cyg_profile_func_exit(void *fn, void *site) { depth--; }
'''


def names_of(exe):
    out = subprocess.run(['aarch64-linux-gnu-nm', str(exe)], capture_output=True, text=True, check=True).stdout
    return {int(a, 16): n for a, _t, n in (line.split() for line in out.splitlines() if len(line.split()) == 3)}


def oracle_contexts(log, names, k):
    """{k-context (callers first): entries}, as the program counted them
    in its log."""
    out = collections.Counter()
    for line in log.read_text().splitlines():
        stack = [names[int(a, 16)] for a in line.split()]   # callee first
        out[tuple(reversed(stack[:k + 1]))] += 1
    return out


def own(contexts, k):
    """The full k-contexts whose functions are all the program's own."""
    return {ctx: n for ctx, n in contexts.items()
            if len(ctx) == k + 1 and all(p == 'main' or (p[0] == 'f' and p[1:].isdigit()) for p in ctx)}


def generated_program(arm, seed, opt):
    """A generated call DAG (test_callgrind_agreement.py) built with
    -finstrument-functions and HOOKS: every run of it logs its calls."""
    src = arm.dir / f'gen{seed}.c'
    generate_program(src, seed)
    hooks = arm.dir / 'hooks.c'
    hooks.write_text(HOOKS)
    exe = arm.compile(src, opt, '-finstrument-functions', libs=[str(hooks)])
    arm.env['CALLS_LOG'] = 'calls.log'   # in the test's directory, for every run
    return exe


def assert_own_contexts(arm, exe, kg):
    """Every full k-context of the program's own functions, k = 1, 2, 3,
    has as many calls in kgrind's k-CCF (a --k=3 run) as the program
    counted itself."""
    prof = ksf_records.parse(kg.profile_path)
    names = names_of(exe)
    for k in (1, 2, 3):
        want = oracle_contexts(arm.dir / 'calls.log', names, k)
        mine = collections.Counter()
        for forest in prof.forests:
            mine.update(ksf_records.kccf(forest, 3, k))
        assert len(own(want, k)) > 10
        assert own(mine, k) == own(want, k), k


@pytest.mark.parametrize('seed', [5, 6, 7, 8] if FULL else [5])
@pytest.mark.parametrize('opt', ['-O0', '-O2'] if FULL else ['-O1'])
def test_k_contexts_equal_the_programs_own_count(arm, seed, opt):
    """Generated call DAGs built with -finstrument-functions: every full
    k-context of the program's own functions, k = 1, 2, 3, has as many
    calls in kgrind's k-CCF as the program counted itself; and the total
    Ir and every source line's Ir equal arm64 cachegrind's."""
    exe = generated_program(arm, seed, opt)
    kg = arm.kgrind(exe, opts=['--k=3'])
    cg = arm.reference('cachegrind', exe)
    native = arm.native(exe)
    assert native.returncode == kg.returncode == 0, kg.stderr
    assert_own_contexts(arm, exe, kg)
    assert kg.stdout == native.stdout == cg.stdout
    mine, ref = kg.profile(), cg.profile()
    assert mine.total() == mine.summary == ref.summary
    assert mine.by_file_line() == ref.by_file_line()


def without_main_return(lines, main_file):
    """arm64 callgrind's Ir per line of the program without the one
    instruction it charges to main's file at line 0 (docs/building.md,
    "arm64"): glibc's `bl exit` at the return address of main's call, which
    has no line, and which kgrind and cachegrind charge to `(below main)`
    at `???`. Exactly one, once."""
    lines = dict(lines)
    assert lines.pop((main_file, 0), None) == 1, sorted(lines.items())
    return lines


def guest_instructions(arm, exe, args=()):
    """The instructions the program ran, as lackey counts them (one
    helper call per guest instruction: independent of kgrind's and
    cachegrind's counting)."""
    run = arm.valgrind('lackey', ['--vex-guest-chase=no'], exe, args)
    assert run.returncode == 0, run.stderr
    return int(re.search(r'guest instrs:\s+([\d,]+)', run.stderr).group(1).replace(',', ''))


def plt_call_sites(exe):
    """{address of a `bl` to a PLT stub: the stub's address}."""
    dis = subprocess.run(['aarch64-linux-gnu-objdump', '-d', '--no-show-raw-insn', str(exe)], capture_output=True,
                         text=True, check=True).stdout
    return {int(site, 16): int(stub, 16)
            for site, stub in re.findall(r'^\s*([0-9a-f]+):\s+bl\s+([0-9a-f]+) <[^>]*@plt>$', dis, re.M)}


def instructions_of(costs, exe):
    """{address: Ir} of the executable's instructions among costs
    ({address: Ir}, or a --dump-instr=yes profile's instr_lines): the
    addresses in its LOAD segments, whatever object and file the profile
    names (callgrind names the object of the executable's .init and .plt
    `???`, and both tools give an instruction its function's object, which
    may be libc's). A shared object's instructions are at offsets from its
    base, below 0x400000 (libc.so.6 is 1.6 MB)."""
    headers = subprocess.run(['aarch64-linux-gnu-readelf', '-lW', str(exe)], capture_output=True, text=True,
                             check=True).stdout
    loads = [(int(vaddr, 16), int(vaddr, 16) + int(size, 16))
             for vaddr, size in re.findall(r'^\s*LOAD\s+\S+\s+(\S+)\s+\S+\s+\S+\s+(\S+)', headers, re.M)]
    out = collections.Counter()
    for key, ir in costs.items():
        addr = key[-1] if isinstance(key, tuple) else key
        if any(lo <= addr < hi for lo, hi in loads):
            out[addr] += ir
    return out


def callgrind_instructions(path):
    """{address: Ir} of a callgrind --dump-instr=yes profile's cost lines
    (positions `instr line`, the one event Ir), read without
    tests/callgrind_format.py's binding of names to files: arm64 callgrind,
    its call stack a frame off, names a function under two files."""
    out, last, call = collections.Counter(), 0, False
    for line in path.read_text().splitlines():
        if line.startswith('calls='):
            call = True
            continue
        m = re.match(r'(0x[0-9a-f]+|[-+]\d+|\*)\s+\S+\s+(\d+)$', line)
        if not m:
            continue
        pos = m.group(1)
        last = int(pos, 16) if pos.startswith('0x') else last if pos == '*' else last + int(pos)
        if not call:   # a call's line is its inclusive cost
            out[last] += int(m.group(2))
        call = False
    return out


def test_dynamically_linked_program(arm):
    """A generated call DAG linked dynamically (-no-pie, so that its
    functions' addresses are nm's): ld.so's start-up, libc.so, and the
    hooks' libc calls through PLT stubs, bound lazily through PLT0 and
    _dl_runtime_resolve. The k-contexts of its own functions are the
    program's own count; the total Ir is lackey's count of guest
    instructions; every instruction of the executable has arm64
    callgrind's Ir (--skip-plt=no: docs/building.md, "arm64"), but a call
    of a PLT stub, to which kgrind charges the stub's 4 instructions and,
    on the stub's first call, PLT0's 5. arm64 cachegrind stops on a
    dynamically linked program under qemu."""
    arm.link = ('-no-pie',)
    exe = generated_program(arm, 5, '-O1')
    headers = subprocess.run(['aarch64-linux-gnu-readelf', '-l', str(exe)], capture_output=True, text=True, check=True)
    assert 'Requesting program interpreter: /lib/ld-linux-aarch64.so.1' in headers.stdout
    kg = arm.kgrind(exe, opts=['--k=3', '--dump-instr=yes'])
    cl = arm.reference('callgrind', exe, opts=['--dump-instr=yes', '--skip-plt=no'])
    native = arm.native(exe)
    assert native.returncode == kg.returncode == cl.returncode == 0, kg.stderr
    assert kg.stdout == native.stdout == cl.stdout
    assert_own_contexts(arm, exe, kg)
    mine = kg.profile()
    assert mine.total() == mine.summary == guest_instructions(arm, exe)
    mine, ref = instructions_of(mine.instr_lines, exe), instructions_of(callgrind_instructions(cl.profile_path), exe)
    sites = plt_call_sites(exe)
    sections = subprocess.run(['aarch64-linux-gnu-readelf', '-SW', str(exe)], capture_output=True, text=True,
                              check=True).stdout
    plt = re.search(r'\]\s+\.plt\s+PROGBITS\s+([0-9a-f]+)\s+[0-9a-f]+\s+([0-9a-f]+)', sections)
    lo, hi = int(plt.group(1), 16), int(plt.group(1), 16) + int(plt.group(2), 16)
    in_plt = {a for a in ref if lo <= a < hi}
    assert len(mine) > 100 and in_plt and set(sites) & set(ref)
    assert {a: n for a, n in mine.items() if a not in sites} == \
        {a: n for a, n in ref.items() if a not in sites and a not in in_plt}
    for stub in set(sites.values()):
        calls = sum(ref[a] for a, s in sites.items() if s == stub)
        assert sum(mine[a] for a, s in sites.items() if s == stub) == calls * 5 + (5 if calls else 0), hex(stub)
    assert sum(mine[a] - ref[a] for a in sites) == sum(ref[a] for a in in_plt)


def test_events_equal_cachegrind(arm):
    """--cache-sim=yes --branch-sim=yes: every event equals arm64
    cachegrind's in total, on every line of the program and in every
    function of the program (cache_work.c, static: cachegrind runs it under
    qemu). The branch predictors index by address bits 2 and up, as
    cachegrind's do on arm64 (docs/design/events.md)."""
    exe = arm.compile('cache_work.c', '-O1')
    opts = ['--cache-sim=yes', '--branch-sim=yes', *test_events.GEOMETRY]
    kg = arm.kgrind(exe, opts=[*opts, '--inline-frames=no'], out='kg.out.1')
    assert kg.returncode == 0, kg.stderr
    ref = callgrind_format.parse(test_events.cachegrind(arm, exe, opts, 'cg.out.1'))
    mine = kg.profile()
    assert mine.events == test_events.EVENTS
    assert mine.summary_events == mine.totals_events == ref.summary_events
    lines = test_events.own_source_events(mine, 'cache_work.c')
    assert lines and lines == test_events.own_source_events(ref, 'cache_work.c')
    by_fn, ref_fn = mine.by_function_events(), ref.by_function_events()
    for fn in test_events.PROGRAMS[0][2]:
        assert by_fn[fn] == ref_fn[fn] and by_fn[fn]['Ir'] > 0, fn


def function_of(exe):
    """addr -> the name of the executable's function that holds it."""
    out = subprocess.run(['aarch64-linux-gnu-nm', '-S', '--defined-only', str(exe)], capture_output=True, text=True,
                         check=True).stdout
    spans = sorted((int(a, 16), int(a, 16) + int(n, 16), name) for a, n, t, name in
                   (line.split() for line in out.splitlines() if len(line.split()) == 4) if t in 'tTwW' and int(n, 16))
    return lambda addr: next((name for lo, hi, name in spans if lo <= addr < hi), None)


def test_level_tiers_switch_with_the_same_counts(arm):
    """--tiering=levels (the default) on arm64: superblocks whose levels'
    steps start in the helper switch to the inline steps at threshold 1 and
    2, and the profile is --tiering=no's, byte for byte but the pid."""
    exe = arm.compile('inline_hostile.c', *test_inline_frames.FLAGS)
    never = arm.kgrind(exe, '40', opts=['--tiering=no'], out='never.out')
    assert never.returncode == 0, never.stderr
    for threshold in (1, 2):
        tiered = arm.kgrind(exe, '40', opts=[f'--tier-threshold={threshold}', '--stats=yes'], out=f't{threshold}.out')
        assert tiered.returncode == 0, tiered.stderr
        assert tiered.stdout == never.stdout
        stats = test_tiers.LEVEL_STATS.search(tiered.stderr)
        assert stats and int(stats.group(4)) > 0, tiered.stderr
        assert test_tiers.without_pid(tiered.profile_path) == test_tiers.without_pid(never.profile_path)


@pytest.mark.skipif(not FULL, reason='the larger arm64 run: KGRIND_ARM64_FULL=1')
@pytest.mark.parametrize('k', [1, 2])   # inline_levels.c's deepest chain: work > outer > sq
def test_inline_frames_within_a_function_equal_the_chains(arm, k):
    """--inline-frames=yes: every inline-extended k-context that lies in
    one physical function (that function or an inlined level, then
    inlined levels only) has the Ir of the executable's instructions whose
    inline chain ends in it: arm64 callgrind's Ir per instruction
    (--dump-instr=yes; not its contexts, which are no reference on arm64:
    docs/building.md, "arm64") and llvm-symbolizer's chains of the arm64
    executable (tests/inline_oracle.py). A context that reaches into a
    caller's physical function needs callgrind's contexts: on amd64 only
    (tests/test_inline_frames.py)."""
    arm.link = ('-no-pie',)
    exe = arm.compile('inline_levels.c', *test_inline_frames.FLAGS)
    cl = arm.reference('callgrind', exe, opts=['--dump-instr=yes', '--skip-plt=no'])
    kg = arm.kgrind(exe, opts=[f'--k={k}', '--inline-frames=yes'])
    assert cl.returncode == kg.returncode == 0, kg.stderr
    assert kg.stdout == cl.stdout
    instrs = instructions_of(callgrind_instructions(cl.profile_path), exe)
    chains, _names = inline_oracle.inline_chains(exe, instrs, debian_tool('llvm-symbolizer-14', 'llvm-14'))
    physical = function_of(exe)
    expected = collections.Counter()
    for addr, ir in instrs.items():
        if physical(addr) is None:   # .init, .plt and crt code: no symbol of a size, no inline chain
            assert not chains[addr], hex(addr)
            continue
        levels = inline_oracle.rolled([inline_oracle.level(physical(addr), False)] +
                                      [inline_oracle.level(n, True) for n in chains[addr]])
        if len(levels) > k:
            expected[tuple(levels[-(k + 1):])] += ir
    mine = {ctx: ir for ctx, ir in inline_oracle.kgrind_contexts(kg.profile_path, k).items()
            if len(ctx) == k + 1 and all(callgrind_format.inlined_level(n) for n in ctx[1:])}
    assert any(n.endswith(' [inlined]') for ctx in expected for n in ctx)
    assert mine == dict(expected)


def test_tail_calls_and_leaf_functions(arm, tmp_path):
    """A leaf function never moves SP, a tail call by `b` enters its callee
    at its caller's SP: each still returns where its call returns."""
    src = tmp_path / 'tails.c'
    src.write_text(r'''
#include <stdio.h>
volatile long sink;
__attribute__((noinline)) void leaf(int x) { sink += x; }
__attribute__((noinline)) void callee(int x) { sink += x; leaf(x); }
__attribute__((noinline)) void tailer(int x) { leaf(x); callee(x + 1); }
__attribute__((noinline)) void after(int x) { sink -= x; }
int main(void) { for (int i = 0; i < 7; i++) { tailer(i); after(i); leaf(i); } printf("%ld\n", sink); return 0; }
''')
    exe = arm.compile(src, '-O2')
    disasm = subprocess.run(['aarch64-linux-gnu-objdump', '-d', str(exe)], capture_output=True, text=True).stdout
    tailer = disasm.split('<tailer>:')[1].split('\n\n')[0]
    assert '\tb\t' in tailer and '<callee>' in tailer   # a tail call by b
    kg, paths = run_cct(arm, exe)
    assert callers_of(paths, 'tailer') == {'main': 7}
    assert callers_of(paths, 'callee') == {'tailer': 7}   # as callgrind shows a tail call
    assert callers_of(paths, 'after') == {'main': 7}
    assert callers_of(paths, 'leaf') == {'tailer': 7, 'callee': 7, 'main': 7}


def test_thesis_listing_4_5_and_4_3_threads(arm):
    """prog1 (two threads): the thesis's 2-SF of the joined threads (Listing
    4.5) and each thread's calling context tree (Listing 4.3)."""
    exe = arm.compile('prog1.c', '-O0')
    kg = arm.kgrind(exe, opts=['--k=2', PROG1_FUNCS, '--join-threads=yes'])
    assert kg.returncode == 0, kg.stderr
    prof = ksf_records.parse(kg.profile_path)
    assert prof.forests[0].canonical() == parse_listing(LISTING_45_KSF)
    kg = arm.kgrind(exe, opts=['--k=inf', PROG1_FUNCS], out='inf.out')
    trees = sorted(f.canonical() for f in ksf_records.parse(kg.profile_path).forests)
    assert trees == sorted([parse_listing(LISTING_4_3_THREAD1), parse_listing(LISTING_4_3_THREAD2)])


@pytest.mark.parametrize('source,listing', [('prog2.c', LISTING_4_7), ('prog3.c', LISTING_4_10)])
def test_thesis_listings_recursion(arm, source, listing):
    exe = arm.compile(source, '-O0')
    kg = arm.kgrind(exe, opts=['--k=inf'])
    assert kg.returncode == 0, kg.stderr
    assert own_subtree(ksf_records.parse(kg.profile_path).forests[0]) == parse_listing(listing)[0][2][0]


@pytest.mark.parametrize('source', ['prog7.c', 'prog8.c'])
def test_long_jump_second_call_is_a_child_of_main(arm, source):
    exe = arm.compile(source, '-O0')
    kg = arm.kgrind(exe, opts=['--k=inf', '--funcs=main,testJmp', '--unroll-simple-rec=yes'])
    assert kg.returncode == 0, kg.stderr
    assert ksf_records.parse(kg.profile_path).forests[0].canonical() == parse_listing("""
| __root__(),1
  | main(),1
    | testJmp(),2
""")


def test_exception_through_five_frames_then_more_calls(arm):
    exe = arm.compile('exceptions.cpp', '-O1')
    kg, paths = run_cct(arm, exe)
    assert_exception_contexts(paths)


def test_siglongjmp_out_of_a_handler(arm):
    exe = arm.compile('siglongjmp.c', '-O1')
    kg, paths = run_cct(arm, exe)
    assert_siglongjmp_contexts(paths)


def test_eight_threads_have_their_own_forests(arm):
    exe = arm.compile('threads8.c', '-O1')
    kg = arm.kgrind(exe, opts=['--k=2'])
    assert kg.returncode == 0, kg.stderr
    assert_eight_thread_forests(ksf_records.parse(kg.profile_path))


@pytest.mark.skipif(not FULL, reason='the larger arm64 run: KGRIND_ARM64_FULL=1')
def test_recursion_deep(arm):
    exe = arm.compile('deeprec.c', '-O0')
    kg = arm.kgrind(exe, opts=['--k=2'])
    assert kg.returncode == 0 and kg.stdout == 'deeprec: 100000 100000\n', kg.stderr
    vertex = collections.Counter()
    for ctx, n in ksf_records.kccf(ksf_records.parse(kg.profile_path).forests[0], 2, 0).items():
        vertex[ctx[-1]] += n
    assert vertex['rec'] == 100001 and vertex['even'] + vertex['odd'] == 100001


def test_signal_handler_and_restorer(arm):
    """A handler nests under the interrupted function; it returns by `ret`
    into Valgrind's restorer (`mov x8, #139; svc #0`: no call returns
    there), which ends its frames, and whose two instructions per signal
    are charged to the interrupted instruction's line, as on x86-64. Every
    other line's Ir is cachegrind's."""
    exe = arm.compile('self_signals_arm64.c', '-O1')
    kg, paths = run_cct(arm, exe)
    cg = arm.reference('cachegrind', exe)
    handled = int(kg.stdout.split()[-1])
    assert handled == 5
    assert callers_of(paths, 'handler') == {'send_self': handled}
    assert callers_of(paths, 'getpid') == {'send_self': handled}   # the handler's frames ended
    disasm = subprocess.run(['aarch64-linux-gnu-objdump', '-d', '--no-show-raw-insn', str(exe)],
                            capture_output=True, text=True, check=True).stdout
    body = disasm.split('<send_self>:')[1]
    resume = body.split('\tsvc\t')[1].split('\n')[1].split(':')[0].strip()
    where = subprocess.run(['aarch64-linux-gnu-addr2line', '-e', str(exe), resume],
                           capture_output=True, text=True, check=True).stdout.strip()
    resume_line = (where.rsplit(':', 1)[0], int(where.rsplit(':', 1)[1].split()[0]))
    mine, ref = kg.profile().by_file_line(), cg.profile().by_file_line()
    moved = {key: mine.get(key, 0) - ref.get(key, 0) for key in set(mine) | set(ref)
             if mine.get(key, 0) != ref.get(key, 0)}
    assert moved == {resume_line: 2 * handled, ('???', 0): -2 * handled}
    assert kg.profile().total() == cg.profile().summary


def test_ucontext_coroutines_continue_their_own_contexts(arm):
    """co_sched.c's makecontext/swapcontext coroutines: glibc's setcontext
    loads x30 with the saved pc, sets SP and branches there, so a resume
    lands at the return address of the swapcontext call that suspended the
    coroutine, at that call's SP (no slot below it). Each coroutine goes on
    in its own contexts, with the program's own call counts, and every
    node's inclusive Ir is its subtree's exclusive Ir (suspended frames
    pause)."""
    exe = arm.compile('co_sched.c', '-O1')
    prof, own = run_scheduler(arm, exe, 30, ['--k=inf', '--unroll-simple-rec=yes'])
    calls = vertex_calls(prof)
    assert (calls['leaf'], calls['yield_'], calls['nest']) == (own['leaf'], own['yield'], own['nest'])
    yields = {p: n for p, n in full_paths(prof).items() if p[-1] == 'yield_'}
    assert yields == {('__root__', 'co_main') + ('nest',) * (3 + i) + ('yield_',): 30 for i in range(4)}
    assert_inclusive_is_subtree_exclusive(prof.forests[0])


@pytest.mark.parametrize('where', ['heap', 'carve', 'pool'] if FULL else ['carve'])
def test_unregistered_ucontext_coroutines_in_one_mapping(arm, where):
    """co_ring.c's swapcontext ring on stacks nobody registered, in one
    mapping (tests/test_stacks.py): a switch between them is told by
    where it lands, the return address of the swapcontext call that
    suspended the coroutine, at that call's SP; each coroutine keeps its
    own contexts."""
    arm.compile_flags = ('-I', str(pathlib.Path(ARM64.includedir).parent))
    prof, own = run_ring(arm, where, 'swap', ['--k=inf', '--unroll-simple-rec=yes'], gens=4)
    assert_ring_contexts(prof, own, gens=4)


@pytest.mark.skipif(not FULL, reason='the larger arm64 run: KGRIND_ARM64_FULL=1')
def test_ucontext_coroutines_ending_through_uc_link(arm):
    assert_uc_link_coroutines(arm)


# The hostile programs of tests/test_stress.py that are not x86-specific
# (getpc.c and jit.c are x86-64 machine code; boost.context has no arm64
# library here; a static program cannot dlopen the plugin; threads-exit
# never ends under qemu-user, even under --tool=none: qemu 7.2 cannot
# deliver the guest's signal 64, Valgrind's VG_SIGVGKILL, with which the
# exiting thread interrupts main's pthread_join (docs/building.md,
# "arm64")), run as that test runs them: each against its run under
# --tool=none. The default run takes the coroutines (ucontext) and the
# signals in one mode each, the larger run every one in one function mode
# and one block mode.
STRESS_DEFAULT = {('coroutines', 'k2'), ('signals', 'k2')}
STRESS_SKIPPED = ('getpc', 'jit', 'dlopen-chdir', 'threads-exit')
STRESS = [pytest.param(case, mode, id=f'{case.name}-{mode}',
                       marks=() if FULL or (case.name, mode) in STRESS_DEFAULT else pytest.mark.skipif(
                           True, reason='the larger arm64 run: KGRIND_ARM64_FULL=1'))
          for case in test_stress.CASES if not case.libs and not {case.prog, case.name} & set(STRESS_SKIPPED)
          for mode in (test_stress.ONE_OF_EACH if FULL else ('k2',))]


@pytest.mark.parametrize('case,mode', STRESS)
def test_hostile_program(arm, case, mode):
    src = next(d / f'{case.prog}{suffix}' for d in (test_stress.HOSTILE, PROGS) for suffix in ('.c', '.cpp')
               if (d / f'{case.prog}{suffix}').exists())
    exe = arm.compile(src, '-O1', libs=case.libs)
    run_dir = arm.dir / 'run'
    run_dir.mkdir()
    ref = arm.valgrind('none', [], exe, case.args)
    env = {k: v for k, v in ARM64.env().items() if k != 'PYTEST_CURRENT_TEST'}
    proc = subprocess.Popen(ARM64.argv('kgrind', *test_stress.MODES[mode], exe, *case.args), cwd=run_dir,
                            env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, errors='replace',
                            preexec_fn=test_stress.no_core_dumps)
    out, err = proc.communicate(timeout=600)
    error = test_stress.internal_error(err)
    assert not error, error
    assert (proc.returncode, out) == (ref.returncode, ref.stdout), err[-3000:]
    profiles = sorted(run_dir.glob('kgrind.out.*'))
    expected = case.profiles + (case.exec_profiles if mode in test_stress.FUNCTION_MODES else 0)
    assert len(profiles) == expected, [p.name for p in profiles]
    assert proc.pid in [test_stress.pid_of(p) for p in profiles]

    def callgrind_lines(case, tool):
        run = arm.valgrind(tool, [f'--callgrind-out-file={arm.dir / "ref.out"}'], exe, case.args)
        assert run.returncode == 0, run.stderr
        lines = test_stress.own_lines(callgrind_format.parse(arm.dir / 'ref.out'), case)
        return without_main_return(lines, str(src))
    for path in profiles:
        test_stress.check_profile(path, case, mode, proc.pid, callgrind_lines)
