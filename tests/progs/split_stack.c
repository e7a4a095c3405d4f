/* -fsplit-stack: rec's 1 KB frames outgrow each stack segment, so libgcc's
   __morestack moves SP to a new segment (other memory) and calls the rest
   of rec there, many times over, on the main thread and on a second one.
   The same source built without -fsplit-stack is the reference. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

static long leaf_calls;

__attribute__((noinline)) long leaf(long x)
{
   volatile char buf[256];
   buf[0] = (char)x;
   leaf_calls++;
   return buf[0] + x;
}

__attribute__((noinline)) long rec(long d)
{
   volatile char pad[1024];
   pad[0] = (char)d;
   if (d == 0) return leaf(pad[0]);
   return rec(d - 1) + leaf(d) + pad[0];
}

static void *worker(void *arg)
{
   long s = 0;
   for (int i = 0; i < 3; i++) s += rec((long)arg);
   return (void *)s;
}

int main(int argc, char **argv)
{
   long depth = argc > 1 ? atol(argv[1]) : 500;
   long s = 0;
   for (int i = 0; i < 4; i++) s += rec(depth);
   pthread_t t;
   void *r;
   pthread_create(&t, NULL, worker, (void *)300);
   pthread_join(t, &r);
   printf("%ld %ld leaf calls %ld\n", s, (long)r, leaf_calls);
   return 0;
}
