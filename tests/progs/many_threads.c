/* Threads created and joined one after another, more of them over the run's
   life than Valgrind has thread slots (500 by default): every thread's work
   must reach the profile. Each thread calls work() a known number of times;
   the program prints the total it counted. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

static volatile long sink;
static long calls_of_work;
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;

__attribute__((noinline)) void work(long i) { sink += i * i; }

__attribute__((noinline)) void* body(void* arg)
{
   long n = (long)arg;
   for (long i = 0; i < n; i++) work(i);
   pthread_mutex_lock(&lock);
   calls_of_work += n;
   pthread_mutex_unlock(&lock);
   return NULL;
}

int main(int argc, char** argv)
{
   int threads = argc > 1 ? atoi(argv[1]) : 600;
   for (long t = 0; t < threads; t++) {
      pthread_t th;
      if (pthread_create(&th, NULL, body, (void*)(t % 7 + 1)) != 0) return 1;
      pthread_join(th, NULL);
   }
   for (long i = 0; i < 10; i++) work(i);   /* main's own calls, after them all */
   calls_of_work += 10;
   printf("work calls: %ld\n", calls_of_work);
   return 0;
}
