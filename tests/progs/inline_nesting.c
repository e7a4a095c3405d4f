/* Contexts of inlined levels entered while an outer activation of the same
   context is still open, and at other times not: walk recurses from inside
   its inlined visit, and other calls walk from its own inlined visit, so
   that at k = 1 walk's context under visit is entered both below an open
   (walk, visit) level and below (other, visit) only. At k = 2 the same
   with three levels: inner's runs of wrap > wrap_mid > wrap_visit have the
   level context (wrap, wrap_mid, wrap_visit), open when outer calls inner
   from its own wrap > wrap_mid > wrap_visit and not when shim calls it
   from alt > wrap_mid > wrap_visit, and inner's context is the same both
   times (wrap_mid, wrap_visit, inner). The program counts its own calls and
   prints them. Run with the number of rounds as its argument. */
#include <stdio.h>
#include <stdlib.h>

#define INLINE static inline __attribute__((always_inline))
#define KEEP __asm__ volatile("" ::: "memory")

static volatile long sink;
static volatile long n_walk, n_other, n_inner;

long walk(int depth);
long inner(int n);

INLINE long visit(int depth)
{
   long s = 0;
   for (int i = 0; i < 3; i++) {
      s += i * depth;
      KEEP;
   }
   if (depth > 0) s += walk(depth - 1);
   return s;
}

__attribute__((noinline)) long walk(int depth)
{
   n_walk++;
   return visit(depth) + 1;
}

__attribute__((noinline)) long other(int depth)
{
   n_other++;
   return visit(depth) + 2;
}

INLINE long wrap_visit(int n, int call)
{
   long s = n;
   KEEP;
   if (call) s += inner(n);
   return s * 3;
}

INLINE long wrap_mid(int n, int call)
{
   long s = wrap_visit(n, call);
   KEEP;
   return s + 2;
}

INLINE long wrap(int n, int call)
{
   long s = wrap_mid(n, call);
   KEEP;
   return s + 1;
}

INLINE long alt(int n, int call)
{
   long s = wrap_mid(n, call);
   KEEP;
   return s - 1;
}

__attribute__((noinline)) long inner(int n)
{
   n_inner++;
   return wrap(n, 0);
}

__attribute__((noinline)) long outer(int n) { return wrap(n, 1) + wrap(n + 1, 0); }
__attribute__((noinline)) long shim(int n) { return alt(n, 1); }

int main(int argc, char** argv)
{
   long rounds = argc > 1 ? atol(argv[1]) : 100;
   for (long r = 0; r < rounds; r++) {
      sink += walk(3);
      sink += other(2);
      sink += outer((int)r);
      sink += shim((int)r);
      sink += inner((int)r);
   }
   printf("%ld %ld %ld\n", (long)n_walk, (long)n_other, (long)n_inner);
   return 0;
}
