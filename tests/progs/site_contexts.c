/* Asks for KGRIND_CURRENT_SITE_CONTEXT() (and KGRIND_CURRENT_CONTEXT()) in
   functions called from several lines, and prints each id with the chain
   the program recorded itself: built with -finstrument-functions, its
   hooks keep a stack of (function, call site) for every call, so a line
   "<thread> <site id> <context id> <fn>@<site> ..." lists the program's
   own functions outermost first, each with the return address its call
   pushed. Recursion (rolled into one level by kgrind) and a longjmp out of
   deep frames (whose exit hooks never run: the program cuts its stack back
   to the setjmp's depth) are among the paths; a second thread (2, made
   after the first's rounds) makes the same calls. */
#include <pthread.h>
#include <setjmp.h>
#include <stdio.h>
#include "kgrind.h"

#define HOOK __attribute__((no_instrument_function))
#define MAX_DEPTH 256

static __thread void* fns[MAX_DEPTH];
static __thread void* sites[MAX_DEPTH];
static __thread int depth;
static __thread int thread_number = 1;

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
   printf("%d %lu %lu", thread_number, site_id, context_id);
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

/* One round of calls; rounds are called from one instruction (a loop the
   compiler cannot unroll), so that each round makes the same calls from the
   same sites. */
__attribute__((noinline)) void round_of_calls(void)
{
   top(1);
   mid(1);
   rec(3);
   top(0);
   jumper();
}

static volatile int rounds = 2;

void* worker(void* arg)
{
   (void)arg;
   thread_number = 2;
   for (int i = 0; i < rounds; i++) round_of_calls();
   return NULL;
}

int main(void)
{
   for (int i = 0; i < rounds; i++) round_of_calls();
   pthread_t t;
   pthread_create(&t, NULL, worker, NULL);
   pthread_join(t, NULL);
   return 0;
}
