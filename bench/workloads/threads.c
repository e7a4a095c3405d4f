/* Multi-threaded workload: 4 worker threads, each with its own call-heavy
   work (recursion, small functions, a per-thread hash table), sharing a
   mutex-protected histogram and a work queue.
     threads [scale]      scale = work items per thread, in units (default 1) */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

#define NTHREADS 4

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static unsigned long histogram[64];
static unsigned next_item, total_items;

__attribute__((noinline)) static unsigned hash(unsigned x)
{
   x ^= x >> 16; x *= 0x7feb352du; x ^= x >> 15; x *= 0x846ca68bu; return x ^ (x >> 16);
}
__attribute__((noinline)) static unsigned leaf(unsigned x) { return hash(x) & 1023; }
__attribute__((noinline)) static unsigned tree(unsigned d, unsigned x)
{
   if (d == 0) return leaf(x);
   return tree(d - 1, x * 3 + 1) + (d % 3 == 0 ? tree(d - 2 > d ? 0 : d - 2, x ^ d) : 0);
}

struct table { unsigned keys[4096]; unsigned vals[4096]; };

__attribute__((noinline)) static void table_add(struct table* t, unsigned k)
{
   unsigned h = hash(k) & 4095;
   while (t->keys[h] && t->keys[h] != k) h = (h + 1) & 4095;
   t->keys[h] = k;
   t->vals[h]++;
}

__attribute__((noinline)) static unsigned take_item(void)
{
   pthread_mutex_lock(&lock);
   unsigned i = next_item < total_items ? next_item++ : ~0u;
   pthread_mutex_unlock(&lock);
   return i;
}

__attribute__((noinline)) static void record(unsigned v)
{
   pthread_mutex_lock(&lock);
   histogram[v & 63]++;
   pthread_mutex_unlock(&lock);
}

static void* worker(void* arg)
{
   struct table* t = calloc(1, sizeof *t);
   unsigned seed = (unsigned)(size_t)arg;
   for (unsigned item; (item = take_item()) != ~0u;) {
      unsigned v = tree(14, item ^ seed);
      table_add(t, v % 3000 + 1);   /* at most 3000 keys: the table never fills */
      record(v);
   }
   free(t);
   return NULL;
}

int main(int argc, char** argv)
{
   unsigned scale = argc > 1 ? (unsigned)atoi(argv[1]) : 1;
   total_items = 3000 * scale;
   pthread_t th[NTHREADS];
   for (size_t i = 0; i < NTHREADS; i++) pthread_create(&th[i], NULL, worker, (void*)(i + 1));
   for (size_t i = 0; i < NTHREADS; i++) pthread_join(th[i], NULL);
   unsigned long s = 0;
   for (int i = 0; i < 64; i++) s += histogram[i] * (unsigned long)(i + 1);
   printf("threads: %lu\n", s);
   return 0;
}
