/* Eight threads, each with its own call path: path_<i> -> step -> leaf. */
#include <pthread.h>
#include <stdio.h>

__attribute__((noinline)) long leaf(long x) { return x * 3 + 1; }
__attribute__((noinline)) long step(long x) { return leaf(x) + leaf(x + 1); }
#define PATH(i) __attribute__((noinline)) long path_##i(long x) { long s = 0; for (int j = 0; j <= i; j++) s += step(x + j); return s; }
PATH(0) PATH(1) PATH(2) PATH(3) PATH(4) PATH(5) PATH(6) PATH(7)
static long (*paths[8])(long) = { path_0, path_1, path_2, path_3, path_4, path_5, path_6, path_7 };

static void* worker(void* arg) { long i = (long)arg; return (void*)paths[i](i); }

int main(void) {
   pthread_t th[8];
   long total = 0;
   for (long i = 0; i < 8; i++) pthread_create(&th[i], NULL, worker, (void*)i);
   for (int i = 0; i < 8; i++) { void* r; pthread_join(th[i], &r); total += (long)r; }
   printf("threads8: %ld\n", total);
   return 0;
}
