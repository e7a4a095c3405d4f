/* What must stay a return or an unwind on a coroutine stack (a negative
   control for the switches kgrind finds between coroutine stacks in one
   mapping): deep recursion with large VLA frames left by a longjmp far up,
   by an exception thrown through it, and by returns; a signal's handler at
   its bottom; tail calls. run_work does all of it once, on main's stack and
   in two coroutines whose stacks are carved from one malloc'd block
   (unregistered; the second below the first), which switch to each other
   (swapcontext) after each run: the coroutines' contexts below run_work are
   main's. argv: depth, rounds per coroutine. Prints how often each
   function ran. */
#include <csetjmp>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ucontext.h>

static const size_t kStack = 8u << 20;
static long depth;
static int rounds;
static ucontext_t main_ctx, co_ctx[2];
static jmp_buf far_up;
static volatile long sink;
static long count_jump, count_throw, count_plain, count_handler, count_tail, count_work;

struct Deep {
   long at;
};

/* n more frames of ~1 KB each (a VLA), then the way out. */
__attribute__((noinline)) void dive_jump(long n)
{
   count_jump++;
   volatile char frame[1000 + (n & 7)];
   frame[0] = (char)n;
   if (n == 0) longjmp(far_up, 1);
   dive_jump(n - 1);
   sink += frame[0];
}

__attribute__((noinline)) void dive_throw(long n)
{
   count_throw++;
   volatile char frame[1000 + (n & 7)];
   frame[0] = (char)n;
   if (n == 0) throw Deep{n};
   dive_throw(n - 1);
   sink += frame[0];
}

extern "C" void on_signal(int) { count_handler++; }

__attribute__((noinline)) void dive_plain(long n)
{
   count_plain++;
   volatile char frame[1000 + (n & 7)];
   frame[0] = (char)n;
   if (n == 0) raise(SIGUSR1);
   else dive_plain(n - 1);
   sink += frame[0];
}

/* tail_a's call of tail_b is a tail call (a jump at -O2), which enters
   tail_b at tail_a's SP. */
__attribute__((noinline)) long tail_b(long n)
{
   count_tail++;
   sink += n;
   return n + 1;
}

__attribute__((noinline)) long tail_a(long n)
{
   count_tail++;
   return tail_b(n * 3);
}

__attribute__((noinline)) void run_work()
{
   count_work++;
   if (!setjmp(far_up)) dive_jump(depth);
   try {
      dive_throw(depth);
   } catch (const Deep& d) {
      sink += d.at;
   }
   dive_plain(depth);
   sink += tail_a(depth);
}

__attribute__((noinline)) void co_entry(int id)
{
   for (int r = 0; r < rounds; r++) {
      run_work();
      swapcontext(&co_ctx[id], id == 0 ? &co_ctx[1] : r + 1 < rounds ? &co_ctx[0] : &main_ctx);
   }
   abort();
}

int main(int argc, char** argv)
{
   if (argc != 3) return 2;
   depth = atol(argv[1]);
   rounds = atoi(argv[2]);
   if (depth < 1 || (size_t)depth * 1100 > kStack - 65536 || rounds < 1) return 2;
   signal(SIGUSR1, on_signal);
   run_work();
   char* block = static_cast<char*>(malloc(2 * kStack));
   for (int id = 0; id < 2; id++) {
      getcontext(&co_ctx[id]);
      co_ctx[id].uc_stack.ss_sp = block + (1 - id) * kStack;   // the second below the first
      co_ctx[id].uc_stack.ss_size = kStack;
      co_ctx[id].uc_link = nullptr;
      makecontext(&co_ctx[id], (void (*)())co_entry, 1, id);
   }
   swapcontext(&main_ctx, &co_ctx[0]);
   printf("co_unwind: run_work %ld dive_jump %ld dive_throw %ld dive_plain %ld on_signal %ld tail %ld\n",
          count_work, count_jump, count_throw, count_plain, count_handler, count_tail);
   return 0;
}
