/* Inlined levels (always inlined functions, --inline-frames) around control
   flow that leaves or enters them abruptly: a hot loop in a level, a
   recursion made from inside a level, a signal raised from inside a level
   whose handler has levels of its own, a longjmp out of nested levels,
   and a coroutine switched to and from inside levels. Every inlined
   function counts its own entries; the program prints the counts. Run
   with the number of rounds as its argument. */
#include <setjmp.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <ucontext.h>

#define INLINE static inline __attribute__((always_inline))
#define KEEP __asm__ volatile("" ::: "memory")

static volatile long n_step, n_descend, n_handle, n_raise, n_bail, n_guard, n_yield, n_resume;
static volatile long sink;
static jmp_buf escape;
static ucontext_t main_ctx, co_ctx;

INLINE long step(long x) { n_step++; KEEP; return x * 3 + 1; }

/* A hot loop whose body is a level. */
__attribute__((noinline)) long loop(long n)
{
   long s = 0;
   for (long i = 0; i < n; i++) s += step(i);
   return s;
}

/* Recursion made from inside a level. */
__attribute__((noinline)) long rec(long d);
INLINE long descend(long d) { n_descend++; KEEP; return d > 0 ? rec(d - 1) + 1 : 0; }
__attribute__((noinline)) long rec(long d) { return descend(d) + step(d); }

/* A handler with a level of its own, for a signal raised from a level. */
INLINE void handle(int sig) { n_handle++; KEEP; sink += sig; }
static void on_signal(int sig) { handle(sig); }
INLINE void raise_from_level(void) { n_raise++; KEEP; raise(SIGUSR1); KEEP; }

/* A longjmp out of two nested levels. */
INLINE void bail(long i) { n_bail++; KEEP; if (i % 2) longjmp(escape, 1); KEEP; }
INLINE void guard(long i) { n_guard++; KEEP; bail(i); KEEP; }

/* A coroutine switched to and from inside levels. */
INLINE void yield(void) { n_yield++; KEEP; swapcontext(&co_ctx, &main_ctx); KEEP; }
INLINE void resume(void) { n_resume++; KEEP; swapcontext(&main_ctx, &co_ctx); KEEP; }
__attribute__((noinline)) void coroutine(void)
{
   for (long i = 0;; i++) {
      sink += step(i);
      yield();
   }
}

int main(int argc, char** argv)
{
   long rounds = argc > 1 ? atol(argv[1]) : 100;
   signal(SIGUSR1, on_signal);
   size_t size = 1 << 16;
   getcontext(&co_ctx);
   co_ctx.uc_stack.ss_sp = malloc(size);
   co_ctx.uc_stack.ss_size = size;
   co_ctx.uc_link = &main_ctx;
   makecontext(&co_ctx, coroutine, 0);
   long s = 0;
   for (long r = 0; r < rounds; r++) {
      s += loop(50);
      s += rec(r % 20);
      if (r % 3 == 0) raise_from_level();
      if (setjmp(escape) == 0) guard(r);
      resume();
   }
   printf("%ld step %ld descend %ld handle %ld raise_from_level %ld bail %ld guard %ld yield %ld resume %ld\n", s, n_step,
          n_descend, n_handle, n_raise, n_bail, n_guard, n_yield, n_resume);
   return 0;
}
