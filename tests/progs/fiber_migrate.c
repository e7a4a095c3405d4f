/* Fibers that move between worker threads, as job systems and fiber
   schedulers with work stealing move them (folly fibers, marl, boost.fiber,
   Go-like runtimes): three fibers, two worker threads that take turns (a
   mutex and a condition variable hand the run queue over, so the order is
   the same in every run). In its turn a worker takes the fiber at the
   queue's head and resumes it from its own stack; that fiber yields back
   to the worker, or in `direct` mode switches directly to the next fiber of
   the queue, which yields back to the worker (as boost.fiber switches from
   fiber to fiber). The worker queues them again and gives the turn to the
   other worker: the fibers run on the two workers in turn, their frames
   open across the moves.
   Fiber i yields from a depth of its own:
     0: fiber_body > step
     1: fiber_body > mid > step (twice per round)
     2: fiber_body > deep > mid > step, deep > step
   each step calling work, yielding, calling work again i + 1 times.
   argv: rounds; where the stacks are (register: malloc'd and registered
   with VALGRIND_STACK_REGISTER by the main thread; heap: malloc'd, not
   registered); how fibers switch (swap: swapcontext; asm: a minimal amd64
   switch that saves the callee-saved registers and SP and returns on the
   other stack); whom a fiber yields to (worker, or direct); and if given,
   the workers' turns, after which they end and the main thread (worker 2)
   runs the fibers to their end.
   Prints each fiber's work calls and each worker's, for the tests to
   compare with the profile. */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <ucontext.h>
#include <valgrind/valgrind.h>

#define FIBERS 3
#define WORKERS 2
#define STACK (64 * 1024)

/* Where a switch goes on. */
typedef struct {
   ucontext_t uc;     /* swap */
   void* sp;          /* asm: the SP its registers were saved at */
} Context;

typedef struct {
   int id;
   int worker;        /* the worker running it now */
   int done;
   long work;         /* its own count of work calls */
   Context ctx;
   char* stack;
} Fiber;

#define PER_TURN 2    /* fibers a worker runs in a turn, in direct mode */

static Fiber fibers[FIBERS];
/* The workers, and the main thread as the last one. */
static Context worker_ctx[WORKERS + 1];
static long worker_work[WORKERS + 1];   /* work calls each worker ran */
static Fiber* turn_fibers[WORKERS + 1][PER_TURN];   /* a worker's fibers of its turn */
static int turn_len[WORKERS + 1], turn_at[WORKERS + 1];
static int use_asm, per_turn = 1;
static long rounds;
static volatile long sink;
static __thread Fiber* starting;    /* the fiber a worker starts */

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t turn_changed = PTHREAD_COND_INITIALIZER;
static int turn, live = FIBERS, workers_started;
static long turns_left = -1;        /* the workers' turns (-1: until the end) */
static Fiber* queue[FIBERS];
static int queue_head, queue_len;

#include "co_switch.h"

static void switch_context(Context* from, Context* to)
{
   if (use_asm) co_switch(&from->sp, to->sp);
   else swapcontext(&from->uc, &to->uc);
}

/* Worker w runs f now (it may start there). */
static void run_on(Fiber* f, int w, Context* from)
{
   f->worker = w;
   starting = f;
   switch_context(from, &f->ctx);
}

/* To the next fiber of the worker's turn, else back to the worker. */
__attribute__((noinline)) void yield_(Fiber* f)
{
   int w = f->worker;
   if (turn_at[w] + 1 < turn_len[w]) run_on(turn_fibers[w][++turn_at[w]], w, &f->ctx);
   else switch_context(&f->ctx, &worker_ctx[w]);
}

__attribute__((noinline)) void work(Fiber* f)
{
   f->work++;
   worker_work[f->worker]++;
   sink += f->id;
}

__attribute__((noinline)) void step(Fiber* f)
{
   work(f);
   yield_(f);
   for (int i = 0; i <= f->id; i++) work(f);
}

__attribute__((noinline)) void mid(Fiber* f)
{
   step(f);
   step(f);
}

__attribute__((noinline)) void deep(Fiber* f)
{
   mid(f);
   step(f);
}

__attribute__((noinline)) void fiber_body(Fiber* f)
{
   for (long r = 0; r < rounds; r++) {
      if (f->id == 0) step(f);
      else if (f->id == 1) mid(f);
      else deep(f);
   }
}

/* Entered by a fiber's first switch; its last yield never returns. */
__attribute__((noinline)) void fiber_entry(void)
{
   Fiber* f = starting;
   fiber_body(f);
   f->done = 1;
   yield_(f);
   abort();
}

/* Worker w's turn (the lock held): the fibers at the queue's head run
   until the last of them yields back, then go back to the queue. */
static void run_turn(int w)
{
   turn_len[w] = queue_len < per_turn ? queue_len : per_turn;
   turn_at[w] = 0;
   for (int i = 0; i < turn_len[w]; i++) {
      turn_fibers[w][i] = queue[queue_head];
      queue_head = (queue_head + 1) % FIBERS;
      queue_len--;
   }
   pthread_mutex_unlock(&lock);
   run_on(turn_fibers[w][0], w, &worker_ctx[w]);
   pthread_mutex_lock(&lock);
   for (int i = 0; i < turn_len[w]; i++) {
      Fiber* f = turn_fibers[w][i];
      if (f->done) live--;
      else queue[(queue_head + queue_len++) % FIBERS] = f;
   }
}

static void* worker_main(void* arg)
{
   int w = (int)(intptr_t)arg;
   pthread_mutex_lock(&lock);
   workers_started++;
   pthread_cond_broadcast(&turn_changed);
   for (;;) {
      while (live && turns_left && turn != w) pthread_cond_wait(&turn_changed, &lock);
      if (!live || !turns_left) break;
      run_turn(w);
      turns_left--;
      turn = (turn + 1) % WORKERS;
      pthread_cond_broadcast(&turn_changed);
   }
   pthread_mutex_unlock(&lock);
   return NULL;
}

/* The first switch to an asm fiber pops zeroed registers and returns into
   fiber_entry, whose return address slot holds 0. */
static void prepare_asm(Fiber* f)
{
   void** sp = (void**)(((uintptr_t)f->stack + STACK) & ~(uintptr_t)15);
   *--sp = 0;
   *--sp = (void*)fiber_entry;
   for (int r = 0; r < 6; r++) *--sp = 0;
   f->ctx.sp = sp;
}

int main(int argc, char** argv)
{
   if (argc != 5 && argc != 6) return 2;
   rounds = atol(argv[1]);
   int registers = strcmp(argv[2], "register") == 0;
   use_asm = strcmp(argv[3], "asm") == 0;
   if (strcmp(argv[4], "direct") == 0) per_turn = PER_TURN;
   if (argc == 6) turns_left = atol(argv[5]);
   if (rounds < 1 || (!registers && strcmp(argv[2], "heap") != 0)) return 2;
   unsigned stack_ids[FIBERS];
   for (int i = 0; i < FIBERS; i++) {
      Fiber* f = &fibers[i];
      f->id = i;
      f->stack = malloc(STACK);
      if (!f->stack) return 3;
      if (registers) stack_ids[i] = VALGRIND_STACK_REGISTER(f->stack, f->stack + STACK);
      if (use_asm) {
         prepare_asm(f);
      } else {
         ucontext_t* uc = &f->ctx.uc;
         getcontext(uc);
         uc->uc_stack.ss_sp = f->stack;
         uc->uc_stack.ss_size = STACK;
         uc->uc_link = NULL;
         makecontext(uc, fiber_entry, 0);
      }
      queue[queue_len++] = f;
   }
   pthread_t workers[WORKERS];
   /* Each worker runs before the next one is made: the workers are the
      process's threads 2 and 3 in the order they first ran. */
   for (int w = 0; w < WORKERS; w++) {
      if (pthread_create(&workers[w], NULL, worker_main, (void*)(intptr_t)w)) return 4;
      pthread_mutex_lock(&lock);
      while (workers_started <= w) pthread_cond_wait(&turn_changed, &lock);
      pthread_mutex_unlock(&lock);
   }
   for (int w = 0; w < WORKERS; w++) pthread_join(workers[w], NULL);
   /* The workers ended (their turns were counted): the main thread runs
      what is left of the fibers. */
   pthread_mutex_lock(&lock);
   while (live) run_turn(WORKERS);
   pthread_mutex_unlock(&lock);
   printf("fiber_migrate:");
   for (int i = 0; i < FIBERS; i++) printf(" fiber%d %ld", i, fibers[i].work);
   for (int w = 0; w <= WORKERS; w++) printf(" worker%d %ld", w, worker_work[w]);
   printf("\n");
   for (int i = 0; i < FIBERS; i++) {
      if (registers) VALGRIND_STACK_DEREGISTER(stack_ids[i]);
      free(fibers[i].stack);
   }
   return 0;
}
