/* A signal handler that leaves by siglongjmp, then more calls. */
#include <setjmp.h>
#include <signal.h>
#include <stdio.h>

static sigjmp_buf env;
__attribute__((noinline, noipa)) void in_handler(void) { }
__attribute__((noinline)) void handler(int sig) { in_handler(); siglongjmp(env, 1); }
__attribute__((noinline)) void deep2(void) { raise(SIGUSR1); }
__attribute__((noinline)) void deep1(void) { deep2(); }
__attribute__((noinline)) int after(int x) { return x + 1; }

int main(void) {
   signal(SIGUSR1, handler);
   int n = 0;
   for (int i = 0; i < 3; i++) {
      if (!sigsetjmp(env, 1)) deep1();
      n = after(n);
   }
   printf("siglongjmp: %d\n", n);
   return 0;
}
