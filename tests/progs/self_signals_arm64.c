/* self_signals.c for arm64: the kill system call by `svc` in send_self, so
   the handler interrupts the program's own function, at the instruction
   after the svc. Prints how many signals the handler saw. */
#include <signal.h>
#include <stdio.h>
#include <unistd.h>
static volatile int handled;
static void handler(int sig) { (void)sig; handled++; }
__attribute__((noinline)) static long send_self(int sig)
{
   long pid = getpid();
   register long x8 __asm__("x8") = 129;   /* kill */
   register long x0 __asm__("x0") = pid;
   register long x1 __asm__("x1") = sig;
   __asm__ volatile("svc #0" : "+r"(x0) : "r"(x8), "r"(x1) : "memory");
   return x0;
}
int main(int argc, char **argv)
{
   int n = argc > 1 ? 7 : 5;
   signal(SIGUSR1, handler);
   for (int i = 0; i < n; i++) send_self(SIGUSR1);
   printf("handled %d\n", handled);
   return 0;
}
