/* A run that never reaches its end under Valgrind. "kill": prints its pid
 * and waits for the SIGKILL the test sends. "exec": replaces itself with
 * /bin/echo (without --trace-children=yes, Valgrind does not follow: the
 * profile up to the exec is the file). "clone": prints its pid and clones
 * itself with shared memory but not as a thread, which Valgrind's core
 * refuses by exiting. */
#define _GNU_SOURCE
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

static int child(void* arg)
{
   (void)arg;
   return 0;
}

int main(int argc, char** argv)
{
   if (argc > 1 && strcmp(argv[1], "kill") == 0) {
      printf("pid %d\n", (int)getpid());
      fflush(stdout);
      for (;;) pause();
   }
   if (argc > 1 && strcmp(argv[1], "exec") == 0) {
      printf("before exec\n");
      fflush(stdout);
      execl("/bin/echo", "echo", "after exec", (char*)NULL);
      perror("execl");
      return 1;
   }
   if (argc > 1 && strcmp(argv[1], "clone") == 0) {
      printf("pid %d\n", (int)getpid());
      fflush(stdout);
      const size_t size = 1 << 16;
      char* stack = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
      int pid = clone(child, stack + size, CLONE_VM | SIGCHLD, NULL);
      if (pid < 0) return 1;
      waitpid(pid, NULL, 0);
      return 0;
   }
   fprintf(stderr, "usage: incomplete kill|exec|clone\n");
   return 2;
}
