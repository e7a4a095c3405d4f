/* Small loops that VEX unrolls into one superblock (one side exit per
   copy), with early exits taken at data-dependent iterations. */
#include <stdio.h>

#define N 4096

static int data[N];

__attribute__((noinline)) static int find(int key)
{
   for (int i = 0; i < N; i++)
      if (data[i] == key) return i;
   return -1;
}

__attribute__((noinline)) static unsigned bits(unsigned x)
{
   unsigned n = 0;
   while (x) {
      x &= x - 1;
      n++;
   }
   return n;
}

__attribute__((noinline)) static long sum_until_negative(int from)
{
   long s = 0;
   for (int i = from; i < N; i++) {
      if (data[i] < 0) break;
      s += data[i];
   }
   return s;
}

int main(void)
{
   for (int i = 0; i < N; i++) data[i] = (i * 7919) % 1000 - (i % 97 == 96 ? 2000 : 0);
   long total = 0;
   for (int r = 0; r < 40; r++) {
      total += find((r * 37) % 1000);
      total += sum_until_negative(r * 50);
   }
   for (int i = 0; i < N; i++) total += bits((unsigned)data[i] * 2654435761u);
   printf("loops: %ld\n", total);
   return 0;
}
