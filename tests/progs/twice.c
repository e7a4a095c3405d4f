/* Exports and diffs (tests/test_annotate_export.py, test_annotate_diff.py):
 * main calls step() through two paths and a recursion; `scaled` does
 * SCALE times the work of `fixed`, SCALE the first argument (default 1), so
 * two runs differ in exactly one function's exclusive Ir.  Each call path
 * runs a fixed number of times, whatever the scale. */
#include <stdio.h>
#include <stdlib.h>

static volatile long sink;

__attribute__((noinline)) void step(int n) { for (int i = 0; i < n; i++) sink += i; }
__attribute__((noinline)) void fixed(void) { step(300); }
__attribute__((noinline)) void scaled(int scale) { for (int i = 0; i < 500 * scale; i++) sink ^= i; }
__attribute__((noinline)) void odd(int n);
__attribute__((noinline)) void even(int n) { step(20); if (n > 0) odd(n - 1); }
__attribute__((noinline)) void odd(int n) { step(10); if (n > 0) even(n - 1); }
__attribute__((noinline)) void twice(int scale) { fixed(); scaled(scale); }

int main(int argc, char **argv)
{
   int scale = argc > 1 ? atoi(argv[1]) : 1;
   for (int i = 0; i < 4; i++) twice(scale);
   even(9);
   printf("%ld\n", sink);
   return 0;
}
