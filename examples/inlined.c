/* Functions that gcc -O2 inlines: scale and square have no code of their
   own; their instructions lie inside sum_scaled's (see the manual,
   "Inlined functions"). */
#include <stdio.h>

static inline long square(long x) { return x * x; }
static inline long scale(long x) { return 3 * square(x) + 1; }

__attribute__((noinline)) long sum_scaled(long n)
{
   long s = 0;
   for (long i = 0; i < n; i++) s += scale(i);
   return s;
}

int main(void)
{
   printf("%ld\n", sum_scaled(100000));
   return 0;
}
