/* Several threads with different call paths. Each is joined before the next
   starts, after a pause long enough for it to have finished: a join that
   has to wait runs a scheduling-dependent number of futex iterations, which
   would make exact totals vary between runs and tools. */
#include <pthread.h>
#include <stdio.h>
#include <time.h>

#define NTHREADS 4
__attribute__((noinline)) static long sum_to(long n) { long s = 0; for (long i = 0; i < n; i++) s += i; return s; }
__attribute__((noinline)) static long squares(long n) { long s = 0; for (long i = 0; i < n; i++) s += i * i; return s; }

static void* worker(void* arg)
{
   long id = (long)arg;
   long r = (id % 2) ? sum_to(1000 * (id + 1)) : squares(500 * (id + 1));
   return (void*)r;
}

int main(void)
{
   pthread_t th[NTHREADS];
   long total = 0;
   for (long i = 0; i < NTHREADS; i++) {
      void* r;
      struct timespec pause = { 0, 150 * 1000 * 1000 };
      pthread_create(&th[i], NULL, worker, (void*)i);
      nanosleep(&pause, NULL);
      pthread_join(th[i], &r);
      total += (long)r;
   }
   printf("threads: %ld\n", total);
   return 0;
}
