/* Calls, loops, branches and an inlined header function. */
#include <stdio.h>
#include <stdlib.h>
#include "inline_helpers.h"

__attribute__((noinline)) static int leaf(int x) { return x * 3 + 1; }
__attribute__((noinline)) static int branchy(int x)
{
   if (x % 3 == 0) return leaf(x);
   if (x % 3 == 1) return leaf(x) + leaf(x + 1);
   return clamp_add(x, 7);
}

int main(int argc, char** argv)
{
   int n = argc > 1 ? atoi(argv[1]) : 2000;
   long s = 0;
   for (int i = 0; i < n; i++) s += branchy(i);
   printf("simple: %ld\n", s);
   return 0;
}
