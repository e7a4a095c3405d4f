/* System calls from known call chains, in the main thread and (with an
   argument of 1) in three more threads that run at once. Each system call
   is the program's own `syscall` instruction in a function of its own, so
   the context that makes it is known; the program counts its calls and
   prints the counts, one line per (thread, chain, call). nanosleep blocks,
   so the other threads run their calls while one waits. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <time.h>

#define SYSCALL2(nr, a, b) ({                                                          \
   long r_;                                                                            \
   __asm__ volatile("syscall" : "=a"(r_) : "a"((long)(nr)), "D"(a), "S"(b) : "rcx", "r11", "memory"); \
   r_; })

__attribute__((noinline)) static long ask_ppid(void) { return SYSCALL2(SYS_getppid, 0, 0); }
__attribute__((noinline)) static long ask_uid(void) { return SYSCALL2(SYS_getuid, 0, 0); }
__attribute__((noinline)) static long nap(void)
{
   struct timespec t = { 0, 2 * 1000 * 1000 };   /* 2 ms */
   return SYSCALL2(SYS_nanosleep, &t, 0);
}

struct tally { const char* thread; long ppid_left, uid_left, ppid_right, naps_right; };

__attribute__((noinline)) static void via_left(struct tally* t, int n)
{
   for (int i = 0; i < n; i++) {
      ask_ppid();
      t->ppid_left++;
      if (i % 3 == 0) { ask_uid(); t->uid_left++; }
   }
}

__attribute__((noinline)) static void via_right(struct tally* t, int n)
{
   for (int i = 0; i < n; i++) {
      ask_ppid();
      t->ppid_right++;
      if (i % 4 == 0) { nap(); t->naps_right++; }
   }
}

static void report(const struct tally* t)
{
   printf("%s via_left ask_ppid %ld\n", t->thread, t->ppid_left);
   printf("%s via_left ask_uid %ld\n", t->thread, t->uid_left);
   printf("%s via_right ask_ppid %ld\n", t->thread, t->ppid_right);
   printf("%s via_right nap %ld\n", t->thread, t->naps_right);
}

static struct tally tallies[4] = { { "main" }, { "thread_one" }, { "thread_two" }, { "thread_three" } };

__attribute__((noinline)) static void* thread_one(void* arg) { via_left(arg, 30); via_right(arg, 8); return 0; }
__attribute__((noinline)) static void* thread_two(void* arg) { via_right(arg, 20); via_left(arg, 7); return 0; }
__attribute__((noinline)) static void* thread_three(void* arg) { via_left(arg, 11); via_right(arg, 13); return 0; }

int main(int argc, char** argv)
{
   int threads = argc > 1 && atoi(argv[1]) == 1;
   pthread_t th[3];
   void* (*start[3])(void*) = { thread_one, thread_two, thread_three };
   if (threads)
      for (int i = 0; i < 3; i++) pthread_create(&th[i], NULL, start[i], &tallies[i + 1]);
   via_left(&tallies[0], 5);
   via_right(&tallies[0], 9);
   if (threads)
      for (int i = 0; i < 3; i++) pthread_join(th[i], NULL);
   for (int i = 0; i < (threads ? 4 : 1); i++) report(&tallies[i]);
   return 0;
}
