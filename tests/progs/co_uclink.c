/* makecontext coroutines on heap stacks that end by returning through
   uc_link (glibc's __start_context then setcontext), argv[1] of them one
   after another: main's later calls are main's own, and no frame of a
   finished coroutine stays on main's stack. */
#include <stdio.h>
#include <stdlib.h>
#include <ucontext.h>

static ucontext_t main_ctx, co_ctx;
static volatile long sink;

__attribute__((noinline)) void co_leaf(long i) { sink += i; }
__attribute__((noinline)) void co_body(void) { co_leaf(1); co_leaf(2); }
__attribute__((noinline)) void after(long i) { sink -= i; }

int main(int argc, char** argv)
{
   long n = argc > 1 ? atol(argv[1]) : 3;
   size_t size = 1 << 16;
   for (long i = 0; i < n; i++) {
      char* stack = malloc(size);
      getcontext(&co_ctx);
      co_ctx.uc_stack.ss_sp = stack;
      co_ctx.uc_stack.ss_size = size;
      co_ctx.uc_link = &main_ctx;
      makecontext(&co_ctx, co_body, 0);
      swapcontext(&main_ctx, &co_ctx);
      after(i);
      free(stack);
   }
   printf("co_uclink: %ld %ld\n", n, sink);
   return 0;
}
