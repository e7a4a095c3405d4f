// Code recognised by its bytes, per platform: a PLT stub's jump through a
// GOT slot, a signal restorer (docs/design/shadow-stacks.md, "PLT stubs",
// "Signals", "arm64").
#pragma once

#include "kg_valgrind.h"

namespace kg {

// The GOT slot that a stub without a symbol at a jumps through, or 0:
// x86-64's `[endbr64] [bnd] jmp *slot(%rip)` (.plt.sec, .plt.got). arm64's
// stubs are all in .plt, which Valgrind knows: 0 there.
Addr plt_stub_slot(Addr a);

// A signal restorer, which a handler returns into: rt_sigreturn's system
// call, the C library's (x86-64's `__restore_rt`: `mov $15, %rax; syscall`)
// or Valgrind's (arm64's: `mov x8, #139; svc #0`).
Bool is_sigreturn_code(Addr a);

} // namespace kg
