/* A function with an inlined level, called alternately from main and from
   a function main calls: the level's k-context (at k = 2: locked >
   fast_path [inlined]) has a k-SF node under each, and the program
   alternates between them at every iteration, as threads' lock calls do
   with libc's inlined lock path. Run with the number of iterations. */
#include <stdio.h>
#include <stdlib.h>

#define INLINE static inline __attribute__((always_inline))
#define KEEP __asm__ volatile("" ::: "memory")

static volatile long sink;

INLINE long fast_path(long x)
{
   KEEP;
   long y = x * 3 + 1;
   KEEP;
   return y ^ (y >> 2);
}

__attribute__((noinline)) long locked(long x)
{
   if (x & 1) {
      KEEP;
      return fast_path(x) + 1;
   }
   return fast_path(x + 1);
}

__attribute__((noinline)) long via(long x) { return locked(x) + 1; }

int main(int argc, char** argv)
{
   if (argc != 2) return 2;
   long n = atol(argv[1]), s = 0;
   for (long i = 0; i < n; i++) s += (i & 2) ? locked(i) : via(i);
   sink = s;
   printf("%ld\n", n);
   return 0;
}
