// boost.context fibers, their stacks unregistered and malloc'd from the
// heap's one mapping (fixedsize_stack of 16 KB; boost built without
// BOOST_USE_VALGRIND, as Debian's is): a ring of three fibers switching to
// each other directly, then many short-lived fibers made and ended one
// after another. Prints its own counts.
#include <boost/context/fiber.hpp>
#include <cstdio>
#include <cstdlib>

namespace ctx = boost::context;

static long total;
static int ring_work_calls, short_work_calls;

__attribute__((noinline)) void leaf(int i) { total += i; asm volatile(""); }
__attribute__((noinline)) void ring_work(int i) { ring_work_calls++; leaf(i); }
__attribute__((noinline)) void short_work(int i) { short_work_calls++; leaf(i); }

// slot[0] is main, 1-3 the ring: each suspended context's continuation.
static ctx::fiber slot[4];
static int running, last_from;

__attribute__((noinline)) void switch_to(int to)
{
   last_from = running;
   running = to;
   ctx::fiber resumer = std::move(slot[to]).resume();
   slot[last_from] = std::move(resumer);   // whoever switched back to us
}

__attribute__((noinline)) void ring_body(int me, int rounds)
{
   for (int i = 0; i < rounds; i++) {
      ring_work(i);
      int next = me == 3 ? (i + 1 == rounds ? 0 : 1) : me + 1;
      switch_to(next);
   }
}

__attribute__((noinline)) void short_lived(int n, ctx::fixedsize_stack stacks)
{
   for (int g = 0; g < n; g++) {
      ctx::fiber f{std::allocator_arg, stacks, [](ctx::fiber&& back) {
         short_work(1);
         back = std::move(back).resume();
         short_work(2);
         return std::move(back);
      }};
      f = std::move(f).resume();
      f = std::move(f).resume();
   }
}

int main(int argc, char** argv)
{
   int rounds = argc > 1 ? atoi(argv[1]) : 20;
   int fibers = argc > 2 ? atoi(argv[2]) : 500;
   ctx::fixedsize_stack stacks(16 * 1024);
   for (int me = 1; me <= 3; me++)
      slot[me] = ctx::fiber{std::allocator_arg, stacks, [me, rounds](ctx::fiber&& from) {
         slot[last_from] = std::move(from);
         ring_body(me, rounds);
         running = 0;
         return std::move(slot[0]);
      }};
   switch_to(1);                                 // the ring runs; the last round ends in main
   for (int me = 1; me <= 3; me++) switch_to(me);   // each ends: its last switch returns
   short_lived(fibers, stacks);
   printf("boost_fibers: ring_work %d short_work %d total %ld\n", ring_work_calls, short_work_calls, total);
   return 0;
}
