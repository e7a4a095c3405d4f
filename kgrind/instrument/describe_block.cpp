// A superblock's BlockInfo: its lines, function, entry and PLT status.

namespace kg {

namespace {

// Is a (whose source location is loc) a function's first instruction, with
// a symbol? (A split part's first instruction is not: its code is its
// function's, source_loc.)
Bool function_entry(Addr a, const SourceLoc& loc)
{
   return loc.fn && !loc.fn->no_symbol && !loc.part && is_function_entry(a);
}

void count_positions(const IRSB* sb_in, Bool blocks, UInt* n_instrs, UInt* n_exits);

// Static facts about the block: its instructions' source lines (one slot per
// distinct line), function, entry and PLT status. With a PLT stub it may
// call (stub), *stub_slot is the slot of the calling instruction's line,
// where the stub's instructions are charged (as callgrind does).
// Room after the block: per instruction (positions) for its instructions
// and flush points, else for as many line runs as it may have (each run
// counts at least one instruction, and a called stub has one more:
// PendingCounts::finish gives back the rest).
// chain_changes: flush points at changes of inline chain (--inline-frames).
BlockInfo* describe_block(IRSB* sb_in, UInt* slot_of_instr, Int* n_instrs, Bool stub, UInt* stub_slot,
                          Bool positions, Bool blocks, UInt chain_changes)
{
   SourceLine* slots[kMaxSlots];
   UInt n_slots = 0;
   auto slot_of = [&](Addr a, SourceLoc* loc) {
      source_loc(a, loc);
      SourceLine* line = source_line(*loc);
      UInt s = 0;
      while (s < n_slots && slots[s] != line) s++;
      if (s < n_slots) return s;
      if (n_slots == kMaxSlots) return n_slots - 1;   // never in practice
      slots[n_slots] = line;
      return n_slots++;
   };
   Addr first = 0;
   SourceLoc first_loc = {};
   *n_instrs = 0;
   for (Int i = 0; i < sb_in->stmts_used; i++) {
      IRStmt* st = sb_in->stmts[i];
      if (!st || st->tag != Ist_IMark) continue;
      SourceLoc loc;
      UInt s = slot_of((Addr)st->Ist.IMark.addr, &loc);
      if (*n_instrs == 0) { first = (Addr)st->Ist.IMark.addr; first_loc = loc; }
      slot_of_instr[(*n_instrs)++] = s;
   }
   if (stub && *n_instrs) *stub_slot = slot_of_instr[*n_instrs - 1];
   UInt n_positions, n_exits;
   count_positions(sb_in, blocks, &n_positions, &n_exits);
   UInt max_runs = *n_instrs + 1;
   BlockInfo* blk = block_info_new(first, n_slots, slots,
                                   positions ? n_positions * sizeof(InstrPos) +
                                                  (n_exits + chain_changes + 1) * sizeof(FlushPoint)
                                             : max_runs * sizeof(LineRun));
   if (!positions) blk->n_runs = (UShort)max_runs;
   blk->fn_entry = function_entry(first, first_loc);
   blk->in_plt = is_plt_stub(first);
   return blk;
}

} // namespace

} // namespace kg
