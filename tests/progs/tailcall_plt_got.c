/* A tail call through a .plt.got stub after calls of the same function
   through a pointer (sqlite3LeaveMutexAndCloseZombie's calls of
   sqlite3_free on Debian 12): puts's address is taken, so its calls go
   through .plt.got; say() calls puts through put_ptr n times, then
   tail-jumps to it. The program counts the calls itself. */
#include <stdio.h>
int (*volatile put_ptr)(const char *);
static volatile int calls;
__attribute__((noinline)) int say(const char *s, int n)
{
   for (int i = 0; i < n; i++) {
      put_ptr(s);
      calls++;
   }
   calls++;
   return puts(s);
}
int main(void)
{
   put_ptr = puts;
   for (int i = 0; i < 3; i++)
      say("x", 3);
   printf("say called puts %d times\n", calls);
   return 0;
}
