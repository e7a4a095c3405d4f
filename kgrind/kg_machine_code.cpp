// Code recognised by its bytes, per platform (kg_machine_code.h).
#include "kg_machine_code.h"

namespace kg {

#if defined(VGA_arm64)
Addr plt_stub_slot(Addr a)
{
   return 0;
}

// The C library sets no restorer on arm64 (the kernel's is in the vDSO):
// under Valgrind a handler returns into Valgrind's own
// (VG_(arm64_linux_SUBST_FOR_rt_sigreturn)), in Valgrind's image, not in
// the client's memory.
Bool is_sigreturn_code(Addr a)
{
   // mov x8, #139 (__NR_rt_sigreturn); svc #0
   static const UChar kRtSigreturn[8] = { 0x68, 0x11, 0x80, 0xd2, 0x01, 0x00, 0x00, 0xd4 };
   const NSegment* seg = VG_(am_find_nsegment)(a);
   if (!seg || !seg->hasR || a + sizeof kRtSigreturn - 1 > seg->end) return False;
   return VG_(memcmp)((const void*)a, kRtSigreturn, sizeof kRtSigreturn) == 0;
}
#else
// n bytes of client code at a can be read.
static Bool readable_code(Addr a, SizeT n)
{
   return VG_(am_is_valid_for_client)(a, n, VKI_PROT_READ);
}

static Bool code_is(Addr a, const UChar* bytes, SizeT n)
{
   return readable_code(a, n) && VG_(memcmp)((const void*)a, bytes, n) == 0;
}

Addr plt_stub_slot(Addr a)
{
   static const UChar kEndbr64[4] = { 0xf3, 0x0f, 0x1e, 0xfa };
   if (code_is(a, kEndbr64, 4)) a += 4;
   if (readable_code(a, 1) && *(const UChar*)a == 0xf2) a++;   // bnd
   if (!readable_code(a, 6)) return 0;
   const UChar* p = (const UChar*)a;
   if (p[0] != 0xff || p[1] != 0x25) return 0;
   Int disp;
   VG_(memcpy)(&disp, p + 2, sizeof disp);
   return a + 6 + (Addr)(Long)disp;
}

Bool is_sigreturn_code(Addr a)
{
   static const UChar kRtSigreturn[9] = { 0x48, 0xc7, 0xc0, 0x0f, 0x00, 0x00, 0x00, 0x0f, 0x05 };
   return code_is(a, kRtSigreturn, sizeof kRtSigreturn);
}
#endif

} // namespace kg
