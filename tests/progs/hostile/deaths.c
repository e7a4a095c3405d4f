/* Dies, after some nested work, from 10 frames down: "segv" (a store to an
   unmapped address), "abort", "kill" (SIGKILL to itself), "overflow"
   (unbounded recursion until the stack is exhausted). */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static volatile long sink;

__attribute__((noinline)) static long work(long n)
{
   long s = 0;
   for (long i = 0; i < n; i++) s += i ^ (i >> 3);
   return s;
}

__attribute__((noinline)) static long overflow(long n)
{
   volatile char pad[1024];
   pad[n % 1024] = (char)n;
   return overflow(n + 1) + pad[0];
}

__attribute__((noinline)) static void die(const char *how)
{
   if (strcmp(how, "segv") == 0) *(volatile int *)16 = 1;
   else if (strcmp(how, "abort") == 0) abort();
   else if (strcmp(how, "kill") == 0) kill(getpid(), SIGKILL);
   else if (strcmp(how, "overflow") == 0) sink = overflow(0);
   printf("unknown death %s\n", how);
}

__attribute__((noinline)) static void descend(int depth, const char *how)
{
   if (depth == 0) die(how);
   else descend(depth - 1, how);
   sink += depth;
}

int main(int argc, char **argv)
{
   const char *how = argc > 1 ? argv[1] : "segv";
   printf("deaths %s: work %ld\n", how, work(5000));
   fflush(stdout);
   descend(10, how);
   return 0;
}
