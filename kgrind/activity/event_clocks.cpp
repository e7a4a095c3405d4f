// Inclusive events beyond Ir (docs/design/events.md): as a frame's
// inclusive Ir is the thread's Ir clock at its exit less its reading at
// its entry (Frame::ir_at_entry), its inclusive events are the thread's
// event clock (kg_event_clock: the running totals the helpers add to) at
// its exit less the readings at its entry. Each stack keeps its frames'
// readings beside the frames, one row a frame (events' columns order);
// every place that starts, shifts or closes a frame's Ir clock does the
// same to its events here. A closing activation adds what it ran to its
// call edge's and, where it is the outermost of its context (as its Ir
// goes to ctx_incl), its k-SF node's inclusive events (node_incl_events,
// edge_incl_events: after the node's payload and the edge's fields),
// directly, so no transition needs to carry them. Inline IR's pushes and
// pops do the same without a call (instrument/frames_ir.cpp): a row is
// found from the frame's address (frame_rows_bias), a transition's arrays
// in the transition (TransitionEvents), and kg_frame_events_close does a
// pop whose transition has none yet. While counting is off (regions) nothing is
// added, as the transitions' Ir of then is discarded (discard_uncounted).

namespace kg {

UWord kg_events_paused;
ULong kg_events_sink[kEventIds];

namespace {

UInt clock_events;                    // events beyond Ir; 0: none, nothing here runs
EventId clock_event_ids[kEventIds];   // the event of each column
UWord row_scale;                      // frame_row_scale()
Bool rare_column[kEventIds];          // tested by inline pops (pops_test_rare_events)
ULong transitions_with_events;        // arrays made (--stats)

} // namespace

// While counting is off inline pops add nothing and call
// kg_frame_events_close, which adds nothing either.
static void note_counting_for_events() { kg_events_paused = !kg_counting; }

static void event_clocks_init()
{
   if (!extra_events_on()) return;
   clock_events = extra_event_count();
   for (UInt c = 0; c < clock_events; c++) clock_event_ids[c] = extra_event_id(c);
   for (UInt c = 0; pops_test_rare_events() && c < clock_events; c += 2)
      if (rare_column_pair(c)) rare_column[c] = rare_column[c + 1] = True;   // (c + 1 < kEventIds, which is even)
   // Frames are 3 words: (f - base) / 24 is ((f - base) >> 3) times 3's
   // inverse mod 2^64, exactly.
   static_assert(sizeof(Frame) == 3 * sizeof(ULong), "frame_row_scale's division by 3");
   row_scale = (UWord)0xAAAAAAAAAAAAAAABULL * (clock_events * sizeof(ULong));
}

UWord frame_row_scale() { return row_scale; }

namespace {

// Thread t's event clock now, in the columns' order.
struct ClockReading {
   ULong at[kEventIds];
   explicit ClockReading(const ThreadState* t)
   {
      for (UInt c = 0; c < clock_events; c++) at[c] = t->ev_clock[clock_event_ids[c]];
   }
};

// The readings at frame f's entry, f of stack s (its sentinel included).
ULong* entry_events(const ShadowStack* s, const Frame* f)
{
   return s->ev + (UWord)(f - (s->frames - 1)) * clock_events;
}

// Frame f's row of s is frame_rows_bias(s) + (f >> 3) * row_scale (mod
// 2^64; kg_hotpath.h, Now::ev_rows): inline IR finds it with a shift, a
// multiply and an add.
UWord frame_rows_bias(const ShadowStack* s)
{
   if (!clock_events) return 0;
   return (UWord)s->ev - ((UWord)(s->frames - 1) >> 3) * row_scale;
}

// s has a new frame array of s->cap usable frames (set_frames): so have
// its readings, the first `kept` rows (from the sentinel's) copied.
void frame_events_moved(ShadowStack* s, UInt kept)
{
   if (!clock_events) return;
   ULong* old = s->ev;
   SizeT row = clock_events * sizeof(ULong);
   s->ev = (ULong*)kg::alloc((s->cap + 2) * row, "kg.events");
   VG_(memset)(s->ev, 0, (s->cap + 2) * row);
   if (old) VG_(memcpy)(s->ev, old, kept * row);
   kg::release(old);
}

void release_frame_events(ShadowStack* s)
{
   kg::release(s->ev);
   kg::release(s->ev_suspended_at);
}

// Frames first..last of s start their event clocks at `now`.
void restart_events(const ShadowStack* s, const Frame* first, const Frame* last, const ULong* now)
{
   for (const Frame* f = first; clock_events && f <= last; f++)
      VG_(memcpy)(entry_events(s, f), now, clock_events * sizeof(ULong));
}

// Frame f of s starts its event clocks at thread t's clock.
void start_frame_events(const ThreadState* t, const ShadowStack* s, const Frame* f)
{
   ULong* entry = entry_events(s, f);
   for (UInt c = 0; c < clock_events; c++) entry[c] = t->ev_clock[clock_event_ids[c]];
}

// A frame was put in at f of stack s, the frames from f to last - 1
// moved up one (a stack segment's fence, stack_switch.cpp): so are their
// readings; f's are the moved ones' (a fence's are never read).
void move_frame_events_up(const ShadowStack* s, const Frame* f, const Frame* last)
{
   if (!clock_events) return;
   VG_(memmove)(entry_events(s, f + 1), entry_events(s, f), (SizeT)(last - f) * clock_events * sizeof(ULong));
}

// Stack s is left (suspended) or starts over: its clock's reading then.
void note_suspended_events(ShadowStack* s, const ULong* now)
{
   if (!clock_events) return;
   if (!s->ev_suspended_at) s->ev_suspended_at = (ULong*)kg::alloc(clock_events * sizeof(ULong), "kg.events");
   VG_(memcpy)(s->ev_suspended_at, now, clock_events * sizeof(ULong));
}

// Suspended stack s resumes in thread t: its frames' clocks skip the pause.
void shift_events_past_pause(const ThreadState* t, const ShadowStack* s)
{
   if (!clock_events) return;
   ClockReading now(t);
   for (const Frame* f = s->frames + 1; f <= s->top; f++) {
      ULong* entry = entry_events(s, f);
      for (UInt c = 0; c < clock_events; c++) entry[c] += now.at[c] - s->ev_suspended_at[c];
   }
}

// tr's arrays (TransitionEvents), made at its first close: its call
// edge's (the sink for a thread's root, which has none) and its node's
// (at k = inf the sink for a rolled transition, never its node's outermost
// activation), so that inline pops add without tests.
const TransitionEvents& events_of(Transition* tr)
{
   TransitionEvents* ev = events_arrays(tr);
   if (ev->node) return *ev;
   transitions_with_events++;
   ULong* node = node_incl_events(ctx_of(child_of(tr)));
   ULong* edge = parent_activation(tr) ? edge_incl_events(transition_edge(tr)) : kg_events_sink;
   *ev = { edge, acts_in_nodes() && rolled(tr) ? kg_events_sink : node };
   return *ev;
}

// A frame f of s, of transition tr, closes with the clock at `now`: what it
// ran is in its edge's inclusive events and, if it is the outermost frame
// of its context, its node's.
void close_frame_events(const ShadowStack* s, const Frame* f, Transition* tr, Bool outermost, const ULong* now)
{
   if (!clock_events || !kg_counting) return;
   const TransitionEvents& te = events_of(tr);
   const ULong* entry = entry_events(s, f);
   // Not reloaded from the transition after every add (which may alias it).
   ULong* edge = te.edge;
   ULong* node = te.node;
   // Most columns of a short frame did not move (misses, mispredicts):
   // no add there (cppvirt's calls from inlined code: two or three level
   // frames a return, eight columns each with --cache-sim).
   for (UInt c = 0; c < clock_events; c++) {
      ULong ran = now[c] - entry[c];
      if (!ran) continue;
      edge[c] += ran;
      if (outermost) node[c] += ran;
   }
}

} // namespace

extern "C" void VG_REGPARM(1) kg_frame_events_close(const Frame* f)
{
   helper_calls.frame_events_close++;
   if (kg_now->top + 1 != f) return;   // not popped: the inline pop's test failed
   Transition* tr = f->tr;
   Bool outermost = acts_in_nodes() ? !rolled(tr) : *tr->active == 0;
   ClockReading now(current);
   const TransitionEvents* ev = events_arrays(tr);
   if (!ev->node || !kg_counting) {
      close_frame_events(current->stack, f, tr, outermost, now.at);
      return;
   }
   // Its arrays made: the inline pop added all but the rare columns, which moved.
   const ULong* entry = entry_events(current->stack, f);
   for (UInt c = 0; c < clock_events; c++) {
      if (!rare_column[c]) continue;
      ULong ran = now.at[c] - entry[c];
      ev->edge[c] += ran;
      if (outermost) ev->node[c] += ran;
   }
}

void print_event_clock_stats()
{
   if (!clock_events) return;
   VG_(dmsg)("kgrind events: %llu transitions with inclusive events\n", transitions_with_events);
}

} // namespace kg
