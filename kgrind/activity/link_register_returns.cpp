// Returns where calls leave the return address in a register (arm64's `bl`
// and `blr` put it in x30 and leave SP alone). A callee's frame then starts
// at its caller's SP, and a leaf function may never move SP, so "SP rose
// above the frame" (activity/frames.cpp) cannot end it: a `ret` does, when
// it goes to the return address of the frame's call. The inline pop takes
// the common case (instrument/link_register_ir.cpp); this is the rest.
// docs/design/shadow-stacks.md, "arm64".

namespace kg {

#if defined(VGA_arm64)
// callgrind's rule: among the frames entered at this SP (a tail call's
// callee shares its caller's), the nearest whose call returns to target is
// the one that returns, with every frame above it. A signal handler, which
// no call entered, returns into the signal restorer: its frames end there,
// down to the signal's fence (which sigreturn pops). Neither (a `ret` used
// as a jump, a longjmp's `ret`): no frame is popped here.
extern "C" void VG_REGPARM(2) kg_link_return(Addr target, Addr sp)
{
   ThreadState* t = current;
   for (Frame* f = kg_now->top; f > base_frame(t) && f->sp == sp; f--) {
      const Transition* tr = f->tr;
      if (tr->kind != kActivation && tr->kind != kTransparent) break;   // not past a fence
      if (is_inline_site(tr->site) || tr->site + kCallLength != target) continue;
      while (kg_now->top >= f) pop_frame(t);
      update_now_from_top();
      return;
   }
   if (!is_sigreturn_code(target)) return;
   Frame* f = kg_now->top;
   while (f > base_frame(t) && (f->tr->kind == kActivation || f->tr->kind == kTransparent)) f--;
   if (f->tr->kind != kSignalFence && f->tr->kind != kAltSignalFence) return;
   while (kg_now->top > f) pop_frame(t);
   update_now_from_top();
}
#endif

} // namespace kg
