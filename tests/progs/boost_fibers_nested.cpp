// Four boost.context fibers (Debian's, built without BOOST_USE_VALGRIND:
// their stacks malloc'd in the heap's one mapping, nothing registered),
// each yielding back to a scheduler in main from 3 to 5 nested calls: fiber
// f yields from depth 3 + f % 3 (body > nest > ... > yield_: nest calls
// itself down to the depth, then yield_ resumes the scheduler). Every frame of a fiber from its entry to
// its yield_ stays open while the others run. Prints its own counts.
#include <boost/context/fiber.hpp>
#include <cstdio>
#include <cstdlib>

namespace ctx = boost::context;

static long total;
enum { kMaxLevel = 4 };
// Calls of nest at each level (1: called by body), of work by nest at each
// level, of yield_ by nest at each level.
static int nest_at[kMaxLevel + 1], work_at[kMaxLevel + 1], yield_at[kMaxLevel + 1];
static int body_calls, sched_calls;

static ctx::fiber sched;   // the scheduler's continuation, while a fiber runs

__attribute__((noinline)) void work(int i)
{
   for (int j = 0; j < 20; j++) total += i ^ j;
   asm volatile("");
}

__attribute__((noinline)) void yield_()
{
   sched = std::move(sched).resume();
}

// nest at `level` (1: called by body) calls itself down to level `last`,
// which yields; each does work on the way down and on the way back up.
__attribute__((noinline)) void nest(int level, int last, int i)
{
   nest_at[level]++;
   work_at[level]++;
   work(i);
   if (level < last) {
      nest(level + 1, last, i);
   } else {
      yield_at[level]++;
      yield_();
   }
   work_at[level]++;
   work(i + level);
}

__attribute__((noinline)) void body(int depth, int rounds)
{
   body_calls++;
   for (int r = 0; r < rounds; r++) nest(1, depth - 1, r);
}

__attribute__((noinline)) ctx::fiber schedule(ctx::fiber f)
{
   sched_calls++;
   return std::move(f).resume();
}

int main(int argc, char** argv)
{
   int rounds = argc > 1 ? atoi(argv[1]) : 3;
   enum { kFibers = 4 };
   ctx::fixedsize_stack stacks(16 * 1024);
   ctx::fiber fibers[kFibers];
   for (int f = 0; f < kFibers; f++) {
      int depth = 3 + f % 3;
      fibers[f] = ctx::fiber{std::allocator_arg, stacks, [depth, rounds](ctx::fiber&& from) {
         sched = std::move(from);
         body(depth, rounds);
         return std::move(sched);
      }};
   }
   // Round robin until every fiber has ended (an ended fiber's resume
   // returns an empty continuation).
   for (int live = kFibers; live > 0;) {
      live = 0;
      for (int f = 0; f < kFibers; f++) {
         if (!fibers[f]) continue;
         fibers[f] = schedule(std::move(fibers[f]));
         live += bool(fibers[f]);
      }
   }
   printf("boost_fibers_nested: body %d schedule %d", body_calls, sched_calls);
   for (int l = 1; l <= kMaxLevel; l++) printf(" nest%d %d work%d %d yield%d %d", l, nest_at[l], l, work_at[l], l, yield_at[l]);
   printf(" total %ld\n", total);
   return 0;
}
