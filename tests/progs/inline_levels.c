/* Functions inlined at -O2 (gcc's inline records): run and work are real
   calls; outer and sq are inlined into work, tick into branchy. Each
   inlined function counts its own calls. */
#include <stdio.h>
#include <stdlib.h>

static volatile long n_sq, n_outer, n_twice;
void bump(void);

static inline long sq(long x) { n_sq++; return x * x; }
static inline long outer(long x) { n_outer++; return sq(x) + 1; }
__attribute__((noinline)) void bump(void) { n_twice++; }
static inline void tick(void) { bump(); }

/* An inlined call in a loop. */
__attribute__((noinline)) long work(long n)
{
   long s = 0;
   for (long i = 0; i < n; i++) s += outer(i);
   return s;
}

/* An inlined call in a branch. */
__attribute__((noinline)) long branchy(long n)
{
   long s = 0;
   for (long i = 0; i < n; i++) {
      if (i % 3 == 0) tick();
      else s -= i;
   }
   return s;
}

__attribute__((noinline)) long run(long n) { return work(n) + branchy(n); }

int main(int argc, char** argv)
{
   long n = argc > 1 ? atol(argv[1]) : 1000;
   long r = run(n);
   printf("%ld %ld %ld %ld\n", r, n_sq, n_outer, n_twice);
   return 0;
}
