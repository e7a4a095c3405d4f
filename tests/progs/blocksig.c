/* A traced loop interrupted by signals whose handler runs traced code (block
   modes): raise() delivers SIGUSR1 inside libc, so the handler's blocks come
   between the loop's at the same points in every run. */
#include <signal.h>
#include <stdio.h>

volatile long sink;

__attribute__((noinline)) void handler_work(int n)
{
   for (int i = 0; i < n; i++)
      if (i % 2) sink++;
}

void on_signal(int sig) { handler_work(sig % 7); }

__attribute__((noinline)) void loop(int n)
{
   for (int i = 0; i < n; i++) {
      if (i % 3) sink++;
      if (i % 25 == 12) raise(SIGUSR1);
   }
}

int main(void)
{
   signal(SIGUSR1, on_signal);
   loop(1000);
   printf("%ld\n", sink);
   return 0;
}
