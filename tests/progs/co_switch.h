/* A minimal amd64 coroutine switch (co_ring.c, fiber_migrate.c): saves the
   callee-saved registers on the running stack and its SP in *save_sp,
   then loads to_sp, pops the registers saved there and returns on that
   stack. A new coroutine's stack holds six zeroed registers and its entry
   function's address. Elsewhere (arm64) the programs' other switches only. */
void co_switch(void** save_sp, void* to_sp);
#if defined(__x86_64__)
__asm__(".text\n"
        ".globl co_switch\n"
        ".type co_switch, @function\n"
        "co_switch:\n"
        "  push %rbp\n  push %rbx\n  push %r12\n  push %r13\n  push %r14\n  push %r15\n"
        "  mov %rsp, (%rdi)\n"
        "  mov %rsi, %rsp\n"
        "  pop %r15\n  pop %r14\n  pop %r13\n  pop %r12\n  pop %rbx\n  pop %rbp\n"
        "  ret\n"
        ".size co_switch, .-co_switch\n");
#else
void co_switch(void** save_sp, void* to_sp) { (void)save_sp; (void)to_sp; abort(); }
#endif
