/* main registers (argv[1] "1") or not ("0") part of the stack it runs on
   with VALGRIND_STACK_REGISTER, then calls outer, which calls work 10
   times. Registering the running stack must not make it another stack. */
#include <stdio.h>
#include <stdlib.h>
#include <valgrind/valgrind.h>

__attribute__((noinline)) void work(int i)
{
   static volatile int sink;
   sink += i;
}
__attribute__((noinline)) void outer(void)
{
   for (int i = 0; i < 10; i++) work(i);
}

int main(int argc, char** argv)
{
   volatile char here = 0;
   if (argc > 1 && atoi(argv[1]))
      VALGRIND_STACK_REGISTER((char*)&here - 65536, (char*)&here + 4096);
   outer();
   printf("register_running: work 10\n");
   return here;
}
