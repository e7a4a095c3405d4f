/* Control flow with counts known from the source: a loop of n passes (n from
   argv[1]), a branch taken in one pass of three, a callee called from two
   call sites (n/3 rounded up times, and once), and libc calls through the
   PLT. tests/test_dump_instr.py checks kgrind's --dump-instr and
   --collect-jumps against these counts and against callgrind. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static volatile int sink;

__attribute__((noinline)) int leaf(int v)
{
   return v * 3 + 1;
}

__attribute__((noinline)) int loop(int n)
{
   int s = 0;
   for (int i = 0; i < n; i++) {
      if (i % 3 == 0)
         s += leaf(i);
      else
         s -= i;
   }
   return s;
}

int main(int argc, char **argv)
{
   int n = argc > 1 ? atoi(argv[1]) : 10;
   sink = loop(n);
   sink = leaf(n);
   sink += (int)strlen(argv[0]);
   printf("%d\n", sink);
   return 0;
}
