/* Work before the fork, in the child only, and in the parent only. */
#include <stdio.h>
#include <sys/wait.h>
#include <unistd.h>

__attribute__((noinline)) long before_fork(long n) { long s = 0; for (long i = 0; i < n; i++) s += i; return s; }
__attribute__((noinline)) long child_work(long n) { long s = 0; for (long i = 0; i < n; i++) s += i * 3; return s; }
__attribute__((noinline)) long parent_work(long n) { long s = 0; for (long i = 0; i < n; i++) s += i * 5; return s; }

int main(void)
{
   long b = before_fork(3000);
   fflush(stdout);
   pid_t pid = fork();
   if (pid == 0) {
      printf("child: %ld\n", child_work(2000) + b);
      return 7;
   }
   int status = 0;
   waitpid(pid, &status, 0);
   printf("parent: %ld child exit %d\n", parent_work(1000) + b, WEXITSTATUS(status));
   return 0;
}
