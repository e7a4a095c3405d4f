/* The get-PC idiom of position-independent x86 code: `call 1f; 1: pop %rax`
 * reads the address of the next instruction. It is a call instruction but
 * not a call: nothing returns to its target. get_pc then calls helper. The
 * program counts the calls of get_pc and of helper itself. */
#include <stdio.h>

static long get_pc_calls, helper_calls;

void helper(void)
{
   helper_calls++;
}

long get_pc(void);
__asm__(".text\n"
        ".globl get_pc\n"
        ".type get_pc, @function\n"
        "get_pc:\n"
        "    call 1f\n"
        "1:  pop %rax\n"
        "    push %rax\n"      /* keeps the address; aligns the stack for the call */
        "    call helper\n"
        "    pop %rax\n"
        "    ret\n"
        ".size get_pc, .-get_pc\n");

__attribute__((noinline)) long work(void)
{
   get_pc_calls++;
   return get_pc();
}

int main(void)
{
   long first = work(), same = 1;
   for (int i = 1; i < 100; i++) same += work() == first;
   printf("get_pc calls %ld, helper calls %ld, same address %ld\n", get_pc_calls, helper_calls, same);
   return 0;
}
