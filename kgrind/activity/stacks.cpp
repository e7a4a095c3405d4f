// A thread's stacks: the memory each lies in, the registered stacks, and
// the frames' storage.

namespace kg {

// The memory a stack runs in now: its innermost segment's, else its own.
static Addr memory_lo(const ShadowStack* s) { return s->segment ? s->segment->lo : s->lo; }
static Addr memory_hi(const ShadowStack* s) { return s->segment ? s->segment->hi : s->hi; }

// Stacks the program registered (VALGRIND_STACK_REGISTER): sorted by lo,
// disjoint (a registration ends those it overlaps: their memory was freed,
// and the core does not tell tools of VALGRIND_STACK_DEREGISTER).
struct StackRange {
   Addr lo, hi;
};
static StackRange* registered_stacks;
static UInt n_registered_stacks, registered_stacks_cap;

// The registered stack sp lies in, if any.
static const StackRange* registered_stack_at(Addr sp)
{
   UInt lo = 0, hi = n_registered_stacks;   // the first range above sp is in [lo, hi]
   while (lo < hi) {
      UInt mid = (lo + hi) / 2;
      if (registered_stacks[mid].lo <= sp) lo = mid + 1;
      else hi = mid;
   }
   if (lo == 0 || registered_stacks[lo - 1].hi < sp) return nullptr;
   return &registered_stacks[lo - 1];
}

// Is sp in a registered stack that is not s's (nor one holding all of s)?
// A heap mapping, or a thread's stack, may hold registered coroutine stacks:
// their memory is not the mapping's stack's.
static Bool in_other_registered_stack(const ShadowStack* s, Addr sp)
{
   if (!n_registered_stacks || s->segment) return False;
   const StackRange* r = registered_stack_at(sp);
   return r && !(r->lo <= s->lo && r->hi >= s->hi);
}

static Bool in_memory_of(const ShadowStack* s, Addr sp)
{
   return sp >= memory_lo(s) && sp <= memory_hi(s) && !in_other_registered_stack(s, sp);
}

namespace {

// base[0] is a sentinel below the stack's base frame (inline pops read the
// frame below the top) and base[cap + 1] a spare slot above the last usable
// frame (inline pushes write the next frame before checking it is usable).
void set_frames(ShadowStack* s, Frame* base, UInt cap)
{
   s->frames = base + 1;
   s->cap = cap;
}

// Usable frames of a new thread's stack, and of a new coroutine's: a
// program may leave thousands of coroutines suspended, live or dead (their
// memory freed unseen), and a coroutine's stack is often shallow (64
// frames: 1.6 KB a coroutine; 14: 384 bytes). Stacks grow when full.
const UInt kThreadFrames = 64;
const UInt kCoroutineFrames = 14;

// A stack with only its base frame, whose activation is root's; its sentinel
// has an SP no frame can be popped to.
ShadowStack* new_shadow_stack(Transition* root, Addr lo, Addr hi, UInt cap)
{
   ShadowStack* s = (ShadowStack*)alloc_zeroed(sizeof(ShadowStack));
   set_frames(s, (Frame*)kg::alloc((cap + 2) * sizeof(Frame)), cap);
   frame_events_moved(s, 0);
   s->frames[-1] = { 0, 0, root };
   s->frames[0] = { ~(Addr)0, kg_now->ir, root };
   if (current) start_frame_events(current, s, s->frames);
   s->top = s->frames;
   s->lo = lo;
   s->hi = hi;
   return s;
}

// Go's runtime, not linked with cgo, starts each thread it makes on a
// stack (its g0's, 8 KB in Go 1.19) taken from its heap, which holds the
// goroutines' stacks too: Valgrind takes such a stack to reach down to the
// start of the mapping. Its clone leaves the thread's g in R9 (the child's
// registers are the parent's), whose first words are the stack's bounds
// (g.stack.lo, g.stack.hi), hi the SP the thread starts at. True, and the
// stack's memory, when R9 points at such a pair.
Bool go_thread_stack(ThreadId tid, Addr sp, Addr* lo, Addr* hi)
{
#if defined(VGA_amd64)
   Addr g = 0, bounds[2];
   VG_(get_shadow_regs_area)(tid, (UChar*)&g, 0, offsetof(VexGuestAMD64State, guest_R9), sizeof(g));
   if (!g || !VG_(am_is_valid_for_client)(g, sizeof(bounds), VKI_PROT_READ)) return False;
   VG_(memcpy)(bounds, (const void*)g, sizeof(bounds));
   if (bounds[1] != sp || bounds[0] >= sp || sp - bounds[0] > 1024 * 1024) return False;
   *lo = bounds[0];
   *hi = sp;
   return True;
#else
   return False;
#endif
}

// Whether a thread started on a Go thread's stack (go_thread_stack): the
// program is Go's, not linked with cgo.
Bool go_threads;

// The goroutine whose stack thread tid runs on at sp, and that stack's
// bounds (lo, hi): Go's runtime keeps the running goroutine's g in R14
// (amd64), whose first words are its stack's bounds; runtime.gogo sets R14
// before it loads SP. 0 when R14 does not hold a g whose stack holds sp
// (morestack switches to g0's stack with R14 the goroutine's), or the
// program is not Go's: runtime.gogo was not translated (Go's runtime,
// linked with cgo or not) nor, in a binary without symbols, a thread
// started the Go way. A C program's R14 may point at two words bounding SP.
Addr goroutine_at(ThreadId tid, Addr sp, Addr* lo, Addr* hi)
{
   *lo = *hi = 0;
#if defined(VGA_amd64)
   if (!go_threads && !go_runtime_seen()) return 0;
   Addr g = 0, bounds[2];
   VG_(get_shadow_regs_area)(tid, (UChar*)&g, 0, offsetof(VexGuestAMD64State, guest_R14), sizeof(g));
   if (!g || !VG_(am_is_valid_for_client)(g, sizeof(bounds), VKI_PROT_READ)) return 0;
   VG_(memcpy)(bounds, (const void*)g, sizeof(bounds));
   if (!(bounds[0] < sp && sp <= bounds[1])) return 0;
   *lo = bounds[0];
   *hi = bounds[1];
   return g;
#else
   (void)tid;
   (void)sp;
   return 0;
#endif
}

// The memory of the stack a thread starts on: Valgrind's record of it, or
// else the mapping SP lies in. True for a Go thread's stack (go_thread_stack),
// which lies in memory that holds other stacks.
Bool own_stack_memory(ThreadId tid, Addr* lo, Addr* hi)
{
   if (tid != 1 && go_thread_stack(tid, VG_(get_SP)(tid), lo, hi)) {
      go_threads = True;
      return True;
   }
   Addr max = VG_(thread_get_stack_max)(tid);
   SizeT size = VG_(thread_get_stack_size)(tid);
   if (max && size && max > size) {
      *lo = max - size + 1;
      *hi = max;
      return False;
   }
   *lo = 0;
   *hi = ~(Addr)0;
   return False;
}

// The memory of a stack SP switched to: the registered stack it lies in
// (True), else its mapping. Where a call pushes nothing (arm64), a new
// coroutine's first function starts at the very end of its stack's memory
// (makecontext's SP): the mapping is the one below SP, and reaches up to it.
Bool stack_memory_at(Addr sp, Addr* lo, Addr* hi)
{
   if (const StackRange* r = n_registered_stacks ? registered_stack_at(sp) : nullptr) {
      *lo = r->lo;
      *hi = r->hi;
      return True;
   }
   const Addr past_end = kCallsPush ? 0 : 1;
   const NSegment* seg = VG_(am_find_nsegment)(sp - past_end);
   if (seg) {
      *lo = seg->start;
      *hi = seg->end + past_end;
   } else {
      *lo = *hi = sp;
   }
   return False;
}

// Ties coroutine stack s to the memory sp lies in (stack_memory_at).
void tie_to_memory_at(ShadowStack* s, Addr sp)
{
   s->registered = stack_memory_at(sp, &s->lo, &s->hi);
   s->mapped = !s->registered;
}

// Does the mapping that coroutine stack s was tied to reach sp now? A
// mapping grows: Go maps its heap, which holds the goroutines' stacks, in
// adjacent steps that the core merges into one mapping, and copies a
// goroutine's stack across the end its mapping had when the stack was tied
// to it. When it does, the mapping's bounds are in lo, hi.
static Bool mapping_reaches(const ShadowStack* s, Addr sp, Addr* lo, Addr* hi)
{
   if (!s->mapped || s->segment) return False;
   if (stack_memory_at(s->hi, lo, hi)) return False;
   return *lo <= s->lo && *hi >= s->hi && sp >= *lo && sp <= *hi && !in_other_registered_stack(s, sp);
}

// Is sp in s's memory, its mapping's as it is now included?
static Bool in_grown_memory_of(const ShadowStack* s, Addr sp)
{
   Addr lo, hi;
   return in_memory_of(s, sp) || mapping_reaches(s, sp, &lo, &hi);
}

// Is sp in the memory of s, which follows its mapping's growth (the
// running stack: its lo, hi become the grown mapping's)?
static Bool in_memory_following_mapping(ShadowStack* s, Addr sp)
{
   if (in_memory_of(s, sp)) return True;
   Addr lo, hi;
   if (!mapping_reaches(s, sp, &lo, &hi)) return False;
   s->lo = lo;
   s->hi = hi;
   return True;
}

// Is s a coroutine stack tied to the mapping it lies in (not registered,
// not the thread's own)? Other coroutines' stacks may lie in that mapping
// (malloc'd stacks, stacks carved from one mmap), so SP moving within it
// may be a switch, which only what the program does tells from a call or
// a return.
Bool in_shared_mapping(const ThreadState* t, const ShadowStack* s)
{
   return s != t->own && !s->registered && !s->segment;
}

// The return address in the stack slot at sp, if the client may read it
// (else 0).
Addr return_address_at(Addr sp)
{
   if (!VG_(am_is_valid_for_client)(sp, sizeof(Addr), VKI_PROT_READ)) return 0;
   return *(const Addr*)sp;
}

// Where the top frame of s returns to (0: unknown): the return address in
// its slot, or on arm64 (no slot: the link register held it) its call's
// return address.
Addr top_return_address(const ShadowStack* s)
{
   if (s->top == s->frames) return 0;
   if (kCallsPush) return return_address_at(s->top->sp);
#if defined(VGA_arm64)
   const Transition* tr = s->top->tr;
   if ((tr->kind == kActivation || tr->kind == kTransparent) && tr->site && !is_inline_site(tr->site))
      return tr->site + kCallLength;
#endif
   return 0;
}

// Where thread tid goes on after a switch that set SP to sp, as far as
// the switch shows it before its block ends: the return address in the
// slot below sp (x86-64's switches `ret` through it), or on arm64 the link
// register (glibc's setcontext loads x30 with the saved pc before it sets
// SP, and branches there).
Addr landing_return_address(ThreadId tid, Addr sp)
{
#if defined(VGA_arm64)
   (void)sp;
   Addr x30 = 0;
   VG_(get_shadow_regs_area)(tid, (UChar*)&x30, 0, offsetof(VexGuestARM64State, guest_X30), sizeof(x30));
   return x30;
#else
   (void)tid;
   return return_address_at(sp - kReturnSlot);
#endif
}

// A stack that will have no frame pushed again but its base (its thread
// ended, the base frame is still settled and restarted): its frames' memory
// cut to the base frame's, which is where its top stays.
void shrink_to_base(ShadowStack* s)
{
   tl_assert(s->top == s->frames);
   if (s->cap <= 1) return;
   Frame* base = (Frame*)kg::alloc(3 * sizeof(Frame));
   base[0] = s->frames[-1];
   base[1] = s->frames[0];
   kg::release(s->frames - 1);
   set_frames(s, base, 1);
   frame_events_moved(s, 2);
   s->top = s->frames;
}

// What the open frames of s below its top one hold at their slots (the
// return addresses, read at sp + delta), and where each lies from the top
// frame: the same for a copy of the stack moved by delta (Go's copystack
// moves every frame of a goroutine's stack by one offset; the top frame's
// slot, runtime.morestack's return address, is not copied). 0 if a slot
// cannot be read.
ULong stack_shape(const ShadowStack* s, Addr delta)
{
   ULong h = 14695981039346656037ULL;
   for (const Frame* f = s->top; f > s->frames; f--) {
      UWord kind = f->tr->kind;
      if ((kind != kActivation && kind != kTransparent) || f->sp <= s->top->sp) continue;
      if (!VG_(am_is_valid_for_client)(f->sp + delta, sizeof(Addr), VKI_PROT_READ)) return 0;
      h = (h ^ (ULong)(f->sp - s->top->sp)) * 1099511628211ULL;
      h = (h ^ (ULong)*(const Addr*)(f->sp + delta)) * 1099511628211ULL;
   }
   return h ? h : 1;
}

void release_stack(ShadowStack* s)
{
   kg::release(s->frames - 1);
   release_frame_events(s);
   kg::release(s);
}

// Drops the registrations that overlap [lo, hi] (they lie side by side in
// the sorted array); returns where a range [lo, hi] goes.
UInt forget_registered_stacks(Addr lo, Addr hi)
{
   UInt first = 0, end = n_registered_stacks;   // the first range ending above lo
   while (first < end) {
      UInt mid = (first + end) / 2;
      if (registered_stacks[mid].hi <= lo) first = mid + 1;
      else end = mid;
   }
   end = first;
   while (end < n_registered_stacks && registered_stacks[end].lo < hi) end++;
   VG_(memmove)(registered_stacks + first, registered_stacks + end,
                (n_registered_stacks - end) * sizeof(StackRange));
   n_registered_stacks -= end - first;
   return first;
}

} // namespace

} // namespace kg
