/* One of two functions named `helper` (twin.h): other work than
 * twin_a.c's, and two calls of twin_leaf per call. */
#include "twin.h"

static long calls;

TWIN_BEGIN
TWIN_LOCAL __attribute__((noinline)) long helper(int n)
{
   long s = 0;
   calls++;
   twin_leaf(FROM_B);
   for (int i = 0; i < n; i++) s ^= i * 7 + 1;
   twin_leaf(FROM_B);
   return s;
}
TWIN_END

long run_b(int times)
{
   long s = 0;
   int n = 300;
   while (times-- > 0) {
      s = twin_step(s + helper(n), times);
      n += 300;
   }
   return s;
}

long helper_b_calls(void) { return calls; }
