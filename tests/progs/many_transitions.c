/* Many hot transitions: every function of level n calls both of level
 * n - 1, 12 levels down from a12, so that k=inf has a calling context for
 * each of the 8,191 chains, each with its transition and its inclusive
 * events' arrays; walked again and again. */
#include <stdlib.h>

volatile unsigned sink;

__attribute__((noinline)) static void a0(unsigned p) { sink += p; }
__attribute__((noinline)) static void b0(unsigned p) { sink -= p; }

#define LEVEL(n, m)                                                                          \
   __attribute__((noinline)) static void a##n(unsigned p)                                    \
   {                                                                                         \
      a##m(p * 2);                                                                           \
      b##m(p * 2 + 1);                                                                       \
      sink += p; /* not a tail call */                                                       \
   }                                                                                         \
   __attribute__((noinline)) static void b##n(unsigned p)                                    \
   {                                                                                         \
      b##m(p * 2);                                                                           \
      a##m(p * 2 + 1);                                                                       \
      sink -= p;                                                                             \
   }
LEVEL(1, 0) LEVEL(2, 1) LEVEL(3, 2) LEVEL(4, 3) LEVEL(5, 4) LEVEL(6, 5)
LEVEL(7, 6) LEVEL(8, 7) LEVEL(9, 8) LEVEL(10, 9) LEVEL(11, 10) LEVEL(12, 11)

int main(int argc, char** argv)
{
   int walks = argc > 1 ? atoi(argv[1]) : 100;
   for (int i = 0; i < walks; i++) a12(1);
   return 0;
}
