/* fork from a thread that is not the main thread, while another thread of
   the parent is blocked and a third has finished; the child starts a
   thread of its own. Threads in creation order: main 1, finished 2,
   blocked 3, forker 4 (kgrind numbers threads as they first run: each
   starts after the one before ran); in the child, child_thread is the 5th. */
#include <pthread.h>
#include <stdio.h>
#include <sys/wait.h>
#include <unistd.h>

static int release[2], started[2];

__attribute__((noinline)) long finished_work(long n) { long s = 0; for (long i = 0; i < n; i++) s += i; return s; }
__attribute__((noinline)) long blocked_work(long n) { long s = 0; for (long i = 0; i < n; i++) s += i * 7; return s; }
__attribute__((noinline)) long child_thread_work(long n) { long s = 0; for (long i = 0; i < n; i++) s += i * 3; return s; }
__attribute__((noinline)) long forker_work(long n) { long s = 0; for (long i = 0; i < n; i++) s += i * 5; return s; }

static void *finished(void *arg) { (void)arg; printf("finished: %ld\n", finished_work(1000)); return NULL; }

static void *blocked(void *arg)
{
   (void)arg;
   char c = 'x';
   if (write(started[1], &c, 1) != 1 || read(release[0], &c, 1) != 1) return NULL;
   printf("blocked: %ld\n", blocked_work(1000));
   return NULL;
}

static void *child_thread(void *arg) { (void)arg; printf("child thread: %ld\n", child_thread_work(2000)); return NULL; }

static void *forker(void *arg)
{
   (void)arg;
   fflush(stdout);
   pid_t pid = fork();
   if (pid == 0) {
      pthread_t t;
      pthread_create(&t, NULL, child_thread, NULL);
      pthread_join(t, NULL);
      printf("child: %ld\n", forker_work(3000));
      fflush(stdout);
      _exit(5);
   }
   int status = 0;
   waitpid(pid, &status, 0);
   printf("forker: child %d exit %d\n", (int)pid, WEXITSTATUS(status));
   return NULL;
}

int main(void)
{
   pthread_t f, b, k;
   char c;
   if (pipe(release) || pipe(started)) return 1;
   pthread_create(&f, NULL, finished, NULL);
   pthread_join(f, NULL);
   pthread_create(&b, NULL, blocked, NULL);
   if (read(started[0], &c, 1) != 1) return 1;   /* thread 3 ran before thread 4 starts */
   pthread_create(&k, NULL, forker, NULL);
   pthread_join(k, NULL);
   if (write(release[1], "x", 1) != 1) return 1;
   pthread_join(b, NULL);
   return 0;
}
