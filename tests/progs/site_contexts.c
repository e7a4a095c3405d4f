/* Asks for KGRIND_CURRENT_SITE_CONTEXT() (and KGRIND_CURRENT_CONTEXT()) in
   functions called from several lines, and prints each id with the chain
   the program recorded itself: built with -finstrument-functions, its
   hooks keep a stack of (function, call site) for every call, so a line
   "<site id> <context id> <fn>@<site> ..." lists the program's own
   functions outermost first, each with the return address its call
   pushed. Recursion (rolled into one level by kgrind) and a longjmp out of
   deep frames (whose exit hooks never run: the program cuts its stack back
   to the setjmp's depth) are among the paths. */
#include <setjmp.h>
#include <stdio.h>
#include "kgrind.h"

#define HOOK __attribute__((no_instrument_function))
#define MAX_DEPTH 256

static void* fns[MAX_DEPTH];
static void* sites[MAX_DEPTH];
static int depth;

HOOK void __cyg_profile_func_enter(void* fn, void* site)
{
   if (depth < MAX_DEPTH) {
      fns[depth] = fn;
      sites[depth] = site;
   }
   depth++;
}

HOOK void __cyg_profile_func_exit(void* fn, void* site)
{
   (void)fn;
   (void)site;
   depth--;
}

static HOOK __attribute__((noinline)) void log_chain(unsigned long site_id, unsigned long context_id)
{
   printf("%lu %lu", site_id, context_id);
   for (int i = 0; i < depth && i < MAX_DEPTH; i++) printf(" %p@%p", fns[i], sites[i]);
   printf("\n");
}

__attribute__((noinline)) void leaf(void)
{
   unsigned long site_id = KGRIND_CURRENT_SITE_CONTEXT();
   log_chain(site_id, KGRIND_CURRENT_CONTEXT());
}

__attribute__((noinline)) void mid(int n)
{
   leaf();
   if (n) leaf();
   leaf();
}

__attribute__((noinline)) void top(int n)
{
   mid(n);
   mid(0);
}

__attribute__((noinline)) void rec(int n)
{
   if (n) rec(n - 1);
   else leaf();
}

static jmp_buf env;
static int depth_at_setjmp;

__attribute__((noinline)) void dive(int n)
{
   if (n) dive(n - 1);
   else longjmp(env, 1);
}

__attribute__((noinline)) void jumper(void)
{
   depth_at_setjmp = depth;
   if (setjmp(env) == 0) dive(5);
   depth = depth_at_setjmp;   /* dive's frames left without their exit hooks */
   leaf();
   mid(1);
}

int main(void)
{
   for (int i = 0; i < 2; i++) {
      top(1);
      mid(1);
      rec(3);
      top(0);
      jumper();
   }
   return 0;
}
