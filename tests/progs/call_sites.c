/* One function called from several lines of one caller: in a loop, in a
   branch, once after the loop, and through a recursion that calls it
   from two lines. Built with -finstrument-functions, the hooks count
   each (callee, call site) pair; the program prints the counts. */
#include <stdio.h>
#include <stdlib.h>

#define MAX_PAIRS 64
static struct { void* fn; void* site; long n; } pairs[MAX_PAIRS];

__attribute__((no_instrument_function)) void __cyg_profile_func_enter(void* fn, void* site)
{
   for (int i = 0; i < MAX_PAIRS; i++) {
      if (pairs[i].n && (pairs[i].fn != fn || pairs[i].site != site)) continue;
      pairs[i].fn = fn;
      pairs[i].site = site;
      pairs[i].n++;
      return;
   }
   abort();
}

__attribute__((no_instrument_function)) void __cyg_profile_func_exit(void* fn, void* site)
{
   (void)fn;
   (void)site;
}

static volatile long sink;

__attribute__((noinline)) void leaf(long x) { sink += x; }

__attribute__((noinline)) long rec(long n)
{
   if (n == 0) return 0;
   if (n % 2) leaf(n);
   else leaf(-n);
   return rec(n - 1) + 1;
}

__attribute__((noinline)) void work(long n)
{
   for (long i = 0; i < n; i++) {
      leaf(i);
      if (i % 3 == 0) leaf(-i);
   }
   leaf(n);
   rec(n / 2);
}

int main(int argc, char** argv)
{
   long n = argc > 1 ? atol(argv[1]) : 10;
   work(n);
   work(n / 2);
   rec(3);
   for (int i = 0; i < MAX_PAIRS && pairs[i].n; i++)
      printf("%p %p %ld\n", pairs[i].fn, pairs[i].site, pairs[i].n);
   return 0;
}
