/* A deep and wide call tree before a fork, then a child that does a little
   work and exits: the child's k-SF holds the parent's nodes with zeroed
   counters, which its profile leaves out. branch(DEPTH) calls b0, b1, b2,
   each of which calls branch(depth - 1) while depth > 0. The first b2 at
   depth 0 takes its context's id (KGRIND_CURRENT_CONTEXT()), so both
   profiles hold a kgrind-context record naming functions the child's
   nodes do not. */
#include <stdio.h>
#include <sys/wait.h>
#include <unistd.h>
#include "kgrind.h"

static unsigned long deep_context;

#define DEPTH 5
#define LEAVES 10

static long branch(int depth);
__attribute__((noinline)) long b0(int d) { return d ? branch(d - 1) + 1 : 1; }
__attribute__((noinline)) long b1(int d) { return d ? branch(d - 1) + 2 : 2; }
__attribute__((noinline)) long b2(int d)
{
   if (!d && !deep_context) deep_context = KGRIND_CURRENT_CONTEXT();
   return d ? branch(d - 1) + 3 : 3;
}
__attribute__((noinline)) static long branch(int depth) { return b0(depth) + b1(depth) + b2(depth); }

__attribute__((noinline)) long leaf(long i) { return i * 7; }
__attribute__((noinline)) long child_work(void)
{
   long s = 0;
   for (long i = 0; i < LEAVES; i++) s += leaf(i);
   return s;
}

int main(void)
{
   long tree = branch(DEPTH);
   fflush(stdout);
   pid_t pid = fork();
   if (pid == 0) _exit(child_work() == 7 * LEAVES * (LEAVES - 1) / 2 ? 0 : 1);
   int status = 0;
   waitpid(pid, &status, 0);
   printf("tree %ld child exit %d\n", tree, WEXITSTATUS(status));
   return 0;
}
