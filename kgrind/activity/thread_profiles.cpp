// The end of the run, and what a profile's writer reads: every thread's
// forests with the transitions' deferred counts flushed into them.

namespace kg {

void finish_all_threads()
{
   for (UInt tid = 0; tid < VG_N_THREADS; tid++) {
      if (!by_tid[tid]) continue;
      switch_to(tid);
      if (!kg_counting) discard_uncounted(current);
      close_thread(current, False);
   }
   if (current) current->saved = *kg_now;
   derive_frameless_levels();
   drop_frameless_records_except(nullptr);   // every thread's: their transitions go
   // Fibers that ended threads left suspended, no other thread resumed.
   for (ThreadState* t = all_threads; t; t = t->next) end_suspended_stacks(t, [](const ShadowStack*) { return True; });
   if (block_mode()) {
      for_each_block_forest([](BlockForest* f) {
         settle_block_states(f);
         f->states.clear();
      });
   }
   // No more lookups: their tables' memory goes to the output's buffers.
   // The transitions are found through their index: flushed first.
   for (ThreadState* t = all_threads; t; t = t->next) {
      flush_transitions(t, True);
      t->acts.forget_index();
      t->transitions.clear();
      t->view_acts.forget_index();
   }
   active_counts.forget_index();
   calls_added_for_good = True;
}

void derive_node_counts(const ThreadProfile* threads, UInt n)
{
   if (!counts_derived()) return;
   for (UInt i = 0; i < n; i++)
      if (threads[i].forest) core::visit_postorder(threads[i].forest->sf, [](ForestNode* node) {
         tl_assert(node->incl == 0);   // its first transition's edge_incl, flushed (flush_all_transitions)
         ULong incl = node->excl;
         core::for_each_child(node, [&](ForestNode* c) { incl += c->incl; });
         node->incl = incl;
      });
}

void forget_node_counts(const ThreadProfile* threads, UInt n)
{
   if (!counts_derived()) return;
   for (UInt i = 0; i < n; i++)
      if (threads[i].forest) core::visit_postorder(threads[i].forest->sf, [](ForestNode* node) { node->incl = 0; });
   if (calls_added_for_good) return;
   for (ThreadState* t = all_threads; t; t = t->next) {
      add_calls_to_nodes(t, -1);
      add_calls_to_edges(t, -1);
   }
}

UInt thread_profile_count()
{
   if (clo.join_threads) return 1;
   UInt n = (UInt)n_ended_threads;
   for (ThreadState* t = all_threads; t; t = t->next) n++;
   return n;
}

void flush_all_transitions()
{
   derive_frameless_levels();
   for (ThreadState* t = all_threads; t; t = t->next) flush_transitions(t, !calls_added_for_good);
}

UInt thread_profiles(ThreadProfile* out)
{
   if (current) current->saved = *kg_now;
   if (clo.join_threads) {
      if (!joined_forest) return 0;
      ULong ir = 0;
      for (ThreadState* t = all_threads; t; t = t->next) ir += counted_ir(t);
      out[0].tid = 0;
      out[0].forest = joined_forest;
      out[0].view = joined_view;
      out[0].ir = ir;
      out[0].ended = nullptr;
      return 1;
   }
   // Oldest first: the main thread is thread 1.
   UInt n = thread_profile_count();
   UInt n_ended = (UInt)n_ended_threads;
   UInt i = n - n_ended;
   for (ThreadState* t = all_threads; t; t = t->next) {
      i--;
      out[i] = { t->serial, t->forest, t->view, counted_ir(t), nullptr };
   }
   if (!n_ended) return n;
   for (UInt e = 0; e < n_ended; e++) {
      const EndedThread& et = ended_threads[e];
      out[n - n_ended + e] = { et.serial, nullptr, nullptr, et.counted, &et };
   }
   VG_(ssort)(out, n, sizeof(ThreadProfile), [](const void* a, const void* b) -> Int {
      UInt x = ((const ThreadProfile*)a)->tid, y = ((const ThreadProfile*)b)->tid;
      return x < y ? -1 : x > y ? 1 : 0;
   });
   return n;
}

} // namespace kg
