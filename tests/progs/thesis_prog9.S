/* IHPP thesis Listing 5.26 (prog9.asm, MASM, 32-bit) on x86-64: main jumps
   to foo, foo jumps to real_foo, and real_foo jumps back into the middle of
   main (after_foo), which then calls printf and bar. The right contexts
   (Listing 5.28): printf called once each by foo, real_foo and main, bar
   once by main. */
        .section .rodata
hello_main:  .string "hello from main()\n"
rfoo_called: .string "real_foo() called\n"
foo_base:    .string "foo() base called\n"

        .text
        .globl main, foo, real_foo, bar
        .type real_foo, @function
real_foo:
        lea     rfoo_called(%rip), %rdi
        xor     %eax, %eax
        call    printf@PLT
        jmp     after_foo
        .size real_foo, .-real_foo

        .type foo, @function
foo:
        lea     foo_base(%rip), %rdi
        xor     %eax, %eax
        call    printf@PLT
        jmp     real_foo
        .size foo, .-foo

        .type bar, @function
bar:
        push    %rbp
        mov     %rsp, %rbp
        /* do nothing */
        leave
        ret
        .size bar, .-bar

        .type main, @function
main:
        push    %rbp
        mov     %rsp, %rbp
        jmp     foo
after_foo:
        lea     hello_main(%rip), %rdi
        xor     %eax, %eax
        call    printf@PLT
        call    bar
        mov     $0, %eax
        leave
        ret
        .size main, .-main
        .section .note.GNU-stack,"",@progbits
