/* A program with a phase to skip (parse) and a phase to profile (solve),
   for docs/manual.md's region recipes.
     ./region          no client request: the options choose the region
     ./region marked   kgrind.h's requests: count solve() only, dump it
     ./region wait     run solve() until a file named "stop" appears
                       (for kgrind_control) */
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include "kgrind.h"

static volatile unsigned long sink;

__attribute__((noinline)) static void step(int i)
{
   for (int j = 0; j < 100; j++) sink += (unsigned long)i * j;
}

__attribute__((noinline)) static void parse(int n)
{
   for (int i = 0; i < n; i++) step(i);
}

__attribute__((noinline)) static void solve(int n)
{
   for (int i = 0; i < n; i++) step(i);
   printf("solve's context id: %lu\n", KGRIND_CURRENT_CONTEXT());
}

int main(int argc, char **argv)
{
   const char *how = argc > 1 ? argv[1] : "";
   parse(300);
   if (strcmp(how, "marked") == 0) {
      KGRIND_START_INSTRUMENTATION;   /* run with --instr-atstart=no */
      solve(100);
      KGRIND_STOP_INSTRUMENTATION;
      KGRIND_DUMP_STATS_AT("solved");
   } else if (strcmp(how, "wait") == 0) {
      while (access("stop", F_OK) != 0) {
         solve(10);
         usleep(20000);
      }
   } else {
      solve(100);
   }
   return 0;
}
