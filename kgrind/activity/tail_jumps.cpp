// Computed jumps that are tail calls: a function that ends in `jmp *reg`
// into another function (a wrapper calling through a pointer: sqlite3's
// mutex wrappers into pthread_mutex_*). The callee's first block pushes its
// frame as after a call, and found no call pending there: its fix-up
// (kg_entry_fixup, block_entry) pushed the activation as a tail call, at
// every such entry (8.6 M of sqlite3's 15.8 M fix-ups). Each such jump
// keeps its last target that was entered so (a word its IR reads), and
// when it jumps there again kg_tail_jump makes the jump a pending call, as
// a direct tail call's IR does, if it jumps from its function's activation
// at that activation's entry SP; the callee's push then finds its kid as
// after a call.

namespace kg {

namespace {

// A computed jump's record: its target word (the latest translation's)
// and its function's id.
struct TailJump {
   const void* a;   // the jump instruction
   const void* b;   // unused
   Addr* target;
   UInt fn_id;
};
PairTable<TailJump> tail_jumps;

// The words (the IR holds their addresses).
PinnedSlots<Addr> tail_jump_words;

// The addresses some word holds (each once): a discarded translation's
// address clears its words only when it is one.
struct CachedTarget {
   const void* a;
   const void* b;
};
PairTable<CachedTarget> cached_targets;

// Whether a jump of function fn_id at SP sp is at a tail call's position:
// in an activation of that function (no inlined level, fence or other
// stack on top), at its entry SP.
Bool at_tail_position(UWord fn_id, Addr sp)
{
   const Transition* top = kg_now->top->tr;
   return top->kind == kActivation && top->fn_id == fn_id && sp == kg_now->top_sp;
}

} // namespace

extern "C" void VG_REGPARM(3) kg_tail_jump(Addr sp, Addr jump_instr, UWord fn_id)
{
   helper_calls.tail_jump++;
   if (!at_tail_position(fn_id, sp)) return;
   push_running_levels(current);   // the callee enters below them
   kg_now->call_site = jump_instr;
   kg_now->ctx = kCallPending;
   kg_now->jump_site = 0;   // as the fix-up's entry would clear it (block_entry)
}

Addr* tail_jump_word(Addr jump_instr, const FnInfo* fn)
{
   TailJump* j = tail_jumps.get((const void*)jump_instr, nullptr);
   j->target = tail_jump_words.take();
   j->fn_id = fn->id;
   return j->target;
}

// blk, a function's first block, is about to be entered as a tail call by
// the jump at jump_site (0: not a computed jump) at SP sp: it becomes that
// jump's target when the jump's IR would have made this entry a pending
// call (kg_tail_jump: from an activation of the jump's function at its
// entry SP; not a switch to another stack) and a pending call
// enters its function as this entry does: a traced function with a symbol
// (a call into code without one names its function by the address:
// activated_function), other than the jump's (a jump back to its own first
// instruction is a loop).
static void note_tail_jump(Addr jump_site, const BlockInfo* blk, Addr sp)
{
   if (!jump_site) return;
   TailJump* j = tail_jumps.find((const void*)jump_site, nullptr);
   const FnInfo* fn = blk->fn();
   if (!j || fn->no_symbol || !fn_traced(fn) || fn->id == j->fn_id) return;
   if (!at_tail_position(j->fn_id, sp)) return;
   *j->target = blk->addr;
   cached_targets.get((const void*)blk->addr, nullptr);
}

void tail_jump_target_discarded(Addr addr)
{
   if (!cached_targets.find((const void*)addr, nullptr)) return;
   tail_jump_words.for_each([addr](Addr& word) {
      if (word == addr) word = 0;
   });
}

} // namespace kg
