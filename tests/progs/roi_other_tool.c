/* Makes memcheck's client requests (another tool's) twice: kgrind reports
   them once and the program runs as without them. */
#include <stdio.h>
#include <valgrind/memcheck.h>

int main(void)
{
   static char buf[16];
   for (int i = 0; i < 2; i++) VALGRIND_MAKE_MEM_DEFINED(buf, sizeof buf);
   printf("leaks %u\n", (unsigned)VALGRIND_COUNT_ERRORS);
   return 0;
}
