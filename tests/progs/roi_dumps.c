/* Dumps in a loop: each pass's work, then KGRIND_DUMP_STATS_AT. With the
   argument "whole" the same request is made with a code kgrind does not
   know (same instructions, no dump): the whole-run profile. */
#include <stdio.h>
#include <string.h>
#include "kgrind.h"

static volatile unsigned long sink;

__attribute__((noinline)) void leaf(int n) { for (int j = 0; j < n; j++) sink += j; }
__attribute__((noinline)) void branch(int i) { leaf(i + 3); if (i & 1) leaf(2); }
__attribute__((noinline)) void work(int pass)
{
   for (int i = 0; i <= pass; i++) branch(i);
   leaf(pass);
}

int main(int argc, char** argv)
{
   int whole = argc > 1 && strcmp(argv[1], "whole") == 0;
   volatile unsigned long code = whole ? VG_USERREQ_TOOL_BASE('K', 'G') + 0xFF : VG_USERREQ__KG_DUMP_STATS_AT;
   for (int pass = 0; pass < 4; pass++) {
      work(pass);
      VALGRIND_DO_CLIENT_REQUEST_STMT(code, "pass", 0, 0, 0, 0);
   }
   work(1);
   printf("done\n");
   return 0;
}
