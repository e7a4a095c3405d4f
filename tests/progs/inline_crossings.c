/* Nested inlined functions entered and left several levels at once
   (--inline-frames): a, b, c and d are inlined into one another and have
   no code of their own but the innermost's, so control enters a > b > c
   > d from the caller's own code in one step and leaves it in one; pair
   goes from a > b > c > d to e > f > g under it; rec recurses from inside
   x > y > z (to the depth its second argument gives). Each inlined
   function counts its own entries. */
#include <stdio.h>
#include <stdlib.h>

#define INLINE static inline __attribute__((always_inline))
#define KEEP __asm__ volatile("" ::: "memory")

static volatile long n_d, n_g, n_z, n_own, n_rec;

INLINE void d(void) { KEEP; n_d++; KEEP; }
INLINE void c(void) { d(); }
INLINE void b(void) { c(); }
INLINE void a(void) { b(); }
INLINE void g(void) { KEEP; n_g++; KEEP; }
INLINE void f(void) { g(); }
INLINE void e(void) { f(); }
INLINE void pair(void) { a(); e(); }

/* own > a>b>c>d (4 levels pushed), back (4 popped); own > pair>a>b>c>d
   (5 pushed), > pair>e>f>g (4 popped, 3 pushed), back (4 popped). */
__attribute__((noinline)) void deep(long n)
{
   for (long i = 0; i < n; i++) {
      a();
      n_own++;
      pair();
      n_own++;
   }
}

__attribute__((noinline)) long rec(long depth);
/* Called through a pointer: a real call, which the compiler cannot turn
   into a loop. */
static long (*volatile rec_call)(long) = rec;
INLINE long z(long depth) { KEEP; n_z++; KEEP; return depth > 1 ? rec_call(depth - 1) : 0; }
INLINE long y(long depth) { return z(depth) + 1; }
INLINE long x(long depth) { return y(depth) * 3; }

/* Recursion from inside x > y > z: each call enters its levels, calls
   itself from z, and leaves them. */
__attribute__((noinline)) long rec(long depth)
{
   n_rec++;
   return x(depth) + depth;
}

int main(int argc, char** argv)
{
   long n = argc > 1 ? atol(argv[1]) : 100;
   long depth = argc > 2 ? atol(argv[2]) : 4;
   long r = 0;
   deep(n);
   for (long i = 0; i < n; i++) r += rec(depth);
   printf("%ld %ld %ld %ld %ld %ld\n", r, n_d, n_g, n_z, n_own, n_rec);
   return 0;
}
