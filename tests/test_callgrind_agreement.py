"""kgrind's k-contexts against callgrind's --separate-callers=k on generated
programs with known call graphs, and k' <= k consistency on real runs."""
import collections
import random
import re

import pytest

import callgrind_format
import ksf_records

OWN = re.compile(r'^(f\d+|main)$')


def generate_program(path, seed, n_funcs=12):
    """A random call DAG: f<i> calls some f<j>, j > i, a few times each."""
    rng = random.Random(seed)
    lines = ['#include <stdio.h>', 'volatile long sink;']
    lines += [f'void f{i}(int x);' for i in range(n_funcs)]
    for i in range(n_funcs):
        body = ['   sink += x;']
        for j in sorted(rng.sample(range(i + 1, n_funcs), min(3, n_funcs - i - 1))):
            reps = rng.randint(1, 3)
            body.append(f'   for (int r = 0; r < {reps}; r++) f{j}(x + r);')
        lines.append(f'__attribute__((noinline)) void f{i}(int x) {{\n' + '\n'.join(body) + '\n}')
    calls = ' '.join(f'f{i}({i});' for i in rng.sample(range(n_funcs), 4))
    lines.append(f'int main(void) {{ {calls} printf("%ld\\n", sink); return 0; }}')
    path.write_text('\n'.join(lines) + '\n')


def callgrind_contexts(path):
    """{context name: calls into it} from callgrind's calls= lines."""
    calls = collections.Counter()
    prof = callgrind_format.parse(path)
    for _caller, callee, count, _incl in prof.calls:
        calls[callee] += count
    return calls


def kgrind_contexts(path, k):
    prof = ksf_records.parse(path)
    out = collections.Counter()
    for forest in prof.forests:
        for ctx, n in ksf_records.kccf(forest, ksf_records.k_of(prof), k).items():
            out["'".join(reversed(ctx))] += n
    return out


def own_full_contexts(contexts, k):
    return {name: n for name, n in contexts.items()
            if len(name.split("'")) == k + 1 and all(OWN.match(p) for p in name.split("'"))}


@pytest.mark.parametrize('seed', [1, 2])
@pytest.mark.parametrize('k', [1, 2, 3])
def test_call_counts_equal_callgrind_separate_callers(tools, seed, k):
    src = tools.dir / f'gen{seed}.c'
    generate_program(src, seed)
    exe = tools.dir / f'gen{seed}'
    import subprocess
    subprocess.run(['gcc', '-g', '-O0', str(src), '-o', str(exe)], check=True)
    kg = tools.kgrind(exe, opts=[f'--k={k}'])
    cl = tools.reference('callgrind', exe, opts=[f'--separate-callers={k}', '--separate-recs=1'])
    assert kg.stdout == cl.stdout
    mine = own_full_contexts(kgrind_contexts(kg.profile_path, k), k)
    ref = own_full_contexts(callgrind_contexts(cl.profile_path), k)
    assert len(ref) > 10
    assert mine == ref


def test_lower_k_from_a_k4_run_equals_k_runs(tools):
    # Only the program's own functions: the C library's thread-join path
    # depends on scheduling.
    exe = tools.compile('prog1.c', '-O0')
    funcs = '--funcs=main,thread2,a,b,c,d,e,f'
    prof4 = ksf_records.parse(tools.kgrind(exe, opts=['--k=4', funcs], out='k4.out').profile_path)
    for kp in (0, 1, 2, 3):
        profk = ksf_records.parse(tools.kgrind(exe, opts=[f'--k={kp}', funcs], out=f'k{kp}.out').profile_path)
        for f4, fk in zip(prof4.forests, profk.forests):
            assert ksf_records.kccf(f4, 4, kp) == ksf_records.kccf(fk, kp, kp), kp


def test_inf_equals_the_cct(tools):
    """k=inf's forest is one tree whose root paths are the full contexts,
    and a large finite k gives the same contexts."""
    exe = tools.compile('prog1.c', '-O0')
    funcs = '--funcs=main,thread2,a,b,c,d,e,f'
    inf = ksf_records.parse(tools.kgrind(exe, opts=['--k=inf', funcs], out='inf.out').profile_path)
    big = ksf_records.parse(tools.kgrind(exe, opts=['--k=1000', funcs], out='big.out').profile_path)
    for fi, fb in zip(inf.forests, big.forests):
        assert len(fi.roots) == 1
        assert ksf_records.kccf(fi, None, None) == ksf_records.kccf(fb, 1000, None)


RECURSIVE = r'''
#include <stdio.h>
volatile long sink;
__attribute__((noinline)) int fib(int n) { sink += n; return n < 2 ? n : fib(n - 1) + fib(n - 2); }
int odd(int n);
__attribute__((noinline)) int even(int n) { sink++; return n == 0 ? 1 : odd(n - 1); }
__attribute__((noinline)) int odd(int n) { sink++; return n == 0 ? 0 : even(n - 1); }
__attribute__((noinline)) void leaf(int x) { sink += x; }
__attribute__((noinline)) void mid(int x) { for (int i = 0; i < x; i++) leaf(i); fib(x % 7); }
int main(void)
{
   for (int i = 0; i < 30; i++) { mid(i); even(i); }
   printf("%d %ld\n", fib(12), sink);
   return 0;
}
'''


RECURSIVE_OWN = re.compile(r'^(fib|even|odd|leaf|mid|main)$')


def edge_costs(prof, k):
    """{(caller context, callee context): [calls, inclusive Ir]} for the
    program's own full k-contexts."""
    out = collections.defaultdict(lambda: [0, 0])
    for caller, callee, count, incl in prof.calls:
        parts = caller.split("'") + callee.split("'")
        if len(callee.split("'")) == k + 1 and all(RECURSIVE_OWN.match(p) for p in parts):
            out[(caller, callee)][0] += count
            out[(caller, callee)][1] += incl
    return dict(out)


def self_recursive(edge):
    """A call from a function to itself."""
    caller, callee = edge
    return callgrind_format.callee(caller) == callgrind_format.callee(callee)


@pytest.mark.parametrize('k', [1, 2, 3])
def test_call_edge_inclusive_costs_equal_callgrind(tools, k):
    """Calls and inclusive Ir of every call edge between k-contexts, with
    simple and mutual recursion (kgrind pushes and pops most frames in
    inline IR: a wrong pop shows here), equal callgrind's."""
    src = tools.dir / 'recursive.c'
    src.write_text(RECURSIVE)
    exe = tools.compile(src, '-O0')
    kg = tools.kgrind(exe, opts=[f'--k={k}', '--unroll-simple-rec=yes'])
    cl = tools.reference('callgrind', exe, opts=[f'--separate-callers={k}', '--separate-recs=1'])
    assert kg.stdout == cl.stdout
    mine = edge_costs(callgrind_format.parse(kg.profile_path), k)
    ref = edge_costs(callgrind_format.parse(cl.profile_path), k)
    # callgrind names the contexts of simple recursion by their
    # non-recursive callers (fib'main for fib'fib'main): compare the calls
    # between different functions (mutual recursion included).
    mine = {e: c for e, c in mine.items() if not self_recursive(e)}
    ref = {e: c for e, c in ref.items() if not self_recursive(e)}
    assert len(ref) >= 3
    assert mine == ref
