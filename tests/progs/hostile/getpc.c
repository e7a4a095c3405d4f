/* The get-PC idiom: `call 1f; 1: pop` reads the program counter; it is not
   a call. where() runs it and is called 100 times from main. */
#include <stdio.h>

__attribute__((noinline)) static unsigned long where(void)
{
   unsigned long pc;
   __asm__ volatile("call 1f\n1:\tpop %0" : "=r"(pc) : : "memory");
   return pc;
}

__attribute__((noinline)) static long after_where(long x) { return x + 1; }

int main(void)
{
   unsigned long first = where();
   long same = 1, n = 0;
   for (int i = 1; i < 100; i++) {
      same += where() == first;
      n = after_where(n);
   }
   printf("getpc: %ld of 100 equal, %ld\n", same, n);
   return 0;
}
