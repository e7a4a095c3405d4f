// Block modes: the run-time side (the block activations of each frame and
// thread, the trace's runs).

namespace kg {

static BlockForest** grow_forest_table(BlockForest** table, UInt* n, UInt id)
{
   UInt cap = *n ? *n : 16;
   while (cap <= id) cap *= 2;
   BlockForest** bigger = (BlockForest**)alloc_zeroed(cap * sizeof(BlockForest*));
   if (*n) VG_(memcpy)(bigger, table, *n * sizeof(BlockForest*));
   kg::release(table);
   *n = cap;
   return bigger;
}

// The block forest of (thread, fn); a new one is rooted at root_label.
static BlockForest* intra_forest(ThreadState* t, FnInfo* fn, UInt root_label)
{
   BlockForest*** table = clo.join_threads ? &joined_fn_forests : &t->fn_forests;
   UInt* n = clo.join_threads ? &n_joined_fn_forests : &t->n_fn_forests;
   if (fn->id >= *n) *table = grow_forest_table(*table, n, fn->id);
   BlockForest*& f = (*table)[fn->id];
   if (!f) f = block_forest_new(fn, clo.join_threads ? 0 : t->serial, root_label);
   return f;
}

// The runs recorded in the block trace: the current activation's next blocks.
static void run_trace()
{
   UWord* start = trace_start();
   UWord* end = kg_trace_pos;
   if (end == start) return;
   kg_trace_pos = start;
   BlockForest* f = kg_now->bb_forest;
   BlockState* s = *kg_now->bb_state;
   const UWord* e = start;
   for (; e + 1 < end; e += 2)
      s = step_two(f, s, trace_label(e[0]), trace_count(e[0]), trace_label(e[1]), trace_count(e[1]));
   if (e < end) s = step_block(f, s, trace_label(*e), trace_count(*e));
   *kg_now->bb_state = s;
}

extern "C" void kg_trace_full() { run_trace(); }

extern "C" void VG_REGPARM(2) kg_block_intra(BBInfo* b, UWord n)
{
   run_trace();   // before the activation may change
   ThreadState* t = current;
   UInt d = depth(t) - 1;
   const Frame& f = *kg_now->top;
   FnInfo* fn = frame_fn(f.tr);
   // Only blocks run by an activation of a traced function are recorded.
   if (f.tr->kind != kActivation || !fn) return;
   if (d >= t->bb_cap) {
      UInt cap = t->bb_cap ? t->bb_cap : 64;
      while (cap <= d) cap *= 2;
      BlockFrame* bb = (BlockFrame*)alloc_zeroed(cap * sizeof(BlockFrame));
      if (t->bb_cap) VG_(memcpy)(bb, t->bb, t->bb_cap * sizeof(BlockFrame));
      kg::release(t->bb);
      t->bb = bb;
      t->bb_cap = cap;
   }
   BlockFrame& s = t->bb[d];
   if (!s.forest || s.sp != f.sp || s.ir_at_entry != f.ir_at_entry || s.fn != fn) {
      // The first block of a new activation: it starts again at the root of
      // the function's forest (normally the function's first block).
      s.sp = f.sp;
      s.ir_at_entry = f.ir_at_entry;
      s.fn = fn;
      s.forest = intra_forest(t, fn, b->label);
      s.serial = ++t->bb_activations;
      if (s.forest->forest.sf.root_label() == b->label)
         s.state = run_block_root(s.forest, n);
      else
         s.state = step_block(s.forest, enter_block_root(s.forest), b->label, n);
   } else {
      s.state = step_block(s.forest, s.state, b->label, n);
   }
   // The block trace continues this frame's activation while the frame is on top.
   kg_now->bb_state = &s.state;
   kg_now->bb_top = kg_now->top;
   kg_now->bb_ir = f.ir_at_entry;
   kg_now->bb_forest = s.forest;
   dump_block(t->serial, s.serial, fn->id + 1, b);
}

extern "C" void VG_REGPARM(2) kg_block_inter(BBInfo* b, UWord n)
{
   run_trace();   // earlier runs first
   ThreadState* t = current;
   t->inter_state = step_block(t->inter_forest, t->inter_state, b->label, n);
   dump_block(t->serial, 0, b->fn->id + 1, b);
}

UInt block_forests(BlockForest** out, UInt max)
{
   UInt n = 0;
   auto add = [&](BlockForest* f) { if (f && n < max) out[n++] = f; };
   auto add_table = [&](BlockForest** table, UInt size) {
      for (UInt i = 0; i < size; i++) add(table[i]);
   };
   if (clo.mode == kModeInter && clo.join_threads) {
      add(joined_inter_forest);
      return n;
   }
   if (clo.mode == kModeIntra && clo.join_threads) {
      add_table(joined_fn_forests, n_joined_fn_forests);
      return n;
   }
   // Oldest thread first.
   // Serials have gaps in a fork child (forget_other_threads).
   for (UInt serial = 1; serial <= thread_serials; serial++) {
      for (ThreadState* t = all_threads; t; t = t->next) {
         if (t->serial != serial) continue;
         if (clo.mode == kModeInter) add(t->inter_forest);
         else add_table(t->fn_forests, t->n_fn_forests);
      }
   }
   return n;
}

// Calls f on every block forest once.
template <typename F> static void for_each_block_forest(F f)
{
   auto each = [&](BlockForest* bf) { if (bf) f(bf); };
   for (ThreadState* t = all_threads; t; t = t->next) {
      if (t->inter_forest != joined_inter_forest) each(t->inter_forest);
      for (UInt i = 0; i < t->n_fn_forests; i++) each(t->fn_forests[i]);
   }
   each(joined_inter_forest);
   for (UInt i = 0; i < n_joined_fn_forests; i++) each(joined_fn_forests[i]);
}

static void reset_block_state()
{
   // Every forest's counters back to zero (fork child), the parent's runs
   // still in the trace and in the states included.
   kg_trace_pos = trace_start();
   for_each_block_forest([](BlockForest* f) {
      settle_block_states(f);
      forest_reset(&f->forest);
   });
   for (UInt l = 0; l < block_count(); l++) block_by_label(l)->count = 0;
   dump_disable();
}

} // namespace kg
