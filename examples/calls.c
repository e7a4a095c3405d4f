/* A small program with a few call chains, used by setup.sh as a first
   profile and by the manual's recipes (-DROUNDS=2000 makes a "slower
   build" for docs/manual.md's diff recipe). */
#include <stdio.h>

#ifndef ROUNDS
#define ROUNDS 1000
#endif

static int leaf(int x) { return x * x + 1; }
static int helper(int x) { return leaf(x) + leaf(x + 1); }
static int fib(int n) { return n < 2 ? n : fib(n - 1) + fib(n - 2); }

static int work(int n)
{
   int s = 0;
   for (int i = 0; i < n; i++) s += helper(i);
   return s + fib(15);
}

int main(void)
{
   int total = work(ROUNDS) + leaf(3);
   printf("calls: %d\n", total);
   return 0;
}
