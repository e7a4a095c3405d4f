/* Thread lifetimes against per-thread shadow stacks.
     threads mix      threads created and joined one after another, threads
                      creating threads, pthread_exit and pthread_cancel deep
                      in calls, detached threads still running at exit
     threads exit     exit() from a thread deep in calls, main blocked in join
     threads many N   N threads created and joined one after another */
#define _GNU_SOURCE
#include <pthread.h>
#include <semaphore.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static volatile long sink;

__attribute__((noinline)) static long leaf(long x) { sink += x; return x ^ (x >> 2); }
__attribute__((noinline)) static long middle(long x)
{
   long s = 0;
   for (long i = 0; i < 20; i++) s += leaf(x + i);
   return s;
}
static void *worker(void *arg) { return (void *)middle((long)arg); }

static void start(pthread_t *t, void *(*fn)(void *), void *arg)
{
   if (pthread_create(t, NULL, fn, arg) != 0) { perror("pthread_create"); exit(99); }
}
static long join(pthread_t t)
{
   void *ret;
   if (pthread_join(t, &ret) != 0) { perror("pthread_join"); exit(98); }
   return ret == PTHREAD_CANCELED ? -1 : (long)ret;
}

static long sequential(long n)
{
   long sum = 0;
   for (long i = 0; i < n; i++) {
      pthread_t t;
      start(&t, worker, (void *)i);
      sum += join(t);
   }
   return sum;
}

/* Each thread of the tree starts two children one level down: 2+4+8 threads. */
static void *spawner(void *arg)
{
   long level = (long)arg;
   if (level == 0) return (void *)middle(level);
   pthread_t a, b;
   start(&a, spawner, (void *)(level - 1));
   start(&b, spawner, (void *)(level - 1));
   return (void *)(join(a) + join(b) + 1);
}

__attribute__((noinline)) static long exit_at(long depth)
{
   if (depth == 0) pthread_exit((void *)(long)4242);
   return exit_at(depth - 1) + leaf(depth);
}
static void *exiter(void *arg) { return (void *)exit_at((long)arg); }

static sem_t ready, never;
__attribute__((noinline)) static long block_at(long depth)
{
   if (depth == 0) {
      sem_post(&ready);
      for (;;) sem_wait(&never);      /* a cancellation point */
   }
   return block_at(depth - 1) + leaf(depth);
}
static void *blocker(void *arg) { return (void *)block_at((long)arg); }

static void *lingerer(void *arg)
{
   (void)arg;
   for (;;) { middle(7); usleep(1000); }
   return NULL;
}

__attribute__((noinline)) static void exit_deep(long depth)
{
   if (depth == 0) { fflush(stdout); exit(3); }
   exit_deep(depth - 1);
   leaf(depth);
}
static void *exit_thread(void *arg) { exit_deep((long)arg); return NULL; }

int main(int argc, char **argv)
{
   const char *what = argc > 1 ? argv[1] : "mix";
   if (strcmp(what, "many") == 0) {
      long n = argc > 2 ? atol(argv[2]) : 600;
      printf("threads many: %ld threads, sum %ld\n", n, sequential(n));
      return 0;
   }
   if (strcmp(what, "exit") == 0) {
      pthread_t t;
      printf("threads exit: before\n");
      start(&t, exit_thread, (void *)20);
      join(t);
      printf("not reached\n");
      return 0;
   }
   long seq = sequential(40);
   pthread_t t;
   start(&t, spawner, (void *)3);
   long tree = join(t);
   start(&t, exiter, (void *)40);
   long exited = join(t);
   sem_init(&ready, 0, 0);
   sem_init(&never, 0, 0);
   start(&t, blocker, (void *)40);
   sem_wait(&ready);
   pthread_cancel(t);
   long cancelled = join(t);
   for (int i = 0; i < 3; i++) {
      start(&t, lingerer, NULL);
      pthread_detach(t);
   }
   printf("threads mix: sequential %ld tree %ld exited %ld cancelled %ld\n", seq, tree, exited,
          cancelled);
   return 0;
}
