/* A run that never reaches its end under Valgrind. "kill": prints its pid
 * and waits for the SIGKILL the test sends. "exec": replaces itself with
 * /bin/echo (without --trace-children=yes, Valgrind does not follow: the
 * profile up to the exec is the file). */
#include <stdio.h>
#include <string.h>
#include <unistd.h>

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
   fprintf(stderr, "usage: incomplete kill|exec\n");
   return 2;
}
