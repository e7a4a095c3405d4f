/* A function whose symbol the test renames to hold a newline and a tab
 * (objcopy --redefine-sym), compiled from a file whose name the test gives
 * a newline. The program counts the function's calls and its arguments. */
#include <stdio.h>

static int calls;

__attribute__((noinline)) void odd_name(void)
{
   calls++;
}

int main(int argc, char** argv)
{
   (void)argv;
   for (int i = 0; i < 7; i++) odd_name();
   printf("odd_name calls %d, arguments %d\n", calls, argc - 1);
   return 0;
}
