/* A known number of atomic instructions from known functions: bump makes
   1000 atomic adds, cas 500 compare-and-swaps (each one lock-prefixed
   instruction). Prints the swaps that succeeded and the final value. */
#include <stdio.h>

static long v;

__attribute__((noinline)) void bump(int n)
{
   for (int i = 0; i < n; i++) __atomic_fetch_add(&v, 1, __ATOMIC_SEQ_CST);
}

__attribute__((noinline)) int cas(int n)
{
   int ok = 0;
   for (int i = 0; i < n; i++) {
      long e = v;
      ok += __atomic_compare_exchange_n(&v, &e, e + 1, 0, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST);
   }
   return ok;
}

int main(void)
{
   bump(1000);
   int swapped = cas(500);
   printf("%d %ld\n", swapped, v);
   return 0;
}
