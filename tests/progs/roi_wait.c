/* Says "ready", waits for a line on stdin (the test controls when), then
   works and exits with status 3. */
#include <stdio.h>

static volatile unsigned long sink;

__attribute__((noinline)) void chunk(int n) { for (int j = 0; j < n; j++) sink += j; }
__attribute__((noinline)) void warm_up(void) { for (int i = 0; i < 50; i++) chunk(i); }
__attribute__((noinline)) unsigned long work(void) { for (int i = 0; i < 200; i++) chunk(i); return sink; }

int main(void)
{
   char line[64];
   warm_up();
   printf("ready\n");
   fflush(stdout);
   if (!fgets(line, sizeof line, stdin)) return 1;
   printf("sum %lu\n", work());
   return 3;
}
