// C++ frames left without returning, while other threads compute: a thread
// cancelled while blocked 30 frames deep (glibc's forced unwinding, started
// in its cancellation signal's handler, runs each frame's destructor) and
// a thread that throws from 30 frames deep and catches at the top, 5 times.
// Prints its own counts: every Guard is destroyed by its own frame.
#include <pthread.h>
#include <semaphore.h>
#include <cstdio>
#include <stdexcept>

static const long kDepth = 30, kRounds = 5;
static volatile long sink;
static long destroyed, caught;
static sem_t ready, never;

__attribute__((noinline)) void cleanup_work(long depth)
{
   for (long i = 0; i < 100; i++) sink += i ^ depth;
}

struct Guard {
   long depth;
   __attribute__((noinline)) ~Guard()
   {
      cleanup_work(depth);
      __atomic_add_fetch(&destroyed, 1, __ATOMIC_RELAXED);
   }
};

__attribute__((noinline)) long block_at(long depth)
{
   Guard g{depth};
   if (depth == 0) {
      sem_post(&ready);
      for (;;) sem_wait(&never);   // a cancellation point
   }
   return block_at(depth - 1) + sink;
}
void* blocker(void*) { return (void*)block_at(kDepth); }

__attribute__((noinline)) long throw_at(long depth)
{
   Guard g{depth};
   if (depth == 0) throw std::runtime_error("deep");
   return throw_at(depth - 1) + sink;
}
__attribute__((noinline)) void after_catch(long round) { sink += round; caught++; }
void* thrower(void*)
{
   for (long round = 0; round < kRounds; round++) {
      try {
         throw_at(kDepth);
      } catch (const std::exception&) {
         after_catch(round);
      }
   }
   return nullptr;
}

__attribute__((noinline)) long spin(long n)
{
   long s = 0;
   for (long i = 0; i < n; i++) s += i * 3;
   return s;
}
void* spinner(void*)
{
   for (int i = 0; i < 200; i++) sink += spin(2000);
   return nullptr;
}
__attribute__((noinline)) void after_cancel() { sink++; }

int main()
{
   sem_init(&ready, 0, 0);
   sem_init(&never, 0, 0);
   pthread_t cancelled, throwing, spin1, spin2;
   pthread_create(&spin1, nullptr, spinner, nullptr);
   pthread_create(&cancelled, nullptr, blocker, nullptr);
   pthread_create(&throwing, nullptr, thrower, nullptr);
   pthread_create(&spin2, nullptr, spinner, nullptr);
   sem_wait(&ready);
   pthread_cancel(cancelled);
   void* result;
   pthread_join(cancelled, &result);
   after_cancel();
   pthread_join(throwing, nullptr);
   pthread_join(spin1, nullptr);
   pthread_join(spin2, nullptr);
   std::printf("cancel: cancelled %d destroyed %ld caught %ld\n", result == PTHREAD_CANCELED,
               destroyed, caught);
   return 0;
}
