/* Logs KGRIND_CURRENT_CONTEXT() at points whose calling contexts it knows:
   one line "<id> <chain>" each, the chain outermost first (k = 2: the
   function and two callers; __root__ and (below main) are the start-up's). */
#include <stdio.h>
#include "kgrind.h"

static void log_context(const char* chain, unsigned long id) { printf("%lu %s\n", id, chain); }

__attribute__((noinline)) void c(const char* chain)
{
   log_context(chain, KGRIND_CURRENT_CONTEXT());
}

__attribute__((noinline)) void b(void)
{
   log_context("main > a > b", KGRIND_CURRENT_CONTEXT());
   c("a > b > c");
}

__attribute__((noinline)) void a(void) { b(); }

__attribute__((noinline)) void d(void)
{
   log_context("main > a2 > d", KGRIND_CURRENT_CONTEXT());
   c("a2 > d > c");   /* not the same context as c'b'a */
}

/* A caller of c other than b: its logs must decode differently. */
__attribute__((noinline)) void a2(void)
{
   d();
   log_context("(below main) > main > a2", KGRIND_CURRENT_CONTEXT());
}

int main(void)
{
   a();
   a2();
   a();   /* the same contexts again: the same ids */
   return 0;
}
