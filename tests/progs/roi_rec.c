/* A recursive function named by --toggle-collect, and code outside it. */
#include <stdio.h>

static volatile long sink;

__attribute__((noinline)) long rec(int n) { sink++; return n ? rec(n - 1) + 1 : 0; }
__attribute__((noinline)) void outside(void) { for (int i = 0; i < 1000; i++) sink += i; }

int main(void)
{
   outside();
   printf("%ld\n", rec(300));
   outside();
   return 0;
}
