/* Signals sent by the program's own code and counted by their handler: a
   raw kill system call in send_self (no libc wrapper), so the handler
   interrupts the program's own function, at the instruction after the
   syscall. Prints how many signals the handler saw. */
#include <signal.h>
#include <stdio.h>
#include <unistd.h>
static volatile int handled;
static void handler(int sig)
{
   (void)sig;
   handled++;
}
__attribute__((noinline)) static long send_self(int sig)
{
   long ret;
   __asm__ volatile("syscall" : "=a"(ret) : "0"(62L), "D"((long)getpid()), "S"((long)sig)
                    : "rcx", "r11", "memory");
   return ret;
}
int main(int argc, char **argv)
{
   int n = argc > 1 ? 7 : 5;
   signal(SIGUSR1, handler);
   for (int i = 0; i < n; i++)
      send_self(SIGUSR1);
   printf("handled %d\n", handled);
   return 0;
}
