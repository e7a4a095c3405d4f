/* A process that runs two threads, forks a child and then execs another
   program (argv[1], if given), for docs/manual.md's recipe on processes
   and threads. */
#include <pthread.h>
#include <stdio.h>
#include <sys/wait.h>
#include <unistd.h>

static volatile unsigned long sink;

__attribute__((noinline)) static void work(int n)
{
   for (int i = 0; i < n; i++) sink += (unsigned long)i * i;
}

__attribute__((noinline)) static void *worker(void *arg)
{
   work(*(int *)arg);
   return NULL;
}

__attribute__((noinline)) static void child(void) { work(3000); }

int main(int argc, char **argv)
{
   pthread_t t[2];
   int n[2] = {1000, 2000};
   /* One after the other, so that they are numbered in this order (threads
      started together may first run in either order). */
   for (int i = 0; i < 2; i++) {
      pthread_create(&t[i], NULL, worker, &n[i]);
      pthread_join(t[i], NULL);
   }

   pid_t pid = fork();
   if (pid == 0) {
      child();
      return 0;
   }
   waitpid(pid, NULL, 0);

   if (argc > 1) {
      fflush(stdout);
      execv(argv[1], argv + 1);
      perror("execv");
      return 1;
   }
   return 0;
}
