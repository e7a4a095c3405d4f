/* Static functions for the unwind-table test: stripped, they keep their
   FDEs. Calls, tail calls between static functions, recursion, a function
   pointer, and a cold part (-O2 splits `rare`'s unlikely branch). */
#include <stdio.h>
#include <stdlib.h>
static volatile int sink;
static int calls_leaf, calls_mid, calls_tail_target, calls_rec;
__attribute__((noinline)) static int leaf(int x) { calls_leaf++; sink += x; return x * 3 + 1; }
__attribute__((noinline)) static int tail_target(int x) { calls_tail_target++; for (int i = 0; i < x % 7; i++) sink += leaf(i); return sink; }
/* Ends in a jump to tail_target (-O2 turns the last call into a jmp). */
__attribute__((noinline)) static int mid(int x) { calls_mid++; sink += leaf(x); return tail_target(x + 1); }
__attribute__((noinline)) static int rec(int n) { calls_rec++; if (n <= 0) return leaf(n); return rec(n - 1) + 1; }
__attribute__((noinline)) static int rare(int x)
{
   if (__builtin_expect(x == 12345, 0)) { fprintf(stderr, "rare %d\n", x); abort(); }
   return leaf(x) + 2;
}
static int (*volatile through_pointer)(int) = mid;
int main(int argc, char** argv)
{
   int n = argc > 1 ? atoi(argv[1]) : 300;
   for (int i = 0; i < n; i++) {
      sink += mid(i);
      sink += through_pointer(i);
      if (i % 10 == 0) sink += rec(5);
      sink += rare(i);
   }
   printf("leaf %d mid %d tail_target %d rec %d\n", calls_leaf, calls_mid, calls_tail_target, calls_rec);
   return 0;
}
