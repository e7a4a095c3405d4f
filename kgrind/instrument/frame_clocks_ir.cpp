// Frames' event clocks in IR (activity/event_clocks.cpp's inline twins,
// docs/design/events.md): a pushed frame's readings of the thread's event
// clocks in its row, and a popped frame's events added to its call edge's
// and node's inclusive events.

namespace kg {

namespace {

// With events beyond Ir: frame f's row of event clock readings
// (Now::ev_rows).
IRExpr* frame_events_row(IRBuilder& b, IRExpr* f)
{
   IRExpr* words = b.op(Iop_Shr64, f, IRExpr_Const(IRConst_U8(3)));
   return b.op(Iop_Add64, b.load64(&kg_now->ev_rows), b.op(Iop_Mul64, words, IRBuilder::u64(frame_row_scale())));
}

// The rows' columns two at a time, as 128-bit vectors (one SSE
// instruction a load, a subtraction or an add), the last alone
// when their count is odd.
struct ClockColumns {
   UInt c;      // the first
   Bool pair;   // c and c + 1
   UWord at() const { return c * sizeof(ULong); }
   IRType type() const { return pair ? Ity_V128 : Ity_I64; }
   IROp sub() const { return pair ? Iop_Sub64x2 : Iop_Sub64; }
   IROp add() const { return pair ? Iop_Add64x2 : Iop_Add64; }
};
template <typename F> void for_clock_columns(F f)
{
   UInt n = extra_event_count();
   for (UInt c = 0; c < n; c += 2) f(ClockColumns{ c, c + 1 < n });
}

// The running thread's event clocks of columns cc (clock: kg_event_clock).
IRExpr* event_clocks_now(IRBuilder& b, IRExpr* clock, const ClockColumns& cc)
{
   EventId e = extra_event_id(cc.c);
   if (!cc.pair || extra_event_id(cc.c + 1) == e + 1) return b.load(cc.type(), b.field(clock, e * sizeof(ULong)));
   return b.op(Iop_64HLtoV128, b.load_field(clock, extra_event_id(cc.c + 1) * sizeof(ULong)),
               b.load_field(clock, e * sizeof(ULong)), Ity_V128);
}

// Frame f, being pushed, starts its event clocks: the clocks' readings in
// its row (f is always writable, and so is its row: a wrong push's readings
// are never read).
void add_frame_events_start(IRBuilder& b, IRExpr* f, IRExpr* guard = nullptr)
{
   IRExpr* clock = b.load64(&kg_event_clock);
   IRExpr* row = frame_events_row(b, f);
   // A push that may not happen (past the frames' room): its readings where
   // nothing is read.
   if (guard) row = b.ite(guard, row, b.at(kg_events_sink));
   for_clock_columns([&](const ClockColumns& cc) { b.store(b.field(row, cc.at()), event_clocks_now(b, clock, cc)); });
}

// Frame f of transition tr closes its event clocks if it was popped
// (not_popped zero): what it ran goes to its transition's call edge and,
// unless outer is non-zero (at finite k, the frames still in its context;
// nullptr at k = inf), its node, whose arrays the transition keeps
// (TransitionEvents); a transition without them yet, or a pop while
// counting is off, calls kg_frame_events_close. Without tests: where
// nothing counts, the differences go to kg_events_sink.
void add_frame_events_close(IRBuilder& b, IRExpr* f, IRExpr* tr, IRExpr* not_popped, IRExpr* outer)
{
   UWord arrays = transition_events_offset();
   IRExpr* made_node = b.load_field(tr, arrays + offsetof(TransitionEvents, node));
   IRExpr* unmade = b.tmp(IRExpr_Unop(Iop_1Uto64, b.op(Iop_CmpEQ64, made_node, IRBuilder::u64(0), Ity_I1)), Ity_I64);
   IRExpr* other = b.op(Iop_Or64, unmade, b.load64(&kg_events_paused));
   IRExpr* skip = b.op(Iop_Or64, not_popped, other);
   IRExpr* sink = b.at(kg_events_sink);
   auto array_or_sink = [&](IRExpr* array, IRExpr* bits) {
      IRExpr* counts = b.op(Iop_CmpEQ64, bits, IRBuilder::u64(0), Ity_I1);
      return b.ite(counts, array, sink);
   };
   IRExpr* edge = array_or_sink(b.load_field(tr, arrays + offsetof(TransitionEvents, edge)), skip);
   IRExpr* node = array_or_sink(made_node, outer ? b.op(Iop_Or64, skip, outer) : skip);
   IRExpr* clock = b.load64(&kg_event_clock);
   IRExpr* row = frame_events_row(b, f);
   // Rare events' pairs (misses): whether any moved, and then a call.
   Bool test_rare = pops_test_rare_events();
   IRExpr* rare_moved = nullptr;
   for_clock_columns([&](const ClockColumns& cc) {
      IRType ty = cc.type();
      IRExpr* ran = b.op(cc.sub(), event_clocks_now(b, clock, cc), b.load(ty, b.field(row, cc.at())), ty);
      if (test_rare && rare_column_pair(cc.c)) {
         IRExpr* bits = ran;
         if (cc.pair)
            bits = b.op(Iop_Or64, b.tmp(IRExpr_Unop(Iop_V128to64, ran), Ity_I64),
                        b.tmp(IRExpr_Unop(Iop_V128HIto64, ran), Ity_I64));
         rare_moved = rare_moved ? b.op(Iop_Or64, rare_moved, bits) : bits;
         return;
      }
      auto add = [&](IRExpr* to) {
         b.store(b.field(to, cc.at()), b.op(cc.add(), b.load(ty, b.field(to, cc.at())), ran, ty));
      };
      add(edge);
      add(node);
   });
   // (Popped or not: the helper tells.) One call for both: a second
   // helper call in every pop made --cache-sim's code larger.
   IRExpr* call = rare_moved ? b.op(Iop_Or64, other, rare_moved) : other;
   b.call("kg_frame_events_close", (void*)kg_frame_events_close, 1, mkIRExprVec_1(f),
          b.op(Iop_CmpNE64, call, IRBuilder::u64(0), Ity_I1));
}

} // namespace

} // namespace kg
