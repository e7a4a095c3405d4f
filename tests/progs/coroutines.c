/* A coroutine on its own stack, resumed many times with swapcontext: a stack
   switch must not look like a mass return, nor make the shadow stack grow. */
#include <stdio.h>
#include <stdlib.h>
#include <ucontext.h>

static ucontext_t main_ctx, co_ctx;
static volatile long shared;

__attribute__((noinline)) void co_leaf(long i) { shared += i; }
__attribute__((noinline)) void coroutine(void)
{
   for (long i = 0;; i++) {
      co_leaf(i);
      swapcontext(&co_ctx, &main_ctx);
   }
}
__attribute__((noinline)) void main_leaf(long i) { shared -= i / 2; }

int main(void)
{
   size_t size = 1 << 16;
   getcontext(&co_ctx);
   co_ctx.uc_stack.ss_sp = malloc(size);
   co_ctx.uc_stack.ss_size = size;
   co_ctx.uc_link = &main_ctx;
   makecontext(&co_ctx, coroutine, 0);
   for (long i = 0; i < 2000; i++) {
      swapcontext(&main_ctx, &co_ctx);
      main_leaf(i);
   }
   printf("coroutines: %ld\n", shared);
   return 0;
}
