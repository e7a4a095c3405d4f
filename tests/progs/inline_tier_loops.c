/* Two hot loops for the levels' tier: `stay` runs a loop wholly inside one
   inlined function (its superblock starts in that level at every
   iteration: no level changes), `step` a loop of the function's own code
   that enters two inlined functions at every iteration (level changes in
   every run of its superblock). Run as: inline_tier_loops stay|step N. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define INLINE static inline __attribute__((always_inline))
#define KEEP __asm__ volatile("" ::: "memory")

static volatile long sink;

INLINE long mix_in_level(long n)
{
   long s = 1;
   for (long i = 0; i < n; i++) {
      KEEP;
      s = s * 31 + (i ^ (s >> 7));
   }
   return s;
}

INLINE long scramble(long x) { KEEP; return x * 5 + 3; }
INLINE long fold(long x) { KEEP; return x ^ (x >> 11); }

__attribute__((noinline)) long stay(long n) { return mix_in_level(n); }

__attribute__((noinline)) long step(long n)
{
   long s = 1;
   for (long i = 0; i < n; i++) {
      s = scramble(s + i);
      KEEP;
      s = fold(s);
      KEEP;
   }
   return s;
}

int main(int argc, char** argv)
{
   if (argc != 3) return 2;
   long n = atol(argv[2]);
   sink = strcmp(argv[1], "stay") == 0 ? stay(n) : step(n);
   printf("%s %ld\n", argv[1], n);
   return 0;
}
