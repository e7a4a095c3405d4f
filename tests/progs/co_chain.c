/* argv[1] makecontext coroutines, their stacks side by side in one mmap, each
   below the one before (SP moving down looks like a deeper call), that end
   by returning: uc_link starts the next one (a coroutine not yet run), the
   last goes back to main. Each raises a signal whose handler runs on a
   sigaltstack. Prints its own counts. */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <ucontext.h>

#define MAX 16
#define STACK (64 * 1024)
static ucontext_t main_ctx, co[MAX];
static volatile long sink;
static long handled, nested;

__attribute__((noinline)) void handler_work(int sig) { sink += sig; handled++; }
static void on_signal(int sig) { handler_work(sig); }
__attribute__((noinline)) void nest(int d)
{
   nested++;
   if (d > 0) nest(d - 1);
   else raise(SIGUSR1);
}
__attribute__((noinline)) void body(int id) { nest(id + 1); }
__attribute__((noinline)) void after_chain(void) { sink++; }

int main(int argc, char **argv)
{
   int n = argc > 1 ? atoi(argv[1]) : 4;
   if (n < 1 || n > MAX) return 2;
   stack_t alt = {.ss_sp = malloc(SIGSTKSZ * 4), .ss_size = SIGSTKSZ * 4};
   sigaltstack(&alt, NULL);
   struct sigaction sa = {.sa_handler = on_signal, .sa_flags = SA_ONSTACK};
   sigaction(SIGUSR1, &sa, NULL);
   char *stacks = mmap(NULL, (size_t)n * STACK, PROT_READ | PROT_WRITE,
                       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
   for (int i = 0; i < n; i++) {
      getcontext(&co[i]);
      co[i].uc_stack.ss_sp = stacks + (size_t)(n - 1 - i) * STACK;   /* each below the last */
      co[i].uc_stack.ss_size = STACK;
      co[i].uc_link = i + 1 < n ? &co[i + 1] : &main_ctx;
      makecontext(&co[i], (void (*)(void))body, 1, i);
   }
   swapcontext(&main_ctx, &co[0]);
   after_chain();
   printf("co_chain: body %d nest %ld handler_work %ld\n", n, nested, handled);
   return 0;
}
