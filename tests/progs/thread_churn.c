/* Thread churn: N threads created over the run, at most 8 alive at a time
   (a server's thread per request). Thread i (1-based, in order of creation)
   calls request() once, which calls parse() (i % 3) + 1 times and reply()
   twice; reply() calls format() once. Each function's calls are known in
   advance; the program prints its own totals:
     threads N
     request R parse P reply Y format F
   With P > 1 paths, request() then walks path i % P: for each level j of
   LEVELS, step() calls a<j>() if bit j of the path is 0, else b<j>(), and
   that function calls step() for level j + 1; so threads do different work
   (P * 3 distinct forests). Each a<j>/b<j>'s calls are printed too:
     a0 A0 b0 B0 a1 A1 ... b7 B7
   Usage: thread_churn [N [P]] (default 1000 threads, 1 path: no walk). */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

#define ALIVE 8
#define LEVELS 8

static volatile long sink;
static long n_request, n_parse, n_reply, n_format;
static long n_a[LEVELS], n_b[LEVELS];
static long paths = 1;
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;

__attribute__((noinline)) void step(long path, int level);
#define PAIR(j) \
   __attribute__((noinline)) void a##j(long path) { sink += path; step(path, j + 1); } \
   __attribute__((noinline)) void b##j(long path) { sink ^= path; step(path, j + 1); }
PAIR(0) PAIR(1) PAIR(2) PAIR(3) PAIR(4) PAIR(5) PAIR(6) PAIR(7)
static void (*const as[LEVELS])(long) = {a0, a1, a2, a3, a4, a5, a6, a7};
static void (*const bs[LEVELS])(long) = {b0, b1, b2, b3, b4, b5, b6, b7};

__attribute__((noinline)) void step(long path, int level)
{
   if (level == LEVELS) return;
   (path >> level & 1 ? bs : as)[level](path);
}

__attribute__((noinline)) void parse(long i) { sink += i * 3; }
__attribute__((noinline)) void format(long i) { sink += i ^ 5; }
__attribute__((noinline)) void reply(long i) { format(i); sink += i; }

__attribute__((noinline)) void request(long i)
{
   long parses = i % 3 + 1;
   for (long j = 0; j < parses; j++) parse(i + j);
   reply(i);
   reply(i + 1);
   long path = i % paths;
   if (paths > 1) step(path, 0);
   pthread_mutex_lock(&lock);
   n_request += 1;
   n_parse += parses;
   n_reply += 2;
   n_format += 2;
   for (int j = 0; paths > 1 && j < LEVELS; j++) {
      if (path >> j & 1) n_b[j]++;
      else n_a[j]++;
   }
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
   if (argc > 2) paths = atol(argv[2]);
   if (threads < 0 || paths < 1) return 2;
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
   for (int j = 0; paths > 1 && j < LEVELS; j++) printf("%sa%d %ld b%d %ld", j ? " " : "", j, n_a[j], j, n_b[j]);
   if (paths > 1) printf("\n");
   return 0;
}
