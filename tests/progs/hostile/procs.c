/* Processes: forked children that exit, vfork+exec, fork+exec of this
   program (argv[0] must be a path), exec of a missing file (in a child,
   then in the process itself, which goes on). The parent waits for each child before going on, and
   flushes before each fork, so the output is in a fixed order. */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

__attribute__((noinline)) static long work(long n)
{
   long s = 0;
   for (long i = 0; i < n * 100; i++) s += i % (n + 3);
   return s;
}

static void wait_for(pid_t pid, const char *what)
{
   int status;
   if (waitpid(pid, &status, 0) != pid) { perror("waitpid"); exit(90); }
   if (WIFEXITED(status)) printf("%s: exit %d\n", what, WEXITSTATUS(status));
   else printf("%s: signal %d\n", what, WTERMSIG(status));
}

int main(int argc, char **argv)
{
   if (argc > 1 && strcmp(argv[1], "exec-child") == 0) {
      printf("exec'd child: work %ld\n", work(9));
      return 7;
   }
   for (long i = 0; i < 5; i++) {
      fflush(stdout);
      pid_t pid = fork();
      if (pid == 0) {
         printf("child %ld: work %ld\n", i, work(i + 1));
         exit((int)i);
      }
      wait_for(pid, "fork child");
   }

   fflush(stdout);
   pid_t pid = vfork();
   if (pid == 0) {
      execl("/bin/echo", "echo", "vfork+exec of echo", (char *)NULL);
      _exit(126);
   }
   wait_for(pid, "vfork child");

   fflush(stdout);
   pid = fork();
   if (pid == 0) {
      execl(argv[0], argv[0], "exec-child", (char *)NULL);
      _exit(126);
   }
   wait_for(pid, "fork+exec child");

   fflush(stdout);
   pid = fork();
   if (pid == 0) {
      execl("/nonexistent/hostile-prog", "hostile-prog", (char *)NULL);
      printf("child: exec of a missing file: %s\n", strerror(errno));
      fflush(stdout);
      _exit(127);
   }
   wait_for(pid, "missing-exec child");

   int rc = execl("/nonexistent/hostile-prog", "hostile-prog", (char *)NULL);
   printf("parent: exec of a missing file: %d %s\n", rc, strerror(errno));
   printf("parent: work %ld\n", work(20));
   return 0;
}
