"""Counter arrays (docs/design/counting.md, "Counter arrays"): a function's
blocks in one context count in that context's array, at offsets fixed when
they are translated. The program here makes arrays grow (a function's
blocks first run late, after its contexts' arrays were made, and in one
context only), overflow (a function with more counters than an array holds
keeps the rest in tables), and switch off and on (--toggle-collect=via:
b's contexts at k=1 run both inside via, counted, and outside, not); every
context's per-line costs must equal callgrind's --separate-callers."""
import pytest

import callgrind_format

N_CASES = 150   # a switch of this many cases: past an array's 128 counters


def late_blocks_source():
    cases = '\n'.join(f'   case {n}: s += {n + 1} * x; sink += s; break;' for n in range(N_CASES))
    return f'''#include <stdio.h>
volatile long sink;

__attribute__((noinline)) long work(long i, int late) {{
   long s = i;
   if (late > 0)
      for (int j = 0; j < 3; j++) s += j * i;
   if (late > 1) {{
      s ^= i << 3;
      sink += s;
   }}
   return s;
}}

__attribute__((noinline)) long big(long x) {{
   long s = 0;
   switch (x % {N_CASES}) {{
{cases}
   }}
   return s;
}}

__attribute__((noinline)) long a(long i) {{ return work(i, i >= 900) + big(i); }}
__attribute__((noinline)) long b(long i) {{ return work(i, i >= 950 ? 2 : 0) + big(i * 7 + 3); }}
__attribute__((noinline)) long via(long i) {{ return b(i); }}

int main(void) {{
   long t = 0;
   for (long i = 0; i < 1000; i++) t += a(i) + (i % 2 ? via(i) : b(i));
   printf("%ld\\n", t);
   return 0;
}}
'''


OWN = ('work', 'big', 'a', 'b', 'via', 'main')


def own_lines(path):
    """(context, line) -> Ir of the program's own functions' contexts."""
    prof = callgrind_format.parse(path)
    out = {}
    for (_obj, _file, fn, line), ir in prof.lines.items():
        if fn.split("'")[0] in OWN and ir:
            out[(fn, line)] = out.get((fn, line), 0) + ir
    return out


# At k=4 the body's contexts (--view-k's default, 2) are the view forest's
# nodes, whose arrays are its payload; k=inf's body (also at 2) keeps the
# contexts' tables.
@pytest.mark.parametrize('k,body_k', [(1, 1), (2, 2), (4, 2), ('inf', 2)])
@pytest.mark.parametrize('toggle', [False, True])
def test_context_line_costs_equal_callgrind(tools, k, body_k, toggle):
    src = tools.dir / 'late_blocks.c'
    src.write_text(late_blocks_source())
    exe = tools.compile(src, '-O0')
    opts = ['--toggle-collect=via'] if toggle else []
    kg = tools.kgrind(exe, opts=[f'--k={k}', *opts])
    cl = tools.reference('callgrind', exe, opts=[f'--separate-callers={body_k}', *opts])
    assert kg.stdout == cl.stdout == tools.native(exe).stdout
    mine, ref = own_lines(kg.profile_path), own_lines(cl.profile_path)
    # the late lines and the switch's cases are there, per caller
    assert any(fn.startswith("work'a") for fn, _ in ref) != toggle
    assert sum(1 for fn, _ in ref if fn.startswith('big')) > N_CASES / 2
    assert mine == ref
