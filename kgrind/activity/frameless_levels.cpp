// Frameless inlined levels (kg_frameless_levels.h): the records of runs of
// inlined chains per physical context, the helpers of their inline IR, the
// level frames of calls made from inlined code, and the derivation of the
// levels' counts from the records.

namespace kg {

namespace {

Bool frameless_on;

// Every run's static data (inline IR holds their addresses), for
// forgetting their caches.
PinnedSlots<FramelessRun> frameless_runs;

// While counting is off: a scratch record per depth (runs of one depth
// find their counters at the same offset).
FramelessRecord** scratch_records;
UWord n_scratch_records, scratch_records_cap;

FramelessRecord* scratch_record(UInt depth)
{
   while (depth >= n_scratch_records)
      append(scratch_records, n_scratch_records, scratch_records_cap, (FramelessRecord*)nullptr, 16, "kg.frameless");
   FramelessRecord*& rec = scratch_records[depth];
   if (!rec) {
      UWord bytes = frameless_counters_offset(depth) + kUncountedSinkCounters * sizeof(ULong);
      rec = (FramelessRecord*)kg::alloc(bytes, "kg.frameless");
      VG_(memset)(rec, 0, bytes);
      rec->depth = depth;
      static UWord no_frames = 0;
      for (UInt i = 0; i < depth; i++) {
         rec->levels()[i] = &no_transition;
         rec->active()[i] = &no_frames;
      }
   }
   return rec;
}

// (physical context, run) -> its plain record; (plain record, nested) -> a
// variant.
struct RecordSlot {
   const void* a;
   const void* b;
   FramelessRecord* rec;
};
PairTable<RecordSlot> records;
PairTable<RecordSlot> variants;
FramelessRecord* all_records;   // linked through next

// The chain's levels, outermost first (valid until the next call).
UInt* chain_levels(UInt chain)
{
   static UInt* path;
   static UInt cap;
   UInt n = inline_chain(chain).depth;
   if (n > cap) {
      if (path) kg::release(path);
      cap = n * 2;
      path = (UInt*)kg::alloc(cap * sizeof(UInt), "kg.frameless");
   }
   for (UInt i = n; i-- > 0; chain = inline_chain(chain).parent) path[i] = chain;
   return path;
}

// A record of run in the running activation: plain (its levels made from
// the top frame's kids), or a variant of plain, whose levels with a bit in
// `nested` had frames below.
FramelessRecord* new_record(ThreadState* t, const FramelessRun* run, FramelessRecord* plain, UWord nested)
{
   UInt depth = inline_chain(run->chain).depth;
   UInt n = counter_count(run->blk);
   UWord bytes = frameless_counters_offset(depth) + (n + depth) * sizeof(ULong) + depth;
   FramelessRecord* rec = (FramelessRecord*)kg::alloc(bytes, "kg.frameless");
   VG_(memset)(rec, 0, bytes);
   rec->key = frameless_key(kg_now->ctx, kg_now->top->tr);
   rec->run = run;
   rec->owner = t;
   rec->plain = plain;
   rec->depth = depth;
   rec->n_counters = n;
   rec->nested = nested;
   // The levels hang below the physical frame, which is the top one while
   // a run runs (level frames are pushed only under calls).
   UInt* path = plain ? nullptr : chain_levels(run->chain);
   Transition* from = kg_now->top->tr;
   static UWord no_frames = 0;
   for (UInt i = 0; i < depth; i++) {
      Transition* tr = plain ? plain->levels()[i] : level_transition_from(t, from, path[i], run->blk->addr);
      rec->levels()[i] = tr;
      // At k = inf no frames are counted (acts_in_nodes): a node's
      // inclusive cost is its transitions' that are not rolled.
      rec->active()[i] = acts_in_nodes() ? &no_frames : tr->active;
      // A level of the chain in an outer level's context (rolled) adds to
      // the outer one's cost only.
      Bool outer_same = False;
      for (UInt j = 0; j < i; j++) outer_same |= transition_ctx(rec->levels()[j]) == transition_ctx(tr);
      rec->counts_ctx_incl()[i] =
         acts_in_nodes() ? !rolled(tr) : !outer_same && !(nested >> (i < 63 ? i : 63) & 1);
      from = tr;
   }
   // No prediction yet: a chain no run has.
   rec->pred_chain = ~(UWord)0;
   rec->next = all_records;
   all_records = rec;
   return rec;
}

// The Ir of rec's run: its flush points' passes times their instructions
// (the block's line runs at those points, or with per-instruction positions
// its instructions; a called PLT stub's counter is the call's cost, which
// the call's level frames measure).
ULong run_ir(const FramelessRecord* rec, const ULong* c)
{
   const FramelessRun* run = rec->run;
   const BlockInfo* blk = run->blk;
   auto in_run = [run](UInt point) { return point >= run->first_point && point < run->end_point; };
   ULong ir = 0;
   if (clo.count_instr) {
      for (UInt i = 0; i < blk->n_instrs; i++)
         if (in_run(blk->instrs()[i].point)) ir += c[blk->instrs()[i].point];
      return ir;
   }
   const LineRun* lr = blk->runs();
   for (UInt i = 0; i < blk->n_runs; i++)
      if (in_run(lr[i].point)) ir += c[lr[i].point] * lr[i].n;
   return ir;
}

// The levels of chain `to` that a change from chain `from` enters (steps'
// pushes), as indexes into a record's levels (outermost 0): [first, depth).
UInt first_entered(UInt from, UInt to)
{
   return from == kStartOfSuperblock ? inline_chain(to).depth : chains_common_depth(from, to);
}

// Events beyond Ir: what rec's run counted (its counters hold its own
// slots' counts alone) is in every level's inclusive events, as its Ir is
// (what a level frame's event clocks would have measured).
void add_run_events(FramelessRecord* rec)
{
   if (!clock_events) return;
   ULong ran[kEventIds] = {};
   Bool any = False;
   for_each_block_event(rec->run->blk, rec->counters(), [&](UInt, UShort event, ULong n) {
      ran[event_column((EventId)event)] += n;
      any = True;
   });
   for (UInt i = 0; any && i < rec->depth; i++) {
      const TransitionEvents& te = events_of(rec->levels()[i]);
      Bool node = rec->counts_ctx_incl()[i];
      for (UInt col = 0; col < clock_events; col++) {
         te.edge[col] += ran[col];
         if (node) te.node[col] += ran[col];
      }
   }
}

void derive_record(FramelessRecord* rec)
{
   const FramelessRun* run = rec->run;
   UInt depth = rec->depth;
   Transition** tr = rec->levels();
   ULong* c = rec->counters();
   ULong* entries = rec->entries();
   // Entries inside the superblock: the passes of the run's first point.
   if (run->prev_chain != kStartOfSuperblock && run->first_point < run->end_point)
      for (UInt i = first_entered(run->prev_chain, run->chain); i < depth; i++) entries[i] += c[run->first_point];
   if (rec->pred_count) {
      for (UInt i = first_entered((UInt)rec->pred_chain, run->chain); i < depth; i++) entries[i] += rec->pred_count;
      rec->pred_count = 0;
   }
   ULong ir = run_ir(rec, c);
   for (UInt i = 0; i < depth; i++) {
      tr[i]->calls += entries[i];
      entries[i] = 0;
      tr[i]->edge_incl += ir;
      if (rec->counts_ctx_incl()[i] && !acts_in_nodes()) tr[i]->ctx_incl += ir;
   }
   add_run_events(rec);
   Bool any = False;
   for (UInt s = 0; s < rec->n_counters && !any; s++) any = c[s] != 0;
   if (!any) return;
   add_block_counters(run->blk, counters_in(run->blk, transition_ctx(tr[depth - 1])), c);   // its misses move
   VG_(memset)(c, 0, rec->n_counters * sizeof(ULong));
}

template <typename F> void for_each_record(F f)
{
   for (FramelessRecord* rec = all_records; rec; rec = rec->next) f(rec);
}

// Pushes chain's levels as frames onto the top frame (the physical one),
// without entries (the records count those): a call, a tail call, a
// signal or a context-id request from inlined code. tr: the levels'
// transitions, or null (found from the top frame's kids).
void push_levels(ThreadState* t, UInt chain, Transition* const* tr)
{
   UInt depth = inline_chain(chain).depth;
   UInt* path = tr ? nullptr : chain_levels(chain);
   Addr sp = kg_now->top->sp;
   for (UInt i = 0; i < depth; i++) {
      Transition* level = tr ? tr[i] : level_transition_from(t, kg_now->top->tr, path[i], 0);
      push_frame(t, sp, level);
      level->calls--;   // push_frame's entry: the record counted it
   }
   kg_now->top_sp = sp;
   kg_now->chain = 0;
}

} // namespace

Bool frameless_levels_on() { return frameless_on; }
Bool frameless_keyed_by_transition() { return separate_view() || clo.join_threads; }

void frameless_levels_init()
{
   // check_inline_levels refused the rest.
   frameless_on = clo.inline_records && kCallsPush;
   tl_assert(!frameless_on ||
             (inline_frames_on() && !block_mode() && !clo.collect_jumps && !tiering_on()));
}

const Transition* frameless_no_level() { return &no_transition; }

FramelessRun* new_frameless_run(BlockInfo* blk, UInt chain, UInt prev_chain, UInt first_point)
{
   FramelessRun* run = frameless_runs.take();
   // Its cache's record is valid before it finds one (inline IR reads the
   // counts of frames through it): the scratch record of its depth.
   FramelessRecord* none = scratch_record(inline_chain(chain).depth);
   *run = { nullptr, none, blk, chain, prev_chain, (UShort)first_point, (UShort)first_point };
   return run;
}

void forget_frameless_caches()
{
   frameless_runs.for_each([](FramelessRun& run) {
      run.cached_key = nullptr;
      run.cached_rec = scratch_record(inline_chain(run.chain).depth);
   });
}

void derive_frameless_levels()
{
   if (!frameless_on || !kg_counting) return;
   for_each_record(derive_record);
}

void derive_frameless_levels_of(ThreadState* t)
{
   if (!frameless_on || !kg_counting) return;
   for_each_record([t](FramelessRecord* rec) {
      if (rec->owner == t) derive_record(rec);
   });
}

void zero_frameless_records()
{
   if (!frameless_on) return;
   for_each_record([](FramelessRecord* rec) {
      rec->pred_count = 0;
      VG_(memset)(rec->counters(), 0, (rec->n_counters + rec->depth) * sizeof(ULong));   // and the entries
   });
}

// Drops the records of the threads for which gone(owner) holds.
template <typename F> void drop_records(F gone)
{
   if (!frameless_on) return;
   FramelessRecord** link = &all_records;
   while (FramelessRecord* rec = *link) {
      if (!gone(rec->owner)) {
         link = &rec->next;
         continue;
      }
      *link = rec->next;
      if (rec->run) recycle_miss_counters(rec->run->blk, rec->counters());
      kg::release(rec);
   }
   records.clear();
   variants.clear();
   for_each_record([](FramelessRecord* rec) {
      if (rec->plain) variants.get(rec->plain, (const void*)rec->nested)->rec = rec;
      else records.get(rec->key, rec->run)->rec = rec;
   });
   forget_frameless_caches();
}

void drop_frameless_records_of(ThreadState* t)
{
   drop_records([t](const ThreadState* owner) { return owner == t; });
}

void drop_frameless_records_except(ThreadState* t)
{
   drop_records([t](const ThreadState* owner) { return owner != t; });
}

extern "C" void VG_REGPARM(1) kg_frameless_find(FramelessRun* run)
{
   helper_calls.frameless_find++;
   const void* key = frameless_key(kg_now->ctx, kg_now->top->tr);
   if (!kg_counting) {
      run->cached_key = key;
      run->cached_rec = scratch_record(inline_chain(run->chain).depth);
      return;
   }
   RecordSlot* slot = records.get(key, run);
   if (!slot->rec) slot->rec = new_record(current, run, nullptr, 0);
   FramelessRecord* plain = slot->rec;
   UWord nested = 0;
   for (UInt i = 0; i < plain->depth && !acts_in_nodes(); i++)
      if (*plain->active()[i]) nested |= (UWord)1 << (i < 63 ? i : 63);
   if (!nested) {
      run->cached_key = key;
      run->cached_rec = plain;
      return;
   }
   // Not cached: the next run of this activation finds it again.
   helper_calls.frameless_variants++;
   RecordSlot* v = variants.get(plain, (const void*)nested);
   if (!v->rec) v->rec = new_record(current, run, plain, nested);
   run->cached_key = nullptr;
   run->cached_rec = v->rec;
}

extern "C" void VG_REGPARM(2) kg_frameless_start(FramelessRecord* rec, UWord prev)
{
   helper_calls.frameless_start++;
   if (!rec->run) return;   // a scratch record
   UInt chain = rec->run->chain;
   ULong* entries = rec->entries();
   for (UInt i = first_entered((UInt)prev, chain); i < rec->depth; i++) entries[i]++;
   // The starts the old prediction counted entered its levels.
   if (rec->pred_count) {
      for (UInt i = first_entered((UInt)rec->pred_chain, chain); i < rec->depth; i++) entries[i] += rec->pred_count;
      rec->pred_count = 0;
   }
   rec->pred_chain = prev;
}

extern "C" void VG_REGPARM(0) kg_frameless_return()
{
   helper_calls.frameless_return++;
   // leave_levels, with the callee's frame just popped (no pending call,
   // SP below the levels'), the callee's event clocks closed.
   Frame* f = kg_now->top;
   kg_now->chain = site_chain(f->tr->site);
   ULong ir = kg_now->ir;
   const ShadowStack* s = current->stack;
   ClockReading ev_now(current);
   do {
      close_frame(s, f, ir - f->ir_at_entry, ev_now.at);
      f--;
   } while (f->tr->kind == kActivation && is_inline_site(f->tr->site));
   kg_now->top = f;
   kg_now->top_sp = f->sp;
   kg_now->ctx = transition_ctx(f->tr);
}

extern "C" void VG_REGPARM(1) kg_frameless_call(FramelessRecord* rec)
{
   helper_calls.frameless_call++;
   push_levels(current, (UInt)kg_now->chain, rec->run ? rec->levels() : nullptr);
}

void push_running_levels(ThreadState* t)
{
   if (frameless_on && kg_now->chain) push_levels(t, (UInt)kg_now->chain, nullptr);
}

void note_levels_left()
{
   if (frameless_on) kg_now->chain = top_chain();
}

} // namespace kg
