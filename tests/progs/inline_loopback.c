/* A jump back to a function's first instruction from a level inlined into
   it (--inline-frames): hop, inlined into walk, ends in a tail call
   through a pointer to walk itself, which the compiler makes an indirect
   jump to walk's entry, an instruction of walk's own code. kgrind takes a
   jump to a function's own entry for a loop, so walk's first block runs
   with hop's level still on top: the level must end there, and be entered
   again at each hop. The program counts walk's runs and hop's entries. */
#include <stdio.h>
#include <stdlib.h>

static volatile long n_walk, n_hop;

__attribute__((noinline)) long walk(long n, long acc);
static long (*volatile walk_again)(long, long) = walk;

static inline __attribute__((always_inline)) long hop(long n, long acc)
{
   n_hop++;
   if (acc & 1) acc = acc * 3 + 1;
   return walk_again(n - 1, acc + n);
}

__attribute__((noinline)) long walk(long n, long acc)
{
   n_walk++;
   if (n <= 0) return acc;
   return hop(n, acc);
}

int main(int argc, char** argv)
{
   long n = argc > 1 ? atol(argv[1]) : 50;
   long walks = argc > 2 ? atol(argv[2]) : 20;
   long sum = 0;
   for (long i = 0; i < walks; i++) sum += walk(n, i);
   printf("%ld %ld %ld\n", sum & 0xffff, n_walk, n_hop);
   return 0;
}
