/* Tail jumps by `jmp *%rax` from functions with a symbol into code without
   one: another object's (libnosym.so, built from nosym_lib.c: a stripped
   library's static function), which callgrind shows as a call of a
   function named by its address, and this program's own (a local label),
   which callgrind and cachegrind count as jump_here's code (Valgrind finds
   no other function there). Both count down from n + 1 and return n + 1.
   Usage: jump_out_nosym [n] [times]; prints the sum of the results. */
#include <stdio.h>
#include <stdlib.h>

void* nosym_code(void);
void* lib_target;
long jump_lib(long n);
long jump_here(long n);

__asm__(".text\n"
        ".globl jump_lib\n"
        ".type jump_lib, @function\n"
        "jump_lib:\n"
        "  add $1, %rdi\n"
        "  mov lib_target(%rip), %rax\n"
        "  jmp *%rax\n"
        ".size jump_lib, .-jump_lib\n"
        ".Lhere:\n"
        "  mov %rdi, %rax\n"
        "1: dec %rdi\n"
        "  jnz 1b\n"
        "  ret\n"
        ".globl jump_here\n"
        ".type jump_here, @function\n"
        "jump_here:\n"
        "  add $1, %rdi\n"
        "  lea .Lhere(%rip), %rax\n"
        "  jmp *%rax\n"
        ".size jump_here, .-jump_here\n");

int main(int argc, char** argv)
{
   long n = argc > 1 ? atol(argv[1]) : 100;
   int times = argc > 2 ? atoi(argv[2]) : 10;
   long sum = 0;
   lib_target = nosym_code();
   for (int i = 0; i < times; i++) sum += jump_lib(n);
   for (int i = 0; i < times; i++) sum += jump_here(n);
   printf("%ld\n", sum);
   return 0;
}
