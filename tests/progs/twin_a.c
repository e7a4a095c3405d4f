/* One of two functions named `helper` (twin.h). */
#include "twin.h"

static long calls;

TWIN_BEGIN
TWIN_LOCAL __attribute__((noinline)) long helper(int n)
{
   long s = 0;
   calls++;
   for (int i = 0; i < n; i++) s += i * 3;
   twin_leaf(FROM_A);
   return s;
}
TWIN_END

long run_a(int times)
{
   long s = 0;
   for (int t = 1; t <= times; t++) s = twin_step(s + helper(100 * t), t);
   return s;
}

long helper_a_calls(void) { return calls; }
