/* Work for the cache and branch simulation: strided reads and writes over
   arrays larger than the first-level cache (D1 and LL misses), accesses
   that straddle two lines, read-modify-writes, data-dependent branches,
   indirect calls through a table, and the same function called from two
   callers (two contexts). Prints a checksum. */
#include <stdio.h>
#include <string.h>

#define N (1 << 17)
static int big[N];
static unsigned char bytes[1 << 16] __attribute__((aligned(64)));

__attribute__((noinline)) long walk(int stride)
{
   long s = 0;
   for (int i = 0; i < N; i += stride) s += big[i]++;
   return s;
}

__attribute__((noinline)) long straddle(void)
{
   long s = 0;
   for (int i = 0; i + 72 < (int)sizeof bytes; i += 64) {
      long v;
      memcpy(&v, bytes + i + 60, sizeof v);   /* bytes 60..67: two lines */
      s += v;
      memcpy(bytes + i + 124 - 64, &s, sizeof s);
   }
   return s;
}

__attribute__((noinline)) int branchy(int n)
{
   int c = 0;
   for (int i = 0; i < n; i++)
      if ((i * 7919) % 3 == 0 || (i & 12) == 4) c++;
   return c;
}

static int twice(int x) { return 2 * x; }
static int square(int x) { return x * x; }
static int negate(int x) { return -x; }
static int (*const table[3])(int) = { twice, square, negate };

__attribute__((noinline)) long indirect(int n)
{
   long s = 0;
   for (int i = 0; i < n; i++) s += table[(i * i) % 3](i);
   return s;
}

__attribute__((noinline)) long caller_a(void) { return walk(16); }
__attribute__((noinline)) long caller_b(void) { return walk(1); }

int main(void)
{
   long s = 0;
   for (int r = 0; r < 3; r++) s += caller_a() + caller_b();
   s += straddle();
   s += branchy(50000);
   s += indirect(20000);
   printf("%ld\n", s);
   return 0;
}
