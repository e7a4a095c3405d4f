/* A library whose code at .Lcount has no symbol (as a stripped library's
   static function); nosym_code() returns its address. The code counts
   down from n and returns n (tests/progs/jump_out_nosym.c). */
__asm__(".text\n"
        ".Lcount:\n"
        "  mov %rdi, %rax\n"
        "1: dec %rdi\n"
        "  jnz 1b\n"
        "  ret\n"
        ".globl nosym_code\n"
        ".type nosym_code, @function\n"
        "nosym_code:\n"
        "  lea .Lcount(%rip), %rax\n"
        "  ret\n"
        ".size nosym_code, .-nosym_code\n");
