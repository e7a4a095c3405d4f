/* Call-heavy workload: deep recursion and many tiny functions. */
#include <stdio.h>
#include <stdlib.h>

__attribute__((noinline)) static unsigned mix(unsigned x) { return x * 2654435761u ^ (x >> 13); }
__attribute__((noinline)) static unsigned add1(unsigned x) { return mix(x) + 1; }
__attribute__((noinline)) static unsigned add2(unsigned x) { return add1(x) + add1(x ^ 7); }
__attribute__((noinline)) static unsigned fib(unsigned n) { return n < 2 ? n : fib(n - 1) + fib(n - 2); }
__attribute__((noinline)) static unsigned walk(unsigned depth, unsigned x)
{
   if (depth == 0) return add2(x);
   return walk(depth - 1, mix(x)) + (depth & 1 ? add1(x) : 0);
}

int main(int argc, char** argv)
{
   unsigned scale = argc > 1 ? (unsigned)atoi(argv[1]) : 1;
   unsigned s = 0;
   for (unsigned r = 0; r < scale; r++) {
      s += fib(24);
      for (unsigned i = 0; i < 2000; i++) s += walk(40, i);
   }
   printf("callheavy: %u\n", s);
   return 0;
}
