/* The work of the coroutine test programs (co_sched.c, co_ring.c): each
   coroutine runs co_main, calling nest 3 to 6 levels deep, then leaf, its
   yield_ (the program's own: how it switches) and leaf again at the
   bottom. Counts what ran, for the tests to compare with the profile. */
static long count_leaf, count_nest;
static volatile long sink;

void yield_(void);

__attribute__((noinline)) void leaf(long i) { count_leaf++; sink += i; }

/* depth more nested calls, then a leaf and a yield at the bottom. */
__attribute__((noinline)) void nest(int depth, long i)
{
   count_nest++;
   if (depth > 0) {
      nest(depth - 1, i);
      return;
   }
   leaf(i);
   yield_();
   leaf(i);
}

__attribute__((noinline)) void co_main(int id)
{
   for (long i = 0;; i++) nest(2 + id, i);   /* 3..6 levels of nest */
}
