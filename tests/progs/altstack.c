/* A handler running on an alternate signal stack, delivered in the middle
   of a call chain that continues afterwards. */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>

__attribute__((noinline, noipa)) void in_handler(void) { }
__attribute__((noinline)) void handler(int sig) { in_handler(); in_handler(); }
__attribute__((noinline)) int leaf(int x) { return x * 2; }
__attribute__((noinline)) int busy(int x) {
   int s = leaf(x);
   raise(SIGUSR1);
   s += leaf(x + 1);
   return s;
}

int main(void) {
   stack_t ss;
   ss.ss_sp = malloc(1 << 16);
   ss.ss_size = 1 << 16;
   ss.ss_flags = 0;
   sigaltstack(&ss, NULL);
   struct sigaction sa;
   sa.sa_handler = handler;
   sigemptyset(&sa.sa_mask);
   sa.sa_flags = SA_ONSTACK;
   sigaction(SIGUSR1, &sa, NULL);
   int s = 0;
   for (int i = 0; i < 2; i++) s += busy(i);
   printf("altstack: %d\n", s);
   return 0;
}
