/* Does some work, then dies by SIGSEGV (a real invalid access). */
#include <stdio.h>

__attribute__((noinline)) static long work(long n) { long s = 0; for (long i = 0; i < n; i++) s += i ^ (i >> 3); return s; }
__attribute__((noinline)) static void crash(volatile int* p) { *p = 42; }

int main(void)
{
   printf("sigdeath: %ld\n", work(5000));
   fflush(stdout);
   crash((volatile int*)0);
   return 0;
}
