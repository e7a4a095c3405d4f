/* Thread churn: N threads created over the run, at most 8 alive at a time
   (a server's thread per request). Thread i (1-based, in order of creation)
   calls request() once, which calls parse() (i % 3) + 1 times and reply()
   twice; reply() calls format() once. Each function's calls are known in
   advance; the program prints its own totals:
     threads N
     request R parse P reply Y format F
   Usage: thread_churn [N] (default 1000). */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

#define ALIVE 8

static volatile long sink;
static long n_request, n_parse, n_reply, n_format;
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;

__attribute__((noinline)) void parse(long i) { sink += i * 3; }
__attribute__((noinline)) void format(long i) { sink += i ^ 5; }
__attribute__((noinline)) void reply(long i) { format(i); sink += i; }

__attribute__((noinline)) void request(long i)
{
   long parses = i % 3 + 1;
   for (long j = 0; j < parses; j++) parse(i + j);
   reply(i);
   reply(i + 1);
   pthread_mutex_lock(&lock);
   n_request += 1;
   n_parse += parses;
   n_reply += 2;
   n_format += 2;
   pthread_mutex_unlock(&lock);
}

__attribute__((noinline)) void* body(void* arg)
{
   request((long)arg);
   return NULL;
}

int main(int argc, char** argv)
{
   long threads = argc > 1 ? atol(argv[1]) : 1000;
   if (threads < 0) return 2;
   pthread_t alive[ALIVE];
   for (long i = 1; i <= threads; i++) {
      int slot = (int)((i - 1) % ALIVE);
      if (i > ALIVE) pthread_join(alive[slot], NULL);   /* the oldest one */
      if (pthread_create(&alive[slot], NULL, body, (void*)i) != 0) return 1;
   }
   for (long i = threads > ALIVE ? threads - ALIVE + 1 : 1; i <= threads; i++)
      pthread_join(alive[(i - 1) % ALIVE], NULL);
   printf("threads %ld\n", threads);
   printf("request %ld parse %ld reply %ld format %ld\n", n_request, n_parse, n_reply, n_format);
   return 0;
}
