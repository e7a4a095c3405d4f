"""KGRIND_CURRENT_SITE_CONTEXT(): ids of k-contexts with their levels' call
sites (docs/regions.md, "Context ids").

The expectation is the program's own: tests/progs/site_contexts.c is
built with -finstrument-functions, whose hooks record every call's
(function, return address) brute force, and prints each id next to the
chain it recorded. The chain's functions and call lines come from the
executable's debug info through addr2line, not from kgrind.
"""
import collections
import functools
import re
import subprocess

import pytest

from conftest import ROOT, VALGRIND

INCLUDES = ('-I', str(ROOT / 'include'), '-I', VALGRIND.includedir)
ANNOTATE = ['perl', str(ROOT / 'perl' / 'kgrind_annotate.pl')]
# Fixed addresses: the hooks' addresses are the executable's own.
FLAGS = ('-O1', '-finstrument-functions', '-fno-pie', '-no-pie', *INCLUDES)
# What the tool says where the shadow stack and a context's levels disagree.
MISMATCH = 'the shadow stack does not match the context'


def compile_prog(tools):
    return tools.compile('site_contexts.c', *FLAGS)


def parse_log(stdout):
    """(thread, site id, context id, [(fn, return address)] outermost
    first) per line the program printed."""
    out = []
    for line in stdout.splitlines():
        thread, site_id, context_id, *calls = line.split()
        chain = [tuple(int(x, 16) for x in c.split('@')) for c in calls]
        out.append((int(thread), int(site_id), int(context_id), chain))
    return out


class Symbols:
    """Functions and lines of an executable's addresses, from addr2line."""

    def __init__(self, exe, addresses):
        addresses = sorted(set(addresses))
        r = subprocess.run(['addr2line', '-f', '-e', str(exe), *map(hex, addresses)],
                           capture_output=True, text=True, check=True)
        lines = r.stdout.splitlines()
        assert len(lines) == 2 * len(addresses)
        self.at = {}
        for i, a in enumerate(addresses):
            m = re.fullmatch(r'.*:(\d+)(?: \(discriminator \d+\))?', lines[2 * i + 1])
            self.at[a] = (lines[2 * i], int(m.group(1)) if m else 0)

    def function(self, a):
        return self.at[a][0]

    def line(self, a):
        return self.at[a][1]


def levels(chain):
    """The chain's levels as kgrind's contexts have them: simple recursion
    rolled (a function calling itself stays one level, entered at its
    outermost call): [(fn, return address of the level's call)]."""
    out = []
    for fn, site in chain:
        if not out or out[-1][0] != fn:
            out.append((fn, site))
    return out


def expected_name(symbols, lv):
    """'main:12 > foo:30 > bar': each level but the innermost with the line
    of its call into the next one (the call instruction: the byte before
    the return address)."""
    parts = []
    for i, (fn, _site) in enumerate(lv):
        name = symbols.function(fn)
        if i + 1 < len(lv):
            name += f':{symbols.line(lv[i + 1][1] - 1)}'
        parts.append(name)
    return ' > '.join(parts)


@functools.lru_cache(maxsize=None)
def annotate_context(path, cid):
    """(thread, chain) that kgrind_annotate --context-id prints."""
    r = subprocess.run(ANNOTATE + [f'--context-id={cid}', str(path)], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    m = re.fullmatch(r'context (\d+), thread (\w+): (.*)\n', r.stdout)
    assert m and int(m.group(1)) == cid, r.stdout
    return m.group(2), m.group(3)


CASES = [
    pytest.param(['--k=2'], 2, id='k2'),
    pytest.param(['--k=1'], 1, id='k1'),
    pytest.param(['--k=inf'], None, id='kinf'),
    pytest.param(['--k=1', '--join-threads=yes'], 1, id='k1-joined'),
]


@pytest.mark.parametrize('opts,k', CASES)
def test_site_context_ids_name_the_chains_the_program_recorded(tools, opts, k):
    exe = compile_prog(tools)
    run = tools.kgrind(exe, opts=opts)
    assert run.returncode == 0 and MISMATCH not in run.stderr, run.stderr
    log = parse_log(run.stdout)
    native = parse_log(tools.native(exe).stdout)
    # The program does the same under kgrind (its libc's addresses aside:
    # main's and the thread function's return addresses).
    assert [(t, [c[0] for c in ch], [c[1] for c in ch[1:]]) for t, _s, _c, ch in log] == \
        [(t, [c[0] for c in ch], [c[1] for c in ch[1:]]) for t, _s, _c, ch in native]
    assert {(s, c) for _t, s, c, _ch in native} == {(0, 0)}
    joined = '--join-threads=yes' in opts
    symbols = Symbols(exe, [a for *_x, ch in log for fn, site in ch for a in (fn, site - 1)])
    by_sites = collections.defaultdict(set)      # (thread, levels with sites) -> ids
    by_functions = collections.defaultdict(set)  # (thread, functions) -> ids
    for thread, site_id, context_id, chain in log:
        # The program's own levels, outermost first; kgrind's context holds
        # the last k + 1 of them (at k = inf, all of them below libc's).
        lv = levels(chain)
        shown = lv if k is None else lv[-(k + 1):]
        want = expected_name(symbols, shown)
        got_thread, got = annotate_context(run.profile_path, site_id)
        assert got_thread == ('all' if joined else str(thread))
        if k is None:
            # main's callers (libc) are the context's too: its tail is ours.
            assert got.endswith(' > ' + want), (got, want)
        else:
            assert got == want
        _t, plain = annotate_context(run.profile_path, context_id)
        assert plain == re.sub(r':\d+( >|$)', r'\1', got)
        key_thread = 0 if joined else thread
        # The outermost level's own call is not the context's.
        by_sites[key_thread, shown[0][0], tuple(shown[1:])].add(site_id)
        by_functions[key_thread, tuple(fn for fn, _s in shown)].add(context_id)
    # Same sites, same id; different sites (or threads), different ids; the
    # two requests' ids are one numbering.
    assert all(len(ids) == 1 for ids in by_sites.values())
    site_ids = [next(iter(ids)) for ids in by_sites.values()]
    assert len(set(site_ids)) == len(site_ids)
    assert all(len(ids) == 1 for ids in by_functions.values())
    context_ids = {next(iter(ids)) for ids in by_functions.values()}
    assert not context_ids & set(site_ids)
    # Sites tell apart what functions do not. Per thread, at k=1: leaf from
    # mid's three lines, rec's and jumper's; at k=2 also mid's callers' lines
    # (top's two calls of mid(1) and mid(0): 3 + 2 chains, round_of_calls'
    # mid(1): 3, jumper's: 3, then round > rec > leaf and round > jumper >
    # leaf); at k=inf top's two calls from round_of_calls apart (top(1):
    # 3 + 2, top(0): 2 + 2) instead of 5.
    threads = 1 if joined else 2
    assert len(site_ids) == threads * {1: 5, 2: 13, None: 17}[k]
    assert len(context_ids) == threads * {1: 3, 2: 5, None: 5}[k]


def test_site_context_ids_are_0_outside_kgrind(tools):
    exe = compile_prog(tools)
    for r in (tools.native(exe), tools.valgrind('none', [], exe)):
        assert r.returncode == 0, r.stderr
        log = parse_log(r.stdout)
        assert len(log) == 68 and {(s, c) for _t, s, c, _ch in log} == {(0, 0)}


def compile_text(tools, name, text):
    src = tools.dir / f'{name}.c'
    src.write_text(text)
    exe = tools.dir / name
    subprocess.run(['gcc', '-g', '-O1', *INCLUDES, str(src), '-o', str(exe)], check=True)
    return exe


def marked_lines(text):
    """The lines of a source's /* name */ marks, by name."""
    return {name: i + 1 for i, l in enumerate(text.splitlines()) for name in re.findall(r'/\* (\w+) \*/', l)}


@pytest.mark.parametrize('opts', [[], ['--k=inf']], ids=['k2', 'kinf'])
def test_inline_levels_carry_their_call_lines(tools, opts):
    """--inline-frames=yes: an inlined level's site is the line its caller's
    source calls it at (the debug info's call line), a call from inlined
    code is at its own line."""
    exe = compile_text(tools, 'inline_sites', INLINE_SITES)
    run = tools.kgrind(exe, opts=['--inline-frames=yes', *opts])
    assert run.returncode == 0 and MISMATCH not in run.stderr, run.stderr
    ids = [int(x) for x in run.stdout.split()]
    lines = marked_lines(INLINE_SITES)
    want = [f"f:{lines['g0']} > g [inlined]:{lines['leaf0']} > leaf",
            f"f:{lines['g1']} > g [inlined]:{lines['leaf0']} > leaf",
            f"f:{lines['g1']} > g [inlined]:{lines['leaf1']} > leaf"]
    assert ids[:3] == [1, 2, 3] and ids[3:] == ids[:3]   # the second f() asks again: the same ids
    for cid, name in zip(ids, want):
        _t, got = annotate_context(run.profile_path, cid)
        assert got.endswith(f"main:{lines['f']} > {name}" if opts else name), (got, name)


INLINE_SITES = r'''#include <stdio.h>
#include "kgrind.h"
__attribute__((noinline)) void leaf(void) { printf("%lu\n", KGRIND_CURRENT_SITE_CONTEXT()); }
static inline __attribute__((always_inline)) void g(int n)
{
   leaf();          /* leaf0 */
   if (n) leaf();   /* leaf1 */
}
__attribute__((noinline)) void f(void)
{
   g(0);   /* g0 */
   g(1);   /* g1 */
}
static volatile int rounds = 2;
int main(void)
{
   for (int i = 0; i < rounds; i++) f();   /* f */
   return 0;
}
'''


@pytest.mark.parametrize('bad,message', [
    ('99', 'context id 99 is in none of'),
    ('0', "bad --context-id value '0'"),
    ('x1', "bad --context-id value 'x1'"),
])
def test_unknown_ids_are_refused(tools, bad, message):
    exe = compile_prog(tools)
    run = tools.kgrind(exe)
    assert run.returncode == 0 and MISMATCH not in run.stderr, run.stderr
    r = subprocess.run(ANNOTATE + [f'--context-id={bad}', str(run.profile_path)], capture_output=True, text=True)
    assert r.returncode == 2 and message in r.stderr and r.stdout == ''
    assert len(r.stderr.splitlines()) == 1


SIGNAL_SITES = r'''#include <setjmp.h>
#include <signal.h>
#include <stdio.h>
#include "kgrind.h"
static sigjmp_buf env;
static volatile int* volatile nowhere;
__attribute__((noinline)) void report(void) { printf("%lu\n", KGRIND_CURRENT_SITE_CONTEXT()); }
static void handler(int sig)
{
   (void)sig;
   report();   /* handler */
   siglongjmp(env, 1);
}
__attribute__((noinline)) void faulter(void)
{
   *nowhere = 1;   /* fault */
}
__attribute__((noinline)) void untraced(void) { report(); }   /* untraced */
int main(void)
{
   signal(SIGSEGV, handler);
   if (sigsetjmp(env, 1) == 0) faulter();
   report();     /* after */
   untraced();   /* main */
   return 0;
}
'''


@pytest.mark.parametrize('opts', [[], ['--funcs=main', '--funcs=report']], ids=['all', 'funcs'])
def test_signal_handlers_and_untraced_callers(tools, opts):
    """A handler's level is entered at the instruction the signal
    interrupted (the faulting line); after the handler's siglongjmp the
    stack is main's again. With --funcs, an untraced function's frames are
    no level: a call from one is at its line, shown on the traced caller."""
    exe = compile_text(tools, 'signal_sites', SIGNAL_SITES)
    run = tools.kgrind(exe, opts=['--k=2', *opts])
    assert run.returncode == 0 and MISMATCH not in run.stderr, run.stderr
    ids = [int(x) for x in run.stdout.split()]
    assert ids == [1, 2, 3]
    at = marked_lines(SIGNAL_SITES)
    if opts:
        want = [f"main:{at['handler']} > report", f"main:{at['after']} > report", f"main:{at['untraced']} > report"]
    else:
        want = [f"faulter:{at['fault']} > handler:{at['handler']} > report", f"main:{at['after']} > report",
                f"main:{at['main']} > untraced:{at['untraced']} > report"]
    for cid, name in zip(ids, want):
        _t, got = annotate_context(run.profile_path, cid)
        assert got == name or got.endswith(' > ' + name), (got, name)


def test_a_record_whose_sites_do_not_fit_its_levels_is_refused(tools):
    exe = compile_text(tools, 'signal_sites', SIGNAL_SITES)
    run = tools.kgrind(exe, opts=['--k=2'])
    assert run.returncode == 0 and MISMATCH not in run.stderr, run.stderr
    text = run.profile_path.read_text()
    record = re.search(r'^# kgrind-context 2 1 \d+ \d+ \d+ sites \d+ \d+$', text, re.M).group(0)
    bad = tools.dir / 'bad.out'
    bad.write_text(text.replace(record, record + ' 7'))
    r = subprocess.run(ANNOTATE + ['--context-id=2', str(bad)], capture_output=True, text=True)
    assert r.returncode == 2 and r.stdout == ''
    assert r.stderr == f'kgrind_annotate: {bad}: context 2 has 3 call sites for 3 levels\n'
